"""Collectors that ask the driver and NVML (as opposed to child processes)."""

from __future__ import annotations

import threading
import time
from typing import Callable, List, Optional, Tuple

from preflight_check.binding import bind_device
from preflight_check.driver.api import (
    CUDA_SUCCESS,
    CudaDriver,
    DriverUnavailable,
    Nvml,
    NvmlError,
    format_uuid,
)
from preflight_check.facts import BindingOutcome, CallRecord, CudaGpu, CudaView, NvmlGpu, NvmlView
from preflight_check.plan import Plan


def collect_cuda(
    load: Callable[[], CudaDriver], plan: Plan
) -> Tuple[CudaView, Optional[CudaDriver]]:
    """Load libcuda, cuInit, and read every ordinal's UUID and PCI bus id."""
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
    if view.init_code != CUDA_SUCCESS:
        return view, driver
    code, count = driver.device_count()
    if code != CUDA_SUCCESS:
        view.query_errors.append(f"cuDeviceGetCount: {driver.error_name(code)}")
        return view, driver
    handles: List[int] = []
    for ordinal in range(count):
        code, device = driver.device_get(ordinal)
        if code != CUDA_SUCCESS:
            view.query_errors.append(f"cuDeviceGet({ordinal}): {driver.error_name(code)}")
            continue
        handles.append(device)
        gpu = CudaGpu(ordinal=ordinal, uuid="", pci_bus_id="")
        code, raw = driver.device_uuid(device)
        if code == CUDA_SUCCESS:
            gpu.uuid = format_uuid(raw)
        else:
            view.query_errors.append(f"cuDeviceGetUuid({ordinal}): {driver.error_name(code)}")
        code, bus = driver.device_pci_bus_id(device)
        if code == CUDA_SUCCESS:
            gpu.pci_bus_id = bus.lower()
        code, name = driver.device_name(device)
        if code == CUDA_SUCCESS:
            gpu.name = name
        code, total = driver.device_total_mem(device)
        if code == CUDA_SUCCESS:
            gpu.total_memory = total
        view.gpus.append(gpu)
    for group in plan.tp_groups():
        members = [o for o in group if o < len(handles)]
        for a in members:
            for b in members:
                if a != b:
                    code, ok = driver.can_access_peer(handles[a], handles[b])
                    view.peer_access[(a, b)] = ok if code == CUDA_SUCCESS else False
    return view, driver


def collect_nvml(load: Callable[[], Nvml]) -> NvmlView:
    """The NVML inventory: every GPU in the container, in PCI order."""
    view = NvmlView()
    started = time.perf_counter()
    try:
        nvml = load()
        nvml.init()
    except DriverUnavailable as exc:
        view.error = str(exc)
        return view
    try:
        view.driver_version = nvml.driver_version()
        try:
            view.cuda_driver_version = nvml.cuda_driver_version()
        except NvmlError:
            view.cuda_driver_version = None
        for index in range(nvml.device_count()):
            device = nvml.device(index)
            gpu = NvmlGpu(index=index, uuid=device.uuid(), pci_bus_id=device.pci_bus_id().lower())
            for attribute, read in (
                ("name", device.name),
                ("memory", device.memory),
                ("compute_mode", device.compute_mode),
                ("mig_enabled", device.mig_enabled),
                ("ecc_uncorrectable", device.ecc_volatile_uncorrectable),
                ("processes", device.compute_processes),
            ):
                try:
                    value = read()
                except NvmlError as exc:
                    gpu.errors.append(f"{attribute}: {exc}")
                    continue
                if attribute == "memory":
                    assert isinstance(value, tuple)
                    gpu.memory_total, gpu.memory_used = value
                else:
                    setattr(gpu, attribute, value)
            view.gpus.append(gpu)
        view.available = True
    except NvmlError as exc:
        view.error = f"NVML: {exc}"
    finally:
        nvml.shutdown()
        view.ms = (time.perf_counter() - started) * 1000.0
    return view


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

    A fresh thread has no current context (GPU_FACTS.md), so each must retain and
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
