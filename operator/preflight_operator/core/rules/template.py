"""The shapes the rules engine works on: one pod template of a workload, and the group of
pods one vLLM engine spreads over (a LeaderWorkerSet group, a Ray cluster)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Kind families (rules.kinds): a chart value turns a family's admission off.
CORE = "core"
LWS = "lws"
KUBERAY = "kuberay"
AIBRIX = "aibrix"
KSERVE = "kserve"
KUBEAI = "kubeai"
PRODUCTION_STACK = "production-stack"
DYNAMO = "dynamo"
KTHENA = "kthena"
OME = "ome"
GENERIC = "generic"


# (kind, name) -> an object a workload refers to (a DRA claim, a ServingRuntime), or None
# when absent or unknown; name "*" asks for {"items": [...]} of every such object
Resolve = Callable[[str, str], "Mapping[str, Any] | None"]


def resolve_nothing(kind: str, name: str) -> Mapping[str, Any] | None:
    """The resolver of a caller that has no other objects to offer."""
    return None


@dataclass(frozen=True)
class GroupMember:
    """Pods of one template in a group: ``replicas`` pods (the most there can be) of
    ``spec``; ``gpus`` overrides the count the pod's resources give (Ray's
    ``rayStartParams.num-gpus``), ``gpus_path`` says where it was read."""

    spec: Mapping[str, Any]
    path: str
    replicas: int
    replicas_path: str
    gpus: int | None = None
    gpus_path: str = ""


@dataclass(frozen=True)
class Group:
    """The pods one engine spreads over, in ``members``: a LeaderWorkerSet group
    (``family`` "lws") is the leader and the ``size - 1`` workers; a Ray cluster ("ray")
    is the head and every worker group. ``size_path`` says where the pod count is
    written. The leader is the first member, the worker the second (the leader again
    when there is only one); ``size`` is every member's replicas together."""

    size_path: str
    family: str
    members: tuple[GroupMember, ...]
    # why the pod counts are a guess (a CRD judged generically, rules.spread); "" = exact
    estimated: str = ""
    # why the other members are not exact: read from the cluster as last seen, while the
    # object under review arrives alone (rules.namedgangs); "" = the same manifests. A
    # gang applied one object at a time is compared half old, half new: a failure on it
    # must not deny the rollout that is about to make it consistent.
    observed: str = ""

    @property
    def size(self) -> int:
        return sum(m.replicas for m in self.members)

    @property
    def _worker(self) -> GroupMember:
        return self.members[1] if len(self.members) > 1 else self.members[0]

    @property
    def leader_spec(self) -> Mapping[str, Any]:
        return self.members[0].spec

    @property
    def leader_path(self) -> str:
        return self.members[0].path

    @property
    def worker_spec(self) -> Mapping[str, Any]:
        return self._worker.spec

    @property
    def worker_path(self) -> str:
        return self._worker.path


@dataclass(frozen=True)
class PodTemplate:
    """One pod template of a workload: ``spec`` is the PodSpec found at ``path``."""

    kind: str
    name: str
    namespace: str | None
    spec: Mapping[str, Any]
    path: str
    role: str | None = None  # "leader" / "worker" in a LeaderWorkerSet, "head" in Ray
    group: Group | None = None
    injected_env: Mapping[str, str] = field(default_factory=dict)
    family: str = "core"  # rules.kinds: the kind's family (core, lws, kuberay, ...)
    generic: bool = False  # found by shape in a kind the registry does not know
    shm_provided: bool = False  # the controller mounts a memory /dev/shm itself (KubeRay)
    # a synthesised container (the command a controller builds from its own fields): the
    # manifest path of each token of its `command`
    argv_paths: tuple[str, ...] = ()
    engine_replicas: int = 1  # engines of this plan the group must fit (Ray Serve replicas)
    # the GPUs are added by the controller (a KServe runtime, multi-node InferenceService):
    # asking none here is fine, a count written here is still judged
    gpus_elsewhere: bool = False
    # the pods of one engine (Dynamo multinode.nodeCount): each pod runs its share
    nodes: int = 1
    gpus_path: str = ""  # where the count of a synthesised container was written
    unknown: str = ""  # why the accelerator count cannot be known (a cluster-side profile)
    # an embedded document holding this template's command line that was not read (over a
    # limit of rules.boundedyaml): the field, then why; judged as unknown, nothing else
    unread: tuple[str, str] | None = None
    # a field the kind's own CRD requires is missing or malformed, so the API server rejects
    # the object (rules.template.required): the field, what is wrong, the fix; judged as
    # manifest-invalid, nothing else
    invalid: tuple[str, str, str] | None = None
    # the leader pod of its group although its role says more (a Kthena role's entry pod,
    # role "<name>-entry"): the group rules run on it as on a LeaderWorkerSet's "leader"
    group_leader: bool = False
    # the variable the group's controller gives each pod its index in (LWS_WORKER_INDEX,
    # Kthena's WORKER_INDEX): the group rules read the workers with it set
    index_env: str = "LWS_WORKER_INDEX"
    # a gang whose controller numbers its pods otherwise (rules.crdgroups.leader_worker_gang:
    # a Volcano task's VC_TASK_INDEX counts within the task): (variable, offset) pairs, each
    # set to the pod's place in the group less the offset; used instead of index_env when
    # given, and none at all for a gang that names no index (a Kueue Workload)
    index_offsets: tuple[tuple[str, int], ...] | None = None
    # a worker of a gang whose members are separate objects met one at a time (pods naming
    # one PodGroup, read at admission or by the operator: rules.namedgangs): its leader, in
    # the gang, so that the group rules, which run on a leader, judge this object too
    gang_leader: PodTemplate | None = None

    @property
    def is_leader(self) -> bool:
        return self.role == "leader" or self.group_leader


def dig(obj: Any, keys: Iterable[str]) -> Any:
    """obj[k1][k2]...; None as soon as a level is not a mapping."""
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def meta(obj: Mapping[str, Any], default_namespace: str | None) -> tuple[str, str | None]:
    """(name, namespace) of an object, tolerantly."""
    found = obj.get("metadata")
    found = found if isinstance(found, Mapping) else {}
    name = found.get("name")
    namespace = found.get("namespace")
    return (
        str(name) if name is not None else "<unnamed>",
        str(namespace) if namespace else default_namespace,
    )


def num(value: object, default: int) -> int:
    """A non-negative int field, tolerantly (strings of digits too)."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) < 10:
        return int(value.strip())
    return default


def running_containers(spec: Mapping[str, Any]) -> list[tuple[str, int, Mapping[str, Any]]]:
    """(field, index, container) of each container of a pod spec that runs beside the
    others for the pod's life: every entry of ``containers``, then each native sidecar, an
    ``initContainers`` entry with ``restartPolicy: Always`` (KEP-753, on by default since
    Kubernetes 1.29; the kubelet starts it before the next init container and keeps it
    running). An ordinary init container runs to completion before the main containers
    start: it never serves, so it is left out. ``field`` is the real key, so paths built
    from it name the real place (``initContainers[1]``)."""
    found: list[tuple[str, int, Mapping[str, Any]]] = []
    for key in ("containers", "initContainers"):
        items = spec.get(key)
        for i, container in enumerate(items if isinstance(items, list) else []):
            if not isinstance(container, Mapping):
                continue
            if key == "containers" or container.get("restartPolicy") == "Always":
                found.append((key, i, container))
    return found


def required(obj: Mapping[str, Any], fields: Iterable[str]) -> str | None:
    """The first of ``fields`` (dotted paths, each a mapping the kind's CRD lists under
    ``required``) that ``obj`` lacks or holds as something other than a mapping; None
    when all are there. The CRD's schema refuses such an object before any admission
    webhook sees it: ``lint`` names it instead of reading a layout that cannot exist."""
    for path in fields:
        if not isinstance(dig(obj, path.split(".")), Mapping):
            return path
    return None
