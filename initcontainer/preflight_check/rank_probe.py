"""One vLLM rank, simulated: the child process started per GPU by the fast tier.

A vLLM worker is a fresh process that inherits the pod's environment, initialises
CUDA and binds GPU ``rank``. This child does the same through the driver API (no torch)
and then runs the thread-discipline probe from a fresh thread. It runs with
``python3 -S -I`` and imports nothing heavy so that it costs little more than the
driver's own start-up.

Protocol: the request is one JSON argument; the child writes one JSON object per line
to stdout (``b`` = call begins, ``e`` = call ended, ``note``, ``fatal``, ``done``) and
reads one line from stdin before it creates a context: ``go`` or ``stop``. The parent
holds that gate until NVML has recorded which memory and processes are someone else's.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any, Callable, Dict

from preflight_check.binding import bind_device, probe_fresh_thread, timed_call
from preflight_check.driver.api import CUDA_SUCCESS, CudaDriver, DriverUnavailable
from preflight_check.facts import CallRecord

EXIT_OK = 0
EXIT_HUNG = 3
EXIT_NO_DRIVER = 4


class JsonLinesLog:
    """Writes each record as one line straight to a file descriptor (no buffering), so
    a crash right after a 'begin' still leaves that line for the parent to read."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._lock = threading.Lock()

    def emit(self, record: Dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            self._write(line)

    def begin(self, call: str, thread: str) -> None:
        self.emit({"b": call, "th": thread})

    def end(self, record: CallRecord) -> None:
        self.emit(
            {
                "e": record.call,
                "th": record.thread,
                "c": record.code,
                "n": record.name,
                "v": record.value,
                "ms": round(record.ms, 3),
            }
        )


def run_probe(
    load_driver: Callable[[], CudaDriver],
    request: Dict[str, Any],
    log: JsonLinesLog,
    wait_for_gate: Callable[[], bool],
) -> int:
    rank = int(request["rank"])
    try:
        driver = load_driver()
    except DriverUnavailable as exc:
        log.emit({"fatal": str(exc)})
        return EXIT_NO_DRIVER
    log.emit({"note": "library", "v": driver.library().path})
    code, _ = timed_call(driver, log, "main", "cuInit", driver.init)
    if code != CUDA_SUCCESS:
        log.emit({"done": True})
        return EXIT_OK
    timed_call(driver, log, "main", "cuDeviceGetCount", driver.device_count)
    if not wait_for_gate():
        log.emit({"note": "stopped", "v": "the checker stopped this probe before binding"})
        log.emit({"done": True})
        return EXIT_OK
    _, _, context = bind_device(driver, rank, log, "main", int(request.get("alloc_bytes", 1 << 20)))
    if request.get("probe_threads", True):
        probe = threading.Thread(
            target=probe_fresh_thread, args=(driver, context, log), name="fresh", daemon=True
        )
        probe.start()
        probe.join(float(request.get("thread_timeout_s", 10.0)))
        if probe.is_alive():
            # A driver call that never returns cannot be cancelled; leave at once and let
            # the parent read the unfinished 'begin' line as the hang's evidence.
            log.emit({"hang": float(request.get("thread_timeout_s", 10.0))})
            return EXIT_HUNG
    log.emit({"done": True})
    return EXIT_OK


def _gate_from_stdin() -> bool:
    line = sys.stdin.readline()
    return bool(line) and line.strip() == "go"


def _write_stdout(text: str) -> None:
    os.write(1, text.encode("utf-8"))


def main() -> None:
    request = json.loads(sys.argv[1])
    # Imported here so the module's protocol code is importable where ctypes loading
    # of libcuda is not wanted (the fake-driver tests).
    from preflight_check.driver.libcuda import load_libcuda  # noqa: PLC0415

    code = run_probe(load_libcuda, request, JsonLinesLog(_write_stdout), _gate_from_stdin)
    # os._exit skips interpreter teardown (and a hung daemon thread's join).
    os._exit(code)


if __name__ == "__main__":
    main()
