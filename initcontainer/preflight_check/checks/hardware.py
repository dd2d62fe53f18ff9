"""The hardware the pod is about to trust (issue 16): fault state read from NVML alone.

No DCGM and no privileges: each read is one NVML query a pod with a GPU may make. What
the driver or the platform refuses was collected as None and is reported as "not
available", never as a failure (unknown is never fail). The meaning of every value is
NVIDIA's, from the NVML API Reference Guide (docs.nvidia.com/deploy/nvml-api) and the Xid
catalog (docs.nvidia.com/deploy/xid-errors); docs/CHECKS.md cites each one.

Every failing result names the GPUs at fault by full UUID in ``evidence["gpus"]``, so the
operator's node feedback can name them on the Node (operator/preflight_operator/
nodefeedback.py).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from preflight_check.checks.base import (
    check,
    cuda_unavailable,
    gpu_label,
    plan_gpus,
    plural,
    result,
    skipped,
)
from preflight_check.driver.api import (
    CLOCKS_EVENT_GPU_IDLE,
    CLOCKS_EVENT_HW_POWER_BRAKE,
    CLOCKS_EVENT_HW_SLOWDOWN,
    CLOCKS_EVENT_HW_THERMAL,
    FABRIC_HEALTH_LIMITED,
    FABRIC_HEALTH_NAMES,
    FABRIC_HEALTH_UNHEALTHY,
    FABRIC_STATE_COMPLETED,
    FABRIC_STATE_NAMES,
    FABRIC_STATE_NOT_SUPPORTED,
    NVML_SUCCESS,
    RECOVERY_ACTION_NAMES,
    RECOVERY_ACTION_NONE,
)
from preflight_check.facts import CudaGpu, Facts, NvmlGpu
from preflight_check.options import Options
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, PASS, WARN

Pair = Tuple[CudaGpu, NvmlGpu]

# Hardware clock reasons (nvmlClocksEventReasons): each cuts the core clocks "by a factor
# of 2 or more" (NVML API Reference). Software power capping and idle clocks are normal.
HW_CLOCK_REASONS: Dict[int, str] = {
    CLOCKS_EVENT_HW_SLOWDOWN: "HW slowdown",
    CLOCKS_EVENT_HW_THERMAL: "HW thermal slowdown",
    CLOCKS_EVENT_HW_POWER_BRAKE: "HW power brake",
}
# XIDs whose immediate action in NVIDIA's Xid catalog is RESTART_APP: an application's
# fault (another process's kernel), not by itself the GPU's. Any other XID during the
# check is the GPU's or the driver's.
APPLICATION_XIDS: Dict[int, str] = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing (a user application fault)",
    45: "preemptive cleanup after earlier errors",
}
DRAIN = "drain the node (kubectl drain <node>) and have the GPU serviced"


def _pairs(facts: Facts, check_id: str) -> Tuple[List[Pair], Optional[List[CheckResult]]]:
    """The plan's GPUs joined to NVML, or the skip result that explains why there are none."""
    unavailable = cuda_unavailable(facts, check_id)
    if unavailable:
        return [], unavailable
    if not facts.nvml.available:
        return [], skipped(check_id, "NVML unavailable (see 'nvml')")
    pairs = [(gpu, nvml) for gpu, nvml in plan_gpus(facts) if nvml is not None]
    if not pairs:
        return [], skipped(check_id, "CUDA sees no GPU the plan would use")
    return pairs, None


def _read(pairs: Sequence[Pair], attribute: str) -> Tuple[List[Tuple[CudaGpu, NvmlGpu, Any]], str]:
    """(gpu, nvml, value) for the GPUs that answered, and a note naming those that did not."""
    answered = [
        (g, n, getattr(n, attribute)) for g, n in pairs if getattr(n, attribute) is not None
    ]
    missing = [gpu_label(g) for g, n in pairs if getattr(n, attribute) is None]
    note = f"; not available on {', '.join(missing)}" if missing and answered else ""
    return answered, note


def _not_available(check_id: str, what: str) -> List[CheckResult]:
    return skipped(check_id, f"not available: {what}")


@check("row-remap")
def row_remap(facts: Facts, options: Options) -> List[CheckResult]:
    pairs, early = _pairs(facts, "row-remap")
    if early:
        return early
    rows, note = _read(pairs, "remapped_rows")
    retired, retired_note = _read(pairs, "retired_pages_pending")
    if not rows and not retired:
        return _not_available(
            "row-remap",
            "NVML offers neither row remapping (nvmlDeviceGetRemappedRows, Ampere and newer) "
            "nor page retirement (nvmlDeviceGetRetiredPagesPendingStatus) for these GPUs",
        )
    failed = [(g, r) for g, _, r in rows if r.failed]
    pending = [(g, r) for g, _, r in rows if r.pending and not r.failed]
    retiring = [g for g, _, value in retired if value]
    counts = {
        g.uuid: {"correctable": r.correctable, "uncorrectable": r.uncorrectable} for g, _, r in rows
    }
    if failed:
        return result(
            "row-remap",
            FAIL,
            f"row remapping failed on {', '.join(gpu_label(g) for g, _ in failed)}: the "
            "memory has a bad row the GPU could not remap (NVIDIA's replacement criterion), "
            "so kernels there can meet it again and vLLM fails with 'CUDA error: "
            "uncorrectable ECC error encountered'",
            f"{DRAIN} (an RMA); nvidia-smi -q -d ROW_REMAPPER shows the counts",
            gpus=[g.uuid for g, _ in failed],
            remapped_rows=counts,
        )
    warnings = []
    if pending:
        warnings.append(
            "a row remapping waits for the next GPU reset on "
            + ", ".join(
                f"{gpu_label(g)} ({r.uncorrectable} rows for uncorrectable errors)"
                for g, r in pending
            )
        )
    if retiring:
        warnings.append(
            f"retired memory pages wait for the next driver reload on "
            f"{', '.join(gpu_label(g) for g in retiring)}"
        )
    if warnings:
        return result(
            "row-remap",
            WARN,
            "; ".join(warnings)
            + ": new work runs (NVIDIA: the bad memory is kept out until then), but the "
            "repair is not in place",
            "reset the GPU when it is idle (nvidia-smi -r -i <index>, by the node's "
            "administrator) or reboot the node",
            gpus=[g.uuid for g, _ in pending] + [g.uuid for g in retiring],
            remapped_rows=counts,
        )
    said = []
    if rows:
        said.append(f"no pending or failed row remapping on {plural(len(rows), 'GPU')}{note}")
    if retired:
        said.append(f"no retired pages pending on {plural(len(retired), 'GPU')}{retired_note}")
    return result("row-remap", PASS, "; ".join(said), remapped_rows=counts)


@check("gpu-reset")
def gpu_reset(facts: Facts, options: Options) -> List[CheckResult]:
    lost = facts.nvml.lost
    if lost:
        return result(
            "gpu-reset",
            FAIL,
            "NVML cannot open "
            + ", ".join(f"nvidia-smi GPU {index} ('{words}')" for index, words in lost)
            + ": the GPU fell off the bus or needs a reset, and every CUDA call on it fails",
            f"{DRAIN}; the node needs a GPU reset (nvidia-smi -r) or a reboot",
            nvidia_smi_index=[index for index, _ in lost],
        )
    pairs, early = _pairs(facts, "gpu-reset")
    if early:
        return early
    needing = [(g, n) for g, n in pairs if n.needs_reset]
    if needing:
        return result(
            "gpu-reset",
            FAIL,
            f"NVML says {', '.join(f'{gpu_label(g)} ({n.needs_reset[0]})' for g, n in needing)}"
            ": a GPU that needs a reset fails CUDA work, so vLLM fails at start with a CUDA "
            "error",
            f"{DRAIN}; reset the GPU (nvidia-smi -r -i <index>) or reboot the node",
            gpus=[g.uuid for g, _ in needing],
        )
    actions, note = _read(pairs, "recovery_action")
    if not actions:
        return _not_available(
            "gpu-reset",
            "NVML offers no GPU recovery action (field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) "
            "on this driver; no NVML read reported a GPU that needs a reset",
        )
    asked = [(g, a) for g, _, a in actions if a != RECOVERY_ACTION_NONE]
    if asked:
        return result(
            "gpu-reset",
            FAIL,
            "the driver asks for a recovery action on "
            + ", ".join(
                f"{gpu_label(g)}: {RECOVERY_ACTION_NAMES.get(a, f'action {a}')}" for g, a in asked
            )
            + " after an uncorrectable error; until then CUDA work there fails or is unsafe",
            f"{DRAIN}; do the action named (nvidia-smi -r -i <index> for a GPU reset, a "
            "reboot for the others)",
            gpus=[g.uuid for g, _ in asked],
            recovery_action={g.uuid: a for g, a in asked},
        )
    return result(
        "gpu-reset",
        PASS,
        f"no recovery action pending on {plural(len(actions), 'GPU')}{note}",
    )


@check("nvlink")
def nvlink(facts: Facts, options: Options) -> List[CheckResult]:
    pairs, early = _pairs(facts, "nvlink")
    if early:
        return early
    links, note = _read(pairs, "nvlink_active")
    if not links:
        return _not_available("nvlink", "NVML reports no NVLink on these GPUs (PCIe only)")
    # What the peers expect: the links up on the other GPUs of the same model here.
    peers: Dict[str, List[List[bool]]] = {}
    for other in facts.nvml.gpus:
        if other.nvlink_active is not None:
            peers.setdefault(other.name, []).append(other.nvlink_active)
    down: List[Tuple[CudaGpu, List[int], int, int]] = []
    lines = []
    for gpu, nvml_gpu, states in links:
        group = peers.get(nvml_gpu.name, [states])
        up_somewhere = [any(p[i] for p in group if i < len(p)) for i in range(len(states))]
        missing = [i for i, up in enumerate(states) if not up and up_somewhere[i]]
        expected = sum(up_somewhere)
        lines.append(f"{gpu_label(gpu)}: {sum(states)} of {len(states)} links up")
        if missing:
            down.append((gpu, missing, sum(states), expected))
    evidence = {"links_up": {g.uuid: sum(s) for g, _, s in links}}
    if down:
        tp = facts.plan.tp
        status = FAIL if tp > 1 else WARN
        return result(
            "nvlink",
            status,
            "NVLink down: "
            + "; ".join(
                f"{gpu_label(g)} has {up} links up where its peers have {exp} "
                f"(down: {', '.join(str(i) for i in miss[:18])})"
                for g, miss, up, exp in down
            )
            + (
                f": with TP = {tp} NCCL's all-reduce runs over fewer links (slower) and "
                "fails or hangs if a link drops while it runs (XID 74)"
                if tp > 1
                else ": fine for TP = 1, a problem for any TP > 1 pod on these GPUs"
            ),
            f"{DRAIN}; nvidia-smi nvlink --status -i <index> shows the links, and a link "
            "down at idle needs a GPU reset or service",
            gpus=[g.uuid for g, _, _, _ in down],
            **evidence,
        )
    alone = "" if len(facts.nvml.gpus) > 1 else " (no other GPU here to compare with)"
    return result("nvlink", PASS, "; ".join(lines) + alone + note, **evidence)


@check("pcie-link")
def pcie_link(facts: Facts, options: Options) -> List[CheckResult]:
    pairs, early = _pairs(facts, "pcie-link")
    if early:
        return early
    links, note = _read(pairs, "pcie")
    if not links:
        return _not_available("pcie-link", "NVML reports no PCIe link state for these GPUs")
    narrow: List[str] = []
    slow: List[str] = []
    idle_slow: List[str] = []
    rows: List[str] = []
    for gpu, nvml_gpu, link in links:
        rows.append(f"{gpu_label(gpu)}: Gen{link.generation} x{link.width}")
        if link.width < link.max_width:
            narrow.append(f"{gpu_label(gpu)} at x{link.width} of x{link.max_width}")
        if link.generation < link.max_generation:
            text = f"{gpu_label(gpu)} at Gen{link.generation} of Gen{link.max_generation}"
            # An idle GPU lowers its link speed to save power; only a busy one counts.
            idle = (nvml_gpu.clock_events or 0) & CLOCKS_EVENT_GPU_IDLE
            (idle_slow if idle else slow).append(text)
    evidence = {
        "links": {
            g.uuid: {
                "gen": k.generation,
                "max_gen": k.max_generation,
                "width": k.width,
                "max_width": k.max_width,
            }
            for g, _, k in links
        }
    }
    if narrow or slow:
        return result(
            "pcie-link",
            WARN,
            f"PCIe link below its maximum: {'; '.join(narrow + slow)}: host-to-GPU "
            "bandwidth is cut accordingly, so vLLM loads weights and swaps KV cache more "
            "slowly (and PCIe peer traffic, without NVLink, is slower)",
            "reseat the GPU or check its slot and riser (nvidia-smi -q -d PCIE shows the "
            "link); a width below the maximum does not recover by itself",
            gpus=[g.uuid for g, _, k in links if k.width < k.max_width],
            **evidence,
        )
    idle_note = (
        f"; idle and below the maximum speed for power saving: {', '.join(idle_slow)}"
        if idle_slow
        else ""
    )
    return result(
        "pcie-link",
        PASS,
        f"PCIe links at their maximum width: {'; '.join(rows)}{idle_note}{note}",
        **evidence,
    )


def _hw_reasons(mask: Optional[int]) -> List[str]:
    return [name for bit, name in HW_CLOCK_REASONS.items() if (mask or 0) & bit]


@check("clock-throttle")
def clock_throttle(facts: Facts, options: Options) -> List[CheckResult]:
    pairs, early = _pairs(facts, "clock-throttle")
    if early:
        return early
    reads, note = _read(pairs, "clock_events")
    if not reads:
        return _not_available("clock-throttle", "NVML offers no clock event reasons for these GPUs")
    held, flashed = [], []
    for gpu, nvml_gpu, first in reads:
        start, end = set(_hw_reasons(first)), set(_hw_reasons(nvml_gpu.clock_events_end))
        both, once = start & end, start | end  # no end read: no reason held to the end
        if both:
            held.append((gpu, sorted(both)))
        elif once:
            flashed.append((gpu, sorted(once)))
    evidence = {"reasons": {g.uuid: [n.clock_events, n.clock_events_end] for g, n, _ in reads}}
    if held:
        return result(
            "clock-throttle",
            FAIL,
            "clocks held down by hardware on "
            + "; ".join(f"{gpu_label(g)}: {', '.join(r)}" for g, r in held)
            + " at the start and the end of the check: NVML says each cuts the core clocks "
            "by a factor of 2 or more (overheating, the power supply's brake signal, or "
            "power draw too high), so vLLM serves at half speed or less and, under TP, "
            "every rank waits for this one",
            f"{DRAIN}: check cooling and power (nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER)",
            gpus=[g.uuid for g, _ in held],
            **evidence,
        )
    if flashed:
        return result(
            "clock-throttle",
            WARN,
            "hardware clock slowdown seen once on "
            + "; ".join(f"{gpu_label(g)}: {', '.join(r)}" for g, r in flashed)
            + " (NVML notes HW slowdown may also show during a P-state change)",
            "if it persists, check cooling and power (nvidia-smi -q -d PERFORMANCE)",
            **evidence,
        )
    return result(
        "clock-throttle",
        PASS,
        f"no hardware slowdown or power brake on {plural(len(reads), 'GPU')}{note}",
        **evidence,
    )


@check("fabric")
def fabric(facts: Facts, options: Options) -> List[CheckResult]:
    pairs, early = _pairs(facts, "fabric")
    if early:
        return early
    reads, note = _read(pairs, "fabric")
    offered = [(g, n, f) for g, n, f in reads if f.state != FABRIC_STATE_NOT_SUPPORTED]
    if not offered:
        return _not_available(
            "fabric",
            "no NVSwitch fabric on these GPUs (nvmlDeviceGetGpuFabricInfo unsupported or "
            "state 'not supported')",
        )
    bad: List[Tuple[CudaGpu, str]] = []
    limited = []
    for gpu, _, info in offered:
        if info.state != FABRIC_STATE_COMPLETED:
            bad.append((gpu, f"registration {FABRIC_STATE_NAMES.get(info.state, info.state)}"))
        elif info.status != NVML_SUCCESS:
            bad.append((gpu, f"registration failed (NVML status {info.status})"))
        elif info.health == FABRIC_HEALTH_UNHEALTHY:
            bad.append((gpu, "fabric health unhealthy"))
        elif info.health == FABRIC_HEALTH_LIMITED:
            limited.append(f"{gpu_label(gpu)}: fabric health limited capacity")
    evidence = {
        "fabric": {
            g.uuid: {"state": f.state, "status": f.status, "health": f.health}
            for g, _, f in offered
        }
    }
    if bad:
        return result(
            "fabric",
            FAIL,
            "NVSwitch fabric not ready: "
            + "; ".join(f"{gpu_label(g)}: {why}" for g, why in bad)
            + ": until the fabric manager has registered a GPU, CUDA on it fails "
            "(cuInit: CUDA_ERROR_SYSTEM_NOT_READY, 'system not yet initialized') and NCCL "
            "cannot use NVLink",
            "start or restart nvidia-fabricmanager on the node (its version must match the "
            "driver's), then wait for registration to complete",
            gpus=[g.uuid for g, _ in bad],
            **evidence,
        )
    if limited:
        return result(
            "fabric",
            WARN,
            "; ".join(limited) + ": NVLink bandwidth through the fabric is reduced",
            "check the NVSwitch trays and the fabric manager's log on the node",
            **evidence,
        )
    health = {FABRIC_HEALTH_NAMES.get(f.health or 0, "") for _, _, f in offered if f.health}
    return result(
        "fabric",
        PASS,
        f"fabric registration completed on {plural(len(offered), 'GPU')}"
        + (f" (health: {', '.join(sorted(health))})" if health else "")
        + note,
        **evidence,
    )


# "NVRM: Xid (PCI:0000:06:00): 79, pid=1234, name=python3, GPU has fallen off the bus."
_KERNEL_XID = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f]+):([0-9A-Fa-f]+):([0-9A-Fa-f]+)\): (\d+)")


def _bus_key(pci_bus_id: str) -> Tuple[int, int, int]:
    """(domain, bus, device) of "00000000:06:00.0" / "0000:06:00" / "PCI:0000:06:00"."""
    parts = pci_bus_id.replace("PCI:", "").split(".")[0].split(":")
    try:
        return int(parts[-3], 16), int(parts[-2], 16), int(parts[-1], 16)
    except (IndexError, ValueError):
        return (-1, -1, -1)


def kernel_xids(log: str, gpus: Sequence[CudaGpu]) -> Dict[str, List[int]]:
    """The XIDs the kernel log holds for these GPUs (uuid -> XIDs, in log order, GPU and
    driver faults only: an application's own XID is not the GPU's history)."""
    by_bus = {_bus_key(g.pci_bus_id): g for g in gpus}
    found: Dict[str, List[int]] = {}
    for match in _KERNEL_XID.finditer(log):
        domain, bus, device, number = match.groups()
        gpu = by_bus.get((int(domain, 16), int(bus, 16), int(device, 16)))
        code = int(number)
        if gpu is not None and code not in APPLICATION_XIDS:
            found.setdefault(gpu.uuid, []).append(code)
    return found


def _history(facts: Facts, gpus: Sequence[CudaGpu]) -> Tuple[Optional[CheckResult], str]:
    """A warning for XIDs in the kernel log's history, or a note on what was (not) read."""
    if facts.kernel_log is None:
        return None, "; the kernel log (XID history) is not readable here"
    history = kernel_xids(facts.kernel_log, gpus)
    if not history:
        return None, "; no XID in the kernel log"
    labels = {g.uuid: gpu_label(g) for g in gpus}
    return (
        result(
            "xid",
            WARN,
            "the kernel log holds XID errors of these GPUs: "
            + "; ".join(f"{labels[u]}: XID {', '.join(map(str, xs))}" for u, xs in history.items())
            + " (history: they may predate this pod; none came while the check ran)",
            "if they are recent, drain the node and have the GPU checked (NVIDIA's Xid "
            "catalog, docs.nvidia.com/deploy/xid-errors, gives each XID's action)",
            gpus=sorted(history),
            kernel_xids=history,
        )[0],
        "",
    )


@check("xid")
def xid(facts: Facts, options: Options) -> List[CheckResult]:
    pairs, early = _pairs(facts, "xid")
    if early:
        return early
    watched, note = _read(pairs, "xids")
    past, history_note = _history(facts, [g for g, _ in pairs])
    if not watched:
        if past is not None:
            return [past]
        return _not_available(
            "xid",
            "NVML offers no XID events here (nvmlDeviceRegisterEvents refused)" + history_note,
        )
    gpu_faults = [(g, [x for x in xs if x not in APPLICATION_XIDS]) for g, _, xs in watched]
    gpu_faults = [(g, xs) for g, xs in gpu_faults if xs]
    app_faults = [(g, [x for x in xs if x in APPLICATION_XIDS]) for g, _, xs in watched]
    app_faults = [(g, xs) for g, xs in app_faults if xs]
    evidence = {"xids": {g.uuid: xs for g, _, xs in watched if xs}}
    if gpu_faults:
        return result(
            "xid",
            FAIL,
            "XID errors while the check ran: "
            + "; ".join(f"{gpu_label(g)}: XID {', '.join(map(str, xs))}" for g, xs in gpu_faults)
            + ": the driver reported a GPU or driver fault, and vLLM on this GPU would meet "
            "it as a CUDA error or a hang",
            f"{DRAIN}; look the XID up in NVIDIA's Xid catalog "
            "(docs.nvidia.com/deploy/xid-errors) for its action",
            gpus=[g.uuid for g, _ in gpu_faults],
            **evidence,
        )
    if app_faults:
        return result(
            "xid",
            WARN,
            "XID events from applications while the check ran: "
            + "; ".join(
                f"{gpu_label(g)}: " + ", ".join(f"XID {x} ({APPLICATION_XIDS[x]})" for x in xs)
                for g, xs in app_faults
            )
            + ": another process on these GPUs faulted",
            "find the other workload on the GPU (see 'gpu-processes')",
            **evidence,
        )
    if past is not None:
        return [past]
    return result(
        "xid",
        PASS,
        f"no XID event on {plural(len(watched), 'GPU')} while the check ran{note}{history_note}",
    )
