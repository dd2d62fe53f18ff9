"""What a manifest set offers the rules besides workloads (ConfigMaps, Services, DRA
claims), and the pod templates of a workload (the registry of kinds is rules.kinds)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from preflight_operator.core.rules.kinds import pod_templates
from preflight_operator.core.rules.namedgangs import (
    UNNAMED,
    cluster_gang_members,
    podgroup_member,
    with_podgroup_gang,
)
from preflight_operator.core.rules.spread import ray_worker_member
from preflight_operator.core.rules.template import Group, GroupMember, PodTemplate, meta

LWS_GROUP = "leaderworkerset.x-k8s.io"
MIG_PREFIX = "nvidia.com/mig-"
# Objects the rules resolve by reference from a workload (DRA claims, KServe runtimes).
REFERENCED_KINDS = (
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ServingRuntime",
    "ClusterServingRuntime",
)
CLUSTER_SCOPED = frozenset(("ClusterServingRuntime",))


@dataclass
class ManifestSet:
    """ConfigMaps, Services, ResourceClaims and ResourceClaimTemplates of the objects
    being checked together, by namespace; and the plain workloads whose pods join a Ray
    cluster (``ray start --address``), which a Ray head's engine may spread over
    (rules.spread.with_ray_workers)."""

    config_maps: dict[tuple[str | None, str], Mapping[str, Any]] = field(default_factory=dict)
    services: dict[str | None, list[Mapping[str, Any]]] = field(default_factory=dict)
    referenced: dict[tuple[str | None, str, str], Mapping[str, Any]] = field(default_factory=dict)
    ray_workers: dict[str | None, list[GroupMember]] = field(default_factory=dict)
    # (namespace, the gang: a Volcano PodGroup or a Workload API group, as a message names
    # it) -> the workloads whose pods name it, as members
    # (rules.namedgangs.podgroup_member; with_podgroup_gang groups them)
    podgroups: dict[tuple[str | None, str], list[tuple[str, GroupMember]]] = field(
        default_factory=dict
    )
    # the member label of each object naming a gang (by id): unique within the set, so two
    # pods created with one generateName are two members
    gang_labels: dict[int, str] = field(default_factory=dict)

    def with_gang(
        self,
        template: PodTemplate,
        obj: Mapping[str, Any],
        lookup: Callable[[str, str, str], Mapping[str, Any] | None] | None = None,
    ) -> PodTemplate:
        """``template`` grouped with the workloads naming its gang (issue 39): those of
        the manifest set, and in a cluster those ``lookup`` (ClusterLookup.object) has seen
        (namedgangs.cluster_gang_members)."""
        found = podgroup_member(obj)
        if found is None:
            return template
        members = self.podgroups.get((template.namespace, found[0]), [])
        label = self.gang_labels.get(id(obj), found[1])
        cluster = cluster_gang_members(obj, template.namespace, members, lookup)
        if cluster is not None:
            return with_podgroup_gang(template, found[0], cluster, label, cluster=True)
        return with_podgroup_gang(template, found[0], members, label)

    @classmethod
    def of(cls, objects: Iterable[Mapping[str, Any]], default_namespace: str | None) -> ManifestSet:
        found = cls()
        for obj in objects:
            kind = obj.get("kind")
            member = podgroup_member(obj)
            if member is not None:
                key = (meta(obj, default_namespace)[1], member[0])
                held = found.podgroups.setdefault(key, [])
                label = member[1]
                if label.endswith(UNNAMED):  # unnamed (generateName): one member per object
                    label = f"{label}#{len(held) + 1}"
                found.gang_labels[id(obj)] = label
                held.append((label, member[2]))
            worker = ray_worker_member(obj)
            if worker is not None:
                found.ray_workers.setdefault(meta(obj, default_namespace)[1], []).append(worker)
                continue
            if kind not in ("ConfigMap", "Service", *REFERENCED_KINDS):
                continue
            name, namespace = meta(obj, default_namespace)
            if kind in REFERENCED_KINDS:
                scope = None if kind in CLUSTER_SCOPED else namespace
                found.referenced[(scope, str(kind), name)] = obj
            elif kind == "ConfigMap":
                found.config_maps[(namespace, name)] = obj
            else:
                found.services.setdefault(namespace, []).append(obj)
        return found


__all__ = [
    "CLUSTER_SCOPED",
    "LWS_GROUP",
    "MIG_PREFIX",
    "REFERENCED_KINDS",
    "Group",
    "GroupMember",
    "ManifestSet",
    "PodTemplate",
    "pod_templates",
]
