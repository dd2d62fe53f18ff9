"""The driver's vocabulary, importable at no cost: result codes and what was loaded.

The rank probe child imports this (not ``api``) so that it starts without typing,
dataclasses or re: each millisecond of its start-up is on the checker's critical path.
"""

from __future__ import annotations

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

CUDA_ERROR_NAMES: dict[int, str] = {
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


class DriverUnavailable(Exception):
    """libcuda.so.1 (or NVML) cannot be loaded at all: there is no driver to ask."""


class SymbolProvider:
    """Which shared object answers a driver entry point, as the dynamic linker resolves it."""

    __slots__ = ("path", "symbol")

    def __init__(self, symbol: str, path: str) -> None:
        self.symbol = symbol
        self.path = path

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SymbolProvider) and (self.symbol, self.path) == (
            other.symbol,
            other.path,
        )

    def __hash__(self) -> int:
        return hash((self.symbol, self.path))

    def __repr__(self) -> str:
        return f"SymbolProvider({self.symbol!r}, {self.path!r})"


class LoadedLibrary:
    """The CUDA driver library this process actually uses (issue 8: interposers).

    ``path`` is the file that was loaded for ``libcuda.so.1``; ``providers`` says which
    object each entry point resolves to in the process's global scope, which is where an
    LD_PRELOAD interposer shows itself.
    """

    __slots__ = ("path", "providers", "requested")

    def __init__(
        self, requested: str, path: str, providers: list[SymbolProvider] | None = None
    ) -> None:
        self.requested = requested
        self.path = path
        self.providers = list(providers or [])

    def __repr__(self) -> str:
        return f"LoadedLibrary({self.requested!r}, {self.path!r}, {self.providers!r})"


def format_uuid(raw: bytes, prefix: str = "GPU-") -> str:
    """16 raw bytes from cuDeviceGetUuid in NVML's textual form."""
    text = raw.hex()
    return f"{prefix}{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:32]}"
