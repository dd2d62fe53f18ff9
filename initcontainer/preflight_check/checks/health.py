"""Health of the GPUs the plan will use, from the NVML snapshot taken before any context
of this checker existed (so every process and byte in use is someone else's)."""

from __future__ import annotations

from typing import List

from preflight_check.checks.base import (
    check,
    cuda_unavailable,
    gib,
    gpu_label,
    plan_gpus,
    result,
    skipped,
)
from preflight_check.driver.api import (
    COMPUTE_MODE_DEFAULT,
    COMPUTE_MODE_NAMES,
    COMPUTE_MODE_PROHIBITED,
)
from preflight_check.facts import Facts
from preflight_check.options import Options
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, PASS, WARN

GIB = float(1 << 30)
# vLLM measures free memory after creating its own context (about 0.5 GiB on an H200):
# closer than this to the limit is a warning.
MEMORY_MARGIN = 1.0 * GIB


def _nvml_needed(facts: Facts, check_id: str) -> List[CheckResult]:
    unavailable = cuda_unavailable(facts, check_id)
    if unavailable:
        return unavailable
    if not facts.nvml.available:
        return skipped(check_id, "NVML unavailable (see 'nvml')")
    if not plan_gpus(facts):
        return skipped(check_id, "CUDA sees no GPU the plan would use")
    return []


@check("compute-mode")
def compute_mode(facts: Facts, options: Options) -> List[CheckResult]:
    early = _nvml_needed(facts, "compute-mode")
    if early:
        return early
    prohibited, exclusive = [], []
    for gpu, nvml in plan_gpus(facts):
        mode = nvml.compute_mode if nvml else None
        if mode == COMPUTE_MODE_PROHIBITED:
            prohibited.append(gpu_label(gpu))
        elif mode not in (None, COMPUTE_MODE_DEFAULT):
            exclusive.append(f"{gpu_label(gpu)}: {COMPUTE_MODE_NAMES.get(mode or 0, mode)}")
    if prohibited:
        return result(
            "compute-mode",
            FAIL,
            f"compute mode Prohibited on {', '.join(prohibited)}: no process may create a "
            "context, vLLM fails with 'CUDA-capable device(s) is/are busy or unavailable'",
            "ask the node's administrator to set compute mode Default (nvidia-smi -c DEFAULT)",
        )
    if exclusive:
        return result(
            "compute-mode",
            WARN,
            f"exclusive compute mode on {'; '.join(exclusive)}: only one process may hold a "
            "context, so anything else on the GPU (a second vLLM, a profiler, a sidecar) fails "
            "with 'CUDA-capable device(s) is/are busy or unavailable'",
            "use compute mode Default unless the GPUs are deliberately exclusive",
        )
    return result("compute-mode", PASS, "compute mode Default on every GPU the plan uses")


@check("mig")
def mig(facts: Facts, options: Options) -> List[CheckResult]:
    early = _nvml_needed(facts, "mig")
    if early:
        return early
    on = [gpu_label(gpu) for gpu, nvml in plan_gpus(facts) if nvml and nvml.mig_enabled]
    tp = facts.plan.tp
    if on and tp > 1:
        return result(
            "mig",
            FAIL,
            f"MIG is enabled on {', '.join(on)} and TP = {tp}: a CUDA process uses one MIG "
            "slice and NCCL cannot join slices, so vLLM's tensor parallelism fails",
            "use TP = 1 per MIG slice, or whole GPUs (MIG disabled) for TP > 1",
        )
    if on and facts.plan.unknown:
        return result(
            "mig",
            WARN,
            f"MIG is enabled on {', '.join(on)} and the plan is unknown: fine with TP = 1, "
            "tensor parallelism over MIG slices fails",
            "use TP = 1 per MIG slice, or whole GPUs (MIG disabled) for TP > 1",
        )
    if on:
        return result("mig", PASS, f"MIG enabled on {', '.join(on)}; fine with TP = 1")
    return result("mig", PASS, "MIG disabled on every GPU the plan uses")


@check("ecc")
def ecc(facts: Facts, options: Options) -> List[CheckResult]:
    early = _nvml_needed(facts, "ecc")
    if early:
        return early
    bad = [
        f"{gpu_label(gpu)}: {nvml.ecc_uncorrectable}"
        for gpu, nvml in plan_gpus(facts)
        if nvml and nvml.ecc_uncorrectable
    ]
    if bad:
        return result(
            "ecc",
            FAIL,
            f"volatile uncorrectable ECC errors since the driver loaded on {'; '.join(bad)}: "
            "kernels on it can fail with 'uncorrectable ECC error encountered'",
            "drain the node and have the GPU reset or serviced (nvidia-smi -q -d ECC,ROW_REMAPPER)",
        )
    return result("ecc", PASS, "no volatile uncorrectable ECC errors on the GPUs the plan uses")


@check("gpu-memory")
def gpu_memory(facts: Facts, options: Options) -> List[CheckResult]:
    early = _nvml_needed(facts, "gpu-memory")
    if early:
        return early
    utilization = options.gpu_memory_utilization
    short, tight, rows = [], [], []
    for gpu, nvml in plan_gpus(facts):
        if nvml is None or nvml.memory_total is None or nvml.memory_used is None:
            continue
        total, used = float(nvml.memory_total), float(nvml.memory_used)
        free, need = total - used, utilization * total
        rows.append({"ordinal": gpu.ordinal, "total": int(total), "used": int(used)})
        most = max(0.0, (free - MEMORY_MARGIN) / total)
        line = (
            f"{gpu_label(gpu)} has {gib(used)} of {gib(total)} in use; vLLM at "
            f"--gpu-memory-utilization {utilization:g} needs {gib(need)} free, {gib(free)} is"
        )
        if free < need:
            short.append((line, most))
        elif free - need < MEMORY_MARGIN:
            tight.append((line, most))
    evidence = {
        "gpu_memory_utilization": utilization,
        "gpus": rows,
    }
    if short:
        most = min(m for _, m in short)
        # plan unknown: which GPUs vLLM uses, and its own --gpu-memory-utilization, are not
        # known: a guess is a warning
        unknown = facts.plan.unknown
        return result(
            "gpu-memory",
            WARN if unknown else FAIL,
            "; ".join(line for line, _ in short)
            + ": vLLM fails with 'Free memory on device ... on startup is less than desired GPU "
            "memory utilization'"
            + (
                " (plan unknown: whether vLLM uses these GPUs, and at which "
                "--gpu-memory-utilization, is not known)"
                if unknown
                else ""
            ),
            f"lower --gpu-memory-utilization to {most:.2f} or less, or stop what uses the GPU",
            **evidence,
        )
    if tight:
        most = min(m for _, m in tight)
        return result(
            "gpu-memory",
            WARN,
            "; ".join(line for line, _ in tight)
            + ": less than 1 GiB to spare for vLLM's own CUDA context",
            f"lower --gpu-memory-utilization to {most:.2f} or less",
            **evidence,
        )
    return result(
        "gpu-memory",
        PASS,
        f"enough free memory for --gpu-memory-utilization {utilization:g} on every GPU "
        "the plan uses",
        **evidence,
    )


@check("gpu-processes")
def gpu_processes(facts: Facts, options: Options) -> List[CheckResult]:
    early = _nvml_needed(facts, "gpu-processes")
    if early:
        return early
    busy = []
    for gpu, nvml in plan_gpus(facts):
        if nvml and nvml.processes:
            listed = ", ".join(
                f"pid {pid}" + (f" ({gib(used)})" if used else "")
                for pid, used in nvml.processes[:4]
            )
            busy.append(f"{gpu_label(gpu)}: {listed}")
    if busy:
        return result(
            "gpu-processes",
            WARN,
            f"other processes already hold a context on {'; '.join(busy)}",
            "another workload shares these GPUs (time-slicing, MPS, a stale process or a "
            "privileged pod): free them or expect less memory and speed",
        )
    return result("gpu-processes", PASS, "no other process runs on the GPUs the plan uses")
