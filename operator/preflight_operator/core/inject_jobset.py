"""A JobSet pod's place in the group its JobSet declares (issue 26), and the group phase's
env of a JobSet or Kthena ModelServing pod (literal values) (the injection,
core/injection.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from preflight_contract import envnames
from preflight_operator.core.inject_devices import dra_claims, gpu_resources
from preflight_operator.core.inject_groups import field_ref, member_env, opted_out, runs_own_share
from preflight_operator.core.kthenaplace import KthenaPlace
from preflight_operator.core.rules import (
    COMPLETION_INDEX,
    JOBSET_COORDINATOR,
    JOBSET_JOB_INDEX,
    JOBSET_NAME,
    JOBSET_RJOB,
)

# -- JobSet (issue 26) ----------------------------------------------------------------------
#
# What JobSet and the Job controller write on a pod, read from their source
# (kubernetes-sigs/jobset at 08dfbdfd682714a9ab929633eca8dc95315187e7; rules/groups.py has
# the keys): JobSet's controller labels and annotates each Job's pod template with the
# JobSet's name and uid, the replicated Job's name, the Job's index in it (job-index, 0 to
# replicas-1), the restart attempt and, with spec.coordinator, the coordinator's stable
# address <jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>
# (pkg/controllers/jobset_controller.go constructJob, labelAndAnnotateObject,
# CoordinatorEndpoint); the Job controller adds the completion index (annotation and label
# batch.kubernetes.io/job-completion-index, 0 to completions-1; KEP-2214 "Pod detail") as
# it creates the pod. All of it is in the pod the webhook sees at CREATE. What no pod
# carries is the Jobs' parallelism (global-replicas counts Jobs, not pods): the size and
# this pod's place among all pods come from the JobSet's own spec, read by the webhook.
JOBSET_UID = "jobset.sigs.k8s.io/jobset-uid"
JOBSET_RESTARTS = "jobset.sigs.k8s.io/restart-attempt"  # pkg/constants RestartsKey
# The checker's largest group (preflight_check.group.MAX_GROUP_SIZE; the operator may not
# import the checker, tests/unit/test_inject_jobset.py holds them equal).
MAX_GROUP_MEMBERS = 1024
_MAX_REPLICATED_JOBS = 64


@dataclasses.dataclass(frozen=True)
class JobSetPlace:
    """A JobSet pod's place in the group its JobSet declares."""

    group_id: str  # <namespace>/<jobset>#<restart attempt>
    address: str  # the coordinator's stable address: the member 0 listens there
    size: int  # every pod of the JobSet: sum of replicas x parallelism
    index: int  # this pod's place; the coordinator's is 0


def jobset_name(pod: Mapping[str, Any]) -> str:
    """The JobSet that made the pod ("" when none says so)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    name = labels.get(JOBSET_NAME) if isinstance(labels, Mapping) else None
    return name if isinstance(name, str) and 0 < len(name) <= 253 else ""


def _whole(value: Any, default: int | None = None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= 1_000_000 else None
    if isinstance(value, str) and value.isdigit() and len(value) <= 7:
        return int(value)
    return None


def _meets(template: Any) -> bool:
    """Will a pod of this template get the check and meet? One of its containers runs its
    own share of a multi-node vLLM (runs_own_share) and asks for GPUs, and the template is
    not opted out: the injector would give it the check, as it gives this pod."""
    if not isinstance(template, Mapping):
        return False
    spec = template.get("spec")
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    if not isinstance(containers, list):
        return False
    return any(
        isinstance(c, Mapping) and runs_own_share(c) and bool(gpu_resources(c) or dra_claims(c))
        for c in containers
    )


def _opted_out_template(template: Any) -> bool:
    meta = template.get("metadata") if isinstance(template, Mapping) else None
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return isinstance(labels, Mapping) and opted_out(labels)


def _rjob_sizes(spec: Mapping[str, Any]) -> dict[str, tuple[int, int, int]] | str:
    """name -> (first member, replicas, parallelism) in spec order, or why not a group."""
    rjobs = spec.get("replicatedJobs")
    if not isinstance(rjobs, list) or not 0 < len(rjobs) <= _MAX_REPLICATED_JOBS:
        return f"spec.replicatedJobs: 1 to {_MAX_REPLICATED_JOBS} replicated Jobs expected"
    out: dict[str, tuple[int, int, int]] = {}
    first = 0
    for i, rjob in enumerate(rjobs):
        where = f"spec.replicatedJobs[{i}]"
        name = rjob.get("name") if isinstance(rjob, Mapping) else None
        job = rjob.get("template") if isinstance(rjob, Mapping) else None
        job_spec = job.get("spec") if isinstance(job, Mapping) else None
        if not isinstance(name, str) or not isinstance(job_spec, Mapping) or name in out:
            return f"{where}: no name or no Job template"
        where = f"{where} ({name[:63]})"
        if rjob.get("dependsOn"):
            return (
                f"{where}.dependsOn: its Jobs start only once another's are Ready or done, "
                "and the first ones' pods wait in their checks for them"
            )
        replicas = _whole(rjob.get("replicas"), 1)
        parallelism = _whole(job_spec.get("parallelism"), 1)
        completions = _whole(job_spec.get("completions"), parallelism)
        if replicas is None or parallelism is None or completions is None:
            return f"{where}: replicas, parallelism or completions is not a whole number"
        if replicas and parallelism and completions != parallelism:
            return (
                f"{where}.template.spec: completions {completions} is not parallelism "
                f"{parallelism}: not every pod of the Job runs at once"
            )
        if replicas and parallelism:
            mode = job_spec.get("completionMode", "Indexed")
            if mode != "Indexed":
                return f"{where}: completionMode {str(mode)[:20]}: its pods have no index"
            template = job_spec.get("template")
            if _opted_out_template(template):
                return f"{where}: its pods are opted out of the check: they would not meet"
            if not _meets(template):
                return (
                    f"{where} ({replicas} x {parallelism} pods): no container runs a share of a "
                    "multi-node vLLM (--nnodes, --node-rank, --headless, multi-node DP) with "
                    "GPUs, so its pods get no check to meet"
                )
        out[name] = (first, replicas, parallelism)
        first += replicas * parallelism
    return out


def _place_of(
    sizes: Mapping[str, tuple[int, int, int]], rjob: Any, job_index: Any, pod_index: Any
) -> int | None:
    found = sizes.get(rjob) if isinstance(rjob, str) else None
    job, pod = _whole(job_index, 0), _whole(pod_index, 0)
    if found is None or job is None or pod is None:
        return None
    first, replicas, parallelism = found
    if not (job < replicas and pod < parallelism):
        return None
    return first + job * parallelism + pod


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _owned_by_job(meta: Mapping[str, Any], job_name: str) -> bool:
    owners = meta.get("ownerReferences")
    return isinstance(owners, list) and any(
        isinstance(o, Mapping)
        and o.get("controller") is True
        and o.get("kind") == "Job"
        and o.get("name") == job_name
        for o in owners
    )


def jobset_place(pod: Mapping[str, Any], jobset: Mapping[str, Any]) -> JobSetPlace | str:
    """This pod's place in the group its JobSet declares, or why it has none.

    The group is every pod of the JobSet (``rules.groups.jobset_group`` counts the same),
    led by the coordinator JobSet names (``spec.coordinator``): without one JobSet names
    no leader, and none is guessed. Every member must come: each replicated Job's pods run
    a share of a multi-node vLLM with GPUs (so they get the check), all Jobs start together
    (no ``startupPolicy`` InOrder, no ``dependsOn``: a later Job waits for the first ones'
    pods to be Ready, which wait in their checks for it), all of a Job's pods at once
    (``completions`` = ``parallelism``), and the coordinator's name resolves before it is
    Ready (``network.enableDNSHostnames``, not ``publishNotReadyAddresses: false``).

    The index is the pod's place in the JobSet (replicated Jobs in spec order, then job
    index, then completion index) with the coordinator's place and 0 exchanged, so that
    the coordinator is the member that listens. The pod must be the JobSet's: its uid, its
    coordinator address and its Job's name agree with the JobSet read."""
    meta = _mapping(pod.get("metadata"))
    labels, notes = _mapping(meta.get("labels")), _mapping(meta.get("annotations"))

    def either(key: str) -> Any:
        return labels.get(key, notes.get(key))

    js_meta, spec = _mapping(jobset.get("metadata")), _mapping(jobset.get("spec"))
    name = str(js_meta.get("name", ""))
    if not name or name != jobset_name(pod) or js_meta.get("namespace") != meta.get("namespace"):
        return "the pod is not of this JobSet"
    uid = either(JOBSET_UID)
    if uid and js_meta.get("uid") and uid != js_meta.get("uid"):
        return "the pod's jobset-uid is not the JobSet's: made by an earlier JobSet of that name"
    coordinator = spec.get("coordinator")
    if not isinstance(coordinator, Mapping):
        return (
            "the JobSet names no leader: set spec.coordinator (the pod whose address JobSet "
            f"writes to {JOBSET_COORDINATOR}) for its checks to meet"
        )
    network = _mapping(spec.get("network"))
    if network.get("enableDNSHostnames") is not True:
        return "spec.network.enableDNSHostnames is not true: the coordinator has no DNS name"
    if network.get("publishNotReadyAddresses") is False:
        return (
            "spec.network.publishNotReadyAddresses is false: the coordinator's name resolves "
            "only once it is Ready, after its check"
        )
    startup = spec.get("startupPolicy")
    order = startup.get("startupPolicyOrder") if isinstance(startup, Mapping) else None
    sizes = _rjob_sizes(spec)
    if isinstance(sizes, str):
        return sizes
    if order == "InOrder" and len(sizes) > 1:
        return (
            "spec.startupPolicy InOrder: later Jobs start once the first ones' pods are "
            "Ready, and those wait in their checks for them"
        )
    size = sum(replicas * parallelism for _, replicas, parallelism in sizes.values())
    if not 2 <= size <= MAX_GROUP_MEMBERS:
        return f"{size} pods: a group is 2 to {MAX_GROUP_MEMBERS}"
    leader = _place_of(
        sizes, coordinator.get("replicatedJob"), coordinator.get("jobIndex"),
        coordinator.get("podIndex"),
    )  # fmt: skip
    if leader is None:
        return "spec.coordinator names no pod of the JobSet"
    rjob, job_index = either(JOBSET_RJOB), either(JOBSET_JOB_INDEX)
    place = _place_of(sizes, rjob, job_index, either(COMPLETION_INDEX))
    if place is None:
        return (
            f"the pod's replicated Job, job index or completion index ({COMPLETION_INDEX}) "
            "is not one of the JobSet's"
        )
    if not _owned_by_job(meta, f"{name}-{rjob}-{job_index}"):
        return f"the pod's controller is not the JobSet's Job {name}-{rjob}-{job_index}"
    subdomain = network.get("subdomain") or name
    address = (
        f"{name}-{coordinator.get('replicatedJob')}-{coordinator.get('jobIndex') or 0}-"
        f"{coordinator.get('podIndex') or 0}.{subdomain}"
    )
    if either(JOBSET_COORDINATOR) != address:
        return f"the pod's {JOBSET_COORDINATOR} is not the JobSet's spec.coordinator"
    index = 0 if place == leader else leader if place == 0 else place
    restarts = _whole(either(JOBSET_RESTARTS), 0) or 0
    group_id = f"{meta.get('namespace', '')}/{name}#{restarts}"
    return JobSetPlace(group_id, address, size, index)


def jobset_group_env(
    place: JobSetPlace | KthenaPlace, vllm: Mapping[str, Any], port: int
) -> list[dict[str, Any]]:
    """The group phase's env of a JobSet or Kthena ModelServing pod. Literal values, unlike
    a LeaderWorkerSet's downward-API references: a JobSet's index is arithmetic over the
    JobSet's spec (which the downward API cannot do), a ModelServing's is an env value of
    the pod (no label says it), and every value is in the pod at CREATE."""
    return [
        {"name": envnames.GROUP_PORT, "value": str(port)},
        {"name": envnames.GROUP_ADDRESS, "value": place.address},
        {"name": envnames.GROUP_SIZE, "value": str(place.size)},
        {"name": envnames.GROUP_INDEX, "value": str(place.index)},
        {"name": envnames.GROUP_ID, "value": place.group_id},
        {"name": envnames.NODE_NAME, "valueFrom": field_ref("spec.nodeName")},
        {"name": envnames.POD_NAME, "valueFrom": field_ref("metadata.name")},
        {"name": envnames.POD_UID, "valueFrom": field_ref("metadata.uid")},
        *member_env(vllm),
    ]
