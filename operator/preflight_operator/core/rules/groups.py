"""Multi-node groups declared outside LeaderWorkerSet and Ray (issue 26): JobSet, Kueue pod
groups, Volcano PodGroups, RoleBasedGroup pods. Pure: objects in, templates and group facts
out. Objects that declare a group of their own (Kueue Workload, Volcano Job and PodGroup,
RoleBasedGroup) are read by ``rules.crdgroups`` into the same ``DeclaredGroup``.

What each system really provides, with its source:

* **JobSet** (kubernetes-sigs/jobset at 08dfbdfd682714a9ab929633eca8dc95315187e7): a JobSet
  runs ``spec.replicatedJobs[*].replicas`` Jobs of each template, each with
  ``template.spec.parallelism`` pods (Kubernetes Job default 1). Pods carry the labels and
  annotations ``jobset.sigs.k8s.io/jobset-name``, ``replicatedjob-name``, ``job-index``,
  ``job-global-index``, ``global-replicas`` (api/jobset/v1alpha2/jobset_types.go), the Job
  controller's completion index (``batch.kubernetes.io/job-completion-index``, Indexed
  Jobs) and, with ``spec.coordinator``, ``jobset.sigs.k8s.io/coordinator``: the stable address
  ``<jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>``
  (pkg/controllers/jobset_controller.go). JobSet's own PyTorch example
  (site/static/examples/pytorch/cnn-mnist/mnist.yaml) wires a multi-node job the same way:
  ``MASTER_ADDR: pytorch-workers-0-0.pytorch`` and the rank from the completion index.
  JobSet sets no rank or size env of its own.
* **Kueue pod groups** (kubernetes-sigs/kueue, docs "Run Plain Pods" and
  apis/kueue/v1alpha1 constants): every member has the label
  ``kueue.x-k8s.io/pod-group-name`` and the annotation ``kueue.x-k8s.io/pod-group-total-count``
  (the size); ``kueue.x-k8s.io/pod-group-pod-index`` (the index) only where Kueue's
  topology-aware scheduling sets it. No leader address.
* **Volcano** (volcano-sh/apis pkg/apis/scheduling/v1beta1/labels.go): a member carries
  ``scheduling.k8s.io/group-name``, the PodGroup's name; the size is that PodGroup's
  ``spec.minMember``, another object, and neither rank nor leader is on the pod.

What a system does not provide is said (``DeclaredGroup.unknown``), never guessed: an
unknown shape is a warning, never a group failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from preflight_operator.core.rules.template import GroupMember, PodTemplate, dig

JOBSET = "jobset"
KUEUE = "kueue"
VOLCANO = "volcano"
RBG = "rbg"

_JS = "jobset.sigs.k8s.io/"
JOBSET_NAME = _JS + "jobset-name"
JOBSET_RJOB = _JS + "replicatedjob-name"
JOBSET_JOB_INDEX = _JS + "job-index"
JOBSET_GLOBAL_INDEX = _JS + "job-global-index"
JOBSET_GLOBAL_REPLICAS = _JS + "global-replicas"
JOBSET_COORDINATOR = _JS + "coordinator"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
KUEUE_GROUP = "kueue.x-k8s.io/pod-group-name"
KUEUE_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_INDEX = "kueue.x-k8s.io/pod-group-pod-index"
# volcano-sh/apis pkg/apis/scheduling/v1beta1/labels.go (vendored in volcano-sh/volcano):
# KubeGroupNameAnnotationKey and VolcanoGroupNameAnnotationKey (GroupName, the PodGroup's
# own API group, + "/group-name"), each "the annotation key of Pod to identify which
# PodGroup it belongs to"
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
VOLCANO_GROUP_OWN = "scheduling.volcano.sh/group-name"
# RoleBasedGroup (sgl-project/rbg api/workloads/constants/{label,env}.go at 993491fb)
_RBG = "rbg.workloads.x-k8s.io/"
RBG_GROUP = _RBG + "group-name"
RBG_ROLE = _RBG + "role-name"
RBG_COMPONENT_SIZE = _RBG + "component-size"
RBG_COMPONENT_INDEX = _RBG + "component-index"
RBG_LEADER_ENV = "RBG_LWP_LEADER_ADDRESS"
RBG_INDEX_ENV = "RBG_LWP_WORKER_INDEX"
RBG_SIZE_ENV = "RBG_LWP_GROUP_SIZE"

MAX_SIZE = 100_000  # a count above this is not a real group (report.GROUP_MAX_MEMBERS)


@dataclass(frozen=True)
class DeclaredGroup:
    """A pod's group as its declaring system describes it."""

    system: str
    name: str
    size: int | None  # pods in the group (None: not on the pod)
    index: int | None  # this pod's place (None: not on the pod)
    leader: str | None  # the leader's address (None: not provided)
    source: str  # the labels/annotations read
    unknown: tuple[str, ...] = ()  # what the system does not tell here: each a warning
    rank_source: str = ""  # where a member learns its rank ("": nowhere the system says)
    leader_source: str = ""  # where a member learns the leader's address ("": nowhere)
    gang: int | None = None  # pods placed all or none (Volcano minAvailable); None: not said

    @property
    def complete(self) -> bool:
        return self.size is not None and self.index is not None and self.leader is not None


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 6:
        number = int(value.strip())
    else:
        return None
    return number if 0 <= number <= MAX_SIZE else None


def _text(value: Any) -> str:
    return value[:253] if isinstance(value, str) else ""


def pod_group(pod: Mapping[str, Any]) -> DeclaredGroup | None:
    """The group a pod declares through JobSet, Kueue or Volcano, or None."""
    found = pod.get("metadata")
    meta = found if isinstance(found, Mapping) else {}
    raw_labels, raw_notes = meta.get("labels"), meta.get("annotations")
    labels: Mapping[str, Any] = raw_labels if isinstance(raw_labels, Mapping) else {}
    notes: Mapping[str, Any] = raw_notes if isinstance(raw_notes, Mapping) else {}

    def either(key: str) -> Any:
        return labels.get(key, notes.get(key))

    jobset = _text(either(JOBSET_NAME))
    if jobset:
        return _jobset_pod(jobset, either)
    rbg = _text(labels.get(RBG_GROUP))
    if rbg:
        return _rbg_pod(rbg, labels, pod.get("spec"))
    kueue = _text(labels.get(KUEUE_GROUP))
    if kueue:
        size = _count(notes.get(KUEUE_TOTAL))
        index = _count(labels.get(KUEUE_INDEX))
        unknown = ["the leader's address (Kueue pod groups name none)"]
        if size is None:
            unknown.append(f"the size ({KUEUE_TOTAL} missing or not a count)")
        if index is None:
            unknown.append(
                f"this pod's index ({KUEUE_INDEX} is set only by topology-aware scheduling)"
            )
        return DeclaredGroup(
            KUEUE, kueue, size, index, None, f"{KUEUE_GROUP}, {KUEUE_TOTAL}", tuple(unknown),
            rank_source=KUEUE_INDEX if index is not None else "",
        )  # fmt: skip
    volcano = _text(notes.get(VOLCANO_GROUP)) or _text(notes.get(VOLCANO_GROUP_OWN))
    if volcano:
        return DeclaredGroup(
            VOLCANO,
            volcano,
            None,
            None,
            None,
            f"{VOLCANO_GROUP} or {VOLCANO_GROUP_OWN}",
            (
                "the size (the PodGroup's spec.minMember, another object)",
                "this pod's index and the leader's address (Volcano puts neither on the pod)",
            ),
        )
    return None


def _env_value(spec: Any, name: str) -> str | None:
    """The literal value of env ``name`` in the pod's first container that sets it."""
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    for container in containers[:64] if isinstance(containers, list) else []:
        env = container.get("env") if isinstance(container, Mapping) else None
        for item in env[:256] if isinstance(env, list) else []:
            if isinstance(item, Mapping) and item.get("name") == name:
                value = item.get("value")
                return _text(value) or None
    return None


def _rbg_pod(name: str, labels: Mapping[str, Any], spec: Any) -> DeclaredGroup:
    """A pod of a RoleBasedGroup. A leader-worker role's pods (RoleInstanceSet, the default
    workload) carry ``component-size`` and ``component-index`` labels, which RBG's
    controller turns into ``RBG_LWP_GROUP_SIZE`` and ``RBG_LWP_WORKER_INDEX`` (downward
    API), and ``RBG_LWP_LEADER_ADDRESS`` = ``$(RBG_ROLE_INSTANCE_NAME)-0.<service>.<ns>``
    (sgl-project/rbg pkg/discovery/env_builder.go ``BuildLwsEnv`` at 993491fb). A
    standalone role's pods are one engine each: neither label."""
    role = _text(labels.get(RBG_ROLE))
    size = _count(labels.get(RBG_COMPONENT_SIZE))
    index = _count(labels.get(RBG_COMPONENT_INDEX))
    leader = _env_value(spec, RBG_LEADER_ENV)
    unknown: list[str] = []
    if size is None:
        unknown.append(f"the size ({RBG_COMPONENT_SIZE} missing: not a leader-worker role)")
    if index is None:
        unknown.append(f"this pod's index ({RBG_COMPONENT_INDEX} missing)")
    if leader is None:
        unknown.append(f"the leader's address ({RBG_LEADER_ENV} not in the pod's env)")
    return DeclaredGroup(
        RBG,
        f"{name}/{role}" if role else name,
        size,
        index,
        leader,
        f"{RBG_GROUP}, {RBG_COMPONENT_SIZE}, {RBG_COMPONENT_INDEX}, env {RBG_LEADER_ENV}",
        tuple(unknown),
        rank_source=f"{RBG_INDEX_ENV} (label {RBG_COMPONENT_INDEX})",
        leader_source=RBG_LEADER_ENV,
    )


def _jobset_pod(name: str, either: Any) -> DeclaredGroup:
    jobs = _count(either(JOBSET_GLOBAL_REPLICAS))
    job = _count(either(JOBSET_GLOBAL_INDEX))
    pod_index = _count(either(COMPLETION_INDEX))
    leader = _text(either(JOBSET_COORDINATOR)) or None
    unknown: list[str] = []
    size: int | None = None
    index: int | None = None
    if jobs == 1:
        # one Job: its pods are the group, the completion index their rank; the Job's
        # parallelism (the size) is not on the pod
        index = pod_index
        unknown.append("the size (the Job's spec.parallelism is not on the pod)")
    elif jobs is not None and jobs > 1:
        unknown.append(
            f"the size and rank across {jobs} Jobs (each Job's spec.parallelism is not on the pod)"
        )
    else:
        unknown.append(f"the number of Jobs ({JOBSET_GLOBAL_REPLICAS} missing)")
    if pod_index is None and job is None:
        unknown.append(f"this pod's index ({COMPLETION_INDEX} missing: not an Indexed Job)")
    if leader is None:
        unknown.append(
            "the leader's address (set spec.coordinator, whose address JobSet writes to "
            f"{JOBSET_COORDINATOR})"
        )
    return DeclaredGroup(
        JOBSET,
        name,
        size,
        index,
        leader,
        f"{JOBSET_NAME}, {JOBSET_GLOBAL_REPLICAS}, {COMPLETION_INDEX}, {JOBSET_COORDINATOR}",
        tuple(unknown),
        rank_source=COMPLETION_INDEX if index is not None else "",
        leader_source=JOBSET_COORDINATOR if leader is not None else "",
    )


def declared_warning(group: DeclaredGroup) -> str:
    """The warning for a group whose shape is not fully known ("" when complete)."""
    if group.complete or not group.unknown:
        return ""
    return (
        f"pod of a {group.system} group {group.name!r}: the group phase cannot meet without "
        + "; ".join(group.unknown)
        + " (read: "
        + group.source
        + "); the pod's own checks still run"
    )


# -- JobSet objects ----------------------------------------------------------------------------


def _parallelism(job_spec: Any) -> int:
    value = job_spec.get("parallelism", 1) if isinstance(job_spec, Mapping) else 1
    counted = _count(value)
    return 1 if counted is None else counted


def jobset_members(obj: Mapping[str, Any]) -> list[tuple[str, GroupMember]]:
    """(replicated Job name, member) of each replicated Job, the coordinator's first: its
    pods are the Job's ``replicas`` x ``parallelism``."""
    jobs = dig(obj, ("spec", "replicatedJobs"))
    if not isinstance(jobs, list):
        return []
    coordinator = _text(dig(obj, ("spec", "coordinator", "replicatedJob")))
    members: list[tuple[str, GroupMember]] = []
    for i, rjob in enumerate(jobs[:64]):
        if not isinstance(rjob, Mapping):
            continue
        base = f"spec.replicatedJobs[{i}]"
        job_spec = dig(rjob, ("template", "spec"))
        spec = dig(job_spec, ("template", "spec")) if isinstance(job_spec, Mapping) else None
        if not isinstance(spec, Mapping):
            continue
        replicas = _count(rjob.get("replicas", 1))
        pods = (1 if replicas is None else replicas) * _parallelism(job_spec)
        path = f"{base}.template.spec.template.spec"
        where = f"{base}.replicas x {base}.template.spec.parallelism"
        members.append((_text(rjob.get("name")) or f"job{i}", GroupMember(spec, path, pods, where)))
    members.sort(key=lambda m: 0 if coordinator and m[0] == coordinator else 1)
    return members


def jobset(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    """A JobSet's pod templates, one per replicated Job (role: its name), each judged as a
    Job's pod is. No group is attached here: the rules read a group of pods whose command
    line does not say ``--nnodes`` as one engine Ray spreads over them
    (``ContainerContext.spread``), which is what a LeaderWorkerSet means and not what a
    JobSet does (its Jobs are as often N independent engines, batch inference). The JobSet
    kind (``rules.kinds``) groups its pods only when their vLLM says ``--nnodes``
    (``rules.crdgroups.leader_worker_gang``, over ``jobset_members``)."""
    kind = str(obj.get("kind", "JobSet"))
    return [
        PodTemplate(kind, name, namespace, m.spec, m.path, rjob, None, family=JOBSET)
        for rjob, m in jobset_members(obj)
    ]
