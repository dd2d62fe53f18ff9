"""Rules about environment variables that change what vLLM sees.

CUDA_VISIBLE_DEVICES, as CUDA reads it (see docs/GPU_FACTS.md): entries are trimmed; an
invalid entry (not a device, "-1", "abc") hides itself and every entry after it; a
duplicate makes cuInit fail; UUIDs work for CUDA but vLLM calls int() on each entry it
uses and crashes on them.

The docs of its rules (hack/gen_rule_docs.py renders them into docs/RULES.md):

### `cvd-set`
`CUDA_VISIBLE_DEVICES` is set in the spec (env or a shell prefix/export before vLLM). The
device plugin already gives the container exactly its GPUs as devices 0..N-1; a fixed
value can hide or reorder them.
*Fix:* remove it and let the GPU request select devices.

### `cvd-uuid`
`CUDA_VISIBLE_DEVICES` names GPUs by UUID (`GPU-...`) or MIG id (`MIG-...`). CUDA accepts
it, but vLLM converts each entry it uses with `int()`.
*Symptom:* `ValueError: invalid literal for int() with base 10: 'GPU-7b01fc6f-...'`.
*Fix:* remove it, or use ordinals.

### `cvd-too-few`
`CUDA_VISIBLE_DEVICES` leaves CUDA fewer GPUs than the plan needs. CUDA trims spaces, stops
at the first entry that is not a GPU of the pod (`5` in a 2-GPU pod, `abc`, `-1`) and
hides everything after it, fails completely on a duplicate (`0,0`) and sees nothing for an
empty value.
*Symptom:* `World size (2) is larger than the number of available GPUs (1)`, `CUDA error:
invalid device ordinal`, `RuntimeError: No CUDA GPUs are available`,
`CUDA_ERROR_INVALID_DEVICE`.
*Fix:* remove the variable.

### `nvidia-visible-devices-set`
`NVIDIA_VISIBLE_DEVICES` in the spec. With a GPU request the device plugin's value
replaces it; without one the NVIDIA runtime may expose the named GPUs (even `all`) behind
the scheduler's back.
*Fix:* remove it; request GPUs with `resources.limits`.

### `vllm-port-invalid`
`VLLM_PORT` set explicitly to something that is not an integer.
*Symptom:* `ValueError: VLLM_PORT '...' must be a valid integer`.
*Fix:* a port number, or remove it.
"""

from __future__ import annotations

from collections.abc import Iterator

from preflight_contract.verdicts import FAIL, WARN
from preflight_operator.core.rules.certainty import (
    HEURISTIC,
    MEASUREMENT,
    VENDOR_DOC,
    VLLM_CODE,
    Basis,
)
from preflight_operator.core.rules.context import ContainerContext
from preflight_operator.core.rules.inputs import devices_input, env_input, plan_input
from preflight_operator.core.rules.kubeenv import display, has_unknown
from preflight_operator.core.rules.registry import RULE_INFO, declare, register
from preflight_operator.core.rules.vocabulary import Finding, Policy

CVD = "CUDA_VISIBLE_DEVICES"
CVD_UUID = declare(
    "cvd-uuid",
    FAIL,
    "CUDA_VISIBLE_DEVICES names GPUs by UUID (vLLM parses int)",
    Basis(VLLM_CODE, "vLLM calls int() on each CUDA_VISIBLE_DEVICES entry it uses"),
    fix="use indices, or remove the variable",
)
CVD_TOO_FEW = declare(
    "cvd-too-few",
    FAIL,
    "CUDA_VISIBLE_DEVICES leaves fewer GPUs than needed",
    Basis(MEASUREMENT, "docs/GPU_FACTS.md: CUDA_VISIBLE_DEVICES as the driver reads it"),
    fix="list as many GPUs as the plan needs, or remove the variable",
)


def visible_count(value: str, devices: int | None) -> tuple[int, str]:
    """How many GPUs CUDA shows for this value in a pod given ``devices``; and why."""
    entries = [e.strip() for e in value.split(",")]
    if value.strip() == "":
        return 0, "an empty value hides every GPU"
    seen: list[str] = []
    for position, entry in enumerate(entries, 1):
        is_uuid = entry.upper().startswith(("GPU-", "MIG-"))
        if not is_uuid:
            try:
                ordinal = int(entry)
            except ValueError:
                return (
                    len(seen),
                    f"entry {position} {entry!r} is not a GPU; CUDA ignores it "
                    "and every entry after it",
                )
            if ordinal < 0 or (devices is not None and ordinal >= devices):
                what = f"the pod has {devices} GPU(s), numbered from 0" if devices else "invalid"
                return (
                    len(seen),
                    f"entry {position} {entry!r} is not a GPU of this pod ({what}); "
                    "CUDA ignores it and every entry after it",
                )
            key = str(ordinal)
        else:
            key = entry
        if key in seen:
            return 0, f"entry {position} {entry!r} repeats a GPU: CUDA initialisation fails"
        seen.append(key)
    return len(seen), ""


@register(
    "cvd-set",
    WARN,
    "CUDA_VISIBLE_DEVICES is set in the pod spec",
    Basis(HEURISTIC, "the device plugin already numbers the container's GPUs 0..N-1"),
    fix="remove `CUDA_VISIBLE_DEVICES`; the device plugin chooses the GPUs",
)
def cvd(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    value, path = ctx.process_env(CVD)
    if path is None or not ctx.gpus.on_nvidia:
        return
    shown = display(value or "")
    yield RULE_INFO["cvd-set"].finding(
        f"{path} sets {CVD}={shown!r}: the device plugin already gives the container exactly "
        "its GPUs as devices 0..N-1; a fixed value can hide or reorder them",
        path,
        f"remove {CVD} from the spec and let the GPU request decide",
    )
    if value is None or has_unknown(value):
        return
    need = ctx.pod_gpus
    # vLLM int()s the entries of the devices it uses: the first `need` of them
    used = [e.strip() for e in value.split(",")][: need if need else None]
    uuids = [e for e in used if e.upper().startswith(("GPU-", "MIG-"))]
    if uuids:
        yield CVD_UUID.finding(
            f"{path} names GPUs by UUID ({uuids[0]!r}): CUDA accepts that, but vLLM calls int() "
            f'on each entry and fails with "ValueError: invalid literal for int() with base '
            f"10: '{uuids[0]}'\"",
            path,
            f"remove {CVD}, or use ordinals (0,1,...)",
            inputs=(plan_input(ctx), devices_input(ctx), env_input(CVD, value, path)),
        )
    count, why = visible_count(value, ctx.gpus_have)
    if need is not None and count < need:
        reason = f" ({why})" if why else ""
        yield CVD_TOO_FEW.finding(
            f"{path} = {value!r} leaves CUDA {count} GPU(s){reason} but vLLM needs {need}: "
            f"it fails with 'World size ({need}) is larger than the number of available GPUs "
            f"({count})' or 'invalid device ordinal'",
            path,
            f"remove {CVD} (the GPU request already selects the devices)",
            inputs=(plan_input(ctx), devices_input(ctx), env_input(CVD, value, path)),
        )


@register(
    "nvidia-visible-devices-set",
    WARN,
    "NVIDIA_VISIBLE_DEVICES is set in the pod spec",
    Basis(VENDOR_DOC, "NVIDIA container toolkit: NVIDIA_VISIBLE_DEVICES"),
    fix="remove it; the device plugin sets it",
)
def nvidia_visible_devices(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    value, path = ctx.process_env("NVIDIA_VISIBLE_DEVICES")
    if path is None or not ctx.gpus.on_nvidia:
        return
    if ctx.gpus.requested:
        effect = "the device plugin's own value replaces it, so it does nothing but mislead"
    else:
        effect = (
            "without a GPU request the NVIDIA runtime may expose the GPUs it names (even "
            "'all') to this container behind the scheduler's back"
        )
    yield RULE_INFO["nvidia-visible-devices-set"].finding(
        f"{path} sets NVIDIA_VISIBLE_DEVICES={display(value or '')!r}: {effect}",
        path,
        "remove NVIDIA_VISIBLE_DEVICES and request GPUs with resources.limits",
    )


@register(
    "vllm-port-invalid",
    FAIL,
    "VLLM_PORT is set to something that is not a port",
    Basis(VLLM_CODE, "vllm/envs.py: VLLM_PORT must be a valid integer"),
    fix="`VLLM_PORT` must be a port number",
)
def vllm_port_invalid(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    value, path = ctx.process_env("VLLM_PORT")
    if path is None or value is None or has_unknown(value):
        return
    try:
        int(value)
        return
    except ValueError:
        pass
    yield RULE_INFO["vllm-port-invalid"].finding(
        f"{path} sets VLLM_PORT={value!r}: vLLM requires an integer and fails at start-up "
        f"(\"VLLM_PORT '{value}' must be a valid integer\")",
        path,
        "set VLLM_PORT to a port number, or remove it",
        inputs=(env_input("VLLM_PORT", value, path),),
    )
