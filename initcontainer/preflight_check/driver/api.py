"""The interface between the checker and the GPU driver: CUDA's driver API and NVML.

Everything the checker learns about GPUs passes through these two protocols. The real
implementations (``libcuda`` over ctypes, ``nvml`` over pynvml) and the fake used by the
CPU tests implement exactly these methods, so the checks and collectors cannot tell them
apart. Driver calls return CUDA's result code rather than raising: a non-zero code is
evidence the report must name, not an exception to swallow.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Optional, Protocol, Tuple

# The driver's result codes and the loaded-library description live in ``basics`` (no
# heavy imports: the rank probe child uses them); re-exported here for everyone else.
from preflight_check.driver.basics import (
    CUDA_ERROR_DEVICE_UNAVAILABLE,
    CUDA_ERROR_ECC_UNCORRECTABLE,
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NAMES,
    CUDA_ERROR_NO_DEVICE,
    CUDA_ERROR_NOT_INITIALIZED,
    CUDA_ERROR_OUT_OF_MEMORY,
    CUDA_ERROR_STUB_LIBRARY,
    CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
    CUDA_ERROR_UNKNOWN,
    CUDA_SUCCESS,
    DriverUnavailable,
    LoadedLibrary,
    SymbolProvider,
    cuda_error_name,
    format_uuid,
)

__all__ = [
    "COMPUTE_MODE_DEFAULT",
    "COMPUTE_MODE_EXCLUSIVE_PROCESS",
    "COMPUTE_MODE_EXCLUSIVE_THREAD",
    "COMPUTE_MODE_NAMES",
    "COMPUTE_MODE_PROHIBITED",
    "CUDA_ERROR_DEVICE_UNAVAILABLE",
    "CUDA_ERROR_ECC_UNCORRECTABLE",
    "CUDA_ERROR_INVALID_CONTEXT",
    "CUDA_ERROR_INVALID_DEVICE",
    "CUDA_ERROR_INVALID_VALUE",
    "CUDA_ERROR_NAMES",
    "CUDA_ERROR_NOT_INITIALIZED",
    "CUDA_ERROR_NO_DEVICE",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "CUDA_ERROR_STUB_LIBRARY",
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    "CUDA_ERROR_UNKNOWN",
    "CUDA_SUCCESS",
    "CudaDriver",
    "DriverUnavailable",
    "FabricInfo",
    "LoadedLibrary",
    "Nvml",
    "NvmlDevice",
    "NvmlError",
    "NvmlGpuNeedsReset",
    "PcieLink",
    "RemappedRows",
    "SymbolProvider",
    "bus_id_key",
    "cuda_error_name",
    "format_uuid",
    "uuid_key",
]

# NVML compute modes (nvmlComputeMode_t).
COMPUTE_MODE_DEFAULT = 0
COMPUTE_MODE_EXCLUSIVE_THREAD = 1
COMPUTE_MODE_PROHIBITED = 2
COMPUTE_MODE_EXCLUSIVE_PROCESS = 3
COMPUTE_MODE_NAMES: Dict[int, str] = {
    0: "Default",
    1: "Exclusive_Thread",
    2: "Prohibited",
    3: "Exclusive_Process",
}


class NvmlError(Exception):
    """An NVML call failed for a reason other than 'not supported on this GPU'."""


class NvmlGpuNeedsReset(NvmlError):
    """NVML answered NVML_ERROR_RESET_REQUIRED ("the GPU requires a reset before it can be
    used again") or NVML_ERROR_GPU_IS_LOST ("the GPU has fallen off the bus or has
    otherwise become inaccessible"): the GPU's state, which the ``gpu-reset`` check names."""


# NVML's values for the fast-tier health reads (nvml.h; NVML API Reference Guide,
# docs.nvidia.com/deploy/nvml-api). Here so that checks and the fake need no pynvml.
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
# nvmlDeviceGpuRecoveryAction_t, read as field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230).
RECOVERY_ACTION_NONE = 0
RECOVERY_ACTION_NAMES: Dict[int, str] = {
    0: "none",
    1: "GPU reset",
    2: "node reboot",
    3: "drain peer-to-peer traffic",
    4: "drain peer-to-peer traffic and reset the GPU",
    5: "recover the IMEX domain",
    6: "reset the GPU's PCIe bus",
    7: "reboot the system",
}
# nvmlClocksEventReasons (formerly nvmlClocksThrottleReasons) bits.
CLOCKS_EVENT_GPU_IDLE = 0x1
CLOCKS_EVENT_SW_POWER_CAP = 0x4
CLOCKS_EVENT_HW_SLOWDOWN = 0x8
CLOCKS_EVENT_SW_THERMAL = 0x20
CLOCKS_EVENT_HW_THERMAL = 0x40
CLOCKS_EVENT_HW_POWER_BRAKE = 0x80
# nvmlGpuFabricState_t and the v3 health summary.
FABRIC_STATE_NOT_SUPPORTED = 0
FABRIC_STATE_NAMES: Dict[int, str] = {
    0: "not supported",
    1: "not started",
    2: "in progress",
    3: "completed",
}
FABRIC_STATE_COMPLETED = 3
FABRIC_HEALTH_NAMES: Dict[int, str] = {
    0: "not supported",
    1: "healthy",
    2: "unhealthy",
    3: "limited capacity",
}
FABRIC_HEALTH_UNHEALTHY = 2
FABRIC_HEALTH_LIMITED = 3
NVML_SUCCESS = 0


class RemappedRows(NamedTuple):
    """nvmlDeviceGetRemappedRows: rows remapped for correctable / uncorrectable errors, a
    remapping waiting for the next GPU reset, and whether a remapping ever failed."""

    correctable: int
    uncorrectable: int
    pending: bool
    failed: bool


class PcieLink(NamedTuple):
    """Current and maximum PCIe link generation and width (nvmlDeviceGetCurrPcieLink*,
    nvmlDeviceGetMaxPcieLink*: the maximum this GPU and this system allow)."""

    generation: int
    max_generation: int
    width: int
    max_width: int


class FabricInfo(NamedTuple):
    """nvmlDeviceGetGpuFabricInfo: the GPU's registration with the NVSwitch fabric."""

    state: int
    status: int
    health: Optional[int] = None


class CudaDriver(Protocol):
    """CUDA's driver API, one method per entry point the checker uses.

    Every method returns the CUresult first. Device handles and ordinals are ints;
    contexts and device pointers are ints (0 means NULL).
    """

    def library(self) -> LoadedLibrary: ...

    def init(self) -> int: ...

    def driver_version(self) -> Tuple[int, int]: ...

    def device_count(self) -> Tuple[int, int]: ...

    def device_get(self, ordinal: int) -> Tuple[int, int]: ...

    def device_uuid(self, device: int) -> Tuple[int, bytes]: ...

    def device_pci_bus_id(self, device: int) -> Tuple[int, str]: ...

    def device_name(self, device: int) -> Tuple[int, str]: ...

    def device_total_mem(self, device: int) -> Tuple[int, int]: ...

    def can_access_peer(self, device: int, peer: int) -> Tuple[int, bool]: ...

    def primary_ctx_retain(self, device: int) -> Tuple[int, int]: ...

    def primary_ctx_release(self, device: int) -> int: ...

    def ctx_set_current(self, context: int) -> int: ...

    def ctx_get_current(self) -> Tuple[int, int]: ...

    def ctx_get_device(self) -> Tuple[int, int]: ...

    def ctx_synchronize(self) -> int: ...

    def mem_alloc(self, size: int) -> Tuple[int, int]: ...

    def mem_set(self, pointer: int, value: int, size: int) -> int: ...

    def mem_free(self, pointer: int) -> int: ...

    def mem_get_info(self) -> Tuple[int, int, int]: ...

    def error_name(self, code: int) -> str: ...


class NvmlDevice(Protocol):
    """One GPU as NVML sees it (NVML ignores CUDA_VISIBLE_DEVICES; index = PCI order).

    Queries a GPU does not support return None; other failures raise NvmlError.
    """

    def uuid(self) -> str: ...

    def pci_bus_id(self) -> str: ...

    def name(self) -> str: ...

    def memory(self) -> Tuple[int, int]: ...

    def compute_mode(self) -> Optional[int]: ...

    def mig_enabled(self) -> Optional[bool]: ...

    def ecc_volatile_uncorrectable(self) -> Optional[int]: ...

    def compute_processes(self) -> List[Tuple[int, Optional[int]]]: ...

    # The fast-tier health reads (issue 16). Each returns None where the driver or the
    # platform does not offer it (not supported, no permission, too old a driver), and
    # raises NvmlGpuNeedsReset when NVML says the GPU needs a reset or is lost.

    def remapped_rows(self) -> Optional[RemappedRows]: ...

    def retired_pages_pending(self) -> Optional[bool]: ...

    def recovery_action(self) -> Optional[int]: ...

    def nvlink_states(self) -> Optional[List[bool]]: ...

    def pcie_link(self) -> Optional[PcieLink]: ...

    def clock_event_reasons(self) -> Optional[int]: ...

    def fabric_info(self) -> Optional[FabricInfo]: ...


class Nvml(Protocol):
    """NVML's system-level queries; ``init`` first, ``shutdown`` when done."""

    def init(self) -> None: ...

    def shutdown(self) -> None: ...

    def driver_version(self) -> str: ...

    def cuda_driver_version(self) -> int: ...

    def device_count(self) -> int: ...

    def device(self, index: int) -> NvmlDevice: ...

    def watch_xids(self, indices: List[int]) -> Optional[List[int]]:
        """Register for XID (critical error) events on these GPUs; the indices watched,
        or None where NVML offers no events here."""
        ...

    def xid_events(self) -> List[Tuple[int, int]]:
        """(GPU index, XID) of every event since ``watch_xids``, without waiting."""
        ...


def uuid_key(uuid: str) -> str:
    """Normalised UUID for joining CUDA and NVML: hex digits only, lower case.

    NVML says ``GPU-7b01fc6f-0352-...`` (or ``MIG-...``); the driver API gives raw
    bytes; users write either form with or without dashes.
    """
    text = uuid.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    return text.replace("-", "")


def bus_id_key(bus_id: str) -> str:
    """Normalised PCI bus id: NVML pads the domain to 8 digits, CUDA to 4."""
    text = bus_id.strip().lower()
    if text.count(":") == 2:
        domain, rest = text.split(":", 1)
        try:
            return f"{int(domain, 16):04x}:{rest}"
        except ValueError:
            return text
    return text
