"""What the collectors observed: the input of every check.

Collectors (``gather``) talk to the driver, NVML, the file system and child processes;
checks are pure functions of these facts and the options. Keeping the two apart is what
lets the CPU tests drive every check from a fake driver or from hand-made facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from preflight_check.calls import BindingOutcome, CallRecord
from preflight_check.driver.api import (
    FabricInfo,
    LoadedLibrary,
    PcieLink,
    RemappedRows,
    uuid_key,
)
from preflight_check.plan import Plan

if TYPE_CHECKING:  # the checker's children import facts: keep modelsource out of them
    from preflight_contract.modelsource import FoundModel

__all__ = [
    "BindingOutcome",
    "CallRecord",
    "ChildOutcome",
    "CudaGpu",
    "CudaView",
    "Facts",
    "NvmlGpu",
    "NvmlView",
    "PreloadFacts",
    "RuntimeRequirement",
    "ShmFacts",
]


@dataclass
class CudaGpu:
    ordinal: int
    uuid: str
    pci_bus_id: str
    name: str = ""
    total_memory: int = 0


@dataclass
class CudaView:
    """What CUDA itself reports, asked through the driver API (the source of truth)."""

    loaded: bool = False
    load_error: str = ""
    library: Optional[LoadedLibrary] = None
    init_code: Optional[int] = None
    init_name: str = ""
    init_ms: float = 0.0
    driver_version: Optional[int] = None
    gpus: List[CudaGpu] = field(default_factory=list)
    # (ordinal, peer ordinal) -> can access; only pairs inside a TP group are asked.
    peer_access: Dict[Tuple[int, int], bool] = field(default_factory=dict)
    query_errors: List[str] = field(default_factory=list)

    @property
    def initialised(self) -> bool:
        return self.loaded and self.init_code == 0

    @property
    def count(self) -> int:
        return len(self.gpus)


@dataclass
class NvmlGpu:
    index: int
    uuid: str
    pci_bus_id: str
    name: str = ""
    memory_total: Optional[int] = None
    memory_used: Optional[int] = None
    compute_mode: Optional[int] = None
    mig_enabled: Optional[bool] = None
    ecc_uncorrectable: Optional[int] = None
    processes: List[Tuple[int, Optional[int]]] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    # Fast-tier health reads (issue 16); None: the driver or platform does not offer it.
    remapped_rows: Optional[RemappedRows] = None
    retired_pages_pending: Optional[bool] = None
    recovery_action: Optional[int] = None
    nvlink_active: Optional[List[bool]] = None
    pcie: Optional[PcieLink] = None
    # nvmlDeviceGetCurrentClocksEventReasons at the inventory and again at the end (a
    # HW slowdown bit can flash during a P-state change: NVML's own note on it).
    clock_events: Optional[int] = None
    clock_events_end: Optional[int] = None
    fabric: Optional[FabricInfo] = None
    # NVML said NVML_ERROR_RESET_REQUIRED or NVML_ERROR_GPU_IS_LOST: its words, per read.
    needs_reset: List[str] = field(default_factory=list)
    # XIDs NVML reported on this GPU while the check ran; None: events not available.
    xids: Optional[List[int]] = None


@dataclass
class NvmlView:
    available: bool = False
    error: str = ""
    driver_version: str = ""
    cuda_driver_version: Optional[int] = None
    gpus: List[NvmlGpu] = field(default_factory=list)
    ms: float = 0.0
    # GPUs NVML counts but cannot open (nvmlDeviceGetHandleByIndex or its UUID said the
    # GPU is lost or needs a reset): (nvidia-smi index, NVML's words).
    lost: List[Tuple[int, str]] = field(default_factory=list)

    def by_uuid(self, uuid: str) -> Optional[NvmlGpu]:
        key = uuid_key(uuid)
        for gpu in self.gpus:
            if uuid_key(gpu.uuid) == key:
                return gpu
        return None


@dataclass
class ChildOutcome:
    """A child process (rank probe or deep worker) as the parent saw it end."""

    rank: int
    started: bool = True
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    timed_out: bool = False
    wall_ms: float = 0.0
    calls: List[CallRecord] = field(default_factory=list)
    notes: Dict[str, Any] = field(default_factory=dict)
    fatal: str = ""
    stderr_tail: str = ""

    @property
    def unfinished(self) -> Optional[CallRecord]:
        for record in self.calls:
            if not record.finished:
                return record
        return None

    @property
    def crashed(self) -> bool:
        return self.signal is not None or self.timed_out

    def calls_on(self, thread_prefix: str) -> List[CallRecord]:
        return [c for c in self.calls if c.thread.startswith(thread_prefix)]


@dataclass
class ShmFacts:
    path: str
    exists: bool
    size: int = 0
    free: int = 0


@dataclass
class RuntimeRequirement:
    """The CUDA version the image's user space needs, and where that was read."""

    version: Optional[Tuple[int, int]] = None
    source: str = ""
    detail: str = ""
    torch_version: str = ""
    torch_cpu_only: bool = False


@dataclass
class PreloadFacts:
    ld_preload: List[str] = field(default_factory=list)
    etc_preload: List[str] = field(default_factory=list)


@dataclass
class Facts:
    plan: Plan
    environ: Dict[str, str] = field(default_factory=dict)
    cuda: CudaView = field(default_factory=CudaView)
    nvml: NvmlView = field(default_factory=NvmlView)
    thread_bindings: List[BindingOutcome] = field(default_factory=list)
    ranks: List[ChildOutcome] = field(default_factory=list)
    # Ranks the plan needs whose probe was not started (beyond every GPU node present).
    ranks_not_probed: List[int] = field(default_factory=list)
    deep: List[ChildOutcome] = field(default_factory=list)
    deep_skipped: str = ""
    # How long the deep workers were waited for, as the messages say it: "within 120 s",
    # or "before the check's deadline (...)" when --deadline cut --deep-timeout short.
    deep_bound: str = ""
    # Verdict reuse: what the deep checks say instead of running (reuse.describe).
    deep_reused: str = ""
    shm: Optional[ShmFacts] = None
    runtime: RuntimeRequirement = field(default_factory=RuntimeRequirement)
    preload: PreloadFacts = field(default_factory=PreloadFacts)
    # the model's files (None when --vllm-args names no model)
    model: Optional[FoundModel] = None
    kernel_log: Optional[str] = None  # None: not readable here (XID history unavailable)
    # the vLLM release the image holds, read once from its metadata (None: not exact here)
    vllm_release: Optional[str] = None
    timings_ms: Dict[str, float] = field(default_factory=dict)

    def env(self, name: str) -> Optional[str]:
        return self.environ.get(name)
