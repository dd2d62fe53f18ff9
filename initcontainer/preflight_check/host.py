"""Everything the collectors reach outside the process, in one replaceable bundle.

The real host loads libcuda and pynvml and starts children with this package; the
CPU tests hand in a fake driver, a fake NVML and a child command that runs the same
child code over the fake.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Dict, Mapping, Optional

from preflight_check.children import CommandFor, default_command_for
from preflight_check.driver.api import CudaDriver, Nvml
from preflight_check.environment import (
    gpu_device_nodes,
    installed_vllm_release,
    read_kernel_log,
    read_preload,
    read_shm,
    runtime_requirement,
)
from preflight_check.facts import PreloadFacts, RuntimeRequirement, ShmFacts


def _load_libcuda() -> CudaDriver:
    from preflight_check.driver.libcuda import load_libcuda  # noqa: PLC0415 - ctypes only when used

    return load_libcuda()


def _load_nvml() -> Nvml:
    from preflight_check.driver.nvml import load_nvml  # noqa: PLC0415 - pynvml only when used

    return load_nvml()


@dataclass
class Host:
    environ: Dict[str, str]
    load_cuda: Callable[[], CudaDriver] = _load_libcuda
    load_nvml: Callable[[], Nvml] = _load_nvml
    command_for: CommandFor = default_command_for
    shm: Callable[[], ShmFacts] = read_shm
    preload: Callable[[Mapping[str, str]], PreloadFacts] = read_preload
    device_nodes: Callable[[], Optional[int]] = gpu_device_nodes
    runtime: Callable[[Mapping[str, str]], RuntimeRequirement] = runtime_requirement
    # the vLLM release the image holds, where its model registry is exact (no plugin)
    vllm_release: Callable[[], Optional[str]] = installed_vllm_release
    # the kernel log (XID history), None where the pod cannot read it
    kernel_log: Callable[[], Optional[str]] = read_kernel_log
    # Environment for children; None inherits this process's environment.
    child_environ: Optional[Dict[str, str]] = field(default=None)


def real_host() -> Host:
    return Host(environ=dict(os.environ))
