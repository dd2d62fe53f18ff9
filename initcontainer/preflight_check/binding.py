"""Binding a GPU the way a vLLM worker does, and recording every driver call on the way.

The same sequence runs in the checker's own threads (one fresh thread per GPU) and in
the per-rank child processes. Each call is announced before it is made, so when a call
crashes or hangs the parent still knows which one it was.
"""

from __future__ import annotations

import time

from preflight_check.calls import BindingOutcome, CallRecord
from preflight_check.driver.basics import CUDA_SUCCESS

# Not `from typing import TYPE_CHECKING`: importing typing is start-up time of the rank
# probe (a few ms per child on the critical path); type checkers treat this name alike.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, List, Protocol, Tuple

    from preflight_check.driver.api import CudaDriver

    class CallLog(Protocol):
        def begin(self, call: str, thread: str) -> None: ...

        def end(self, record: CallRecord) -> None: ...


ALLOC_BYTES = 1 << 20


def timed_call(
    driver: CudaDriver,
    log: CallLog,
    thread: str,
    call: str,
    function: Callable[[], Any],
) -> Tuple[int, Any]:
    """Run one driver call; return (CUresult, value) and log it with its duration."""
    log.begin(call, thread)
    started = time.perf_counter()
    result = function()
    ms = (time.perf_counter() - started) * 1000.0
    if isinstance(result, tuple):
        code, value = int(result[0]), (result[1] if len(result) == 2 else list(result[1:]))
    else:
        code, value = int(result), None
    name = driver.error_name(code) if code != CUDA_SUCCESS else "CUDA_SUCCESS"
    log.end(CallRecord(call=call, thread=thread, code=code, name=name, value=value, ms=ms))
    return code, value


def bind_device(
    driver: CudaDriver,
    ordinal: int,
    log: CallLog,
    thread: str = "main",
    alloc_bytes: int = ALLOC_BYTES,
) -> Tuple[BindingOutcome, int, int]:
    """Retain GPU ``ordinal``'s primary context, make it current, prove it works.

    Returns the outcome plus the device handle and context (0 when not reached), so a
    caller can go on using the bound context.
    """
    started = time.perf_counter()
    records: List[CallRecord] = []

    class _Tee:
        def begin(self, call: str, thread_name: str) -> None:
            log.begin(call, thread_name)

        def end(self, record: CallRecord) -> None:
            records.append(record)
            log.end(record)

    tee = _Tee()

    def outcome(ok: bool, failed: str = "", detail: str = "") -> BindingOutcome:
        return BindingOutcome(
            ordinal=ordinal,
            ok=ok,
            calls=records,
            failed_call=failed,
            detail=detail,
            ms=(time.perf_counter() - started) * 1000.0,
        )

    code, device = timed_call(
        driver, tee, thread, "cuDeviceGet", lambda: driver.device_get(ordinal)
    )
    if code != CUDA_SUCCESS:
        return outcome(False, "cuDeviceGet"), 0, 0
    code, context = timed_call(
        driver, tee, thread, "cuDevicePrimaryCtxRetain", lambda: driver.primary_ctx_retain(device)
    )
    if code != CUDA_SUCCESS:
        return outcome(False, "cuDevicePrimaryCtxRetain"), device, 0
    code, _ = timed_call(
        driver, tee, thread, "cuCtxSetCurrent", lambda: driver.ctx_set_current(context)
    )
    if code != CUDA_SUCCESS:
        return outcome(False, "cuCtxSetCurrent"), device, context
    code, current = timed_call(driver, tee, thread, "cuCtxGetDevice", driver.ctx_get_device)
    if code != CUDA_SUCCESS:
        return outcome(False, "cuCtxGetDevice"), device, context
    if current != device:
        detail = f"cuCtxGetDevice returned device {current} in the thread bound to {device}"
        return outcome(False, "cuCtxGetDevice", detail), device, context
    failed = _use_memory(driver, tee, thread, alloc_bytes)
    if failed:
        return outcome(False, failed), device, context
    return outcome(True), device, context


def _use_memory(driver: CudaDriver, log: CallLog, thread: str, size: int) -> str:
    """Allocate, write and synchronise: a context that cannot do this is not usable."""
    code, pointer = timed_call(driver, log, thread, "cuMemAlloc", lambda: driver.mem_alloc(size))
    if code != CUDA_SUCCESS:
        return "cuMemAlloc"
    failed = ""
    code, _ = timed_call(
        driver, log, thread, "cuMemsetD8", lambda: driver.mem_set(pointer, 0xA5, size)
    )
    if code != CUDA_SUCCESS:
        failed = "cuMemsetD8"
    if not failed:
        code, _ = timed_call(driver, log, thread, "cuCtxSynchronize", driver.ctx_synchronize)
        if code != CUDA_SUCCESS:
            failed = "cuCtxSynchronize"
    code, _ = timed_call(driver, log, thread, "cuMemFree", lambda: driver.mem_free(pointer))
    if code != CUDA_SUCCESS and not failed:
        failed = "cuMemFree"
    return failed


def probe_fresh_thread(
    driver: CudaDriver, ordinal: int, log: CallLog, thread_prefix: str = "fresh"
) -> None:
    """The thread-discipline probe (issue 8), in a thread that never bound a context.

    First the calls a vLLM worker's background threads (NCCL, AMP, custom all-reduce)
    make before binding anything. NVIDIA's driver answers a context-less cuCtxGetDevice
    with CUDA_ERROR_INVALID_CONTEXT and carries on; some interposers abort, hang or
    invent a device id. Then the thread binds GPU ``ordinal`` itself (the per-thread
    binding of check 'context-threads') and asks again. Judging is the checks' job.
    """
    unbound = f"{thread_prefix}-unbound"
    timed_call(driver, log, unbound, "cuCtxGetCurrent", driver.ctx_get_current)
    timed_call(driver, log, unbound, "cuCtxGetDevice", driver.ctx_get_device)
    timed_call(driver, log, unbound, "cuDeviceGetCount", driver.device_count)
    timed_call(driver, log, unbound, "cuMemGetInfo", driver.mem_get_info)
    bound = f"{thread_prefix}-bound"
    outcome, _, _ = bind_device(driver, ordinal, log, thread=bound)
    if outcome.ok:
        timed_call(driver, log, bound, "cuMemGetInfo", driver.mem_get_info)
