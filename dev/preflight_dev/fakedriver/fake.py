"""A fake CUDA driver and a fake NVML behind the checker's real interfaces.

Their behaviour is docs/GPU_FACTS.md's, and test_fake_matches_gpu_facts.py holds them to
that table row by row; rows measured later on real machines are in docs/GPU_RUNS.md.
What a real GPU can be made to do by its state (a GPU with ECC errors, another
process's memory, an interposer in front of libcuda) is set on the FakeMachine.

The CUDA_VISIBLE_DEVICES handling here is written independently of
preflight_check.cvd (which only explains): the two are compared in the tests, so a
shared mistake would need to be made twice.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from preflight_check.driver.api import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_NO_DEVICE,
    CUDA_ERROR_NOT_INITIALIZED,
    CUDA_SUCCESS,
    FabricInfo,
    LoadedLibrary,
    NvmlError,
    NvmlGpuNeedsReset,
    PcieLink,
    RemappedRows,
    SymbolProvider,
    cuda_error_name,
    uuid_key,
)

GIB = 1 << 30
DRIVER_LIBRARY = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"
# Garbage device id from HAMi-core#187's crash ("Illegal device id: 850725928").
GARBAGE_DEVICE_ID = 850725928


@dataclass
class FakeGpu:
    uuid: str
    pci_bus_id: str
    name: str = "NVIDIA H200"
    memory_total: int = 141 * GIB
    memory_used: int = 0
    compute_mode: int = 0
    mig_enabled: bool = False
    ecc_uncorrectable: int = 0
    processes: List[Tuple[int, int]] = field(default_factory=list)
    peer_access: bool = True
    # (driver entry point, CUresult) this GPU fails with: a broken GPU's state.
    fail_call: Optional[Tuple[str, int]] = None
    # Fast-tier health reads (issue 16); None = NVML refuses the read (not supported).
    # Defaults: what a healthy H200 answered on the GPU machine (docs/GPU_RUNS.md, run 8:
    # rows (0, 0, 0, 0), page retirement Not Supported, recovery action 0, PCIe Gen5 x16
    # of Gen5 x16, clock reasons 0x1 = GPU idle, fabric state 0 = not supported), except
    # NVLink: that machine had one GPU and no link; the 2- and 4-GPU machines showed NV18
    # between every pair (nvidia-smi topo -m), so 18 links up. Faults only as NVIDIA's NVML
    # API Reference documents them (docs/CHECKS.md cites it).
    remapped_rows: Optional[Tuple[int, int, bool, bool]] = (0, 0, False, False)
    retired_pages_pending: Optional[bool] = None
    recovery_action: Optional[int] = 0
    nvlink_active: Optional[List[bool]] = field(default_factory=lambda: [True] * 18)
    pcie: Optional[Tuple[int, int, int, int]] = (5, 5, 16, 16)
    clock_events: Optional[int] = 0x1  # nvmlClocksEventReasonGpuIdle
    fabric: Optional[Tuple[int, int, Optional[int]]] = (0, 0, 0)
    # NVML_ERROR_RESET_REQUIRED from every health read; NVML_ERROR_GPU_IS_LOST from
    # nvmlDeviceGetHandleByIndex (the GPU fell off the bus).
    reset_required: bool = False
    lost: bool = False
    # XIDs this GPU raises while the check runs; xid_events False: events not offered.
    xids: List[int] = field(default_factory=list)
    xid_events: bool = True


@dataclass
class FakeMachine:
    gpus: List[FakeGpu]
    driver_version: str = "580.159.04"
    cuda_driver_version: int = 13000
    # CUDA's enumeration when CUDA_DEVICE_ORDER is not PCI_BUS_ID ("fastest first"):
    # indices into ``gpus`` (PCI order). None: the same as PCI order, as measured on
    # identical GPUs.
    fastest_first: Optional[List[int]] = None
    library_path: str = DRIVER_LIBRARY
    # Entry point -> object answering it, when an interposer is in front of libcuda.
    interposed: Dict[str, str] = field(default_factory=dict)
    # How cuCtxGetDevice answers a thread without a context: "driver" (201, measured),
    # or an interposer's misbehaviour: "abort", "garbage", "hang", "error".
    contextless_get_device: str = "driver"
    nvml_present: bool = True

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> FakeMachine:
        data = json.loads(text)
        gpus = []
        for gpu in data.pop("gpus"):
            fail = gpu.get("fail_call")
            gpu["fail_call"] = tuple(fail) if fail else None
            gpu["processes"] = [tuple(p) for p in gpu.get("processes", [])]
            for name in ("remapped_rows", "pcie", "fabric"):
                if gpu.get(name) is not None:
                    gpu[name] = tuple(gpu[name])
            gpus.append(FakeGpu(**gpu))
        return cls(gpus=gpus, **data)


def h200_machine(count: int = 2, **overrides: Any) -> FakeMachine:
    """Identical H200s on buses 06, 07, ... as on the measured 2- and 4-GPU machines."""
    # GPUs 1-3 have zero bytes in their UUIDs, as about one GPU in sixteen does: GPU 2's
    # is the real H200 UUID of issue 16 (byte 4 is 00), GPU 3's starts with 00.
    uuids = [
        "GPU-ea300b2e-0352-789c-6847-ce5195328e81",
        "GPU-7b01fc6f-1b00-4d5e-8f90-a1b2c3d4e5f6",
        "GPU-b1a04e3a-0045-8654-0766-3ed4389a1318",
        "GPU-009e7d6c-aaaa-4bbb-8ccc-ddddeeeeff00",
        "GPU-11223344-5566-4778-8990-aabbccddeeff",
        "GPU-55667788-99aa-4bbc-8cdd-eeff00112233",
        "GPU-a1a2a3a4-b1b2-4c1c-8d1d-e1e2e3e4e5e6",
        "GPU-f0f1f2f3-0a0b-4c0d-8e0f-101112131415",
    ]
    gpus = [FakeGpu(uuid=uuids[i], pci_bus_id=f"0000:{6 + i:02x}:00.0") for i in range(count)]
    return FakeMachine(gpus=gpus, **overrides)


def _cuda_order(machine: FakeMachine, environ: Mapping[str, str]) -> List[int]:
    if environ.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID" or machine.fastest_first is None:
        return list(range(len(machine.gpus)))
    return list(machine.fastest_first)


def visible_devices(machine: FakeMachine, environ: Mapping[str, str]) -> Tuple[int, List[int]]:
    """(cuInit result, visible GPUs as indices into machine.gpus), per docs/GPU_FACTS.md."""
    order = _cuda_order(machine, environ)
    value = environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        # No GPU at all reads like a list that selects none: CUDA_ERROR_NO_DEVICE.
        return (CUDA_SUCCESS, order) if order else (CUDA_ERROR_NO_DEVICE, [])
    chosen: List[int] = []
    forms: List[str] = []
    duplicate = False
    for raw in value.split(","):
        entry = raw.strip()
        gpu: Optional[int] = None
        form = "index"
        # The leading integer, like strtol (measured: "+1" -> 1, "1abc" -> 1, "0x1" -> 0,
        # "1.0" -> 1, "-0" -> 0, "-1" -> no GPU).
        number = re.match(r"[+-]?[0-9]+", entry)
        if number:
            index = int(number.group())
            if 0 <= index < len(order):
                gpu = order[index]
        elif entry.startswith("GPU-"):
            prefix = uuid_key(entry)
            hits = [i for i in order if uuid_key(machine.gpus[i].uuid).startswith(prefix)]
            # "GPU-" alone (a prefix of every GPU) gives no device: measured. A prefix
            # of several GPUs is treated the same way.
            if prefix and len(hits) == 1:
                gpu = hits[0]
            form = "uuid"
        if gpu is None:
            break  # an invalid entry ends the list (measured: 0,5,1 and 0,abc,1)
        if gpu in chosen:
            if forms[chosen.index(gpu)] == form:
                duplicate = True  # measured: 0,0 and 0,1,0 fail cuInit with 101
            else:
                # Measured: "0,GPU-<uuid of 0>" gives GPU 0 alone with cuInit 0. Read as
                # "ends the list", like an invalid entry (see docs/GPU_RUNS.md).
                break
        chosen.append(gpu)
        forms.append(form)
    if duplicate:
        return CUDA_ERROR_INVALID_DEVICE, []
    if not chosen:
        return CUDA_ERROR_NO_DEVICE, []
    return CUDA_SUCCESS, chosen


class FakeCudaDriver:
    """Implements preflight_check.driver.api.CudaDriver over a FakeMachine."""

    def __init__(self, machine: FakeMachine, environ: Optional[Mapping[str, str]] = None) -> None:
        self.machine = machine
        self.environ = dict(os.environ if environ is None else environ)
        self._visible: List[int] = []
        self._init_code: Optional[int] = None
        self._tls = threading.local()
        self.calls: List[Tuple[str, str]] = []
        self._lock = threading.Lock()

    def _log(self, call: str) -> None:
        with self._lock:
            self.calls.append((call, threading.current_thread().name))

    def _ready(self) -> int:
        if self._init_code is None:
            return CUDA_ERROR_NOT_INITIALIZED
        return self._init_code

    def _gpu(self, device: int) -> FakeGpu:
        return self.machine.gpus[self._visible[device]]

    def _broken(self, device: int, call: str) -> int:
        fail = self._gpu(device).fail_call
        return fail[1] if fail is not None and fail[0] == call else CUDA_SUCCESS

    def _current(self) -> int:
        return int(getattr(self._tls, "context", 0))

    # -- CudaDriver ---------------------------------------------------------------

    def library(self) -> LoadedLibrary:
        symbols = ["cuInit", "cuCtxGetDevice", "cuCtxGetCurrent", "cuDeviceGetCount"]
        providers = [
            SymbolProvider(s, self.machine.interposed.get(s, self.machine.library_path))
            for s in symbols
        ]
        return LoadedLibrary("libcuda.so.1", self.machine.library_path, providers)

    def init(self) -> int:
        self._log("cuInit")
        code, visible = visible_devices(self.machine, self.environ)
        self._init_code, self._visible = code, visible
        return code

    def driver_version(self) -> Tuple[int, int]:
        return CUDA_SUCCESS, self.machine.cuda_driver_version

    def device_count(self) -> Tuple[int, int]:
        code = self._ready()
        return code, len(self._visible) if code == CUDA_SUCCESS else 0

    def device_get(self, ordinal: int) -> Tuple[int, int]:
        code = self._ready()
        if code != CUDA_SUCCESS:
            return code, -1
        if not 0 <= ordinal < len(self._visible):
            return CUDA_ERROR_INVALID_DEVICE, -1
        return CUDA_SUCCESS, ordinal

    def device_uuid(self, device: int) -> Tuple[int, bytes]:
        return CUDA_SUCCESS, bytes.fromhex(uuid_key(self._gpu(device).uuid))

    def device_pci_bus_id(self, device: int) -> Tuple[int, str]:
        # CUDA pads the PCI domain to 4 digits, NVML to 8.
        return CUDA_SUCCESS, self._gpu(device).pci_bus_id.upper()

    def device_name(self, device: int) -> Tuple[int, str]:
        return CUDA_SUCCESS, self._gpu(device).name

    def device_total_mem(self, device: int) -> Tuple[int, int]:
        return CUDA_SUCCESS, self._gpu(device).memory_total

    def can_access_peer(self, device: int, peer: int) -> Tuple[int, bool]:
        ok = self._gpu(device).peer_access and self._gpu(peer).peer_access
        return CUDA_SUCCESS, ok

    def primary_ctx_retain(self, device: int) -> Tuple[int, int]:
        self._log("cuDevicePrimaryCtxRetain")
        code = self._broken(device, "cuDevicePrimaryCtxRetain")
        return code, (0x1000 + device if code == CUDA_SUCCESS else 0)

    def primary_ctx_release(self, device: int) -> int:
        return CUDA_SUCCESS

    def ctx_set_current(self, context: int) -> int:
        self._tls.context = context
        return CUDA_SUCCESS

    def ctx_get_current(self) -> Tuple[int, int]:
        return CUDA_SUCCESS, self._current()

    def ctx_get_device(self) -> Tuple[int, int]:
        context = self._current()
        if context:
            return CUDA_SUCCESS, context - 0x1000
        mode = self.machine.contextless_get_device
        if mode == "abort":
            os.abort()
        if mode == "garbage":
            return CUDA_SUCCESS, GARBAGE_DEVICE_ID
        if mode == "hang":
            time.sleep(3600)
        if mode == "error":
            return 999, -1
        return CUDA_ERROR_INVALID_CONTEXT, -1

    def ctx_synchronize(self) -> int:
        context = self._current()
        if not context:
            return CUDA_ERROR_INVALID_CONTEXT
        return self._broken(context - 0x1000, "cuCtxSynchronize")

    def mem_alloc(self, size: int) -> Tuple[int, int]:
        context = self._current()
        if not context:
            return CUDA_ERROR_INVALID_CONTEXT, 0
        code = self._broken(context - 0x1000, "cuMemAlloc")
        return code, (0x7F0000000000 if code == CUDA_SUCCESS else 0)

    def mem_set(self, pointer: int, value: int, size: int) -> int:
        return CUDA_SUCCESS if self._current() else CUDA_ERROR_INVALID_CONTEXT

    def mem_free(self, pointer: int) -> int:
        return CUDA_SUCCESS if self._current() else CUDA_ERROR_INVALID_CONTEXT

    def mem_get_info(self) -> Tuple[int, int, int]:
        context = self._current()
        if not context:
            return CUDA_ERROR_INVALID_CONTEXT, 0, 0
        gpu = self._gpu(context - 0x1000)
        return CUDA_SUCCESS, gpu.memory_total - gpu.memory_used, gpu.memory_total

    def error_name(self, code: int) -> str:
        return cuda_error_name(code)


class FakeNvmlDevice:
    def __init__(self, gpu: FakeGpu) -> None:
        self._gpu = gpu

    def _health(self, value: Any) -> Any:
        if self._gpu.reset_required:
            raise NvmlGpuNeedsReset("GPU requires reset")  # NVML_ERROR_RESET_REQUIRED's text
        return value

    def remapped_rows(self) -> Optional[RemappedRows]:
        rows = self._health(self._gpu.remapped_rows)
        return None if rows is None else RemappedRows(*rows)

    def retired_pages_pending(self) -> Optional[bool]:
        return self._health(self._gpu.retired_pages_pending)  # type: ignore[no-any-return]

    def recovery_action(self) -> Optional[int]:
        return self._health(self._gpu.recovery_action)  # type: ignore[no-any-return]

    def nvlink_states(self) -> Optional[List[bool]]:
        links = self._health(self._gpu.nvlink_active)
        return None if links is None else list(links)

    def pcie_link(self) -> Optional[PcieLink]:
        link = self._health(self._gpu.pcie)
        return None if link is None else PcieLink(*link)

    def clock_event_reasons(self) -> Optional[int]:
        return self._health(self._gpu.clock_events)  # type: ignore[no-any-return]

    def fabric_info(self) -> Optional[FabricInfo]:
        info = self._health(self._gpu.fabric)
        return None if info is None else FabricInfo(*info)

    def uuid(self) -> str:
        return self._gpu.uuid

    def pci_bus_id(self) -> str:
        domain, rest = self._gpu.pci_bus_id.split(":", 1)
        return f"{int(domain, 16):08X}:{rest.upper()}"

    def name(self) -> str:
        return self._gpu.name

    def memory(self) -> Tuple[int, int]:
        return self._gpu.memory_total, self._gpu.memory_used

    def compute_mode(self) -> Optional[int]:
        return self._gpu.compute_mode

    def mig_enabled(self) -> Optional[bool]:
        return self._gpu.mig_enabled

    def ecc_volatile_uncorrectable(self) -> Optional[int]:
        return self._gpu.ecc_uncorrectable

    def compute_processes(self) -> List[Tuple[int, Optional[int]]]:
        return [(pid, used) for pid, used in self._gpu.processes]


class FakeNvml:
    """NVML ignores CUDA_VISIBLE_DEVICES and numbers GPUs in PCI bus order."""

    def __init__(self, machine: FakeMachine) -> None:
        self.machine = machine
        self.initialised = False
        self.watched: List[int] = []
        self._delivered: Dict[int, int] = {}  # XIDs already handed out, per GPU

    def init(self) -> None:
        from preflight_check.driver.api import DriverUnavailable  # noqa: PLC0415

        if not self.machine.nvml_present:
            raise DriverUnavailable("NVML: NVML Shared Library Not Found")
        self.initialised = True

    def shutdown(self) -> None:
        self.initialised = False

    def _need_init(self) -> None:
        if not self.initialised:
            raise NvmlError("Uninitialized")

    def driver_version(self) -> str:
        self._need_init()
        return self.machine.driver_version

    def cuda_driver_version(self) -> int:
        self._need_init()
        return self.machine.cuda_driver_version

    def device_count(self) -> int:
        self._need_init()
        return len(self.machine.gpus)

    def _ordered(self) -> List[FakeGpu]:
        return sorted(self.machine.gpus, key=lambda g: g.pci_bus_id)

    def device(self, index: int) -> FakeNvmlDevice:
        self._need_init()
        gpu = self._ordered()[index]
        if gpu.lost:
            raise NvmlGpuNeedsReset("GPU is lost")  # NVML_ERROR_GPU_IS_LOST's text
        return FakeNvmlDevice(gpu)

    def watch_xids(self, indices: List[int]) -> Optional[List[int]]:
        self._need_init()
        ordered = self._ordered()
        watched = [i for i in indices if ordered[i].xid_events]
        self.watched = watched
        return watched or None

    def xid_events(self) -> List[Tuple[int, int]]:
        """Like nvmlEventSetWait: each event is handed out once."""
        ordered = self._ordered()
        found = []
        for i in self.watched:
            xids = ordered[i].xids
            found += [(i, xid) for xid in xids[self._delivered.get(i, 0) :]]
            self._delivered[i] = len(xids)
        return found
