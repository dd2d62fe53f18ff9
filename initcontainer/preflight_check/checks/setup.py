"""Checks of the starting conditions: the plan, the driver and NVML."""

from __future__ import annotations

from typing import List

from preflight_check.checks.base import check, plural, result
from preflight_check.driver.api import (
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_NO_DEVICE,
    CUDA_ERROR_STUB_LIBRARY,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
)
from preflight_check.facts import Facts
from preflight_check.options import Options
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, PASS, WARN

GPU_REQUEST_FIX = (
    "run on a node with NVIDIA GPUs and driver; in Kubernetes set resources.limits "
    "nvidia.com/gpu on the vLLM container (and runtimeClassName: nvidia where the cluster "
    "uses one) so the NVIDIA container runtime mounts the driver"
)


@check("plan")
def plan_check(facts: Facts, options: Options) -> List[CheckResult]:
    plan = facts.plan
    if plan.unknown:
        seen = plural(plan.dp_local, "GPU") if facts.cuda.initialised else "none: see 'driver'"
        return result(
            "plan",
            WARN,
            f"plan unknown: GPU count not compared ({plan.unknown}); the check validated "
            f"every GPU CUDA sees ({seen}) without a plan",
            "write the vLLM command as a list (command: [vllm, serve, ...]) or put the sizes "
            "in the manifest, so that the GPU count is compared with the plan",
            plan=plan.to_dict(),
        )
    if options.plan_notes:
        return result(
            "plan",
            WARN,
            f"{plan.describe()} per pod (from {plan.source}); vLLM would also object: "
            + "; ".join(options.plan_notes),
            "fix the vLLM arguments named above",
            plan=plan.to_dict(),
            notes=options.plan_notes,
        )
    recovered = f"; the rules could not read it ({plan.recovered})" if plan.recovered else ""
    return result(
        "plan",
        PASS,
        f"{plan.describe()} per pod (from {plan.source}){recovered}",
        plan=plan.to_dict(),
    )


def _driver_version_text(facts: Facts) -> str:
    if facts.nvml.driver_version:
        return f"driver {facts.nvml.driver_version}"
    version = facts.cuda.driver_version
    if version:
        return f"driver with CUDA {version // 1000}.{version % 1000 // 10}"
    return "driver"


@check("driver")
def driver_check(facts: Facts, options: Options) -> List[CheckResult]:
    cuda = facts.cuda
    if not cuda.loaded:
        return result(
            "driver",
            FAIL,
            f"no NVIDIA driver: {cuda.load_error}",
            GPU_REQUEST_FIX,
            error=cuda.load_error,
        )
    path = cuda.library.path if cuda.library else "libcuda.so.1"
    evidence = {
        "library": path,
        "cuInit": cuda.init_name,
        "cuInit_ms": round(cuda.init_ms, 1),
        "cuda_driver_version": cuda.driver_version,
    }
    code = cuda.init_code
    cvd = facts.env("CUDA_VISIBLE_DEVICES")
    if code == CUDA_ERROR_STUB_LIBRARY:
        return result(
            "driver",
            FAIL,
            f"no NVIDIA driver: libcuda.so.1 at {path} is CUDA's stub library "
            "(cuInit: CUDA_ERROR_STUB_LIBRARY), not the driver",
            "remove the CUDA toolkit's stubs directory from LD_LIBRARY_PATH; " + GPU_REQUEST_FIX,
            **evidence,
        )
    if code in (CUDA_ERROR_NO_DEVICE, CUDA_ERROR_INVALID_DEVICE) and cvd is not None:
        return result(
            "driver",
            FAIL,
            f"cuInit failed with {cuda.init_name} ({code}) because of "
            f"CUDA_VISIBLE_DEVICES={cvd!r}: CUDA sees no GPU",
            "see check 'cuda-visible-devices' for the entry at fault",
            **evidence,
        )
    if code == CUDA_ERROR_NO_DEVICE:
        return result(
            "driver",
            FAIL,
            "cuInit failed with CUDA_ERROR_NO_DEVICE (100): the driver is present but this "
            "container has no GPU",
            GPU_REQUEST_FIX,
            **evidence,
        )
    if code == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
        return result(
            "driver",
            FAIL,
            f"cuInit failed with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: {path} does not match the "
            f"kernel driver ({facts.nvml.driver_version or 'version unknown'})",
            "do not ship libcuda.so in the image; let the NVIDIA container runtime mount the "
            "node's own",
            **evidence,
        )
    if code != 0:
        return result(
            "driver",
            FAIL,
            f"cuInit failed with {cuda.init_name} ({code})",
            "check the node's driver with nvidia-smi; the GPU may need a reset or the node a "
            "reboot",
            **evidence,
        )
    return result(
        "driver",
        PASS,
        f"{_driver_version_text(facts)}, {path}; cuInit took {cuda.init_ms:.0f} ms, "
        f"CUDA sees {plural(cuda.count, 'GPU')}",
        **evidence,
    )


@check("nvml")
def nvml_check(facts: Facts, options: Options) -> List[CheckResult]:
    nvml = facts.nvml
    if not nvml.available:
        remedy = (
            "bundle nvidia-ml-py with the checker (the zipapp does)"
            if "pynvml" in nvml.error
            else GPU_REQUEST_FIX
        )
        return result(
            "nvml",
            WARN,
            f"no NVML inventory ({nvml.error}): UUIDs, memory, ECC and processes are not checked",
            remedy,
        )
    names = sorted({g.name for g in nvml.gpus})
    return result(
        "nvml",
        PASS,
        f"{plural(len(nvml.gpus), 'GPU')} in the container ({', '.join(names) or 'none'}), "
        f"driver {nvml.driver_version}; read in {nvml.ms:.0f} ms",
        driver_version=nvml.driver_version,
        cuda_driver_version=nvml.cuda_driver_version,
    )
