"""NVML through pynvml (package nvidia-ml-py, bundled into the zipapp).

pynvml is imported lazily: it is a large module and the import overlaps with cuInit in
the collector. Each call maps pynvml's exceptions onto this package's terms: 'not
supported' becomes None, anything else NvmlError with NVML's own text.
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from preflight_check.driver.api import (
    NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_RESET_REQUIRED,
    DriverUnavailable,
    FabricInfo,
    NvmlError,
    NvmlGpuNeedsReset,
    PcieLink,
    RemappedRows,
)

T = TypeVar("T")
# NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (nvml.h); older pynvml modules lack the name.
FIELD_GPU_RECOVERY_ACTION = 230
NVLINK_MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS of nvml.h 13.x (18 links on an H100/H200)
EVENT_XID_CRITICAL = 0x8  # nvmlEventTypeXidCriticalError


def _bound(function: Any, *args: Any) -> Callable[[], Any]:
    """``function(*args)`` as a thunk (for the reads in loops)."""
    return lambda: function(*args)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class _Binding:
    """Holds the imported pynvml module and converts its errors."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def _error(self, exc: Any) -> NvmlError:
        if getattr(exc, "value", None) in (NVML_ERROR_RESET_REQUIRED, NVML_ERROR_GPU_IS_LOST):
            return NvmlGpuNeedsReset(str(exc))
        return NvmlError(str(exc))

    def call(self, function: Callable[[], T]) -> T:
        try:
            return function()
        except self.module.NVMLError as exc:
            raise self._error(exc) from exc

    def optional(self, function: Callable[[], T]) -> Optional[T]:
        try:
            return function()
        except self.module.NVMLError_NotSupported:
            return None
        except self.module.NVMLError as exc:
            raise self._error(exc) from exc

    def health(self, function: Callable[[], T]) -> Optional[T]:
        """A fast-tier health read: whatever NVML refuses (not supported, no permission,
        an entry point or struct version this driver lacks) is "not available" (None);
        only a GPU that needs a reset or is lost is raised, because that is the finding."""
        try:
            return function()
        except self.module.NVMLError as exc:
            error = self._error(exc)
            if isinstance(error, NvmlGpuNeedsReset):
                raise error from exc
            return None
        except (AttributeError, TypeError):
            # A pynvml module without this call or struct: not available either.
            return None


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

    # -- fast-tier health reads (issue 16) ---------------------------------------

    def remapped_rows(self) -> Optional[RemappedRows]:
        found = self._b.health(lambda: self._nv.nvmlDeviceGetRemappedRows(self._handle))
        if found is None:
            return None
        corr, unc, pending, failed = found
        return RemappedRows(int(corr), int(unc), bool(pending), bool(failed))

    def retired_pages_pending(self) -> Optional[bool]:
        found = self._b.health(
            lambda: self._nv.nvmlDeviceGetRetiredPagesPendingStatus(self._handle)
        )
        return None if found is None else bool(found)

    def recovery_action(self) -> Optional[int]:
        def read() -> Optional[int]:
            values = self._nv.nvmlDeviceGetFieldValues(self._handle, [FIELD_GPU_RECOVERY_ACTION])
            value = values[0]
            if int(value.nvmlReturn) != 0:
                return None  # the field is not offered by this driver or GPU
            return int(value.value.uiVal)

        return self._b.health(read)

    def nvlink_states(self) -> Optional[List[bool]]:
        states: List[bool] = []
        for link in range(NVLINK_MAX_LINKS):
            state = self._b.health(_bound(self._nv.nvmlDeviceGetNvLinkState, self._handle, link))
            if state is None:
                break  # links are numbered from 0: the first refused one ends them
            states.append(bool(state))
        return states or None

    def pcie_link(self) -> Optional[PcieLink]:
        nv, handle = self._nv, self._handle
        values = [
            self._b.health(_bound(f, handle))
            for f in (
                nv.nvmlDeviceGetCurrPcieLinkGeneration,
                nv.nvmlDeviceGetMaxPcieLinkGeneration,
                nv.nvmlDeviceGetCurrPcieLinkWidth,
                nv.nvmlDeviceGetMaxPcieLinkWidth,
            )
        ]
        if any(v is None for v in values):
            return None
        gen, max_gen, width, max_width = (int(v or 0) for v in values)
        return PcieLink(gen, max_gen, width, max_width)

    def clock_event_reasons(self) -> Optional[int]:
        nv = self._nv
        read = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
        read = read or nv.nvmlDeviceGetCurrentClocksThrottleReasons  # older pynvml
        found = self._b.health(lambda: read(self._handle))
        return None if found is None else int(found)

    def fabric_info(self) -> Optional[FabricInfo]:
        nv = self._nv

        def v3() -> FabricInfo:
            info = nv.c_nvmlGpuFabricInfo_v3_t()
            nv.nvmlDeviceGetGpuFabricInfoV(self._handle, ctypes.byref(info))
            return FabricInfo(int(info.state), int(info.status), int(info.healthSummary))

        def v1() -> FabricInfo:
            info = nv.c_nvmlGpuFabricInfo_t()
            nv.nvmlDeviceGetGpuFabricInfo(self._handle, ctypes.byref(info))
            return FabricInfo(int(info.state), int(info.status), None)

        return self._b.health(v3) or self._b.health(v1)


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
        self._handles: Dict[int, Any] = {}
        self._events: Any = None

    def init(self) -> None:
        try:
            self._nv.nvmlInit()
        except self._nv.NVMLError as exc:
            # NVML_ERROR_LIBRARY_NOT_FOUND and friends: NVML is simply not there.
            raise DriverUnavailable(f"NVML: {exc}") from exc

    def shutdown(self) -> None:
        if self._events is not None:
            with contextlib.suppress(self._nv.NVMLError):
                self._nv.nvmlEventSetFree(self._events)
            self._events = None
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
        self._handles[index] = handle
        return PynvmlDevice(self._b, handle)

    def watch_xids(self, indices: List[int]) -> Optional[List[int]]:
        nv = self._nv
        events = self._b.health(nv.nvmlEventSetCreate)
        if events is None:
            return None
        watched: List[int] = []
        for index in indices:
            handle = self._handles.get(index)
            if handle is None:
                continue
            supported = self._b.health(_bound(nv.nvmlDeviceGetSupportedEventTypes, handle))
            if not supported or not int(supported) & EVENT_XID_CRITICAL:
                continue
            if self._b.health(_bound(self._register, handle, events)):
                watched.append(index)
        if not watched:
            self._b.health(lambda: nv.nvmlEventSetFree(events))
            return None
        self._events = events
        return watched

    def _register(self, handle: Any, events: Any) -> bool:
        self._nv.nvmlDeviceRegisterEvents(handle, EVENT_XID_CRITICAL, events)
        return True

    def xid_events(self) -> List[Tuple[int, int]]:
        if self._events is None:
            return []
        nv, found = self._nv, []
        by_uuid = {
            _text(self._b.health(_bound(nv.nvmlDeviceGetUUID, h)) or ""): i
            for i, h in self._handles.items()
        }
        for _ in range(64):  # a bound: a storm of events must not stall the check
            try:
                data = nv.nvmlEventSetWait_v2(self._events, 0)
            except nv.NVMLError:
                break  # NVML_ERROR_TIMEOUT: no event left
            uuid = _text(self._b.health(_bound(nv.nvmlDeviceGetUUID, data.device)) or "")
            found.append((by_uuid.get(uuid, -1), int(data.eventData)))
        return found


def load_nvml() -> PynvmlLibrary:
    return PynvmlLibrary()
