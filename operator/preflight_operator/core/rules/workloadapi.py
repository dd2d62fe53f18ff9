"""Groups declared through the Kubernetes Workload API for gang scheduling (KEP-4671; issue
26). Pure: a pod and the object it names in, group facts out.

What the API really provides, read from the Kubernetes source (kubernetes/kubernetes at the
tags named, staging/src/k8s.io/api/...):

* **1.35** (v1.35.4: scheduling/v1alpha1/types.go, core/v1/types.go): a pod names its group
  in ``spec.workloadRef`` = ``{name, podGroup, podGroupReplicaKey?}``: the Workload object
  ``name`` in the pod's namespace, one of its ``spec.podGroups[*]`` (at most 8, keyed by
  ``name``), and optionally which replica of that pod group. The pod group's ``policy`` is
  exactly one of ``basic: {}`` (pods scheduled one by one) or ``gang: {minCount}``.
* **1.36** (v1.36.3: scheduling/v1alpha2/types.go) and **1.37** (v1.37.2:
  scheduling/v1alpha3/types.go): ``spec.workloadRef`` is gone (protobuf tag 42 tombstoned);
  a pod names a runtime ``PodGroup`` object in ``spec.schedulingGroup.podGroupName``, whose
  ``spec.schedulingPolicy`` has the same ``basic``/``gang: {minCount}`` shape (copied by the
  workload's controller from the Workload's ``spec.podGroupTemplates``).
* **1.37 beta** (kubernetes/kubernetes at 01d0b7277d400d6aa9fc676abb4826700ec869fe,
  scheduling/v1beta1/types.go, ``introduced=1.37``): ``PodGroup`` at
  ``scheduling.k8s.io/v1beta1``, the same ``spec.schedulingPolicy`` union; ``minCount``
  is now mutable ("to support workload scaling"): all the more a minimum, never a size.

``gang.minCount`` is "the minimum number of pods that must be schedulable or scheduled at
the same time for the scheduler to admit the entire group" (the types' own words; the
scheduler's GangScheduling plugin waits until that many pods exist: v1.36.3
pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go). It is a lower bound, not
the group's size: a group may have more pods than its minCount. So ``DeclaredGroup.size``
stays None; the count is ``DeclaredGroup.gang`` (all or none, as Volcano's minAvailable) and
``WorkloadGroup.min_count``. Neither version gives a
pod a rank or names a leader. Everything not provided is said in ``DeclaredGroup.unknown``
(each a warning), never guessed; an object of an apiVersion not listed here is unknown too
(the alpha shapes changed in each release).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from preflight_operator.core import apinames
from preflight_operator.core.rules.groups import MAX_SIZE, DeclaredGroup, declared_warning

SYSTEM = "workload-api"
GROUP = "scheduling.k8s.io"
#: Kubernetes 1.35: Workload with spec.podGroups[*].policy; pods name it in spec.workloadRef.
WORKLOAD_VERSIONS = (f"{GROUP}/v1alpha1",)
#: Kubernetes 1.36 (v1alpha2), 1.37 (v1alpha3, v1beta1): PodGroup with
#: spec.schedulingPolicy; pods name it in spec.schedulingGroup.podGroupName. Oldest first.
PODGROUP_VERSIONS = (f"{GROUP}/v1alpha2", f"{GROUP}/v1alpha3", f"{GROUP}/v1beta1")
PLURALS = {"Workload": "workloads", "PodGroup": "podgroups"}
WORKLOAD_REF = "spec.workloadRef"
SCHEDULING_GROUP = "spec.schedulingGroup.podGroupName"
MAX_POD_GROUPS = 64  # the API allows 8 per Workload; more is not read

# Kubernetes' own name formats (apinames.py: IsDNS1123Subdomain, IsDNS1123Label): a name
# that fails them never came from the API server, so it is not a reference.


def _subdomain(value: Any) -> str:
    return value if not apinames.problem(apinames.NAME, value) else ""


def _label(value: Any) -> str:
    return value if not apinames.problem(apinames.NAMESPACE, value) else ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _shown(value: Any) -> str:
    """A value from the object, safe to quote in a message (bounded, repr-escaped)."""
    return repr(value[:80]) if isinstance(value, str) else type(value).__name__


@dataclass(frozen=True)
class GroupReference:
    """What a pod's spec names: the object to read (in the pod's namespace) and where."""

    kind: str  # "Workload" (1.35, spec.workloadRef) or "PodGroup" (1.36+, spec.schedulingGroup)
    name: str  # "" when the field is there but holds no valid name
    pod_group: str = ""  # 1.35: the pod group inside the Workload
    replica_key: str = ""  # 1.35: podGroupReplicaKey (a replica of that pod group), optional
    problem: str = ""  # why the reference is unusable ("" when it is)

    @property
    def field(self) -> str:
        return WORKLOAD_REF if self.kind == "Workload" else SCHEDULING_GROUP


def reference(pod: Mapping[str, Any]) -> GroupReference | None:
    """The Workload API group a pod names, or None when it names none."""
    spec = _mapping(pod.get("spec"))
    ref, sched = spec.get("workloadRef"), spec.get("schedulingGroup")
    if ref is None and sched is None:
        return None
    if ref is not None and sched is not None:
        # One Kubernetes version has one of the two fields: this pod came from no API server.
        return GroupReference(
            "Workload", "", problem=f"both {WORKLOAD_REF} and spec.schedulingGroup are set"
        )
    if ref is not None:
        fields = _mapping(ref)
        name = _subdomain(fields.get("name"))
        pod_group = _label(fields.get("podGroup"))
        raw_key = fields.get("podGroupReplicaKey", "")
        key = _label(raw_key) if raw_key != "" else ""
        problems = []
        if not name:
            problems.append(f"{WORKLOAD_REF}.name is {_shown(fields.get('name'))}, not a name")
        if not pod_group:
            problems.append(
                f"{WORKLOAD_REF}.podGroup is {_shown(fields.get('podGroup'))}, not a name"
            )
        if raw_key != "" and not key:
            problems.append(
                f"{WORKLOAD_REF}.podGroupReplicaKey is {_shown(raw_key)}, not a DNS label"
            )
        return GroupReference("Workload", name, pod_group, key, "; ".join(problems))
    raw = _mapping(sched).get("podGroupName")
    name = _subdomain(raw)
    problem = "" if name else f"{SCHEDULING_GROUP} is {_shown(raw)}, not a name"
    return GroupReference("PodGroup", name, problem=problem)


@dataclass(frozen=True)
class WorkloadGroup:
    """A pod's Workload API group: the shared shape, plus what only this API says."""

    declared: DeclaredGroup
    reference: GroupReference
    policy: str | None  # "gang", "basic" (no gang: pods scheduled one by one), None: unknown
    #: gang.minCount: the least pods the scheduler admits together; a lower bound on the
    #: group's size, never its size. None: basic policy, or not known.
    min_count: int | None


_NO_RANK = "this pod's index and the leader's address (the Workload API gives neither)"


def _policy(policy: Any, where: str) -> tuple[str | None, int | None, str]:
    """(policy, min count, what is unknown) of a `basic`/`gang` union at `where`."""
    fields = _mapping(policy)
    basic, gang = fields.get("basic"), fields.get("gang")
    if isinstance(basic, Mapping) and gang is None:
        return "basic", None, ""
    if isinstance(gang, Mapping) and basic is None:
        count = gang.get("minCount")
        if isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= MAX_SIZE:
            return "gang", count, ""
        return "gang", None, f"the gang's size ({where}.gang.minCount is {count!r:.40})"
    return None, None, f"the scheduling policy ({where} holds not exactly one of basic, gang)"


def _object_problem(ref: GroupReference, obj: Mapping[str, Any], namespace: str) -> str:
    versions = WORKLOAD_VERSIONS if ref.kind == "Workload" else PODGROUP_VERSIONS
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    meta = _mapping(obj.get("metadata"))
    if kind != ref.kind or api_version not in versions:
        return (
            f"the {ref.kind} {ref.name!r} (read a {_shown(kind)} of {_shown(api_version)}; "
            f"known: {', '.join(versions)})"
        )
    if meta.get("name") != ref.name:
        return f"the {ref.kind} {ref.name!r} (the object read is named {_shown(meta.get('name'))})"
    their_ns = meta.get("namespace")
    if namespace and their_ns is not None and their_ns != namespace:
        return (
            f"the {ref.kind} {ref.name!r} (the object read is in namespace {_shown(their_ns)}, "
            f"the pod in {namespace!r}: a reference names its own namespace only)"
        )
    return ""


def workload_group(
    pod: Mapping[str, Any], obj: Mapping[str, Any] | None, *, missing: str = "not read"
) -> WorkloadGroup | None:
    """The group a pod declares through the Workload API, judged with the object it names
    (``reference(pod)``: a Workload on 1.35, a PodGroup on 1.36+), or None when the pod
    names none. ``obj`` None: the object could not be had; ``missing`` says why ("not
    found", "forbidden"), for the warning."""
    ref = reference(pod)
    if ref is None:
        return None
    namespace = _mapping(pod.get("metadata")).get("namespace")
    namespace = namespace if isinstance(namespace, str) else ""
    name = f"{ref.name}/{ref.pod_group}" if ref.kind == "Workload" else ref.name
    if ref.replica_key:
        name += f" replica {ref.replica_key}"
    source = ref.field + (f" -> {ref.kind} {ref.name}" if ref.name else "")
    unknown: list[str] = []
    policy: str | None = None
    min_count: int | None = None
    if ref.problem:
        unknown.append(f"the group ({ref.problem})")
    elif obj is None:
        unknown.append(f"the {ref.kind} {ref.name!r} ({missing[:80]})")
    elif problem := _object_problem(ref, obj, namespace):
        unknown.append(problem)
    elif ref.kind == "Workload":
        groups = _mapping(obj.get("spec")).get("podGroups")
        items = groups[:MAX_POD_GROUPS] if isinstance(groups, list) else []
        found = [g for g in items if isinstance(g, Mapping) and g.get("name") == ref.pod_group]
        if len(found) == 1:
            source += f" spec.podGroups[{ref.pod_group}].policy"
            policy, min_count, why = _policy(found[0].get("policy"), "policy")
            unknown += [why] if why else []
        else:
            count = "no" if not found else f"{len(found)}"
            unknown.append(
                f"the pod group {ref.pod_group!r} ({count} entries of that name in the "
                f"Workload's spec.podGroups; the scheduler leaves such a pod unschedulable)"
            )
    else:
        source += " spec.schedulingPolicy"
        policy, min_count, why = _policy(
            _mapping(obj.get("spec")).get("schedulingPolicy"), "spec.schedulingPolicy"
        )
        unknown += [why] if why else []
    if policy == "gang" and min_count is not None:
        unknown.append(
            f"the size (gang minCount {min_count} is the least pods scheduled together, "
            "not how many the group has)"
        )
    elif policy == "basic":
        unknown.append("the size (basic policy: no gang, so the API counts no pods)")
    unknown.append(_NO_RANK)
    declared = DeclaredGroup(SYSTEM, name, None, None, None, source, tuple(unknown), gang=min_count)
    return WorkloadGroup(declared, ref, policy, min_count)


# -- what the admission webhook does with it -------------------------------------------------


def version_to_read(ref: GroupReference, served: Sequence[str]) -> str | None:
    """The group version to GET ``ref``'s object at: the newest this reader knows for its
    kind among those the API server serves (``served``: its discovery of scheduling.k8s.io,
    e.g. ``["scheduling.k8s.io/v1alpha2"]``). None: none of them is served (the feature gate
    is off, or a version this reader does not know): nothing is read, nothing guessed."""
    known = WORKLOAD_VERSIONS if ref.kind == "Workload" else PODGROUP_VERSIONS
    offered = set(served)
    return next((v for v in reversed(known) if v in offered), None)


def object_path(ref: GroupReference, version: str, namespace: str) -> str:
    """The API path of ``ref``'s object at ``version`` in ``namespace`` (names already
    checked as DNS names by ``reference``: nothing to escape)."""
    return f"/apis/{version}/namespaces/{namespace}/{PLURALS[ref.kind]}/{ref.name}"


_NODES_OPTIONS = ("--nnodes", "-n")


def engine_nodes(argv: Sequence[str]) -> int | None:
    """The engine's node count a vLLM command line states (``--nnodes N``, ``-n N``,
    ``--nnodes=N``), or None when it states none that is a literal count."""
    words = [str(w) for w in argv[:4096]]
    found: str | None = None
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name in _NODES_OPTIONS:
            found = value if eq else (words[i + 1] if i + 1 < len(words) else None)
    if found is None or not found.isdigit() or len(found) > 6:
        return None
    count = int(found)
    return count if 1 <= count <= MAX_SIZE else None


def admission_note(found: WorkloadGroup, nodes: int | None, *, has_group: bool) -> str:
    """What the webhook says of a multi-node vLLM pod's Workload API group ("" when
    nothing): without a group of its own system (``has_group`` False: not a
    LeaderWorkerSet's, not a JobSet's with a coordinator) what the API does not give, so the
    check gets no group from it (``declared_warning``); and where ``nodes`` (the pods the
    engine needs at once: ``--nnodes``, a LeaderWorkerSet's size) is known, a gang that does
    not hold them together. Never a failure: the scheduler may still place them all."""
    parts: list[str] = []
    if not has_group:
        parts.append(declared_warning(found.declared))
    if nodes is not None and nodes > 1:
        # the source, unless declared_warning said it already
        where = f"({found.declared.source})" if has_group else "(read above)"
        if found.policy == "basic":
            parts.append(
                f"its pod group has the basic policy {where}: the scheduler places the "
                f"{nodes} pods the engine needs one by one, so some may start while others "
                "wait for room"
            )
        elif found.policy == "gang" and found.min_count is not None and found.min_count < nodes:
            parts.append(
                f"its gang's minCount {found.min_count} {where} is less than the {nodes} pods "
                "the engine needs at once: the scheduler may admit the gang with fewer"
            )
    return "; ".join(p for p in parts if p)
