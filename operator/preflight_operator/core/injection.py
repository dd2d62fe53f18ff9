"""The injection of the preflight check into a Pod (pure).

Two init containers go before every existing one (docs/dev/OPERATOR_CONTRACT.md):

1. ``preflight-install`` (the operator's image) copies the checker zipapp into an emptyDir;
2. ``preflight-check`` runs it with python3 from the vLLM container's own image (or the
   dedicated check image), with the vLLM container's GPU requests and limits — the kubelet
   hands an init container's devices on to the app containers of the pod — its whole env,
   its /dev/shm mount, the plan and policy as PREFLIGHT_* variables, and, for the model
   checks, the vLLM command line (PREFLIGHT_VLLM_ARGS) and the vLLM container's mounts that
   hold the model or the Hugging Face cache (read-only).

``plan_injection`` never raises on odd input: it returns a Skip with the reason, and the
webhook admits the pod unchanged (and logs it).
"""

from __future__ import annotations

import copy
import dataclasses
import posixpath
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from preflight_contract import envnames
from preflight_contract.check_ids import CHECKS, DEEP
from preflight_contract.modelsource import model_writers_value
from preflight_contract.redact import secret_env_names
from preflight_contract.reuse import Offer, format_offers, plan_shape
from preflight_operator.core import constants
from preflight_operator.core.kthenaplace import KthenaPlace, kthena_place
from preflight_operator.core.operatorconfig import InjectionConfig, PolicySpec
from preflight_operator.core.rules import (
    COMPLETION_INDEX,
    JOBSET_COORDINATOR,
    JOBSET_JOB_INDEX,
    JOBSET_NAME,
    JOBSET_RJOB,
    RAY_HEAD,
    RAY_MEMBER,
    has_unknown,
    nvidia_gpus,
    ray_start,
    unknown_names,
)
from preflight_operator.core.static import Plan

SHM_PATH = "/dev/shm"
TERMINATION_MESSAGE_PATH = "/dev/termination-log"
# The injected containers run as the image's own user with nothing else. RuntimeDefault
# seccomp is safe for them: they copy a file, read /proc and /dev, and open CUDA devices.
SECURITY_CONTEXT: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
# No API token in the injected containers. The API server's ServiceAccount admission plugin
# adds its token mount to every container of the pod, and runs again after a webhook
# changed the pod (admission reinvocation), so our init containers would get it too. The
# Pod API has no per-container opt-out (automountServiceAccountToken is pod-wide, and
# vLLM's container may need the token); the plugin skips a container that already mounts
# something at this path (kubernetes v1.34.4 plugin/pkg/admission/serviceaccount/
# admission.go, mountServiceAccountToken). So each injected container mounts an empty,
# read-only emptyDir there: the path exists, and holds no token.
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
NO_TOKEN_VOLUME = "preflight-no-token"
NO_TOKEN_MOUNT: Mapping[str, Any] = {
    "name": NO_TOKEN_VOLUME,
    "mountPath": TOKEN_MOUNT_PATH,
    "readOnly": True,
}


@dataclasses.dataclass(frozen=True)
class Skip:
    """Nothing injected, and why (for the log and the injections metric)."""

    reason: str
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class Injection:
    """The new values of the fields the webhook replaces."""

    init_containers: list[dict[str, Any]]
    volumes: list[dict[str, Any]]
    labels: dict[str, str]
    container: str
    # admission warnings the mutating webhook returns with the patch (what it read and
    # could not use, e.g. a Workload API gang: webhooks.py)
    warnings: tuple[str, ...] = ()
    # the check goes in without a plan the rules read: why (PREFLIGHT_PLAN_UNKNOWN's text)
    plan_unknown: str = ""


def json_patch(pod: Mapping[str, Any], injection: Injection) -> list[dict[str, Any]]:
    """The JSON patch (RFC 6902) the mutating webhook answers with, only what changes (a
    pod injected already gets no op). ``add`` replaces a member that exists and creates one
    that does not, so it applies whether the pod had init containers, volumes or labels or
    not; label keys are escaped (``/`` is ``~1``)."""
    spec = pod.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    ops: list[dict[str, Any]] = [
        {"op": "add", "path": f"/spec/{field}", "value": value}
        for field, value in (
            ("initContainers", injection.init_containers),
            ("volumes", injection.volumes),
        )
        if spec.get(field) != value
    ]
    meta = pod.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if not isinstance(meta, Mapping):
        ops.append({"op": "add", "path": "/metadata", "value": {"labels": dict(injection.labels)}})
    elif not isinstance(labels, Mapping):
        ops.append({"op": "add", "path": "/metadata/labels", "value": dict(injection.labels)})
    else:
        for key, value in injection.labels.items():
            if labels.get(key) != value:
                escaped = key.replace("~", "~0").replace("/", "~1")
                ops.append({"op": "add", "path": f"/metadata/labels/{escaped}", "value": value})
    return ops


def is_gpu_resource(name: str) -> bool:
    return name == constants.GPU_RESOURCE or name.startswith(constants.MIG_RESOURCE_PREFIX)


def gpu_resources(container: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The container's GPU (and MIG) requests and limits, as they are written."""
    resources = container.get("resources") or {}
    out: dict[str, dict[str, Any]] = {}
    for section in ("limits", "requests"):
        values = resources.get(section) or {}
        if not isinstance(values, Mapping):
            continue
        picked = {k: v for k, v in values.items() if is_gpu_resource(str(k))}
        if picked:
            out[section] = picked
    return out


# RDMA device-plugin resources (issue 26): the check container asks for the same ones as
# vLLM's, so that its rdma check and its group all-reduce see the /dev/infiniband nodes vLLM
# will (an init container's devices are reused by the app containers: the pod's request
# stays the larger of the two). rdma/: Mellanox k8s-rdma-shared-dev-plugin's default
# resourcePrefix; vpc.amazonaws.com/efa: the AWS EFA device plugin.
RDMA_RESOURCE_PREFIXES = ("rdma/",)
RDMA_RESOURCES = frozenset(("vpc.amazonaws.com/efa",))


def is_rdma_resource(name: str) -> bool:
    return name in RDMA_RESOURCES or name.startswith(RDMA_RESOURCE_PREFIXES)


def device_resources(container: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What the check container requests of vLLM's: its GPUs and its RDMA devices."""
    out = gpu_resources(container)
    resources = container.get("resources") or {}
    for section in ("limits", "requests"):
        values = resources.get(section) if isinstance(resources, Mapping) else None
        if isinstance(values, Mapping):
            rdma = {k: v for k, v in values.items() if is_rdma_resource(str(k))}
            if rdma:
                out.setdefault(section, {}).update(rdma)
    return out


def _security_context(vllm: Mapping[str, Any]) -> dict[str, Any]:
    """Ours, plus IPC_LOCK when vLLM's container adds it beside RDMA devices (issue 26):
    RDMA memory registration needs locked memory, so with the devices but without the
    capability the check's NCCL would fail where vLLM's does not. Nothing else of vLLM's."""
    out = copy.deepcopy(dict(SECURITY_CONTEXT))
    context = vllm.get("securityContext")
    caps = context.get("capabilities") if isinstance(context, Mapping) else None
    added = caps.get("add") if isinstance(caps, Mapping) else None
    rdma = any(is_rdma_resource(k) for v in device_resources(vllm).values() for k in v)
    if rdma and isinstance(added, list) and "IPC_LOCK" in added:
        out["capabilities"] = {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    return out


def dra_claims(container: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The container's DRA claims (resources.claims). The check container names the same
    pod claims, so it sees the devices vLLM will (a pod's containers may share a claim)."""
    resources = container.get("resources") or {}
    claims = resources.get("claims") if isinstance(resources, Mapping) else None
    if not isinstance(claims, list):
        return []
    return [copy.deepcopy(dict(c)) for c in claims if isinstance(c, Mapping) and c.get("name")]


def _names(items: Any) -> set[str]:
    return {str(i.get("name")) for i in items or [] if isinstance(i, Mapping)}


def already_injected(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    ours = {constants.INSTALL_CONTAINER, constants.CHECK_CONTAINER}
    return bool(ours & _names(spec.get("initContainers")))


def runtime_skips(disabled: tuple[str, ...]) -> list[str]:
    """The policy's disabled ids that are runtime checks. A policy lists rule ids and check
    ids together; the checker rejects ids it does not know (exit 2), so rule ids stay out."""
    return [check_id for check_id in disabled if check_id in CHECKS]


def preflight_env(plan: Plan | None, policy: PolicySpec, deadline_s: int) -> list[dict[str, str]]:
    """The PREFLIGHT_* env; without a plan (the rules could not read it) no TP, PP or
    DP-local: the checker then validates every GPU it sees (plan_unknown_env)."""
    sizes = {} if plan is None else {
        envnames.TP: str(plan.tp),
        envnames.PP: str(plan.pp),
        envnames.DP_LOCAL: str(plan.dp_local),
    }  # fmt: skip
    env = {
        **sizes,
        envnames.ACTION: policy.action,
        envnames.TIER: policy.tier,
        envnames.SHM_MIN: policy.thresholds.shm_min,
        # injection.timeoutSeconds: the check stops waiting then and reports what hung.
        envnames.DEADLINE: str(deadline_s),
        # spec.groups.socketFallback, always written: the policy's word, never a value
        # copied from the vLLM container (read only by a group member's group-transport)
        envnames.SOCKET_FALLBACK: policy.socket_fallback.lower(),
    }
    skips = runtime_skips(policy.disabled_checks)
    if skips:
        env[envnames.SKIP] = ",".join(skips)
    if policy.thresholds.gpu_memory_utilization is not None:
        env[envnames.GPU_MEMORY_UTILIZATION] = str(policy.thresholds.gpu_memory_utilization)
    # The root filesystem is read-only: no byte code, temporary files in our emptyDir.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["TMPDIR"] = constants.MOUNT_PATH
    return [{"name": k, "value": v} for k, v in env.items()]


LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"
LWS_GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"


def in_lws_group(pod: Mapping[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return isinstance(labels, Mapping) and bool(labels.get(LWS_NAME_LABEL))


# vLLM options by which every pod of the group runs vLLM itself (multiprocessing over nodes,
# multi-node data parallelism), so every member gets the check and can meet the others.
_OWN_SHARE_OPTIONS = (
    "--nnodes",
    "--node-rank",
    "--headless",
    "--data-parallel-address",
    "--data-parallel-size-local",
    "--data-parallel-start-rank",
    "-dpl",
    "-dpr",
)


def runs_own_share(vllm: Mapping[str, Any]) -> bool:
    """The group phase needs every member to run the check. Ray workers (``ray start``)
    have no vLLM container and get no check, so a Ray group's leader would wait for
    members that never come: only the multiprocessing and multi-node DP shapes, whose
    workers run vLLM, meet."""
    words = " ".join(str(w) for key in ("command", "args") for w in (vllm.get(key) or []))
    tokens = {t.split("=", 1)[0].replace("_", "-") for t in words.split()}
    return any(option in tokens for option in _OWN_SHARE_OPTIONS)


def ray_role(container: Mapping[str, Any]) -> str | None:
    """ "head" or "worker" when the container starts a Ray node (the LeaderWorkerSet Ray
    pattern: the leader `ray start --head ... && vllm serve`, the workers `ray start
    --address=$(LWS_LEADER_ADDRESS):6379 --block`), else None. Read by the rules'
    ``spread.ray_start`` (one reader); these are its names in the injector's words."""
    role = ray_start(container)
    return "head" if role == RAY_HEAD else "worker" if role == RAY_MEMBER else None


def ray_group_ready(lws: Mapping[str, Any]) -> bool:
    """Every pod of a Ray-pattern LeaderWorkerSet gets the check: its leader starts the
    Ray head and vLLM, and each worker's Ray container requests NVIDIA GPUs (the injector
    gives those the check with their own GPUs). Only then may the group meet: a leader
    waiting for a worker that has no check would fail a healthy group."""
    lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    if not isinstance(lwt, Mapping) or int(lwt.get("size") or 1) <= 1:
        return False
    worker = ((lwt.get("workerTemplate") or {}).get("spec") or {}).get("containers") or []
    leader_template = lwt.get("leaderTemplate") or lwt.get("workerTemplate") or {}
    leader = (leader_template.get("spec") or {}).get("containers") or []
    for template in (lwt.get("leaderTemplate"), lwt.get("workerTemplate")):
        labels = ((template or {}).get("metadata") or {}).get("labels") or {}
        if isinstance(labels, Mapping) and opted_out(labels):
            return False
    heads = [c for c in leader if isinstance(c, Mapping) and ray_role(c) == "head"]
    workers = [c for c in worker if isinstance(c, Mapping) and ray_role(c) == "worker"]
    return bool(heads) and bool(workers) and all(nvidia_gpus(c) > 0 for c in workers)


def _field(path: str) -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": path}}


def _member_env(vllm: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What every member adds for the others to compare: its image; the engine arguments
    are PREFLIGHT_VLLM_ARGS (the rules' reading, set by check_container), and a Ray worker,
    which has none, is named so that their absence is expected."""
    env: list[dict[str, Any]] = []
    if ray_role(vllm) == "worker":
        env.append({"name": envnames.GROUP_ROLE, "value": envnames.ROLE_RAY_WORKER})
    if isinstance(vllm.get("image"), str) and vllm["image"]:  # issue 26: members compare it
        env.append({"name": envnames.GROUP_IMAGE, "value": vllm["image"][:512]})
    return env


def group_env(pod: Mapping[str, Any], vllm: Mapping[str, Any], port: int) -> list[dict[str, Any]]:
    """What the check of a LeaderWorkerSet pod needs for the group phase (docs/CHECKS.md,
    "Group phase"). LeaderWorkerSet itself gives every container, init containers too,
    LWS_LEADER_ADDRESS and LWS_GROUP_SIZE; the worker and group index and the node come
    from the downward API (the labels exist by the time the kubelet starts the container).
    The arguments the group compares are PREFLIGHT_VLLM_ARGS (the rules' reading, set by
    check_container); a Ray worker, which has none, is named so that their absence is
    expected."""
    meta = pod.get("metadata") or {}
    lws = str((meta.get("labels") or {}).get(LWS_NAME_LABEL, ""))
    env: list[dict[str, Any]] = [
        {"name": envnames.GROUP_PORT, "value": str(port)},
        {
            "name": envnames.GROUP_INDEX,
            "valueFrom": _field(f"metadata.labels['{LWS_WORKER_INDEX_LABEL}']"),
        },
        {
            "name": envnames.GROUP_SIZE,
            "valueFrom": _field(f"metadata.annotations['{LWS_SIZE_ANNOTATION}']"),
        },
        {
            "name": envnames.GROUP_NUMBER,
            "valueFrom": _field(f"metadata.labels['{LWS_GROUP_INDEX_LABEL}']"),
        },
        # <namespace>/<name>-<group index>: names the group in messages and results
        {
            "name": envnames.GROUP_ID,
            "value": f"{meta.get('namespace', '')}/{lws}-$(PREFLIGHT_GROUP_NUMBER)",
        },
        {"name": envnames.NODE_NAME, "valueFrom": _field("spec.nodeName")},
        # who this member is, for the leader to list and the operator to match
        {"name": envnames.POD_NAME, "valueFrom": _field("metadata.name")},
        {"name": envnames.POD_UID, "valueFrom": _field("metadata.uid")},
    ]
    return env + _member_env(vllm)


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
        {"name": envnames.NODE_NAME, "valueFrom": _field("spec.nodeName")},
        {"name": envnames.POD_NAME, "valueFrom": _field("metadata.name")},
        {"name": envnames.POD_UID, "valueFrom": _field("metadata.uid")},
        *_member_env(vllm),
    ]


def _with_env(env: list[dict[str, Any]], added: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``env`` then ``added``, without an earlier entry of a name ``added`` sets (one copied
    from the vLLM container): each name once, the injector's value."""
    names = {e["name"] for e in added}
    return [e for e in env if e.get("name") not in names] + added


# PREFLIGHT_VLLM_ARGS: a command line longer than this is left out (the model checks then
# skip) rather than copied into every pod's spec again.
MAX_VLLM_ARGS_CHARS = 16 * 1024
_ENV_VAR_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*\Z")  # the API server's rule
_ESCAPED_MARKER = re.compile(r"\x00\$\$\(([^\x00]*)\)\x00")
_DEFERRED_MARKER = re.compile(r"\x00\$\$\$\$\(([^\x00]*)\)\x00")


def _is_config_flag(word: str) -> bool:
    return word == "--config" or word.startswith("--config=")


def vllm_args_value(argv: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
    """PREFLIGHT_VLLM_ARGS for the check: the command line as the rules read it (env and
    shell expanded), for the kubelet to hand over as written; and the names of the
    variables whose values the rules could not know (a Secret, a ConfigMap, a downward-API
    field), which the *checker* fills in (PREFLIGHT_VLLM_ARGS_DEFERRED).

    The kubelet expands ``$(NAME)`` in env values (``$$`` is a literal ``$``), so every
    ``$`` is doubled. A value the rules could not know used to become ``$(NAME)`` inside the
    quoted line, for the kubelet to paste in: a value holding an apostrophe then unbalanced
    the quoting, the checker could not split the line and exited 2, blocking working pods
    under Warn and Audit (issue 34; 8 of 72 in the adversarial round). No quoting survives
    text pasted in unseen, so those words are written for two rounds of expansion instead:
    ``$`` as ``$$$$`` and the reference as ``$$(NAME)``, which the kubelet turns into ``$$``
    and ``$(NAME)``; the checker splits the words first and then expands each word as the
    kubelet would (preflight_check/options.py). Without such a name the line is written for
    the kubelet's one round, as before.

    None (nothing passed, the model checks skip) when a part stayed unknown that is no
    variable (shell arithmetic), when vLLM reads a ``--config`` file (mounted in the vLLM
    container, not in the check's), or past MAX_VLLM_ARGS_CHARS."""
    deferred: list[str] = []
    for word in argv:
        if _is_config_flag(word):
            return None
        names = unknown_names(word)
        if any(not _ENV_VAR_NAME.match(name) for name in names):
            return None
        deferred += [n for n in names if n not in deferred]
    words: list[str] = []
    for word in argv:
        if deferred:
            escaped = _DEFERRED_MARKER.sub(r"$$(\1)", word.replace("$", "$$$$"))
        else:
            escaped = _ESCAPED_MARKER.sub(r"$(\1)", word.replace("$", "$$"))
        if has_unknown(escaped):
            return None
        words.append(escaped)
    text = shlex.join(words)
    if not words or len(text) > MAX_VLLM_ARGS_CHARS:
        return None
    return text, tuple(deferred)


# Where the checker (preflight_contract.modelsource) looks for a model's files, as vLLM does:
# the model path itself, HF_HUB_CACHE, HF_HOME, or ~/.cache/huggingface.
HF_CACHE_ENV = ("HF_HOME", "HF_HUB_CACHE")
HF_DEFAULT_CACHE = "/.cache/huggingface"


def literal_env(vllm: Mapping[str, Any]) -> dict[str, str]:
    """The container's env entries of a literal value without $( ) references (the last of
    a name wins, as in the kubelet)."""
    out: dict[str, str] = {}
    for e in vllm.get("env") or []:
        if isinstance(e, Mapping) and isinstance(e.get("value"), str) and "$(" not in e["value"]:
            out[str(e.get("name"))] = e["value"]
    return out


def _related(mount_path: str, path: str) -> bool:
    """The mount holds ``path``, or is part of it (a cache's hub/ on its own volume)."""
    mount, wanted = posixpath.normpath(mount_path), posixpath.normpath(path)
    if mount == "/" or wanted == "/":
        return False
    return mount == wanted or wanted.startswith(mount + "/") or mount.startswith(wanted + "/")


def model_mounts(vllm: Mapping[str, Any], model: str | None) -> list[dict[str, Any]]:
    """The vLLM container's mounts that hold the model or the Hugging Face cache, read-only.

    The model counts when it is an absolute path (a mounted directory); HF_HOME and
    HF_HUB_CACHE when the container sets them to a literal path; the default cache is any
    mount at (or inside, or holding) ``<dir>/.cache/huggingface``: the image's HOME is not
    known here. Never the
    API token's path, nor /dev/shm (mounted as before); mountPropagation is dropped (the
    check is not privileged)."""
    wanted: list[str] = []
    if model and model.startswith("/") and not has_unknown(model):
        wanted.append(model)
    env = literal_env(vllm)
    wanted += [env[name] for name in HF_CACHE_ENV if env.get(name, "").startswith("/")]
    if env.get("HOME", "").startswith("/"):
        wanted.append(env["HOME"].rstrip("/") + HF_DEFAULT_CACHE)
    out: list[dict[str, Any]] = []
    for mount in vllm.get("volumeMounts") or []:
        if not isinstance(mount, Mapping) or not isinstance(mount.get("mountPath"), str):
            continue
        path = posixpath.normpath(mount["mountPath"])
        if path == SHM_PATH or _related(path, TOKEN_MOUNT_PATH):
            continue
        if _related(path, constants.MOUNT_PATH):  # our emptyDir's place
            continue
        if mount.get("name") in (constants.VOLUME_NAME, NO_TOKEN_VOLUME):
            continue
        default_cache = (
            path.endswith((HF_DEFAULT_CACHE, "/.cache")) or HF_DEFAULT_CACHE + "/" in path
        )
        if default_cache or any(_related(path, w) for w in wanted):
            copied = {k: copy.deepcopy(v) for k, v in mount.items() if k != "mountPropagation"}
            copied["readOnly"] = True
            out.append(copied)
    return out


# Volumes the pod cannot write: their content at the check is final.
_READ_ONLY_SOURCES = ("configMap", "secret", "downwardAPI", "projected")


def _subpath(mount: Mapping[str, Any]) -> str | None:
    """The part of its volume a mount shows, as a path inside the volume ("" the whole
    volume); None when not known here (a subPathExpr, filled by the kubelet)."""
    if mount.get("subPathExpr"):
        return None
    sub = mount.get("subPath")
    if not isinstance(sub, str) or not sub.strip("/"):
        return ""
    return posixpath.normpath(sub.strip("/"))


def _overlap(a: str | None, b: str | None) -> bool:
    if a is None or b is None or not a or not b:
        return True
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _model_parts(vllm: Mapping[str, Any], model: str | None) -> dict[str, list[str | None]]:
    """Volume name -> the parts of it (paths inside the volume) the check reads the model
    from: a directory --model only (its own volume), else the Hugging Face cache's mounts
    (model_mounts)."""
    directory = bool(model and model.startswith("/") and not has_unknown(model))
    parts: dict[str, list[str | None]] = {}
    for mount in model_mounts(vllm, model):
        name, path, sub = mount.get("name"), posixpath.normpath(mount["mountPath"]), _subpath(mount)
        if not isinstance(name, str):
            continue
        if directory and model is not None:
            if not _related(path, model):
                continue
            inside = posixpath.relpath(posixpath.normpath(model), path)
            if sub is not None and inside != "." and not inside.startswith(".."):
                sub = posixpath.join(sub, inside) if sub else inside
        parts.setdefault(name, []).append(sub)
    return parts


def model_writers(spec: Mapping[str, Any], vllm: Mapping[str, Any], model: str | None) -> list[str]:
    """The pod's init containers (native sidecars too) that can write where the check reads
    the model: they run after the check (OPERATOR_CONTRACT.md), so a partial copy it sees
    may still be finished (an `aws s3 sync`, `gsutil rsync`, `huggingface-cli download`
    into the volume). One counts when it mounts the same volume, not readOnly, over the
    model's part of it: compared inside the volume (subPath), since each container mounts
    it where it likes; a subPathExpr may be any part, so it counts. A volume nobody can
    write (a ConfigMap, a read-only claim) has no writer. In the pod's order, bounded and
    name-checked by model_writers_value."""
    parts = _model_parts(vllm, model)
    for volume in spec.get("volumes") or []:
        name = volume.get("name") if isinstance(volume, Mapping) else None
        if not isinstance(volume, Mapping) or not isinstance(name, str) or name not in parts:
            continue
        sources = [v for k, v in volume.items() if k != "name"]
        if any(k in volume for k in _READ_ONLY_SOURCES) or any(
            isinstance(v, Mapping) and v.get("readOnly") is True for v in sources
        ):
            del parts[name]
    out: list[object] = []
    for container in spec.get("initContainers") or []:
        if not isinstance(container, Mapping):
            continue
        for mount in container.get("volumeMounts") or []:
            if not isinstance(mount, Mapping) or mount.get("readOnly") is True:
                continue
            volume_name = mount.get("name")
            wanted = parts.get(volume_name) if isinstance(volume_name, str) else None
            if wanted and any(_overlap(_subpath(mount), part) for part in wanted):
                out.append(container.get("name"))
                break
    value = model_writers_value(out)
    return value.split(",") if value else []


def model_writers_env(
    env: list[dict[str, Any]], spec: Mapping[str, Any], vllm: Mapping[str, Any], model: str | None
) -> list[dict[str, Any]]:
    """PREFLIGHT_MODEL_WRITERS when the pod has such writers, in place of a value copied
    from the vLLM container's env, before PREFLIGHT_VLLM_ARGS (which stays last)."""
    writers = model_writers(spec, vllm, model)
    if not writers:
        return env
    kept = [e for e in env if e.get("name") != envnames.MODEL_WRITERS]
    at = next((i for i, e in enumerate(kept) if e.get("name") == envnames.VLLM_ARGS), len(kept))
    kept[at:at] = [{"name": envnames.MODEL_WRITERS, "value": ",".join(writers)}]
    return kept


def _merged_resources(
    base: Mapping[str, Any],
    gpus: Mapping[str, Mapping[str, Any]],
    claims: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {k: dict(v) for k, v in base.items() if isinstance(v, Mapping)}
    for section, values in gpus.items():
        out.setdefault(section, {}).update(values)
    if claims:
        out["claims"] = claims
    return out


def reuse_env(
    env: list[dict[str, Any]],
    image: object,
    plan: Plan | None,
    reuse: Callable[[str, str], Sequence[Offer]] | None,
) -> list[dict[str, Any]]:
    """Verdict reuse (core/verdictreuse.py): the deep passes this pod may reuse, and its node
    from the downward API. Always written, "[]" when none (the fast tier, no lookup), so a
    value copied from the vLLM container's env (or its envFrom, which env outranks) never
    reaches the check: only the operator's offers do."""
    offered: Sequence[Offer] = ()
    if reuse is not None and plan is not None:  # no plan, no shape to match a pass on
        offered = reuse(str(image or ""), plan_shape(plan.tp, plan.pp, plan.dp_local))
    ours = {envnames.DEEP_REUSE, envnames.NODE_NAME}
    kept = [e for e in env if e.get("name") not in ours]
    # before PREFLIGHT_VLLM_ARGS, which stays last (check_container says why)
    at = next((i for i, e in enumerate(kept) if e.get("name") == envnames.VLLM_ARGS), len(kept))
    kept[at:at] = [
        {"name": envnames.DEEP_REUSE, "value": format_offers(offered)},
        {"name": envnames.NODE_NAME, "valueFrom": _field("spec.nodeName")},
    ]
    return kept


def secret_env(vllm: Mapping[str, Any]) -> list[dict[str, str]]:
    """PREFLIGHT_SECRET_ENV: the vLLM container's env names whose values come from a Secret
    (``PREFIX*`` for an envFrom Secret). The checker cannot tell at run time which of its
    variables came from one, and hides their values in all it writes (issue 36)."""
    names = secret_env_names(vllm)
    return [{"name": envnames.SECRET_ENV, "value": ",".join(names)}] if names else []


def check_container(
    vllm: Mapping[str, Any],
    plan: Plan | None,
    policy: PolicySpec,
    config: InjectionConfig,
    mode: str,
    *,
    argv: Sequence[str] = (),
    model: str | None = None,
) -> dict[str, Any]:
    image = vllm.get("image") if mode == "WorkloadImage" else config.check_image
    ours = preflight_env(plan, policy, config.timeout_seconds) + secret_env(vllm)
    vllm_args = vllm_args_value(argv)
    if vllm_args is not None:
        text, deferred = vllm_args
        if deferred:
            ours.append({"name": envnames.VLLM_ARGS_DEFERRED, "value": ",".join(deferred)})
        # last: the kubelet expands its $(NAME) against every variable before it
        ours.append({"name": envnames.VLLM_ARGS, "value": text})
    names = {e["name"] for e in ours}
    env = [
        copy.deepcopy(e)
        for e in vllm.get("env") or []
        if isinstance(e, Mapping) and e.get("name") not in names
    ]
    env += ours
    mounts = [
        {"name": constants.VOLUME_NAME, "mountPath": constants.MOUNT_PATH},
        dict(NO_TOKEN_MOUNT),
    ] + [
        copy.deepcopy(m)
        for m in vllm.get("volumeMounts") or []
        if isinstance(m, Mapping) and m.get("mountPath") == SHM_PATH
    ]
    mounts += model_mounts(vllm, model)
    container: dict[str, Any] = {
        "name": constants.CHECK_CONTAINER,
        "image": image,
        "imagePullPolicy": config.image_pull_policy,
        "command": ["python3", constants.ZIPAPP_PATH, "check"],
        "env": env,
        "resources": _merged_resources(config.resources, device_resources(vllm), dra_claims(vllm)),
        "volumeMounts": mounts,
        "terminationMessagePath": TERMINATION_MESSAGE_PATH,
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": _security_context(vllm),
    }
    if vllm.get("envFrom"):
        container["envFrom"] = copy.deepcopy(vllm["envFrom"])
    return container


PLAN_UNKNOWN_DEFAULT = "the parallel plan of the vLLM command line is unknown"
MAX_PLAN_UNKNOWN_CHARS = 300


def plan_unknown_value(why: str) -> str:
    """PREFLIGHT_PLAN_UNKNOWN: why the plan is unknown, one line, bounded. It quotes the
    manifest (the rules' finding), so every ``$`` is doubled: the kubelet expands
    ``$(NAME)`` in env values, and the checker must get the text, not a variable's value."""
    line = " ".join(str(why or PLAN_UNKNOWN_DEFAULT).split())
    if len(line) > MAX_PLAN_UNKNOWN_CHARS:
        line = line[: MAX_PLAN_UNKNOWN_CHARS - 1] + "\u2026"
    return line.replace("$", "$$")


def plan_unknown_env(env: list[dict[str, Any]], why: str) -> list[dict[str, Any]]:
    """``env`` with PREFLIGHT_PLAN_UNKNOWN (in place of a value copied from the vLLM
    container) and without PREFLIGHT_TP/PP/DP_LOCAL copied from it: the checker must not
    take a plan the rules did not read. Before PREFLIGHT_VLLM_ARGS, which stays last."""
    dropped = {envnames.PLAN_UNKNOWN, envnames.TP, envnames.PP, envnames.DP_LOCAL}
    kept = [e for e in env if e.get("name") not in dropped]
    at = next((i for i, e in enumerate(kept) if e.get("name") == envnames.VLLM_ARGS), len(kept))
    kept[at:at] = [{"name": envnames.PLAN_UNKNOWN, "value": plan_unknown_value(why)}]
    return kept


def install_container(config: InjectionConfig) -> dict[str, Any]:
    return {
        "name": constants.INSTALL_CONTAINER,
        "image": config.installer_image,
        "imagePullPolicy": config.image_pull_policy,
        "command": [constants.INSTALL_COMMAND, constants.ZIPAPP_PATH],
        "resources": {
            "requests": {"cpu": "10m", "memory": "32Mi"},
            "limits": {"memory": "64Mi"},
        },
        "volumeMounts": [
            {"name": constants.VOLUME_NAME, "mountPath": constants.MOUNT_PATH},
            dict(NO_TOKEN_MOUNT),
        ],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": copy.deepcopy(dict(SECURITY_CONTEXT)),
    }


def _find_container(pod: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for container in (pod.get("spec") or {}).get("containers") or []:
        if isinstance(container, Mapping) and container.get("name") == name:
            return container
    return None


def _is_sidecar(pod: Mapping[str, Any], name: str) -> bool:
    """``name`` is an init container with restartPolicy Always (a native sidecar)."""
    spec = pod.get("spec")
    found = spec.get("initContainers") if isinstance(spec, Mapping) else None
    for container in found if isinstance(found, list) else []:
        if isinstance(container, Mapping) and container.get("name") == name:
            return container.get("restartPolicy") == "Always"
    return False


def _group_phase_env(
    pod: Mapping[str, Any],
    vllm: Mapping[str, Any],
    port: int,
    ray_group: bool,
    jobset: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """The group phase's env of a pod whose every member runs the check (none else): a
    LeaderWorkerSet's, a JobSet's where jobset_place finds its place, a Kthena
    ModelServing role's where kthena_place does (issue 39 item 2)."""
    if in_lws_group(pod) and (runs_own_share(vllm) or (ray_group and ray_role(vllm))):
        return group_env(pod, vllm, port)
    if not runs_own_share(vllm):
        return []
    if jobset is not None:
        place = jobset_place(pod, jobset)
        return jobset_group_env(place, vllm, port) if isinstance(place, JobSetPlace) else []
    kthena = kthena_place(pod, literal_env(vllm), MAX_GROUP_MEMBERS)
    return jobset_group_env(kthena, vllm, port) if isinstance(kthena, KthenaPlace) else []


def plan_injection(
    pod: Mapping[str, Any],
    *,
    container: str,
    plan: Plan | None,
    policy: PolicySpec,
    config: InjectionConfig,
    workload_label: str | None,
    argv: Sequence[str] = (),
    model: str | None = None,
    ray_group: bool = False,
    reuse: Callable[[str, str], Sequence[Offer]] | None = None,
    jobset: Mapping[str, Any] | None = None,
    plan_unknown: str = "",
    plan_gpus_counted: bool = False,
) -> Injection | Skip:
    """The init containers, volumes and labels of ``pod`` after injection, or a Skip.
    ``plan`` None: the rules recognised vLLM in ``container`` but could not read its
    parallel plan (``plan_unknown`` says why); the check is injected all the same, told
    so (PREFLIGHT_PLAN_UNKNOWN), and meets no group: where the reading is uncertain is
    where the runtime check is most needed. It needs NVIDIA GPUs it can name: an
    nvidia.com/gpu request, or DRA claims the rules counted as NVIDIA's
    (``plan_gpus_counted``); a claim of a class not read may be another vendor's, where
    an NVIDIA check would fail a healthy pod.
    ``ray_group``: the pod belongs to a Ray-pattern LeaderWorkerSet whose every pod gets
    the check (ray_group_ready), so its check meets the others in the group phase.
    ``jobset``: the JobSet that made the pod, as read by the webhook (None: not one, or
    unreadable): its pods meet as one group where jobset_place finds this pod's place."""
    spec = pod.get("spec") or {}
    if already_injected(pod):
        return Skip("already-injected")
    if not policy.injection_enabled:
        return Skip("disabled-by-policy")
    vllm = _find_container(pod, container)
    if vllm is None and _is_sidecar(pod, container):
        # vLLM as a native sidecar starts in initContainers order, beside the others: the
        # check is not placed before it (not supported yet); the rules still judge it
        return Skip("vllm-in-sidecar", f"container {container!r} is a native sidecar")
    if vllm is None:
        return Skip("no-vllm-container", f"container {container!r} is not in the pod")
    if not gpu_resources(vllm) and not dra_claims(vllm):
        return Skip("no-gpu-request", f"container {container!r} requests no nvidia.com/gpu")
    if plan is None and not gpu_resources(vllm) and not plan_gpus_counted:
        return Skip(
            "plan-unknown-claims",
            f"container {container!r}: plan unknown and no NVIDIA GPU counted in its DRA claims",
        )
    taken = {constants.VOLUME_NAME, NO_TOKEN_VOLUME} & _names(spec.get("volumes"))
    if taken:
        return Skip("volume-name-taken", f"the pod already has a volume {sorted(taken)[0]!r}")
    mode = policy.injection_mode or config.mode
    check = check_container(vllm, plan, policy, config, mode, argv=argv, model=model)
    if plan is None:
        # recognised as vLLM, plan not read: the check still runs (issue 35/36, item 3)
        check["env"] = plan_unknown_env(check["env"], plan_unknown)
    else:
        check["env"] = _with_env(
            check["env"], _group_phase_env(pod, vllm, config.group_port, ray_group, jobset)
        )
    check["env"] = model_writers_env(check["env"], spec, vllm, model)
    # Always: under the fast tier too, so that no copied value reaches the check.
    check["env"] = reuse_env(
        check["env"], check.get("image"), plan, reuse if policy.tier == DEEP and plan else None
    )
    init = [install_container(config), check]
    init += [copy.deepcopy(c) for c in spec.get("initContainers") or []]
    volumes = [copy.deepcopy(v) for v in spec.get("volumes") or []]
    volumes.append({"name": constants.VOLUME_NAME, "emptyDir": {"sizeLimit": "64Mi"}})
    volumes.append({"name": NO_TOKEN_VOLUME, "emptyDir": {"sizeLimit": "1Mi"}})
    labels = {constants.LABEL_INJECTED: "true"}
    if workload_label:
        labels[constants.LABEL_WORKLOAD] = workload_label
    return Injection(
        init_containers=init,
        volumes=volumes,
        labels=labels,
        container=container,
        plan_unknown=(plan_unknown or PLAN_UNKNOWN_DEFAULT) if plan is None else "",
    )


def opted_out(labels: Mapping[str, str], label: str = constants.LABEL_INJECT) -> bool:
    return labels.get(label) == constants.INJECT_DISABLED
