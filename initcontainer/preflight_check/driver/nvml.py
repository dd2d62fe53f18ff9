"""NVML through pynvml (package nvidia-ml-py, bundled into the zipapp).

pynvml is imported lazily: it is a large module and the import overlaps with cuInit in
the collector. Each call maps pynvml's exceptions onto this package's terms: 'not
supported' becomes None, anything else NvmlError with NVML's own text.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, List, Optional, Tuple, TypeVar

from preflight_check.driver.api import DriverUnavailable, NvmlError

T = TypeVar("T")


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class _Binding:
    """Holds the imported pynvml module and converts its errors."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def call(self, function: Callable[[], T]) -> T:
        try:
            return function()
        except self.module.NVMLError as exc:
            raise NvmlError(str(exc)) from exc

    def optional(self, function: Callable[[], T]) -> Optional[T]:
        try:
            return function()
        except self.module.NVMLError_NotSupported:
            return None
        except self.module.NVMLError as exc:
            raise NvmlError(str(exc)) from exc


class PynvmlDevice:
    def __init__(self, binding: _Binding, handle: Any) -> None:
        self._b = binding
        self._nv = binding.module
        self._handle = handle

    def uuid(self) -> str:
        return _text(self._b.call(lambda: self._nv.nvmlDeviceGetUUID(self._handle)))

    def pci_bus_id(self) -> str:
        info = self._b.call(lambda: self._nv.nvmlDeviceGetPciInfo(self._handle))
        return _text(info.busId)

    def name(self) -> str:
        return _text(self._b.call(lambda: self._nv.nvmlDeviceGetName(self._handle)))

    def memory(self) -> Tuple[int, int]:
        info = self._b.call(lambda: self._nv.nvmlDeviceGetMemoryInfo(self._handle))
        return int(info.total), int(info.used)

    def compute_mode(self) -> Optional[int]:
        mode = self._b.optional(lambda: self._nv.nvmlDeviceGetComputeMode(self._handle))
        return None if mode is None else int(mode)

    def mig_enabled(self) -> Optional[bool]:
        modes = self._b.optional(lambda: self._nv.nvmlDeviceGetMigMode(self._handle))
        return None if modes is None else bool(modes[0])

    def ecc_volatile_uncorrectable(self) -> Optional[int]:
        count = self._b.optional(
            lambda: self._nv.nvmlDeviceGetTotalEccErrors(
                self._handle,
                self._nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                self._nv.NVML_VOLATILE_ECC,
            )
        )
        return None if count is None else int(count)

    def compute_processes(self) -> List[Tuple[int, Optional[int]]]:
        found = self._b.optional(
            lambda: self._nv.nvmlDeviceGetComputeRunningProcesses(self._handle)
        )
        out: List[Tuple[int, Optional[int]]] = []
        for process in found or []:
            used = getattr(process, "usedGpuMemory", None)
            out.append((int(process.pid), int(used) if isinstance(used, int) else None))
        return out


class PynvmlLibrary:
    def __init__(self) -> None:
        try:
            import pynvml  # noqa: PLC0415 - large; imported while cuInit runs
        except ImportError as exc:
            raise DriverUnavailable(
                "the Python module pynvml (package nvidia-ml-py) is not installed"
            ) from exc
        self._b = _Binding(pynvml)
        self._nv: Any = pynvml

    def init(self) -> None:
        try:
            self._nv.nvmlInit()
        except self._nv.NVMLError as exc:
            # NVML_ERROR_LIBRARY_NOT_FOUND and friends: NVML is simply not there.
            raise DriverUnavailable(f"NVML: {exc}") from exc

    def shutdown(self) -> None:
        with contextlib.suppress(self._nv.NVMLError):
            self._nv.nvmlShutdown()

    def driver_version(self) -> str:
        return _text(self._b.call(self._nv.nvmlSystemGetDriverVersion))

    def cuda_driver_version(self) -> int:
        return int(self._b.call(self._nv.nvmlSystemGetCudaDriverVersion))

    def device_count(self) -> int:
        return int(self._b.call(self._nv.nvmlDeviceGetCount))

    def device(self, index: int) -> PynvmlDevice:
        handle = self._b.call(lambda: self._nv.nvmlDeviceGetHandleByIndex(index))
        return PynvmlDevice(self._b, handle)


def load_nvml() -> PynvmlLibrary:
    return PynvmlLibrary()
