"""One vLLM rank, simulated: the child process started per GPU by the fast tier.

A vLLM worker is a fresh process that inherits the pod's environment, initialises CUDA
and binds GPU ``rank`` from its main thread. This child does the same through the
driver API (no torch); then a fresh thread runs the thread-discipline probe and binds
the GPU again from that thread. It runs with ``python3 -S -I`` and imports nothing but
ctypes, threading and four small modules of this package: its start-up is on the
checker's critical path.

Protocol. Request: ``key=value`` arguments (rank, thread_timeout_s, alloc_bytes; and
view=1 tp= needed= for the rank that reports the CUDA view).
The child writes one JSON object per line to stdout (``b`` = call begins, ``e`` = call
ended, ``note``, ``fatal``, ``hang``, ``done``) and reads one line from stdin before it
creates a context: ``go`` or ``stop``. The parent holds that gate until NVML has
recorded which memory and processes belong to someone else.
"""

from __future__ import annotations

import os
import sys
import threading

from preflight_check.binding import bind_device, probe_fresh_thread, timed_call
from preflight_check.calls import CallRecord
from preflight_check.cudaview import library_note, read_view, tp_groups
from preflight_check.driver.basics import CUDA_SUCCESS, DriverUnavailable

TYPE_CHECKING = False  # see binding.py: keeps typing out of the child's start-up
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List

    from preflight_check.driver.api import CudaDriver

EXIT_OK = 0
EXIT_HUNG = 3
EXIT_NO_DRIVER = 4


def _encode(value: Any) -> str:
    """JSON for the few shapes the protocol carries, without importing json (and re)."""
    if value is None or value is True or value is False:
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return '"' + "".join(c if c >= " " else f"\\u{ord(c):04x}" for c in escaped) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_encode(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_encode(str(k))}:{_encode(v)}" for k, v in value.items()) + "}"
    return _encode(str(value))


class JsonLinesLog:
    """Writes each record as one line straight to a file descriptor (no buffering), so
    a crash right after a 'begin' still leaves that line for the parent to read."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._lock = threading.Lock()

    def emit(self, record: Dict[str, Any]) -> None:
        line = _encode(record) + "\n"
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


def parse_request(argv: List[str]) -> Dict[str, str]:
    """``key=value`` arguments, as the parent's Child sends them."""
    return dict(arg.split("=", 1) for arg in argv if "=" in arg)


def run_probe(
    load_driver: Callable[[], CudaDriver],
    request: Dict[str, str],
    log: JsonLinesLog,
    wait_for_gate: Callable[[], bool],
) -> int:
    rank = int(request["rank"])
    thread_timeout = float(request.get("thread_timeout_s", "10"))
    try:
        driver = load_driver()
    except DriverUnavailable as exc:
        log.emit({"fatal": str(exc)})
        return EXIT_NO_DRIVER
    log.emit({"note": "library", "v": library_note(driver)})
    version_code, version = driver.driver_version()
    log.emit({"note": "driver_version", "v": version if version_code == CUDA_SUCCESS else None})
    code, _ = timed_call(driver, log, "main", "cuInit", driver.init)
    if code != CUDA_SUCCESS:
        log.emit({"done": True})
        return EXIT_OK
    timed_call(driver, log, "main", "cuDeviceGetCount", driver.device_count)
    if request.get("view") == "1":
        # Rank 0 tells the checker what CUDA shows, so the checker needs no cuInit.
        groups = tp_groups(int(request.get("tp", "1")), int(request.get("needed", "1")))
        log.emit({"note": "view", "v": read_view(driver, groups)})
    if not wait_for_gate():
        log.emit({"note": "stopped", "v": "the checker stopped this probe before binding"})
        log.emit({"done": True})
        return EXIT_OK
    bind_device(driver, rank, log, "main", int(request.get("alloc_bytes", str(1 << 20))))
    probe = threading.Thread(
        target=probe_fresh_thread, args=(driver, rank, log), name="fresh", daemon=True
    )
    probe.start()
    probe.join(thread_timeout)
    if probe.is_alive():
        # A driver call that never returns cannot be cancelled; leave at once and let
        # the parent read the unfinished 'begin' line as the hang's evidence.
        log.emit({"hang": thread_timeout})
        return EXIT_HUNG
    log.emit({"done": True})
    return EXIT_OK


def gate_from_stdin() -> bool:
    """The parent's go-ahead: one line on stdin, "go" (or "stop", or EOF when it died)."""
    line = sys.stdin.readline()
    return bool(line) and line.strip() == "go"


def write_stdout(text: str) -> None:
    """Unbuffered: a child that crashes right after a line must not lose it."""
    os.write(1, text.encode("utf-8"))


def main() -> None:
    # Imported here so the protocol code above is importable without ctypes loading
    # libcuda (the fake-driver tests run run_probe over a fake).
    from preflight_check.driver.libcuda import load_libcuda  # noqa: PLC0415

    request = parse_request(sys.argv[1:])
    code = run_probe(load_libcuda, request, JsonLinesLog(write_stdout), gate_from_stdin)
    # os._exit skips interpreter teardown (and a hung daemon thread's join).
    os._exit(code)


if __name__ == "__main__":
    main()
