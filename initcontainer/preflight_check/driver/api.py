"""The interface between the checker and the GPU driver: CUDA's driver API and NVML.

Everything the checker learns about GPUs passes through these two protocols. The real
implementations (``libcuda`` over ctypes, ``nvml`` over pynvml) and the fake used by the
CPU tests implement exactly these methods, so the checks and collectors cannot tell them
apart. Driver calls return CUDA's result code rather than raising: a non-zero code is
evidence the report must name, not an exception to swallow.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Protocol, Tuple

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
    "LoadedLibrary",
    "Nvml",
    "NvmlDevice",
    "NvmlError",
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


class Nvml(Protocol):
    """NVML's system-level queries; ``init`` first, ``shutdown`` when done."""

    def init(self) -> None: ...

    def shutdown(self) -> None: ...

    def driver_version(self) -> str: ...

    def cuda_driver_version(self) -> int: ...

    def device_count(self) -> int: ...

    def device(self, index: int) -> NvmlDevice: ...


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
