"""The two init containers the injection adds (core/injection.py): ``preflight-install``
and ``preflight-check``, and what isolates them (their security context, the empty mount
that shadows the API token: core/inject_paths.py says why).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from preflight_contract import envnames
from preflight_operator.core import constants
from preflight_operator.core.inject_devices import device_resources, dra_claims, is_rdma_resource
from preflight_operator.core.inject_env import preflight_env, secret_env, vllm_args_value
from preflight_operator.core.inject_models import model_mounts
from preflight_operator.core.inject_paths import (
    NO_TOKEN_VOLUME,
    SHM_PATH,
    TERMINATION_MESSAGE_PATH,
    TOKEN_MOUNT_PATH,
)
from preflight_operator.core.operatorconfig import InjectionConfig, PolicySpec
from preflight_operator.core.static import Plan

# The injected containers run as the image's own user with nothing else. RuntimeDefault
# seccomp is safe for them: they copy a file, read /proc and /dev, and open CUDA devices.
SECURITY_CONTEXT: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
# The token's shadow (inject_paths.py says why): an empty, read-only emptyDir there.
NO_TOKEN_MOUNT: Mapping[str, Any] = {
    "name": NO_TOKEN_VOLUME,
    "mountPath": TOKEN_MOUNT_PATH,
    "readOnly": True,
}


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
