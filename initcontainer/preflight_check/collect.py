"""Collectors that ask the driver and NVML (as opposed to child processes)."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, List, Mapping, Optional, Tuple

from preflight_check.binding import bind_device
from preflight_check.cudaview import read_view, tp_groups
from preflight_check.driver.api import (
    CUDA_SUCCESS,
    CudaDriver,
    DriverUnavailable,
    LoadedLibrary,
    Nvml,
    NvmlDevice,
    NvmlError,
    NvmlGpuNeedsReset,
    SymbolProvider,
)
from preflight_check.facts import (
    BindingOutcome,
    CallRecord,
    ChildOutcome,
    CudaGpu,
    CudaView,
    NvmlGpu,
    NvmlView,
)
from preflight_check.plan import Plan


def collect_cuda(
    load: Callable[[], CudaDriver], plan: Plan
) -> Tuple[CudaView, Optional[CudaDriver]]:
    """Load libcuda, cuInit, and read every ordinal's UUID and PCI bus id (this process)."""
    view = CudaView()
    try:
        driver = load()
    except DriverUnavailable as exc:
        view.load_error = str(exc)
        return view, None
    view.loaded = True
    view.library = driver.library()
    started = time.perf_counter()
    view.init_code = driver.init()
    view.init_ms = (time.perf_counter() - started) * 1000.0
    view.init_name = driver.error_name(view.init_code) if view.init_code else "CUDA_SUCCESS"
    code, version = driver.driver_version()
    if code == CUDA_SUCCESS:
        view.driver_version = version
    if view.init_code == CUDA_SUCCESS:
        _fill(view, read_view(driver, tp_groups(plan.tp, plan.gpus_needed)))
    return view, driver


def _fill(view: CudaView, data: Mapping[str, Any]) -> None:
    for gpu in data.get("gpus", []):
        view.gpus.append(
            CudaGpu(
                ordinal=int(gpu["ordinal"]),
                uuid=str(gpu.get("uuid", "")),
                pci_bus_id=str(gpu.get("pci_bus_id", "")),
                name=str(gpu.get("name", "")),
                total_memory=int(gpu.get("total_memory", 0)),
            )
        )
    for a, b, ok in data.get("peer", []):
        view.peer_access[(int(a), int(b))] = bool(ok)
    view.query_errors.extend(str(e) for e in data.get("errors", []))


def cuda_view_from_probe(outcome: ChildOutcome) -> Optional[CudaView]:
    """The CUDA view rank 0's probe read from the driver, in the workload's environment.

    None when the probe never got to say (it could not start); then the checker asks
    the driver itself.
    """
    library = outcome.notes.get("library")
    view = CudaView()
    if outcome.fatal:
        view.load_error = outcome.fatal
        return view
    if not isinstance(library, dict):
        return None
    view.loaded = True
    view.library = LoadedLibrary(
        str(library.get("requested", "libcuda.so.1")),
        str(library.get("path", "")),
        [SymbolProvider(str(s), str(p)) for s, p in library.get("providers", [])],
    )
    version = outcome.notes.get("driver_version")
    view.driver_version = int(version) if isinstance(version, int) and version else None
    init = next((c for c in outcome.calls if c.call == "cuInit"), None)
    if init is None or not init.finished:
        return None
    view.init_code = init.code
    view.init_ms = init.ms
    view.init_name = init.name or "CUDA_SUCCESS"
    data = outcome.notes.get("view")
    if init.code == CUDA_SUCCESS:
        if not isinstance(data, dict):
            return None
        _fill(view, data)
    return view


def _read_into(
    gpu: NvmlGpu, attribute: str, read: Callable[[], Any], label: Optional[str] = None
) -> None:
    """``gpu.<attribute> = read()``; a refusal is noted under ``label`` (the attribute's
    name by default): a GPU that needs a reset in ``needs_reset`` (the finding of
    ``gpu-reset``), any other NVML error in ``errors``."""
    try:
        setattr(gpu, attribute, read())
    except NvmlGpuNeedsReset as exc:
        gpu.needs_reset.append(f"{label or attribute}: {exc}")
    except NvmlError as exc:
        gpu.errors.append(f"{label or attribute}: {exc}")


class NvmlSession:
    """The NVML inventory in two reads: what the GPUs are (early, concurrently with the
    probes), and what is in use on them (memory, processes).

    The second read happens when this checker holds no context: before any of its own,
    or after every child that made one has exited. Then all memory and every process
    NVML reports belong to someone else.
    """

    def __init__(self, load: Callable[[], Nvml]) -> None:
        self.view = NvmlView()
        self._nvml: Optional[Nvml] = None
        self._devices: List[NvmlDevice] = []
        started = time.perf_counter()
        try:
            nvml = load()
            nvml.init()
        except DriverUnavailable as exc:
            self.view.error = str(exc)
            return
        self._nvml = nvml
        try:
            self._read_static(nvml)
            self.view.available = True
        except NvmlError as exc:
            self.view.error = f"NVML: {exc}"
            self.close()
        self.view.ms = (time.perf_counter() - started) * 1000.0

    def _read_static(self, nvml: Nvml) -> None:
        view = self.view
        view.driver_version = nvml.driver_version()
        try:
            view.cuda_driver_version = nvml.cuda_driver_version()
        except NvmlError:
            view.cuda_driver_version = None
        for index in range(nvml.device_count()):
            try:
                device = nvml.device(index)
                gpu = NvmlGpu(
                    index=index, uuid=device.uuid(), pci_bus_id=device.pci_bus_id().lower()
                )
            except NvmlGpuNeedsReset as exc:
                # One lost GPU must not hide the others: it is the finding (gpu-reset).
                view.lost.append((index, str(exc)))
                continue
            self._devices.append(device)
            for attribute, read in (
                ("name", device.name),
                ("compute_mode", device.compute_mode),
                ("mig_enabled", device.mig_enabled),
                ("ecc_uncorrectable", device.ecc_volatile_uncorrectable),
                *self._health_reads(device),
            ):
                _read_into(gpu, attribute, read)
            view.gpus.append(gpu)
        self._watch_xids(nvml)

    @staticmethod
    def _health_reads(device: NvmlDevice) -> List[Tuple[str, Callable[[], Any]]]:
        """The fast-tier health reads (issue 16): each None where not available."""
        return [
            ("remapped_rows", device.remapped_rows),
            ("retired_pages_pending", device.retired_pages_pending),
            ("recovery_action", device.recovery_action),
            ("nvlink_active", device.nvlink_states),
            ("pcie", device.pcie_link),
            ("clock_events", device.clock_event_reasons),
            ("fabric", device.fabric_info),
        ]

    def _watch_xids(self, nvml: Nvml) -> None:
        """Start listening for XID events now, so the check sees those raised while it
        runs (read in ``read_usage``, after every child has exited)."""
        try:
            watched = nvml.watch_xids([g.index for g in self.view.gpus])
        except NvmlError:
            watched = None
        for gpu in self.view.gpus:
            gpu.xids = [] if watched is not None and gpu.index in watched else None

    def read_usage(self) -> None:
        """Memory in use and compute processes of every GPU, now."""
        started = time.perf_counter()
        for gpu, device in zip(self.view.gpus, self._devices):
            try:
                gpu.memory_total, gpu.memory_used = device.memory()
            except NvmlError as exc:
                gpu.errors.append(f"memory: {exc}")
            try:
                gpu.processes = device.compute_processes()
            except NvmlError as exc:
                gpu.errors.append(f"processes: {exc}")
            _read_into(gpu, "clock_events_end", device.clock_event_reasons, "clock_events")
        self.view.ms += (time.perf_counter() - started) * 1000.0

    def _read_xids(self) -> None:
        if self._nvml is None:
            return
        try:
            events = self._nvml.xid_events()
        except NvmlError:
            return
        by_index = {g.index: g for g in self.view.gpus}
        for index, xid in events:
            gpu = by_index.get(index)
            if gpu is not None and gpu.xids is not None:
                gpu.xids.append(xid)

    def close(self) -> None:
        if self._nvml is not None:
            self._read_xids()  # every XID raised since the inventory, children included
            self._nvml.shutdown()
            self._nvml = None


class _ThreadLog:
    """Records calls of one binding thread, including one that never returned."""

    def __init__(self) -> None:
        self.records: List[CallRecord] = []

    def begin(self, call: str, thread: str) -> None:
        self.records.append(CallRecord(call=call, thread=thread, finished=False))

    def end(self, record: CallRecord) -> None:
        if self.records and not self.records[-1].finished:
            self.records[-1] = record
        else:
            self.records.append(record)


def bind_all_from_threads(
    driver: CudaDriver, ordinals: List[int], timeout_s: float
) -> List[BindingOutcome]:
    """One fresh thread per GPU, all started at once, each binding its GPU.

    A fresh thread has no current context (docs/GPU_FACTS.md), so each must retain and
    set one itself, exactly as a vLLM worker's threads must.
    """
    results: List[Optional[BindingOutcome]] = [None] * len(ordinals)
    logs: List[_ThreadLog] = []
    threads = []
    for slot, ordinal in enumerate(ordinals):
        log = _ThreadLog()
        logs.append(log)

        def work(slot: int = slot, ordinal: int = ordinal, log: _ThreadLog = log) -> None:
            results[slot] = bind_device(driver, ordinal, log, thread=f"thread-{ordinal}")[0]

        thread = threading.Thread(target=work, name=f"bind-{ordinal}", daemon=True)
        threads.append(thread)
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    out: List[BindingOutcome] = []
    for slot, ordinal in enumerate(ordinals):
        found = results[slot]
        if found is None:
            log = logs[slot]
            stuck = next((r.call for r in log.records if not r.finished), "thread start")
            found = BindingOutcome(
                ordinal=ordinal,
                ok=False,
                calls=list(log.records),
                failed_call=stuck,
                detail=f"{stuck} did not return within {timeout_s:g} s",
                ms=timeout_s * 1000.0,
            )
        out.append(found)
    return out
