"""Which CUDA driver library answers the workload's calls (issue 8)."""

from __future__ import annotations

from typing import List

from preflight_check.checks.base import check, result, skipped
from preflight_check.facts import Facts
from preflight_check.interposer import identify, interposed_symbols
from preflight_check.options import Options
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import PASS, WARN


@check("cuda-library")
def cuda_library(facts: Facts, options: Options) -> List[CheckResult]:
    library = facts.cuda.library
    if library is None:
        return skipped("cuda-library", "no CUDA driver library was loaded (see 'driver')")
    identity = identify(library, facts.preload, facts.nvml.driver_version)
    evidence = identity.to_dict()
    defective = [f for f in identity.findings if f.defective]
    if defective:
        return result(
            "cuda-library",
            WARN,
            "; ".join(f"{f.describe()}: {f.layer.defects if f.layer else ''}" for f in defective),
            "upgrade the layer (HAMi-core to 2.8.1 or later) or run TP > 1 workloads on GPUs "
            "without it; check 'thread-discipline' shows how this one behaves",
            **evidence,
        )
    if identity.findings:
        symbols = interposed_symbols(identity.findings)
        answered = f" (answers {', '.join(symbols)})" if symbols else ""
        return result(
            "cuda-library",
            PASS,
            "note: not NVIDIA's driver alone: "
            + "; ".join(f.describe() for f in identity.findings)
            + answered
            + ". No known TP > 1 defect; check 'thread-discipline' tests its behaviour",
            **evidence,
        )
    version = identity.nvidia_version or "?"
    nvml = identity.nvml_driver_version
    if nvml and nvml != version:
        detail = (
            f"NVIDIA's libcuda {version} over kernel driver {nvml} (CUDA forward-compatibility "
            "package)"
        )
    else:
        detail = f"NVIDIA's driver {version}" + (" (NVML agrees)" if nvml else "")
    return result(
        "cuda-library",
        PASS,
        f"{detail}: {identity.libcuda_path} answers every CUDA call directly",
        **evidence,
    )
