"""The interface between the checker and the GPU driver: CUDA's driver API and NVML.

Everything the checker learns about GPUs passes through these two protocols. The real
implementations (``libcuda`` over ctypes, ``nvml`` over pynvml) and the fake used by the
CPU tests implement exactly these methods, so the checks and collectors cannot tell them
apart. Driver calls return CUDA's result code rather than raising: a non-zero code is
evidence the report must name, not an exception to swallow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Protocol, Tuple

# CUresult values the checker names in its messages. The real driver's cuGetErrorName
# is preferred; this table covers a missing or interposed cuGetErrorName.
CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NOT_INITIALIZED = 3
CUDA_ERROR_STUB_LIBRARY = 34
CUDA_ERROR_DEVICE_UNAVAILABLE = 46
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_INVALID_DEVICE = 101
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_ECC_UNCORRECTABLE = 214
CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803
CUDA_ERROR_UNKNOWN = 999

CUDA_ERROR_NAMES: Dict[int, str] = {
    0: "CUDA_SUCCESS",
    1: "CUDA_ERROR_INVALID_VALUE",
    2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY",
    46: "CUDA_ERROR_DEVICE_UNAVAILABLE",
    100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE",
    102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
    201: "CUDA_ERROR_INVALID_CONTEXT",
    214: "CUDA_ERROR_ECC_UNCORRECTABLE",
    216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
    217: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
    304: "CUDA_ERROR_OPERATING_SYSTEM",
    400: "CUDA_ERROR_INVALID_HANDLE",
    709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    800: "CUDA_ERROR_NOT_PERMITTED",
    801: "CUDA_ERROR_NOT_SUPPORTED",
    802: "CUDA_ERROR_SYSTEM_NOT_READY",
    803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
    999: "CUDA_ERROR_UNKNOWN",
}


def cuda_error_name(code: int) -> str:
    return CUDA_ERROR_NAMES.get(code, f"CUresult {code}")


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


class DriverUnavailable(Exception):
    """libcuda.so.1 (or NVML) cannot be loaded at all: there is no driver to ask."""


class NvmlError(Exception):
    """An NVML call failed for a reason other than 'not supported on this GPU'."""


@dataclass
class SymbolProvider:
    """Which shared object answers a driver entry point, as the dynamic linker resolves it."""

    symbol: str
    path: str


@dataclass
class LoadedLibrary:
    """The CUDA driver library this process actually uses (issue 8: interposers).

    ``path`` is the file that was loaded for ``libcuda.so.1``; ``providers`` says which
    object each entry point resolves to in the process's global scope, which is where an
    LD_PRELOAD interposer shows itself.
    """

    requested: str
    path: str
    providers: List[SymbolProvider] = field(default_factory=list)


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


def format_uuid(raw: bytes, prefix: str = "GPU-") -> str:
    """16 raw bytes from cuDeviceGetUuid in NVML's textual form."""
    text = raw.hex()
    return f"{prefix}{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:32]}"


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
