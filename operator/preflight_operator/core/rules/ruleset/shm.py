"""/dev/shm: NCCL and vLLM's multiprocess message queues live there.

A container's /dev/shm is 64 MiB unless the pod mounts a memory-backed emptyDir there (or
shares the host's IPC namespace). With more than one GPU process in a pod that is not
enough: NCCL fails with "Error while creating shared memory segment" / "unhandled system
error", and vLLM's shared-memory broadcast fails or hangs.

The docs of its rules (hack/gen_rule_docs.py renders them into docs/RULES.md):

### `shm-missing`
More than one GPU process of the engine in this pod (its share: TP x PP x DP-local > 1
for a pod that holds the whole engine; see "Plans spread over pods") and nothing mounted at
`/dev/shm` (and no `hostIPC: true`): the container gets Docker's 64 MiB default.
*Symptom:* `NCCL WARN Error while creating shared memory segment /dev/shm/nccl-... (size
...)`, `ncclSystemError` / `unhandled system error`, `Bus error (core dumped)`, or a hang
in vLLM's shared-memory broadcast.
*Fix:* a memory-backed emptyDir at `/dev/shm`:
`volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]`,
`volumeMounts: [{name: dshm, mountPath: /dev/shm}]`.

### `shm-too-small`
The `/dev/shm` emptyDir has a `sizeLimit` under the policy minimum (default 1Gi).
*Symptom:* the NCCL shared-memory errors above under load.
*Fix:* raise or remove the `sizeLimit`.

### `shm-not-memory`
`/dev/shm` comes from a disk-backed emptyDir or another volume.
*Symptom:* slow intra-pod communication; some NCCL operations fail on non-tmpfs files.
*Fix:* `emptyDir: {medium: Memory}`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from preflight_contract.verdicts import FAIL, WARN
from preflight_operator.core.rules.certainty import (
    DEVICE_COUNT,
    ESTIMATED,
    HEURISTIC,
    VENDOR_DOC,
    Basis,
    Input,
)
from preflight_operator.core.rules.context import ContainerContext
from preflight_operator.core.rules.inputs import devices_input, plan_input
from preflight_operator.core.rules.quantity import format_bytes, parse_quantity
from preflight_operator.core.rules.registry import RULE_INFO, declare, register
from preflight_operator.core.rules.vocabulary import Finding, Policy

SHM = "/dev/shm"
SHM_TOO_SMALL = declare(
    "shm-too-small",
    FAIL,
    "/dev/shm sizeLimit under the policy minimum",
    Basis(HEURISTIC, "the policy's shmMin threshold (default 1Gi)"),
    fix="raise the emptyDir's `sizeLimit` to at least the minimum (1Gi by default)",
)
SHM_NOT_MEMORY = declare(
    "shm-not-memory",
    WARN,
    "/dev/shm is mounted from a volume that is not in memory",
    Basis(HEURISTIC, "shared memory on disk is slow"),
    fix="`medium: Memory` on the `/dev/shm` emptyDir",
)


def _snippet(policy: Policy) -> str:
    return (
        "add volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: "
        f"{format_bytes(max(policy.shm_min_bytes, 1))}}}}}] and volumeMounts: "
        "[{name: dshm, mountPath: /dev/shm}]"
    )


def shm_volume(
    spec: Mapping[str, Any], container: Mapping[str, Any]
) -> tuple[int, Mapping[str, Any]] | None:
    """(index in spec.volumes, volume) mounted at /dev/shm in the container, if any."""
    mounts = container.get("volumeMounts")
    volumes = spec.get("volumes")
    if not isinstance(mounts, list) or not isinstance(volumes, list):
        return None
    for mount in mounts:
        if not isinstance(mount, Mapping) or not isinstance(mount.get("mountPath"), str):
            continue
        if mount["mountPath"].rstrip("/") != SHM:
            continue
        for i, volume in enumerate(volumes):
            if isinstance(volume, Mapping) and volume.get("name") == mount.get("name"):
                return i, volume
    return None


def shm_findings(
    spec: Mapping[str, Any],
    *,
    pod_path: str,
    container: Mapping[str, Any],
    container_path: str,
    processes: int,
    policy: Policy,
    inputs: tuple[Input, ...] = (),
) -> Iterator[Finding]:
    """The /dev/shm findings of one container running ``processes`` GPU processes."""
    if processes <= 1 or spec.get("hostIPC") is True:
        return
    found = shm_volume(spec, container)
    if found is None:
        yield RULE_INFO["shm-missing"].finding(
            f"{processes} GPU processes share {container_path} but nothing is mounted at "
            "/dev/shm, which is then 64 MiB: NCCL fails with 'Error while creating shared "
            "memory segment' / 'unhandled system error' or vLLM hangs at start-up",
            f"{container_path}.volumeMounts",
            _snippet(policy),
            inputs,
        )
        return
    index, volume = found
    vpath = f"{pod_path}.volumes[{index}]"
    empty_dir = volume.get("emptyDir")
    if isinstance(empty_dir, Mapping) and empty_dir.get("medium") == "Memory":
        limit = empty_dir.get("sizeLimit")
        if limit is None:
            return
        size = parse_quantity(limit)
        if size is not None and size < policy.shm_min_bytes:
            yield SHM_TOO_SMALL.finding(
                f"{vpath}.emptyDir.sizeLimit is {limit}, under the "
                f"{format_bytes(policy.shm_min_bytes)} minimum for {processes} GPU processes: "
                "NCCL runs out of shared memory",
                f"{vpath}.emptyDir.sizeLimit",
                f"raise sizeLimit to at least {format_bytes(policy.shm_min_bytes)} (or remove it)",
                inputs,
            )
        return
    if isinstance(volume.get("hostPath"), Mapping):
        return  # the host's /dev/shm: large, and what bare-metal vLLM uses
    yield SHM_NOT_MEMORY.finding(
        f"/dev/shm comes from {vpath}, which is not memory-backed: shared memory then "
        "lives on disk, which is slow and may not support what NCCL needs",
        vpath,
        "use emptyDir: {medium: Memory} for the /dev/shm volume",
        inputs,
    )


@register(
    "shm-missing",
    FAIL,
    "several GPU processes and no /dev/shm volume",
    Basis(
        VENDOR_DOC, "NCCL troubleshooting and vLLM's container docs: 64 MiB /dev/shm is too small"
    ),
    fix="mount `emptyDir: {medium: Memory}` at `/dev/shm`",
)
def shm(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    if not ctx.gpus.uses_shm or ctx.template.shm_provided:
        # TPU, Neuron, Gaudi, ...: no NCCL/RCCL shared-memory transport; KubeRay mounts a
        # memory-backed /dev/shm into Ray containers itself
        return
    # /dev/shm is judged by the engine's processes in THIS pod: its share (a pod that runs
    # one rank of a spread engine needs what one rank needs)
    yield from shm_findings(
        ctx.spec,
        pod_path=ctx.pod_path,
        container=ctx.container,
        container_path=ctx.path,
        processes=ctx.pod_ranks,
        policy=policy,
        inputs=ranks_inputs(ctx),
    )


def ranks_inputs(ctx: ContainerContext) -> tuple[Input, ...]:
    """What the count of this pod's GPU processes rests on: its own argv (its share), or,
    when Ray places the ranks, the pod's devices; exact only when the group has exactly
    the devices the engine needs (every one then holds a rank), else Ray's placement
    (PACK) decides how many land here: estimated."""
    if not ctx.spread:
        return (plan_input(ctx),)
    if ctx.ray_fills_every_device:
        return (plan_input(ctx), devices_input(ctx))
    return (
        devices_input(ctx),
        Input(
            DEVICE_COUNT,
            "the ranks Ray places on each pod",
            ESTIMATED,
            "are Ray's choice (packed, at most a pod's devices): the group's devices are "
            "not exactly the engine's",
        ),
    )
