"""The check component model.

A check is a pure function of the collected facts and the options that returns one or
more CheckResults. Every check has the same life cycle, run by ``runner``: it is
registered here under its stable id, skipped when turned off, evaluated, and an
exception inside it becomes an ``error`` result for that check alone.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from preflight_check.facts import CudaGpu, Facts, NvmlGpu
from preflight_check.options import Options
from preflight_contract.check_ids import CHECKS
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import SKIP

CheckFunction = Callable[[Facts, Options], List[CheckResult]]
REGISTRY: Dict[str, CheckFunction] = {}

GIB = float(1 << 30)
MIB = float(1 << 20)


def check(check_id: str) -> Callable[[CheckFunction], CheckFunction]:
    if check_id not in CHECKS:
        raise ValueError(f"check id {check_id!r} is not declared in check_ids.CHECKS")

    def register(function: CheckFunction) -> CheckFunction:
        REGISTRY[check_id] = function
        return function

    return register


def result(
    check_id: str, status: str, message: str, remediation: str = "", /, **evidence: Any
) -> List[CheckResult]:
    clean = {k: v for k, v in evidence.items() if v is not None and v not in ([], {})}
    return [CheckResult(check_id, status, message, remediation, clean)]


def skipped(check_id: str, reason: str) -> List[CheckResult]:
    return [CheckResult(check_id, SKIP, reason)]


def short_uuid(uuid: str) -> str:
    """Enough of a UUID to tell GPUs apart in a sentence; evidence keeps the full one."""
    return uuid[:12] if len(uuid) > 12 else uuid


def gpu_label(gpu: CudaGpu) -> str:
    return f"GPU {gpu.ordinal} ({short_uuid(gpu.uuid)}, bus {gpu.pci_bus_id})"


def nvml_label(gpu: NvmlGpu) -> str:
    return f"nvidia-smi GPU {gpu.index} ({short_uuid(gpu.uuid)}, bus {gpu.pci_bus_id})"


def gib(value: float) -> str:
    return f"{value / GIB:.1f} GiB"


def size_text(value: float) -> str:
    return f"{value / GIB:.1f} GiB" if value >= GIB else f"{value / MIB:.0f} MiB"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def cuda_unavailable(facts: Facts, check_id: str) -> Optional[List[CheckResult]]:
    """A skip result when CUDA did not initialise (the driver check says why)."""
    if not facts.cuda.loaded:
        return skipped(check_id, "no NVIDIA driver (see check 'driver')")
    if not facts.cuda.initialised:
        return skipped(check_id, f"cuInit failed ({facts.cuda.init_name}); see check 'driver'")
    return None


def plan_gpus(facts: Facts) -> List[Tuple[CudaGpu, Optional[NvmlGpu]]]:
    """The GPUs the plan will use (CUDA ordinals 0..needed-1), joined to NVML by UUID."""
    return [
        (gpu, facts.nvml.by_uuid(gpu.uuid))
        for gpu in facts.cuda.gpus
        if gpu.ordinal < facts.plan.gpus_needed
    ]
