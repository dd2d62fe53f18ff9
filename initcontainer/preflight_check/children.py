"""Child processes of the checker: per-rank probes (fast tier) and torch workers (deep).

Each child is a fresh interpreter, like a vLLM worker started with the spawn method.
Children are started as early as possible so their interpreter start-up and cuInit
overlap with the parent's own work, then held at a gate (one line on stdin) until the
parent is ready for them to create contexts. Each child reports through JSON lines on
stdout; a crash, a signal or a hang is attributed to the call that had begun and not
ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from preflight_check.driver.api import cuda_error_name
from preflight_check.facts import CallRecord, ChildOutcome

STDERR_TAIL = 2000

# Builds the command that starts a child running ``module`` (its ``main()``).
CommandFor = Callable[[str], List[str]]


def package_root() -> str:
    """The directory (or .pyz file) that holds the preflight_check package."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def interpreter_command(module: str, minimal: bool = True) -> List[str]:
    """Start ``preflight_check.<module>.main()`` in a fresh interpreter.

    ``minimal`` adds -S -I: no site-packages, no user environment for Python. The rank
    probe needs only ctypes and this package, and skipping site saves 20-40 ms per
    child. The deep worker needs site-packages (torch), so it runs without them.
    """
    bootstrap = (
        "import sys;"
        f"sys.path.insert(0, {package_root()!r});"
        f"from preflight_check.{module} import main;"
        "main()"
    )
    flags = ["-S", "-I"] if minimal else []
    return [sys.executable, *flags, "-c", bootstrap]


def default_command_for(module: str) -> List[str]:
    return interpreter_command(module, minimal=module == "rank_probe")


class Child:
    """One running child, its reader threads and what it has said so far."""

    def __init__(
        self,
        rank: int,
        command: Sequence[str],
        request: Mapping[str, Any],
        environ: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.rank = rank
        self.outcome = ChildOutcome(rank=rank)
        self._open: Dict[tuple[str, str], CallRecord] = {}
        self._stderr: List[str] = []
        self._done = threading.Event()
        self._noted = threading.Event()
        self._started = time.perf_counter()
        self._stopped = False
        try:
            self._process: Optional[subprocess.Popen[bytes]] = subprocess.Popen(
                [*command, *(f"{key}={value}" for key, value in request.items())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(environ) if environ is not None else None,
            )
        except OSError as exc:
            self._process = None
            self.outcome.started = False
            self.outcome.fatal = f"could not start {command[0]}: {exc}"
            self._done.set()
            return
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._err_reader.start()

    # -- reading -----------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self._process is not None
        assert self._process.stdout is not None
        for raw in self._process.stdout:
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict):
                self._take(record)
        self._process.wait()
        self.outcome.wall_ms = (time.perf_counter() - self._started) * 1000.0
        code = self._process.returncode
        if code is not None and code < 0:
            self.outcome.signal = -code
        else:
            self.outcome.exit_code = code
        self._done.set()

    def _read_stderr(self) -> None:
        assert self._process is not None
        assert self._process.stderr is not None
        for raw in self._process.stderr:
            self._stderr.append(raw.decode("utf-8", "replace"))
            if sum(len(x) for x in self._stderr) > 4 * STDERR_TAIL:
                self._stderr[:] = ["".join(self._stderr)[-STDERR_TAIL:]]

    def _take(self, record: Dict[str, Any]) -> None:
        if "b" in record:
            call = CallRecord(call=str(record["b"]), thread=str(record.get("th", "")))
            call.finished = False
            self._open[(call.call, call.thread)] = call
            self.outcome.calls.append(call)
        elif "e" in record:
            key = (str(record["e"]), str(record.get("th", "")))
            call = self._open.pop(key) if key in self._open else CallRecord(key[0], key[1])
            if call not in self.outcome.calls:
                self.outcome.calls.append(call)
            code = record.get("c")
            call.code = int(code) if isinstance(code, int) else None
            call.name = str(record.get("n") or cuda_error_name(call.code or 0))
            call.value = record.get("v")
            call.ms = float(record.get("ms") or 0.0)
            call.finished = True
        elif "fatal" in record:
            self.outcome.fatal = str(record["fatal"])
        elif "note" in record:
            self.outcome.notes[str(record["note"])] = record.get("v")
            self._noted.set()
        elif "hang" in record:
            self.outcome.timed_out = True
            self.outcome.notes["hang_after_s"] = record["hang"]

    # -- control -----------------------------------------------------------------

    def release(self, message: str = "go") -> None:
        """Open the gate (``go``) or tell the child to stop before binding (``stop``)."""
        if self._process is None or self._process.stdin is None:
            return
        try:
            self._process.stdin.write(message.encode() + b"\n")
            self._process.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def stop(self) -> None:
        """End a child held before its gate that must not go on (the deep tier skipped or
        reused), without waiting for it to reach the gate. Before its gate a child has made
        no CUDA context (a deep worker is still importing torch), so ending it leaves
        nothing behind; waiting for it would cost the whole import: on an H200 a reused
        deep tier took 3.0-4.0 s against the fast tier's 0.4-0.6 s (docs/GPU_RUNS.md, run
        19), nearly all of it torch's import in a worker that was then told to stop."""
        self.release("stop")
        if self._process is None or self._done.is_set():
            return
        self._stopped = True
        with contextlib.suppress(OSError):
            self._process.send_signal(signal.SIGTERM)

    def wait_note(self, name: str, timeout: float) -> bool:
        """Wait until the child has reported ``name`` or ended (True if reported)."""
        deadline = time.monotonic() + timeout
        while name not in self.outcome.notes and not self._done.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._noted.wait(min(remaining, 0.05))
            self._noted.clear()
        return name in self.outcome.notes

    def wait(self, timeout: Optional[float]) -> bool:
        return self._done.wait(timeout)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def failed(self) -> bool:
        outcome = self.outcome
        return bool(outcome.fatal or outcome.crashed or (outcome.exit_code not in (None, 0)))

    def kill(self) -> None:
        if self._process is None or self._done.is_set():
            return
        self.outcome.timed_out = True
        with contextlib.suppress(OSError):
            self._process.send_signal(signal.SIGKILL)

    def finish(self) -> ChildOutcome:
        """Join the readers (bounded: a child stuck in the kernel may not die at once)."""
        if self._process is not None:
            self._done.wait(5.0)
            self._err_reader.join(1.0)
        self.outcome.stderr_tail = "".join(self._stderr)[-STDERR_TAIL:]
        if self.outcome.timed_out and self.outcome.signal == signal.SIGKILL:
            # We killed it: the signal is ours, the timeout is the finding.
            self.outcome.signal = None
        if self._stopped and self.outcome.signal == signal.SIGTERM:
            # We stopped it before its gate: nothing of it ran, nothing failed.
            self.outcome.signal = None
            self.outcome.notes.setdefault("stopped", "the checker stopped this child")
        return self.outcome


def collect(
    children: Sequence[Child],
    timeout_s: float,
    grace_after_failure_s: Optional[float] = None,
) -> List[ChildOutcome]:
    """Wait for every child; kill those still running at the deadline.

    With ``grace_after_failure_s``, once one child has failed the others get only that
    long: ranks of a collective wait forever for a peer that died, and the report
    should name the dead rank quickly rather than sit out the whole timeout.
    """
    deadline = time.monotonic() + timeout_s
    pending = list(children)
    while pending:
        now = time.monotonic()
        if now >= deadline:
            break
        if grace_after_failure_s is not None and any(c.done and c.failed for c in children):
            deadline = min(deadline, now + grace_after_failure_s)
            grace_after_failure_s = None
        child = pending[0]
        wait_s = deadline - now
        if grace_after_failure_s is not None and len(pending) > 1:
            # Wake up now and then to notice a failed peer.
            wait_s = min(wait_s, 0.25)
        if child.wait(wait_s):
            pending.pop(0)
    for child in pending:
        child.kill()
    return [child.finish() for child in children]
