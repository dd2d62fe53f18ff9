"""The rules engine in a child process, with a hard time and memory budget.

The rules are pure, CPU-bound Python: a hostile manifest (24 env vars each ``$(PREV)$(PREV)``,
1.7 KB) once drove the operator to 4.2 GB inside the webhook, the API server's 10 s timeout
fired, and a bad Deployment sent one second later was admitted under Enforce. A thread
cannot be interrupted, so the rules run in one child process instead:

- **time**: the parent waits at most ``budget`` seconds for the answer; past it the child
  is killed (SIGKILL) and a fresh one started, and the caller gets ``BudgetExceeded``;
- **memory**: the child caps its own address space (``RLIMIT_AS``) after its imports, so
  an expansion bomb ends in a MemoryError in the child (``BudgetExceeded`` too), never in
  the operator's cgroup OOM-killing the operator.

Cluster lookups (Services named vllm, DRA claims, ...) stay in the parent: the child asks
for them over the same pipe while it works, and the parent answers from its caches.

The operator calls its pool of workers from the event loop without blocking it
(``RulesPool.analyse_async``: asyncio streams on the socketpair, the wait for a free
worker counted in the budget), so one slow manifest holds up no other request. The
synchronous calls serve tests and the benchmark. A call costs one pickle each way on top
of the rules themselves (figures in docs/RELIABILITY.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import json
import logging
import os
import pickle
import queue
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any

from preflight_operator.core import rules
from preflight_operator.core.analysis import (
    InjectionTarget,
    RulesAnalyser,
    injection_target,
    out_of_memory,
    to_static,
)
from preflight_operator.core.operatorconfig import OperatorConfig, PolicySpec
from preflight_operator.core.rules import inline_yaml
from preflight_operator.core.static import StaticResult

logger = logging.getLogger(__name__)

DEFAULT_BUDGET_SECONDS = 3.0
DEFAULT_MEMORY_MIB = 160
ENTRY_ENV = "PREFLIGHT_RULES_WORKER_ENTRY"
LOOKUP_FIELDS = tuple(f.name for f in dataclasses.fields(rules.ClusterLookup))


class BudgetExceeded(Exception):
    """The rules did not finish within the budget (time or memory); ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RulesWorker:
    """One child process running the rules; restarted when killed or dead."""

    def __init__(
        self,
        lookup: rules.ClusterLookup = rules.NO_LOOKUP,
        *,
        budget: float = DEFAULT_BUDGET_SECONDS,
        memory_mib: int = DEFAULT_MEMORY_MIB,
        start_timeout: float = 30.0,
        entry: tuple[str, ...] = ("-m", "preflight_operator.runtime.rulesworker"),
    ) -> None:
        """``entry``: what python runs as the child (tests run a child whose rules spin or
        grow on purpose, so the budgets are tested whatever the rules' own caps are)."""
        self.entry = entry
        self.lookup = lookup
        self.budget = budget
        self.memory_mib = memory_mib
        self.start_timeout = start_timeout
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._ready = False
        self.restarts = 0
        self.exceeded = 0
        # The asyncio side (the operator drives its workers this way; tests and the
        # benchmark also drive them synchronously, never both on one worker).
        self._alock: asyncio.Lock | None = None
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    # -- the child's life -------------------------------------------------------------

    def start(self) -> None:
        """Starts the child now (it imports the rules while the caller goes on)."""
        with self._lock:
            self._spawn()

    def _spawn(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        parent, child = socket.socketpair()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self._proc = subprocess.Popen(
            [sys.executable, *self.entry, str(child.fileno()), str(self.memory_mib)],
            pass_fds=(child.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
        )
        child.close()
        self._conn = Connection(parent.detach())
        self._ready = False

    def _kill(self) -> None:
        if self._streams is not None:
            with contextlib.suppress(Exception):
                self._streams[1].close()
            self._streams = None
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.close()
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
        self._proc, self._conn, self._ready = None, None, False

    def close(self) -> None:
        with self._lock:
            self._kill()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # -- calls ------------------------------------------------------------------------

    def _in_process(self, op: str, body: Mapping[str, Any], policy: PolicySpec) -> Any:
        """A worker that cannot start at all is our fault, not the manifest's: the rules run
        here, unbudgeted, rather than admission failing."""
        logger.error("the rules worker did not start; running the rules in-process")
        local = RulesAnalyser(self.lookup)
        if op == "analyse":
            return local.analyse(body, policy)
        return local.injection_target(body, policy)

    def _request(self, op: str, body: Mapping[str, Any], policy: PolicySpec) -> bytes:
        available = tuple(f for f in LOOKUP_FIELDS if getattr(self.lookup, f) is not None)
        return pickle.dumps((op, dict(body), policy, available))

    def _reply(self, message: Any) -> tuple[bool, Any]:
        """One message from the child: (True, the answer), or (False, the bytes to send
        back: a cluster lookup's value). A budget or an error in the child raises."""
        kind = message[0]
        if kind == "lookup":
            value = self._lookup(message[1], message[2])
            try:
                return False, pickle.dumps(("value", value))
            except (TypeError, AttributeError, pickle.PicklingError):
                logger.exception("rules lookup %s: answer not picklable", message[1])
                return False, pickle.dumps(("value", None))
        if kind == "memory":
            self._restart()
            raise BudgetExceeded(f"over its {self.memory_mib} MiB memory budget")
        if kind == "error":
            raise RuntimeError(message[1])
        return True, message[1]

    def _started(self, conn: Connection) -> bool:
        """Imports are not the manifest's fault: they get their own allowance."""
        try:
            return bool(conn.poll(self.start_timeout) and conn.recv() == ("ready",))
        except (EOFError, OSError):
            return False

    def _exchange(self, conn: Connection, request: bytes, budget: float) -> Any:
        deadline = time.monotonic() + budget
        conn.send_bytes(request)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not conn.poll(left):
                self._restart()
                raise BudgetExceeded(f"not done within {self.budget:g} s")
            done, value = self._reply(conn.recv())
            if done:
                return value
            conn.send_bytes(value)

    def _call(
        self, op: str, body: Mapping[str, Any], policy: PolicySpec, budget: float | None = None
    ) -> Any:
        budget = self.budget if budget is None else budget
        with self._lock:
            self._spawn()
            conn = self._conn
            assert conn is not None
            if not self._ready:
                if not self._started(conn):
                    self._kill()
                    return self._in_process(op, body, policy)
                self._ready = True
            try:
                return self._exchange(conn, self._request(op, body, policy), budget)
            except (EOFError, OSError, pickle.PickleError) as exc:
                self._restart()
                raise BudgetExceeded(f"the rules worker died ({type(exc).__name__})") from exc
            except (BudgetExceeded, RuntimeError):
                raise
            except Exception as exc:
                # Our bug, not the manifest's (e.g. an unpicklable body): the exchange may
                # be half done, so start afresh; the caller fails open as for any bug.
                self._kill()
                self._spawn()
                raise RuntimeError(f"rules worker exchange failed: {exc!r:.200}") from exc

    def _restart(self) -> None:
        self.exceeded += 1
        self.restarts += 1
        self._kill()
        self._spawn()

    def _lookup(self, field: str, args: tuple[Any, ...]) -> Any:
        fn = getattr(self.lookup, field, None) if field in LOOKUP_FIELDS else None
        if fn is None:
            return None
        try:
            return fn(*args)
        except Exception:  # a lookup is best effort: the rules say what they could not read
            logger.exception("rules lookup %s failed", field)
            return None

    def analyse(self, body: Mapping[str, Any], policy: PolicySpec) -> StaticResult:
        result: StaticResult = self._call("analyse", body, policy)
        return result

    def injection_target(self, pod: Mapping[str, Any], policy: PolicySpec) -> InjectionTarget:
        result: InjectionTarget = self._call("target", pod, policy)
        return result

    # -- the same calls from the event loop (no thread, no blocking) --------------------

    async def _astreams(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        alive = self._proc is not None and self._proc.poll() is None
        if self._streams is not None and alive:
            return self._streams
        if not alive:
            self._kill()
            self._spawn()
        assert self._conn is not None
        sock = socket.socket(fileno=os.dup(self._conn.fileno()))
        self._streams = await asyncio.open_unix_connection(sock=sock)
        if not self._ready:
            # Imports are not the manifest's fault: they get their own allowance.
            try:
                ready = pickle.loads(
                    await asyncio.wait_for(_read_frame(self._streams[0]), self.start_timeout)
                )
            except (asyncio.TimeoutError, asyncio.IncompleteReadError, OSError):
                ready = None
            if ready != ("ready",):
                self._kill()
                raise RuntimeError("the rules worker did not start")
            self._ready = True
        return self._streams

    async def _aexchange(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        request: bytes,
        deadline: float,
    ) -> Any:
        loop = asyncio.get_running_loop()
        _write_frame(writer, request)
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise asyncio.TimeoutError
            done, value = self._reply(
                pickle.loads(await asyncio.wait_for(_read_frame(reader), left))
            )
            if done:
                return value
            _write_frame(writer, value)

    async def acall(
        self, op: str, body: Mapping[str, Any], policy: PolicySpec, budget: float | None = None
    ) -> Any:
        """``_call`` for the event loop."""
        loop = asyncio.get_running_loop()
        if self._alock is None:
            self._alock = asyncio.Lock()
        async with self._alock:
            try:
                reader, writer = await self._astreams()
            except RuntimeError:
                return self._in_process(op, body, policy)
            # from here: a worker that had to start again is not the manifest's fault
            deadline = loop.time() + (self.budget if budget is None else budget)
            try:
                return await self._aexchange(
                    reader, writer, self._request(op, body, policy), deadline
                )
            except asyncio.TimeoutError:
                self._restart()
                raise BudgetExceeded(f"not done within {self.budget:g} s") from None
            except (asyncio.IncompleteReadError, OSError, pickle.PickleError, EOFError) as exc:
                self._restart()
                raise BudgetExceeded(f"the rules worker died ({type(exc).__name__})") from exc
            except (BudgetExceeded, RuntimeError):
                raise
            except Exception as exc:
                self._kill()
                raise RuntimeError(f"rules worker exchange failed: {exc!r:.200}") from exc


def _write_frame(writer: asyncio.StreamWriter, data: bytes) -> None:
    """multiprocessing.connection's framing, which the child's Connection reads."""
    if len(data) > 0x7FFFFFFF:
        writer.write(struct.pack("!i", -1) + struct.pack("!Q", len(data)) + data)
    else:
        writer.write(struct.pack("!i", len(data)) + data)


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack("!i", await reader.readexactly(4))
    if size == -1:
        (size,) = struct.unpack("!Q", await reader.readexactly(8))
    return await reader.readexactly(size)


class RulesPool:
    """Several RulesWorkers behind one budget per call, counted from the call's start:
    the wait for a free worker is part of it. Calls may come from several threads (the
    webhooks run the rules off the event loop), so a slow manifest occupies one worker,
    never the operator: other requests are answered by the others, and a request that
    finds none free within the budget is answered as over budget, not left to the API
    server's timeout (which would admit it silently under failurePolicy Ignore)."""

    def __init__(
        self,
        workers: list[RulesWorker],
        budget: float,
        local: RulesAnalyser | None = None,
    ) -> None:
        self.workers = workers
        self.budget = budget
        # plain objects are judged here, without the round trip (see plain())
        self.local = local
        self._free: queue.Queue[RulesWorker] = queue.Queue()
        for worker in workers:
            self._free.put(worker)
        self._afree: asyncio.Queue[RulesWorker] | None = None  # made in the running loop

    @property
    def lookup(self) -> rules.ClusterLookup:
        return self.workers[0].lookup

    def start(self) -> None:
        for worker in self.workers:
            worker.start()

    def close(self) -> None:
        for worker in self.workers:
            worker.close()

    def _call(self, op: str, body: Mapping[str, Any], policy: PolicySpec) -> Any:
        started = time.monotonic()
        try:
            worker = self._free.get(timeout=self.budget)
        except queue.Empty:
            raise BudgetExceeded(
                f"no rules worker was free within {self.budget:g} s (all busy with others)"
            ) from None
        try:
            left = max(0.0, self.budget - (time.monotonic() - started))
            return worker._call(op, body, policy, budget=left)
        finally:
            self._free.put(worker)

    def analyse(self, body: Mapping[str, Any], policy: PolicySpec) -> StaticResult:
        result: StaticResult = self._call("analyse", body, policy)
        return result

    def injection_target(self, pod: Mapping[str, Any], policy: PolicySpec) -> InjectionTarget:
        result: InjectionTarget = self._call("target", pod, policy)
        return result

    async def _acall(self, op: str, body: Mapping[str, Any], policy: PolicySpec) -> Any:
        loop = asyncio.get_running_loop()
        started = loop.time()
        if self._afree is None:
            self._afree = asyncio.Queue()
            for worker in self.workers:
                self._afree.put_nowait(worker)
        try:
            worker = await asyncio.wait_for(self._afree.get(), self.budget)
        except asyncio.TimeoutError:
            raise BudgetExceeded(
                f"no rules worker was free within {self.budget:g} s (all busy with others)"
            ) from None
        try:
            left = max(0.0, self.budget - (loop.time() - started))
            return await worker.acall(op, body, policy, budget=left)
        finally:
            self._afree.put_nowait(worker)

    async def analyse_async(self, body: Mapping[str, Any], policy: PolicySpec) -> StaticResult:
        if self.local is not None and plain(body):
            # in the event loop: an embedded YAML document over boundedyaml.INLINE_BYTES is
            # not read here, and the whole object goes to a worker instead
            with inline_yaml() as here:
                static = self.local.analyse(body, policy)
            if not here.deferred:
                return static
        result: StaticResult = await self._acall("analyse", body, policy)
        return result

    async def injection_target_async(
        self, pod: Mapping[str, Any], policy: PolicySpec
    ) -> InjectionTarget:
        if self.local is not None and plain(pod):
            with inline_yaml() as here:
                target = self.local.injection_target(pod, policy)
            if not here.deferred:
                return target
        result: InjectionTarget = await self._acall("target", pod, policy)
        return result


# What the rules may judge in the operator's own process: a small object with few variable
# references (and YAML embedded in it, or in a ConfigMap it reads, of at most
# boundedyaml.INLINE_BYTES: a larger document sends the object to the workers). The
# expansion budgets (rules.kubeenv/shell: 256 KiB a value, 4 MiB a container) already
# bound what any object can cost; with at most PLAIN_REFS references in at most
# PLAIN_BYTES of JSON an object costs well under a millisecond of rules work
# (docs/PERFORMANCE.md, "Webhook"), so the child's round trip (a pickle each way, a
# context switch) would cost more than it guards. Everything else goes to the workers.
PLAIN_BYTES = 32 * 1024
PLAIN_REFS = 32


def plain(body: Mapping[str, Any]) -> bool:
    """Small and with few `$` references: safe to judge in-process."""
    try:
        text = json.dumps(body, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return False
    return len(text) <= PLAIN_BYTES and text.count("$") <= PLAIN_REFS


def isolate(analyser: object, config: OperatorConfig) -> RulesPool | None:
    """RulesWorkers doing what ``analyser`` (a RulesAnalyser) does, with the
    configuration's budget; None for any other analyser (tests' fakes stay in-process)."""
    if not isinstance(analyser, RulesAnalyser):
        return None
    # A test seam: the e2e tests run a child whose rules spin on purpose.
    entry = os.environ.get(ENTRY_ENV)
    workers = [
        RulesWorker(
            analyser.lookup,
            budget=config.rules_budget_seconds,
            memory_mib=config.rules_memory_mib,
            entry=(entry,) if entry else ("-m", "preflight_operator.runtime.rulesworker"),
        )
        for _ in range(config.rules_workers)
    ]
    # the e2e seam's child spins on purpose: it must see every call
    return RulesPool(workers, config.rules_budget_seconds, None if entry else analyser)


# -- the child ---------------------------------------------------------------------------


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the operator dies (a SIGKILLed operator cannot
    close the pipe for a child busy in the rules)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _child(fd: int, memory_mib: int) -> None:
    _die_with_parent()
    conn = Connection(fd)

    def proxy(field: str) -> Any:
        def ask(*args: Any) -> Any:
            conn.send(("lookup", field, args))
            reply = conn.recv()
            return reply[1]

        return ask

    # Warm the rules once (first-use imports and caches), then cap the address space.
    RulesAnalyser().analyse({}, PolicySpec())
    limit = memory_mib * 1024 * 1024
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    conn.send(("ready",))
    while True:
        try:
            op, body, policy, available = conn.recv()
        except (EOFError, OSError):  # the operator closed the pipe (reset, when killing us)
            return
        lookup = rules.ClusterLookup(**{f: proxy(f) for f in available})
        analyser = RulesAnalyser(lookup)
        try:
            results = analyser.results(body, policy)
            if out_of_memory(results):
                raise MemoryError
            answer = to_static(results) if op == "analyse" else injection_target(results)
            conn.send(("ok", answer))
        except MemoryError:
            # Likely unable to carry on in a sane state: say so, then let the parent
            # replace this process.
            with contextlib.suppress(Exception):
                conn.send(("memory",))
            return
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"[:300]))


if __name__ == "__main__":
    _child(int(sys.argv[1]), int(sys.argv[2]))
