"""Where the pod templates are in each kind of workload, and what a manifest set offers.

Kinds: Pod, Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob and
LeaderWorkerSet (leaderworkerset.x-k8s.io: leader and worker templates, group size).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

LWS_GROUP = "leaderworkerset.x-k8s.io"
_TEMPLATE_KINDS = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
MIG_PREFIX = "nvidia.com/mig-"
# Objects the rules resolve by reference from a pod spec (DRA).
REFERENCED_KINDS = ("ResourceClaim", "ResourceClaimTemplate")


@dataclass(frozen=True)
class Group:
    """A LeaderWorkerSet group: ``size`` pods, one leader and ``size - 1`` workers."""

    size: int
    leader_spec: Mapping[str, Any]
    leader_path: str
    worker_spec: Mapping[str, Any]
    worker_path: str
    size_path: str


@dataclass(frozen=True)
class PodTemplate:
    """One pod template of a workload: ``spec`` is the PodSpec found at ``path``."""

    kind: str
    name: str
    namespace: str | None
    spec: Mapping[str, Any]
    path: str
    role: str | None = None  # "leader" / "worker" in a LeaderWorkerSet
    group: Group | None = None
    injected_env: Mapping[str, str] = field(default_factory=dict)


def _dig(obj: Any, keys: Iterable[str]) -> Any:
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _meta(obj: Mapping[str, Any], default_namespace: str | None) -> tuple[str, str | None]:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name")
    namespace = meta.get("namespace")
    return (
        str(name) if name is not None else "<unnamed>",
        str(namespace) if namespace else default_namespace,
    )


def is_lws(obj: Mapping[str, Any]) -> bool:
    api = obj.get("apiVersion")
    return (
        obj.get("kind") == "LeaderWorkerSet"
        and isinstance(api, str)
        and api.startswith(LWS_GROUP + "/")
    )


def pod_templates(obj: Mapping[str, Any], default_namespace: str | None) -> list[PodTemplate]:
    """The pod templates of a workload object ([] for anything else)."""
    kind = obj.get("kind")
    if not isinstance(kind, str):
        return []
    name, namespace = _meta(obj, default_namespace)
    if kind == "Pod":
        spec = obj.get("spec")
        if not isinstance(spec, Mapping):
            return []
        return [PodTemplate(kind, name, namespace, spec, "spec")]
    if kind in _TEMPLATE_KINDS:
        keys = _TEMPLATE_KINDS[kind]
        spec = _dig(obj, (*keys, "spec"))
        path = ".".join((*keys, "spec"))
        if not isinstance(spec, Mapping):
            return []
        return [PodTemplate(kind, name, namespace, spec, path)]
    if is_lws(obj):
        return _lws_templates(obj, name, namespace)
    return []


def _lws_templates(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    base = "spec.leaderWorkerTemplate"
    lwt = _dig(obj, ("spec", "leaderWorkerTemplate"))
    if not isinstance(lwt, Mapping):
        return []
    size = lwt.get("size", 1)
    size = size if isinstance(size, int) and not isinstance(size, bool) and size >= 1 else 1
    worker = _dig(lwt, ("workerTemplate", "spec"))
    leader = _dig(lwt, ("leaderTemplate", "spec"))
    worker_path = f"{base}.workerTemplate.spec"
    if not isinstance(worker, Mapping):
        return []
    if not isinstance(leader, Mapping):
        # without a leaderTemplate the leader is made from the worker template
        leader, leader_path = worker, worker_path
    else:
        leader_path = f"{base}.leaderTemplate.spec"
    group = Group(size, leader, leader_path, worker, worker_path, f"{base}.size")
    # LWS (>= 0.6) injects these into every container of the group
    common = {"LWS_GROUP_SIZE": str(size), "LWS_NAME": name}
    templates = [
        PodTemplate(
            "LeaderWorkerSet",
            name,
            namespace,
            leader,
            leader_path,
            "leader",
            group,
            {**common, "LWS_WORKER_INDEX": "0"},
        )
    ]
    if leader_path != worker_path and size > 1:
        # the node rank of a worker does not change what it needs; 1 stands for any
        templates.append(
            PodTemplate(
                "LeaderWorkerSet",
                name,
                namespace,
                worker,
                worker_path,
                "worker",
                group,
                {**common, "LWS_WORKER_INDEX": "1"},
            )
        )
    return templates


@dataclass
class ManifestSet:
    """ConfigMaps, Services, ResourceClaims and ResourceClaimTemplates of the objects
    being checked together, by namespace."""

    config_maps: dict[tuple[str | None, str], Mapping[str, Any]] = field(default_factory=dict)
    services: dict[str | None, list[Mapping[str, Any]]] = field(default_factory=dict)
    referenced: dict[tuple[str | None, str, str], Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, objects: Iterable[Mapping[str, Any]], default_namespace: str | None) -> ManifestSet:
        found = cls()
        for obj in objects:
            kind = obj.get("kind")
            if kind not in ("ConfigMap", "Service", *REFERENCED_KINDS):
                continue
            name, namespace = _meta(obj, default_namespace)
            if kind in REFERENCED_KINDS:
                found.referenced[(namespace, str(kind), name)] = obj
            elif kind == "ConfigMap":
                found.config_maps[(namespace, name)] = obj
            else:
                found.services.setdefault(namespace, []).append(obj)
        return found
