"""CUDA's driver API through ctypes: the one place the checker calls into libcuda.so.1.

Entry points are looked up in the process's global symbol scope (as a program linked
against -lcuda would resolve them), falling back to the library handle. That way an
LD_PRELOAD interposer that wraps, say, cuCtxGetDevice is exercised exactly as the
workload will meet it, and ``library()`` can say which object answers each call.
ctypes releases the GIL around every foreign call, so threads really run concurrently.
"""

from __future__ import annotations

import ctypes
import os

from preflight_check.driver.basics import (
    CUDA_SUCCESS,
    DriverUnavailable,
    LoadedLibrary,
    SymbolProvider,
    cuda_error_name,
)

TYPE_CHECKING = False  # keeps typing out of the rank probe's start-up (see binding.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Tuple

LIBCUDA = "libcuda.so.1"

# (name, argtypes). restype is always CUresult (int). Versioned names come first: the
# unversioned cuMemAlloc and friends are the 32-bit-size legacy ABI.
_C = ctypes
_SIGNATURES: Dict[str, Tuple[str, List[Any]]] = {
    "init": ("cuInit", [_C.c_uint]),
    "driver_version": ("cuDriverGetVersion", [_C.POINTER(_C.c_int)]),
    "device_count": ("cuDeviceGetCount", [_C.POINTER(_C.c_int)]),
    "device_get": ("cuDeviceGet", [_C.POINTER(_C.c_int), _C.c_int]),
    "device_pci_bus_id": ("cuDeviceGetPCIBusId", [_C.c_char_p, _C.c_int, _C.c_int]),
    "device_name": ("cuDeviceGetName", [_C.c_char_p, _C.c_int, _C.c_int]),
    "device_total_mem": ("cuDeviceTotalMem_v2", [_C.POINTER(_C.c_size_t), _C.c_int]),
    "can_access_peer": ("cuDeviceCanAccessPeer", [_C.POINTER(_C.c_int), _C.c_int, _C.c_int]),
    "primary_ctx_retain": ("cuDevicePrimaryCtxRetain", [_C.POINTER(_C.c_void_p), _C.c_int]),
    "primary_ctx_release": ("cuDevicePrimaryCtxRelease_v2", [_C.c_int]),
    "ctx_set_current": ("cuCtxSetCurrent", [_C.c_void_p]),
    "ctx_get_current": ("cuCtxGetCurrent", [_C.POINTER(_C.c_void_p)]),
    "ctx_get_device": ("cuCtxGetDevice", [_C.POINTER(_C.c_int)]),
    "ctx_synchronize": ("cuCtxSynchronize", []),
    "mem_alloc": ("cuMemAlloc_v2", [_C.POINTER(_C.c_uint64), _C.c_size_t]),
    "mem_set": ("cuMemsetD8_v2", [_C.c_uint64, _C.c_ubyte, _C.c_size_t]),
    "mem_free": ("cuMemFree_v2", [_C.c_uint64]),
    "mem_get_info": ("cuMemGetInfo_v2", [_C.POINTER(_C.c_size_t), _C.POINTER(_C.c_size_t)]),
}


class _CUuuid(ctypes.Structure):
    # c_ubyte, not c_char: ctypes reads a c_char array field as a C string and cuts it
    # at the first zero byte, which mangled about one UUID in sixteen (issue 16).
    _fields_ = [("bytes", ctypes.c_ubyte * 16)]


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def _dladdr() -> Optional[Callable[[Any, Any], int]]:
    for name in (None, "libdl.so.2"):
        try:
            function: Any = ctypes.CDLL(name).dladdr
        except (OSError, AttributeError):
            continue
        function.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        function.restype = ctypes.c_int
        found: Callable[[Any, Any], int] = function
        return found
    return None


def object_path_of(function: Any) -> str:
    """The file of the shared object that holds a ctypes function, or '' if unknown."""
    dladdr = _dladdr()
    if dladdr is None:
        return ""
    info = _DlInfo()
    address = ctypes.cast(function, ctypes.c_void_p).value
    if not address or not dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return ""
    return os.fsdecode(info.dli_fname)


class LibCuda:
    """The real driver, loaded from ``libcuda.so.1`` by the dynamic linker's search."""

    def __init__(self, name: str = LIBCUDA) -> None:
        try:
            self._handle = ctypes.CDLL(name, mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        except OSError as exc:
            raise DriverUnavailable(f"{name} not found ({exc})") from exc
        self._global = ctypes.CDLL(None)
        self._name = name
        self._functions: Dict[str, Any] = {}
        providers: List[SymbolProvider] = []
        for method, (symbol, argtypes) in _SIGNATURES.items():
            function = self._resolve(symbol)
            if function is None:
                raise DriverUnavailable(f"{name} has no {symbol}: it is not a CUDA driver")
            function.argtypes = argtypes
            function.restype = ctypes.c_int
            self._functions[method] = function
            providers.append(SymbolProvider(symbol, object_path_of(function)))
        # cuDeviceGetUuid_v2 (CUDA >= 11.4) returns MIG UUIDs for MIG devices.
        self._uuid = self._resolve("cuDeviceGetUuid_v2") or self._resolve("cuDeviceGetUuid")
        if self._uuid is not None:
            self._uuid.argtypes = [ctypes.POINTER(_CUuuid), ctypes.c_int]
            self._uuid.restype = ctypes.c_int
        self._error_name = self._resolve("cuGetErrorName")
        if self._error_name is not None:
            self._error_name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
            self._error_name.restype = ctypes.c_int
        own_path = object_path_of(self._handle.cuInit)
        self._library = LoadedLibrary(requested=name, path=own_path, providers=providers)

    def _resolve(self, symbol: str) -> Any:
        for scope in (self._global, self._handle):
            try:
                return getattr(scope, symbol)
            except AttributeError:
                continue
        return None

    def _call(self, method: str, *args: Any) -> int:
        code: int = self._functions[method](*args)
        return code

    # -- CudaDriver ---------------------------------------------------------------

    def library(self) -> LoadedLibrary:
        return self._library

    def init(self) -> int:
        return self._call("init", 0)

    def driver_version(self) -> Tuple[int, int]:
        value = ctypes.c_int(0)
        return self._call("driver_version", ctypes.byref(value)), value.value

    def device_count(self) -> Tuple[int, int]:
        value = ctypes.c_int(0)
        return self._call("device_count", ctypes.byref(value)), value.value

    def device_get(self, ordinal: int) -> Tuple[int, int]:
        value = ctypes.c_int(-1)
        return self._call("device_get", ctypes.byref(value), ordinal), value.value

    def device_uuid(self, device: int) -> Tuple[int, bytes]:
        if self._uuid is None:
            return 999, b""
        value = _CUuuid()
        code: int = self._uuid(ctypes.byref(value), device)
        return code, bytes(bytearray(value.bytes))

    def device_pci_bus_id(self, device: int) -> Tuple[int, str]:
        buffer = ctypes.create_string_buffer(32)
        code = self._call("device_pci_bus_id", buffer, len(buffer), device)
        return code, buffer.value.decode("ascii", "replace")

    def device_name(self, device: int) -> Tuple[int, str]:
        buffer = ctypes.create_string_buffer(256)
        code = self._call("device_name", buffer, len(buffer), device)
        return code, buffer.value.decode("utf-8", "replace")

    def device_total_mem(self, device: int) -> Tuple[int, int]:
        value = ctypes.c_size_t(0)
        return self._call("device_total_mem", ctypes.byref(value), device), value.value

    def can_access_peer(self, device: int, peer: int) -> Tuple[int, bool]:
        value = ctypes.c_int(0)
        code = self._call("can_access_peer", ctypes.byref(value), device, peer)
        return code, bool(value.value)

    def primary_ctx_retain(self, device: int) -> Tuple[int, int]:
        value = ctypes.c_void_p(None)
        code = self._call("primary_ctx_retain", ctypes.byref(value), device)
        return code, value.value or 0

    def primary_ctx_release(self, device: int) -> int:
        return self._call("primary_ctx_release", device)

    def ctx_set_current(self, context: int) -> int:
        return self._call("ctx_set_current", ctypes.c_void_p(context or None))

    def ctx_get_current(self) -> Tuple[int, int]:
        value = ctypes.c_void_p(None)
        return self._call("ctx_get_current", ctypes.byref(value)), value.value or 0

    def ctx_get_device(self) -> Tuple[int, int]:
        # -1 marks "the driver did not write it", distinct from any real ordinal.
        value = ctypes.c_int(-1)
        return self._call("ctx_get_device", ctypes.byref(value)), value.value

    def ctx_synchronize(self) -> int:
        return self._call("ctx_synchronize")

    def mem_alloc(self, size: int) -> Tuple[int, int]:
        value = ctypes.c_uint64(0)
        return self._call("mem_alloc", ctypes.byref(value), size), value.value

    def mem_set(self, pointer: int, value: int, size: int) -> int:
        return self._call("mem_set", pointer, value, size)

    def mem_free(self, pointer: int) -> int:
        return self._call("mem_free", pointer)

    def mem_get_info(self) -> Tuple[int, int, int]:
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        code = self._call("mem_get_info", ctypes.byref(free), ctypes.byref(total))
        return code, free.value, total.value

    def error_name(self, code: int) -> str:
        if self._error_name is not None and code != CUDA_SUCCESS:
            text = ctypes.c_char_p(None)
            if self._error_name(code, ctypes.byref(text)) == CUDA_SUCCESS and text.value:
                return text.value.decode("ascii", "replace")
        return cuda_error_name(code)


def load_libcuda() -> LibCuda:
    """Load the driver or raise DriverUnavailable with the reason in the user's terms."""
    return LibCuda(LIBCUDA)
