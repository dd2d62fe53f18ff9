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

The injection's parts live beside it, by concern: core/inject_devices.py (GPU, RDMA and
DRA resources), inject_paths.py (fixed paths), inject_containers.py (the two containers
and their isolation), inject_env.py (the PREFLIGHT_* env), inject_groups.py (LWS and Ray
groups, the opt-out label), inject_jobset.py (JobSet and Kthena groups), inject_models.py
(model mounts and writers). Their public names are importable from here as before.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from preflight_contract.check_ids import DEEP
from preflight_contract.reuse import Offer
from preflight_operator.core import constants
from preflight_operator.core.inject_containers import (
    NO_TOKEN_MOUNT,
    SECURITY_CONTEXT,
    check_container,
    install_container,
)
from preflight_operator.core.inject_devices import (
    RDMA_RESOURCE_PREFIXES,
    RDMA_RESOURCES,
    device_resources,
    dra_claims,
    gpu_resources,
    is_gpu_resource,
    is_rdma_resource,
)
from preflight_operator.core.inject_env import (
    MAX_PLAN_UNKNOWN_CHARS,
    MAX_VLLM_ARGS_CHARS,
    PLAN_UNKNOWN_DEFAULT,
    plan_unknown_env,
    plan_unknown_value,
    preflight_env,
    reuse_env,
    runtime_skips,
    secret_env,
    vllm_args_value,
)
from preflight_operator.core.inject_groups import (
    LWS_GROUP_INDEX_LABEL,
    LWS_NAME_LABEL,
    LWS_SIZE_ANNOTATION,
    LWS_WORKER_INDEX_LABEL,
    group_env,
    in_lws_group,
    opted_out,
    ray_group_ready,
    ray_role,
    runs_own_share,
)
from preflight_operator.core.inject_jobset import (
    JOBSET_RESTARTS,
    JOBSET_UID,
    MAX_GROUP_MEMBERS,
    JobSetPlace,
    jobset_group_env,
    jobset_name,
    jobset_place,
)
from preflight_operator.core.inject_models import (
    HF_CACHE_ENV,
    HF_DEFAULT_CACHE,
    literal_env,
    model_mounts,
    model_writers,
    model_writers_env,
)
from preflight_operator.core.inject_paths import (
    NO_TOKEN_VOLUME,
    SHM_PATH,
    TERMINATION_MESSAGE_PATH,
    TOKEN_MOUNT_PATH,
)
from preflight_operator.core.kthenaplace import KthenaPlace, kthena_place
from preflight_operator.core.operatorconfig import InjectionConfig, PolicySpec
from preflight_operator.core.static import Plan

# the public names of the injection, here and in its parts (importers need no other module)
__all__ = [
    "HF_CACHE_ENV",
    "HF_DEFAULT_CACHE",
    "JOBSET_RESTARTS",
    "JOBSET_UID",
    "LWS_GROUP_INDEX_LABEL",
    "LWS_NAME_LABEL",
    "LWS_SIZE_ANNOTATION",
    "LWS_WORKER_INDEX_LABEL",
    "MAX_GROUP_MEMBERS",
    "MAX_PLAN_UNKNOWN_CHARS",
    "MAX_VLLM_ARGS_CHARS",
    "NO_TOKEN_MOUNT",
    "NO_TOKEN_VOLUME",
    "PLAN_UNKNOWN_DEFAULT",
    "RDMA_RESOURCES",
    "RDMA_RESOURCE_PREFIXES",
    "SECURITY_CONTEXT",
    "SHM_PATH",
    "TERMINATION_MESSAGE_PATH",
    "TOKEN_MOUNT_PATH",
    "Injection",
    "JobSetPlace",
    "Skip",
    "already_injected",
    "check_container",
    "device_resources",
    "dra_claims",
    "gpu_resources",
    "group_env",
    "in_lws_group",
    "install_container",
    "is_gpu_resource",
    "is_rdma_resource",
    "jobset_group_env",
    "jobset_name",
    "jobset_place",
    "json_patch",
    "literal_env",
    "model_mounts",
    "model_writers",
    "model_writers_env",
    "opted_out",
    "plan_injection",
    "plan_unknown_env",
    "plan_unknown_value",
    "preflight_env",
    "ray_group_ready",
    "ray_role",
    "reuse_env",
    "runs_own_share",
    "runtime_skips",
    "secret_env",
    "vllm_args_value",
]


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


def _names(items: Any) -> set[str]:
    return {str(i.get("name")) for i in items or [] if isinstance(i, Mapping)}


def already_injected(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    ours = {constants.INSTALL_CONTAINER, constants.CHECK_CONTAINER}
    return bool(ours & _names(spec.get("initContainers")))


def _with_env(env: list[dict[str, Any]], added: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``env`` then ``added``, without an earlier entry of a name ``added`` sets (one copied
    from the vLLM container): each name once, the injector's value."""
    names = {e["name"] for e in added}
    return [e for e in env if e.get("name") not in names] + added


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
