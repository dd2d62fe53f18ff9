"""Rules about the GPUs a container requests versus what vLLM will use.

The docs of its rules (hack/gen_rule_docs.py renders them into docs/RULES.md):

### `gpu-count-too-low`
The container requests fewer GPUs (`resources.limits["nvidia.com/gpu"]`, MIG slices
counted as devices) than the plan needs in one pod: its own share when the engine is
spread over pods (`--nnodes`, per-pod DP ranks, Dynamo multinode). A pod whose ranks Ray
places over a group (a LeaderWorkerSet or Ray cluster, or a Ray head/worker whose other
pods are elsewhere) is not judged by this rule: `lws-gpu-total` / `ray-gpu-total` judge
the group, `plan-unresolved` says when the group is unknown ("Plans spread over pods").
*Symptom:* `ValueError: World size (4) is larger than the number of available GPUs (2) in
this node`; with Ray, `Waiting for creating a placement group of specs` until a timeout;
older releases: `RuntimeError: CUDA error: invalid device ordinal`. On a TPU the message
quotes the TPU backend (`Insufficient devices for 2D mesh: found 4, expected 8`) and counts
chips times JAX devices per chip (see Accelerators).
*Fix:* request the GPUs the plan needs, or lower TP/PP/DP-local.

### `gpu-count-extra`
More GPUs requested than vLLM uses (beyond the policy's extra-GPUs allowance, default 0).
*Symptom:* none at start-up: the extra GPUs sit allocated and idle.
*Fix:* request what the plan uses, or raise TP/DP to use them.

### `gpu-request-missing`
The plan needs more than one GPU and the container requests none.
*Symptom:* `RuntimeError: No CUDA GPUs are available`, `Failed to infer device type`, or
the world-size error above; with the NVIDIA runtime as default, sometimes every GPU of
the node, shared with other pods.
*Fix:* `resources: {limits: {nvidia.com/gpu: N}}`.

### `gpu-request-none`
A one-GPU plan with no GPU request: fine only for a CPU build of vLLM.
*Fix:* request one GPU.

### `gpu-request-limit-mismatch`
`requests["nvidia.com/gpu"]` without a limit, or different from it. Extended resources
cannot be overcommitted.
*Symptom:* the API server rejects the object: `Limit must be set for non overcommitable
resources` / `must be equal to nvidia.com/gpu limit`.
*Fix:* set the limit; requests may be omitted or must equal it.

### `gpu-quantity-invalid`
A GPU quantity that is not a whole non-negative number (`2.5`, `500m`, `two`).
*Symptom:* the API server rejects the object (`must be an integer`).
*Fix:* an integer.

### `mig-multi-gpu`
MIG resources (`nvidia.com/mig-*`) with TP x PP > 1, or more than one MIG slice in a
container. CUDA exposes one MIG instance per process and NCCL does not join MIG
instances.
*Symptom:* vLLM sees one device (`World size (2) is larger than the number of available
GPUs (1)`) or NCCL fails to initialise.
*Fix:* whole GPUs for tensor/pipeline parallelism, or one slice with TP=PP=1.
"""

from __future__ import annotations

from collections.abc import Iterator

from preflight_contract.verdicts import FAIL, WARN
from preflight_operator.core.rules.accelerators import CPU, TPU, short_error
from preflight_operator.core.rules.certainty import HEURISTIC, VENDOR_DOC, VLLM_CODE, Basis
from preflight_operator.core.rules.context import ContainerContext
from preflight_operator.core.rules.inputs import devices_input, plan_input
from preflight_operator.core.rules.registry import RULE_INFO, register
from preflight_operator.core.rules.resources import format_raw
from preflight_operator.core.rules.vocabulary import Finding, Policy


def _plan_text(ctx: ContainerContext) -> str:
    plan = ctx.parsed.plan
    parts = [f"TP={plan.tp}", f"PP={plan.pp}"]
    if plan.pcp > 1:
        parts.append(f"PCP={plan.pcp}")
    if plan.dp > 1:
        parts.append(f"DP={plan.dp} (local {plan.dp_local})")
    if plan.nnodes > 1:
        parts.append(f"nnodes={plan.nnodes}")
    return " x ".join(parts)


def _limit_snippet(resource: str, count: int) -> str:
    return f'resources: {{limits: {{"{resource}": {count}}}}}'


def _unit(ctx: ContainerContext) -> str:
    """'GPUs' for nvidia.com/gpu, else the resource named (google.com/tpu, amd.com/gpu)."""
    resource = ctx.gpus.fix_resource
    return "GPUs" if resource == "nvidia.com/gpu" else f"x {resource}"


def _per_unit(ctx: ContainerContext) -> int:
    """Devices vLLM counts per unit of the resource a fix names (2 per chip on a TPU v3)."""
    tpu = ctx.gpus.tpu
    if ctx.gpus.platform == TPU and tpu is not None and tpu.devices_per_chip:
        return tpu.devices_per_chip
    return 1


def _units(ctx: ContainerContext, devices: int) -> int:
    """Units of the fix's resource that give vLLM ``devices`` devices."""
    return -(-devices // _per_unit(ctx))


def _have_text(ctx: ContainerContext, have: int) -> str:
    """The devices a container gets, with its TPU chips when vLLM counts more per chip."""
    tpu, units = ctx.gpus.tpu, ctx.gpus.units
    if ctx.gpus.platform == TPU and tpu is not None and units is not None and units != have:
        return f"{units} TPU {tpu.name} chips = {have} JAX devices"
    return f"{have} devices"


def _backend(ctx: ContainerContext) -> str:
    """Who fails: vLLM's TPU backend says its own words."""
    return "vLLM's TPU backend fails with" if ctx.gpus.platform == TPU else "vLLM fails with"


def _countable(ctx: ContainerContext) -> bool:
    """The count rules apply: the plan is known, the device count is known, and the
    pod is not a CPU build of vLLM (which needs no accelerator)."""
    return ctx.gpus.unknown is None and ctx.gpus.platform != CPU


@register(
    "gpu-quantity-invalid",
    FAIL,
    "a GPU quantity is not a whole number",
    Basis(VENDOR_DOC, "Kubernetes: extended resources take whole numbers"),
    fix="a whole number of GPUs",
)
def quantity_invalid(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    info = RULE_INFO["gpu-quantity-invalid"]
    for entry in ctx.gpus.entries:
        for present, raw, path in (
            (entry.has_limit, entry.limit_raw, entry.limit_path),
            (entry.has_request, entry.request_raw, entry.request_path),
        ):
            value = entry.limit if path == entry.limit_path else entry.request
            if present and (value is None or value < 0 or value.denominator != 1):
                yield info.finding(
                    f"{path} is {format_raw(raw)!r}: extended resources such as {entry.resource}"
                    " take a whole, non-negative number of devices (the API server rejects it)",
                    path,
                    f"use an integer, e.g. {_limit_snippet(entry.resource, 1)}",
                )


@register(
    "gpu-request-limit-mismatch",
    FAIL,
    "GPU requests and limits disagree",
    Basis(VENDOR_DOC, "Kubernetes: extended resources cannot be overcommitted"),
    fix="set the GPU limit, and make requests equal to it",
)
def request_limit_mismatch(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    info = RULE_INFO["gpu-request-limit-mismatch"]
    for entry in ctx.gpus.entries:
        if entry.has_request and not entry.has_limit:
            yield info.finding(
                f"{entry.request_path} is set without a limit: {entry.resource} cannot be "
                "overcommitted, so the API server requires the limit",
                entry.limit_path,
                f'set limits["{entry.resource}"] (requests may then be omitted)',
            )
        elif (
            entry.has_request
            and entry.limit is not None
            and entry.request is not None
            and entry.limit != entry.request
        ):
            yield info.finding(
                f"{entry.request_path} ({format_raw(entry.request_raw)}) differs from "
                f"{entry.limit_path} ({format_raw(entry.limit_raw)}): for extended resources "
                "requests must equal limits (the API server rejects it)",
                entry.request_path,
                f'drop requests["{entry.resource}"] or make it equal to the limit',
            )


@register(
    "gpu-request-missing",
    FAIL,
    "vLLM needs several GPUs and the container requests none",
    Basis(VLLM_CODE, "vLLM's world size check against the visible devices"),
    fix=(
        "add `nvidia.com/gpu` (the platform's resource: the message names it) to "
        "`resources.limits`, or a DRA claim"
    ),
)
def request_missing(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    need = ctx.pod_gpus
    if need is None or need <= 1 or ctx.gpus.requested or ctx.spread or not _countable(ctx):
        return
    if ctx.template.gpus_elsewhere:
        return  # the controller adds the GPUs (a KServe runtime, a multi-node isvc)
    resource = ctx.gpus.fix_resource
    yield RULE_INFO["gpu-request-missing"].finding(
        f"vLLM runs {_plan_text(ctx)} = {need} accelerator processes in this pod but "
        f"{ctx.path} requests no accelerator ({resource} or a DRA claim): the device plugin "
        f"gives it none and vLLM finds no device or too few "
        f"({_backend(ctx)} '{short_error(ctx.gpus.platform, need, 0)}')",
        ctx.gpu_path,
        f"request the devices: {_limit_snippet(resource, _units(ctx, need))}",
        inputs=(plan_input(ctx),),
    )


@register(
    "gpu-request-none",
    WARN,
    "vLLM needs a GPU and the container requests none",
    Basis(HEURISTIC, "a one-device plan without a request is probably a mistake"),
    fix="add `nvidia.com/gpu: 1` to `resources.limits`",
)
def request_none(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    if ctx.pod_gpus != 1 or ctx.gpus.requested or ctx.spread or not _countable(ctx):
        return
    if ctx.template.gpus_elsewhere:
        return
    resource = ctx.gpus.fix_resource
    yield RULE_INFO["gpu-request-none"].finding(
        f"{ctx.path} requests no accelerator ({resource} or a DRA claim): the scheduler may "
        "place it anywhere and the device plugin hands it no device (unless this is a CPU "
        "build of vLLM)",
        ctx.gpu_path,
        f"request one device: {_limit_snippet(resource, 1)}",
        inputs=(plan_input(ctx),),
    )


@register(
    "gpu-count-too-low",
    FAIL,
    "fewer GPUs requested than vLLM's plan needs",
    Basis(VLLM_CODE, "vLLM's 'World size (N) is larger than the number of available GPUs'"),
    fix=(
        '`resources.limits["nvidia.com/gpu"]` (or the pod\'s accelerator: `google.com/tpu`, '
        "`amd.com/gpu`, ...; or the DRA claim's `count`) = TP x PP x DP-local, or lower the "
        "sizes"
    ),
)
def count_too_low(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    need, have = ctx.pod_gpus, ctx.gpus_have
    if need is None or not have or have >= need or ctx.spread or not _countable(ctx):
        return
    path = ctx.gpu_path
    yield RULE_INFO["gpu-count-too-low"].finding(
        f"vLLM needs {need} devices in this pod ({_plan_text(ctx)}) but {path} gives it "
        f"{_have_text(ctx, have)}: {_backend(ctx)} "
        f"'{short_error(ctx.gpus.platform, need, have)}' (or waits forever for Ray resources)",
        path,
        f"request {_units(ctx, need)} {_unit(ctx)}, or lower the parallel sizes to fit {have} "
        f"({ctx.flag('tensor_parallel_size', '--tensor-parallel-size')} at "
        f"{ctx.arg_path('tensor_parallel_size')})",
        inputs=(plan_input(ctx), devices_input(ctx)),
    )


@register(
    "gpu-count-extra",
    WARN,
    "more GPUs requested than vLLM will use",
    Basis(HEURISTIC, "requested devices vLLM does not use stay idle"),
    fix="request only what the plan uses (or raise `extraGPUsAllowed`)",
)
def count_extra(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    need, have = ctx.pod_gpus, ctx.gpus_have
    if need is None or have is None or ctx.spread or have <= need + policy.extra_gpus_allowed:
        return
    if not _countable(ctx):
        return
    path = ctx.gpu_path
    yield RULE_INFO["gpu-count-extra"].finding(
        f"{path} requests {_have_text(ctx, have)} but vLLM uses {need} ({_plan_text(ctx)}): "
        f"{have - need} stay allocated and idle",
        path,
        f"request {_units(ctx, need)} {_unit(ctx)}, or raise the parallel sizes to use all {have}",
        inputs=(plan_input(ctx), devices_input(ctx)),
    )


@register(
    "mig-multi-gpu",
    FAIL,
    "MIG slices with a plan that needs more than one device",
    Basis(VENDOR_DOC, "NVIDIA MIG user guide: one MIG instance per CUDA process"),
    fix="whole GPUs for TP x PP > 1, or TP = 1 per MIG slice",
)
def mig_multi(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    mig = ctx.gpus.mig_entries
    if not mig:
        return
    need = ctx.pod_gpus or 1
    total = ctx.gpus.requested or 0
    if need <= 1 and total <= 1:
        return
    yield RULE_INFO["mig-multi-gpu"].finding(
        f"{mig[0].effective_path} requests MIG slices while vLLM needs {need} GPU processes "
        f"({total} devices requested): CUDA exposes one MIG instance per process and NCCL "
        "cannot join MIG instances, so tensor/pipeline parallelism over MIG fails",
        mig[0].effective_path,
        "use whole GPUs (nvidia.com/gpu) for TP/PP > 1, or one MIG slice with TP=PP=1",
        # several slices fail whatever the plan; one slice fails only for the plan's sake
        inputs=(devices_input(ctx),) if total > 1 else (plan_input(ctx), devices_input(ctx)),
    )
