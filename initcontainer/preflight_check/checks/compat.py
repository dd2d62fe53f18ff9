"""The driver's CUDA version against the CUDA runtime the image will use."""

from __future__ import annotations

from typing import List, Optional, Tuple

from preflight_check.checks.base import check, result, skipped
from preflight_check.facts import Facts
from preflight_check.options import Options
from preflight_contract.report import CheckResult

# Oldest Linux driver of each CUDA major version (NVIDIA's CUDA release notes).
from preflight_contract.verdicts import FAIL, PASS, WARN

# Oldest Linux driver of each CUDA major version (NVIDIA's CUDA release notes).
MIN_DRIVER_FOR_MAJOR = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}


def _as_version(encoded: Optional[int]) -> Optional[Tuple[int, int]]:
    if not encoded:
        return None
    return encoded // 1000, encoded % 1000 // 10


def _text(version: Tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


@check("cuda-compat")
def cuda_compat(facts: Facts, options: Options) -> List[CheckResult]:
    runtime = facts.runtime
    if runtime.torch_cpu_only:
        return result(
            "cuda-compat",
            FAIL,
            f"{runtime.detail}: vLLM cannot use the GPUs with it",
            "use an image whose torch is a CUDA build (e.g. vllm/vllm-openai)",
            source=runtime.source,
        )
    supported = _as_version(facts.cuda.driver_version) or _as_version(
        facts.nvml.cuda_driver_version
    )
    if supported is None:
        return skipped("cuda-compat", "the driver's CUDA version is unknown (see 'driver')")
    needed = runtime.version
    if needed is None:
        return skipped(
            "cuda-compat",
            f"driver supports CUDA <= {_text(supported)}; "
            f"{runtime.detail or 'no CUDA runtime found'}",
        )
    driver = facts.nvml.driver_version or "the driver"
    evidence = {
        "driver_supports": _text(supported),
        "image_needs": _text(needed),
        "source": runtime.source,
        "detail": runtime.detail,
    }
    wanted_driver = MIN_DRIVER_FOR_MAJOR.get(needed[0])
    upgrade = (
        f"upgrade the node's NVIDIA driver to {wanted_driver} or newer (CUDA {needed[0]}.x), "
        if wanted_driver
        else "upgrade the node's NVIDIA driver, "
    )
    if needed[0] > supported[0]:
        return result(
            "cuda-compat",
            FAIL,
            f"{driver} supports CUDA <= {_text(supported)}; this image needs {_text(needed)} "
            f"({runtime.detail}): torch fails with 'The NVIDIA driver on your system is too old'",
            upgrade + f"or use an image built for CUDA {supported[0]}.x",
            **evidence,
        )
    if needed > supported:
        return result(
            "cuda-compat",
            WARN,
            f"{driver} supports CUDA <= {_text(supported)}; this image needs {_text(needed)} "
            f"({runtime.detail}). Minor-version compatibility runs most code, but kernels "
            "compiled at run time from PTX (Triton) can fail with "
            "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
            upgrade + f"or use an image built for CUDA {_text(supported)}",
            **evidence,
        )
    return result(
        "cuda-compat",
        PASS,
        f"{driver} supports CUDA <= {_text(supported)}; the image needs {_text(needed)} "
        f"({runtime.detail})",
        **evidence,
    )
