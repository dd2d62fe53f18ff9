"""Evaluate every check over the facts and assemble the report."""

from __future__ import annotations

import resource
import socket
import time
from typing import Any, Dict, List

from preflight_check import __version__
from preflight_check.checks import REGISTRY
from preflight_check.environment import vllm_version_field
from preflight_check.facts import Facts
from preflight_check.interposer import identify
from preflight_check.options import Options
from preflight_contract.check_ids import CHECKS, DEEP, GROUP_PHASE
from preflight_contract.report import CheckResult, GPUEntry, Report
from preflight_contract.reuse import DEEP_PASS_IDS, DEEP_PASS_KEY, DEEP_REUSED, hardware_key
from preflight_contract.verdicts import ERROR, PASS, SKIP


def evaluate(facts: Facts, options: Options) -> List[CheckResult]:
    """Run each check in the declared order; one check's crash is its own error only."""
    out: List[CheckResult] = []
    for check_id, (tier, _) in CHECKS.items():
        if tier == DEEP and options.tier != DEEP:
            continue
        if check_id in GROUP_PHASE:
            continue  # after the local checks: checks/group.py
        if check_id in options.skip:
            out.append(CheckResult(check_id, SKIP, "turned off (--skip / PREFLIGHT_SKIP)"))
            continue
        started = time.perf_counter()
        try:
            results = REGISTRY[check_id](facts, options)
        except Exception as exc:
            import traceback  # noqa: PLC0415 - only when a check itself crashed

            results = [
                CheckResult(
                    check_id,
                    ERROR,
                    f"internal error in this check: {type(exc).__name__}: {exc}",
                    "report it with the JSON report attached (--json)",
                    {"traceback": traceback.format_exc(limit=4)[-1500:]},
                )
            ]
        spent = (time.perf_counter() - started) * 1000.0
        for item in results:
            item.duration_ms = spent
        out.extend(results)
    return out


def gpu_entries(facts: Facts) -> List[GPUEntry]:
    entries = []
    for gpu in facts.cuda.gpus:
        nvml = facts.nvml.by_uuid(gpu.uuid)
        entries.append(
            GPUEntry(
                ordinal=gpu.ordinal,
                uuid=gpu.uuid,
                pci_bus_id=gpu.pci_bus_id,
                name=gpu.name or (nvml.name if nvml else ""),
                nvml_index=nvml.index if nvml else None,
            )
        )
    return entries


def inventory(facts: Facts) -> Dict[str, Any]:
    nvml = facts.nvml
    out: Dict[str, Any] = {
        "driver_version": nvml.driver_version or None,
        "cuda_driver_version": facts.cuda.driver_version or nvml.cuda_driver_version,
        "cuda_visible_devices": facts.env("CUDA_VISIBLE_DEVICES"),
        "timings_ms": facts.timings_ms,
    }
    if facts.cuda.library is not None:
        out["libcuda"] = identify(facts.cuda.library, facts.preload, nvml.driver_version).to_dict()
    if nvml.available:
        out["nvml_gpus"] = [
            {
                "index": g.index,
                "uuid": g.uuid,
                "pci_bus_id": g.pci_bus_id,
                "name": g.name,
                "memory_total": g.memory_total,
                "memory_used": g.memory_used,
                "compute_mode": g.compute_mode,
                "mig": g.mig_enabled,
                "ecc_uncorrectable_volatile": g.ecc_uncorrectable,
                "processes": [list(p) for p in g.processes],
            }
            for g in nvml.gpus
        ]
    if facts.shm is not None:
        out["shm"] = {"path": facts.shm.path, "size": facts.shm.size, "free": facts.shm.free}
    out["peak_rss_mb"] = {
        # ru_maxrss is in KiB on Linux.
        "checker": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "children_max": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0, 1),
    }
    if facts.runtime.source:
        out["runtime"] = {"source": facts.runtime.source, "detail": facts.runtime.detail}
    return {k: v for k, v in out.items() if v is not None}


def deep_pass_key(facts: Facts, checks: List[CheckResult]) -> str:
    """Verdict reuse (preflight_contract/reuse.py): the hardware key of a deep tier that ran
    here and passed, or "". It goes in the report's plan, which every compaction of the
    termination message keeps, so that the operator can record the pass; a run that reused
    another pod's pass gets none (a reuse never extends itself)."""
    if facts.deep_reused or not facts.deep or not facts.nvml.driver_version:
        return ""
    deep = {c.id: c.status for c in checks if c.id in DEEP_PASS_IDS}
    if deep.get("deep-workers") != PASS or deep.get("deep-allreduce") != PASS:
        return ""
    if deep.get("deep-peer-copy") not in (PASS, SKIP):
        return ""
    return hardware_key([g.uuid for g in facts.cuda.gpus], facts.nvml.driver_version)


def build_report(
    facts: Facts, options: Options, checks: List[CheckResult], started: float
) -> Report:
    plan = facts.plan.to_dict()
    key = deep_pass_key(facts, checks)
    if key:
        plan[DEEP_PASS_KEY] = key
    if facts.deep_reused:  # says whose pass: kept by every compaction, as the plan is
        plan[DEEP_REUSED] = facts.deep_reused[:300]
    plan.update(vllm_version_field())
    return Report(
        checks=checks,
        action=options.action,
        tier=options.tier,
        plan=plan,
        gpus=gpu_entries(facts),
        inventory=inventory(facts),
        host=socket.gethostname(),
        started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        duration_ms=(time.time() - started) * 1000.0,
        version=__version__,
    )
