"""The HTTPS server of both webhooks (/validate and /mutate-pods): a plain aiohttp app.

kopf serves no webhook here (its admission server is not configured): both webhooks
are answered by functions of ``handlers/admission.py`` from the AdmissionReview, with
the same AdmissionService. Why our own server and not kopf's: the validating webhook is
the hot path (every create or update of a workload in an opted-in namespace) and kopf's
per-request machinery (a cause object, handler selection, state, per-object memory, a
patch diff) cost more than the rules themselves: measured, it halved the webhook's
throughput and pushed its p99 past twice the bare TLS floor (docs/PERFORMANCE.md). The
first answer to that overrode a private method of kopf's server; this app uses only
aiohttp's public API (issue 12), and kopf keeps what it is for: the watches.

- TLS from the chart's certificate files, re-read when they change (every
  ``reload_interval`` seconds their bytes are compared; the live context loads the new
  pair, so new connections get it and open ones finish on the old one: no restart, no
  gap). A pair that does not load (half-written during a rotation) keeps the old one.
- Bounded, because anyone who reaches the port can send anything (issue 23): a body over
  1 MiB is refused with 413, one that safejson refuses (nested deeper than 100 levels, not
  JSON) or that is not an AdmissionReview with a ``request`` mapping gets 400, an unknown
  path 404: never a 500, counted by reason (``vllm_preflight_webhook_rejections_total``).
  The API server then applies the configuration's failurePolicy (Ignore in the chart).
- Timed and capped per connection: a connection must finish its TLS handshake and the
  headers of a request within ``header_timeout`` of its accept (or of the request's first
  byte on a kept-alive connection), and the body within ``body_timeout`` after them;
  idle kept-alive connections close after ``idle_timeout``. One peer may hold
  ``max_connections_per_peer`` connections and all peers together ``max_connections``.
  Why: every TLS connection costs asyncio's 256 KiB read buffer from its accept, and
  aiohttp closes a connection that never finishes its headers only at its keep-alive
  timeout (an hour in aiohttp 3.14): measured, 0.29 MiB a connection held for ever, and
  about 1,500 connections from one pod OOM-killed a 512Mi replica.
- At a cap the new connection is kept and an old one that is not being answered goes
  (issue 34): the peer's own oldest at its per-peer cap, else the oldest of the peer that
  holds the most. Refusing the new one instead let two pods holding 256 idle
  connections each fill the 512 and lock the API server out: its calls were reset, and
  under failurePolicy Ignore 3 of 5 broken Deployments were admitted under Enforce. A
  connection whose review is being judged is never dropped; only when every one is, the
  new connection is reset at accept, before TLS allocates anything.
- Bodies are decoded off the event loop (issue 34): over ``INLINE_DECODE`` bytes in one
  decoding thread, and a body of more than ``REVIEW_MAX_ITEMS`` JSON values is not
  decoded at all (answered as the webhook's failurePolicy says). json's C decoder holds
  the GIL for a whole body (measured: 36 ms for 150,000 values, 185 ms for 450,000 on the
  shared 2-core machine), so the thread alone bounds the loop's stall to one bounded
  body, not the sum of a burst: 400 reviews decoded in the loop held it 22.7 s.
- Answered in time: a review not answered by its deadline (70 % of the ``?timeout=`` the
  API server sends, else of the configured timeoutSeconds, counted from the request's
  first byte) is answered without the rules, counted in
  ``vllm_preflight_webhook_deadline_answers_total``: by the webhook's fallback when it has
  one (/validate: what the object's policy says of an object it could not check; Enforce
  refuses, to retry) and else as its failurePolicy says (Ignore: admitted unchanged, with
  a warning saying so; Fail: refused). Left to the API server's timeout it was admitted
  silently, a broken Deployment under Enforce included. At most ``ACTIVE_REVIEWS``
  reviews are judged at once; one that gets no slot by its deadline is answered so
  (``cause="shed"``), one whose rules are not done by then likewise
  (``cause="deadline"``). The review is not cancelled (a rules worker's exchange must
  finish), only no longer awaited, and keeps its slot until it ends; a denial it reaches
  then posts no Event (``still_awaited``).
- Never a 500: an exception of a review function admits the request unchanged, logged
  and counted as an error (fail open), like the review functions' own failures.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import ctypes
import dataclasses
import logging
import re
import ssl
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp.web

from preflight_contract import safejson
from preflight_operator.core import constants
from preflight_operator.core.config import WebhookConfig
from preflight_operator.core.decoding import decode_review
from preflight_operator.runtime import metrics
from preflight_operator.webhook.tls import ServingCertificate

logger = logging.getLogger(__name__)

ReviewFn = Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
# The answer of a webhook whose review is not done by its deadline (the review, the
# seconds it had); without one, the webhook's failurePolicy answers (failure_answer).
FallbackFn = Callable[[Mapping[str, Any], float], Mapping[str, Any]]
MAX_BODY = 1024 * 1024  # what kopf's server allowed (aiohttp's default client_max_size)
_KNOWN = frozenset(
    {
        constants.MUTATE_PODS_WEBHOOK_ID,
        constants.VALIDATE_WEBHOOK_ID,
        constants.VALIDATE_ENFORCE_WEBHOOK_ID,
    }
)
# Bodies up to this size are decoded in the loop: about a millisecond, less than the hop to
# the decoding thread and back costs a burst of ordinary reviews (a vLLM Deployment is 2-20
# KB; kubectl's last-applied annotation doubles it).
INLINE_DECODE = 64 * 1024
# A review with more JSON values than this is not decoded (answered as the failurePolicy
# says): 150,000 values decode in about 36 ms, holding the GIL; the largest real workload
# of tests/data/realworld has under 1,000 (decoding.OBJECT_MAX_ITEMS is 20,000 for an
# object read from the API server). 1 MiB of ``[]`` would be 500,000 values, 200 ms.
REVIEW_MAX_ITEMS = 100_000
# request.uid of a review not decoded: the API server writes it first in the request
_REVIEW_UID = re.compile(
    rb'^\s*\{.{0,200}?"request"\s*:\s*\{\s*"uid"\s*:\s*"([0-9A-Za-z-]{1,64})"', re.S
)
# Answer by this share of the API server's timeout: the rest is for the answer's way back
# and for the event loop's other work, which delays every timer. Measured
# (hack/reliability/webhook_port.py, a loop busy 1.5 s of every 2 s): with 80 % of 10 s,
# 22 of 400 answers still reached 10 s; with 70 %, none.
DEADLINE_SHARE = 0.7
# A review still waiting for a slot at this share of the timeout is answered then: the
# answers of a burst that waited together are written before the deadline, not all at it
# (measured: shed at the deadline itself, 366 answers of 200 KiB reviews, each decoded for
# its policy, took the loop past 10 s; at half of it, none did).
SHED_SHARE = 0.5
# Connections open at once past which their memory is handed back once most have closed.
TRIM_AFTER = 64
# Reviews judged at once, those past their deadline included (they run on, holding their
# decoded body, until their rules end); the others wait for a slot. Why this bound: each
# holds up to 1 MiB of body and its decoded object (a few MiB), so 32 stay far from the
# chart's 512Mi; and the CPU they take from the event loop (decoding, sending to a rules
# worker) stays a short share of a loop iteration. Ordinary reviews take about a
# millisecond each: 32 are never the limit for them.
ACTIVE_REVIEWS = 32
_CAUSES = {
    "shed": "overloaded",
    "deadline": "the rules too slow",
    "decode": "not decoded in time",
    "too-many-values": f"over {REVIEW_MAX_ITEMS:,} JSON values",
}
_GO_DURATION = re.compile(r"^([0-9]{1,4}(?:\.[0-9]{1,3})?)(ms|s|m)$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0}


@dataclasses.dataclass(frozen=True)
class FailureAnswer:
    """What a webhook answers when it cannot answer in time: its configuration's
    failurePolicy (what the API server itself would do on a timeout) and timeoutSeconds
    (used when a request does not say its own)."""

    policy: str = "Ignore"
    timeout_seconds: float = 10.0


def failure_answers(config: WebhookConfig) -> dict[str, FailureAnswer]:
    return {
        constants.VALIDATE_WEBHOOK_ID: FailureAnswer(
            config.validating_failure_policy, config.validating_timeout_seconds
        ),
        # the entry for namespaces under Enforce (failclosed.py): always Fail
        constants.VALIDATE_ENFORCE_WEBHOOK_ID: FailureAnswer(
            "Fail", config.validating_timeout_seconds
        ),
        constants.MUTATE_PODS_WEBHOOK_ID: FailureAnswer(
            config.mutating_failure_policy, config.mutating_timeout_seconds
        ),
    }


def request_timeout(query: str | None, default: float) -> float:
    """The API server's timeout for this call: the ``timeout`` query parameter it adds (a Go
    duration, ``10s``), within the 1-30 s a webhook configuration allows; else ``default``."""
    match = _GO_DURATION.match(query or "")
    if match is None:
        return default
    return min(30.0, max(1.0, float(match.group(1)) * _UNITS[match.group(2)]))


@dataclasses.dataclass
class _Pending:
    abandoned: bool = False


_PENDING: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar(
    "webhook_pending", default=None
)


def still_awaited() -> bool:
    """False inside a review whose deadline passed: the answer sent was made without the
    rules, so what the rules decide now was nobody's answer and must leave no trace (no
    AdmissionDenied Event for an object that may have been admitted)."""
    pending = _PENDING.get()
    return pending is None or not pending.abandoned


_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


def _libc() -> Any:
    """glibc, for mallopt and malloc_trim; None elsewhere (musl, macOS): a no-op there."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt, libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def keep_memory_returnable() -> None:
    """Each TLS connection allocates a 256 KiB buffer (asyncio's SSLProtocol). glibc serves
    such a block with its own mmap, returned to the system when freed, but raises that
    threshold after the first free: later buffers come from the heap, and a flood of
    connections leaves its memory there for good (measured: 67 MiB to 890 MiB after 3,000
    slow connections, still 890 MiB after they closed). A fixed threshold keeps every
    block of 256 KiB or more (the TLS buffer, 262,144 bytes) its own mmap. Not lower: at
    128 KiB smaller per-request blocks became an mmap and a munmap each, and the webhook
    served 793 reviews/s against 1,464 without the threshold (hack/bench/webhook_latency.py,
    the same machine)."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, 256 * 1024)


def trim_memory() -> None:
    """Returns the free pages of the heap to the system (after a flood of connections ends:
    OpenSSL's and aiohttp's smaller per-connection objects are heap allocations)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def _reject(reason: str) -> None:
    metrics.WEBHOOK_REJECTIONS.labels(reason=reason).inc()


class _Connection(asyncio.Protocol):
    """One accepted connection: aiohttp's request handler behind asyncio's TLS, with the
    timers aiohttp lacks. Between requests it is idle (aiohttp's keep-alive timeout,
    ``idle_timeout``); from the accept, or a request's first byte, it must reach the
    server's handler within ``header_timeout``."""

    def __init__(self, server: WebhookServer, peer: str, raw: asyncio.Transport) -> None:
        self.server = server
        self.peer = peer
        self.raw = raw
        self.handler: asyncio.Protocol = server._web()  # aiohttp's RequestHandler
        self.loop = asyncio.get_running_loop()
        self.request_started: float | None = self.loop.time()
        self.busy = False
        self._timer: asyncio.TimerHandle | None = None
        self._made = False
        self._early: list[bytes] = []
        self.released = False

    def arm(self, seconds: float, reason: str) -> None:
        self.disarm()
        self._timer = self.loop.call_later(seconds, self._expire, reason)

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self, reason: str) -> None:
        self._timer = None
        _reject(reason)
        self.raw.abort()

    def start_request(self) -> float:
        """The server's handler has the request: its headers are in. Returns when the
        request began (its first byte, or the accept). From now until its answer the
        connection is never dropped to make room (``WebhookServer._evict``)."""
        self.disarm()
        self.busy = True
        return self.request_started or self.loop.time()

    def end_request(self) -> None:
        self.busy = False
        self.request_started = None

    # asyncio.Protocol, passed on to aiohttp's handler

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.handler.connection_made(transport)
        self._made = True
        for data in self._early:  # what TLS delivered before start_tls returned
            self.data_received(data)
        self._early.clear()

    def data_received(self, data: bytes) -> None:
        if not self._made:
            self._early.append(data)
            return
        if not self.busy and self._timer is None:
            self.request_started = self.loop.time()
            self.arm(self.server.header_timeout, "header-timeout")
        self.handler.data_received(data)

    def eof_received(self) -> bool | None:
        return self.handler.eof_received() if self._made else None

    def pause_writing(self) -> None:
        self.handler.pause_writing()

    def resume_writing(self) -> None:
        self.handler.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        self.server._release(self)
        if self._made:
            self.handler.connection_lost(exc)


class _Accept(asyncio.Protocol):
    """The plain TCP side of an accept: the caps are checked here, before TLS."""

    def __init__(self, server: WebhookServer) -> None:
        self.server = server

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.server._accepted(transport)


class WebhookServer:
    """``routes``: webhook id (the URL path) -> review function. ``failure``: webhook id
    -> its failure answer (default: Ignore, 10 s)."""

    def __init__(
        self,
        routes: Mapping[str, ReviewFn],
        *,
        addr: str,
        port: int,
        certfile: Path,
        keyfile: Path,
        client_ca: Path | None = None,
        reload_interval: float = 60.0,
        failure: Mapping[str, FailureAnswer] | None = None,
        fallbacks: Mapping[str, FallbackFn] | None = None,
        max_connections: int = WebhookConfig.max_connections,
        max_connections_per_peer: int = WebhookConfig.max_connections_per_peer,
        header_timeout: float = WebhookConfig.header_timeout_seconds,
        body_timeout: float = WebhookConfig.body_timeout_seconds,
        idle_timeout: float = WebhookConfig.idle_timeout_seconds,
        active_reviews: int = ACTIVE_REVIEWS,
    ) -> None:
        self.routes = dict(routes)
        self.addr = addr
        self.port = port
        self.certificate = ServingCertificate(Path(certfile), Path(keyfile), client_ca)
        self.reload_interval = reload_interval
        self.failure = dict(failure or {})
        self.fallbacks = dict(fallbacks or {})
        self.max_connections = max_connections
        self.max_connections_per_peer = min(max_connections_per_peer, max_connections)
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.idle_timeout = idle_timeout
        self._runner: aiohttp.web.AppRunner | None = None
        self._listener: asyncio.AbstractServer | None = None
        self._connections: set[_Connection] = set()
        # peer -> its connections, oldest first (dicts keep insertion order)
        self._per_peer: dict[str, dict[_Connection, None]] = {}
        # bodies over INLINE_DECODE are decoded here, one at a time (module docstring)
        self._decoder: concurrent.futures.ThreadPoolExecutor | None = None
        self._handshakes: set[asyncio.Task[None]] = set()
        self._peak = 0  # most connections open since the last trim_memory
        self._logged_at, self._unlogged = -1e9, 0  # answers by the deadline not yet logged
        # reviews being decoded and judged, abandoned ones included (webhook docstring)
        self._active = asyncio.Semaphore(active_reviews)

    @classmethod
    def configured(
        cls, routes: Mapping[str, ReviewFn], config: WebhookConfig, **kwargs: Any
    ) -> WebhookServer:
        """The server with the configuration file's ``webhook`` section."""
        return cls(
            routes,
            failure=failure_answers(config),
            max_connections=config.max_connections,
            max_connections_per_peer=config.max_connections_per_peer,
            header_timeout=config.header_timeout_seconds,
            body_timeout=config.body_timeout_seconds,
            idle_timeout=config.idle_timeout_seconds,
            **kwargs,
        )

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    # -- TLS (tls.py) --------------------------------------------------------------------

    def ssl_context(self) -> ssl.SSLContext:
        return self.certificate.context()

    def reload_if_changed(self) -> bool:
        return self.certificate.reload_if_changed()

    # -- serving ------------------------------------------------------------------------

    def app(self) -> aiohttp.web.Application:
        app = aiohttp.web.Application(client_max_size=MAX_BODY)
        app.add_routes([aiohttp.web.post("/{id}", self.handle)])
        return app

    async def start(self) -> None:
        """aiohttp's request handling behind our own listener: the listener accepts plain
        TCP, applies the caps, then starts TLS (asyncio's start_tls) and hands the
        connection to aiohttp's handler (its public protocol factory, the AppRunner's
        ``server``). aiohttp's own TCPSite would start TLS at accept, before any cap."""
        runner = aiohttp.web.AppRunner(
            self.app(), handle_signals=False, access_log=None,
            keepalive_timeout=self.idle_timeout,
        )  # fmt: skip
        await runner.setup()
        self.ssl_context()
        self._decoder = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="webhook-decode"
        )
        keep_memory_returnable()
        self._runner = runner  # before the first accept
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(
            lambda: _Accept(self), self.addr or None, self.port,
            reuse_address=True, backlog=min(1024, self.max_connections),
        )  # fmt: skip
        logger.info("webhooks served at https://%s:%d/{%s}", self.addr or "*", self.port,
                    ",".join(sorted(self.routes)))  # fmt: skip

    def _web(self) -> asyncio.Protocol:
        assert self._runner is not None
        assert self._runner.server is not None
        handler: asyncio.Protocol = self._runner.server()
        return handler

    def _accepted(self, raw: asyncio.Transport) -> None:
        peername = raw.get_extra_info("peername")
        peer = str(peername[0]) if isinstance(peername, tuple) and peername else "?"
        if len(self._per_peer.get(peer, ())) >= self.max_connections_per_peer and not (
            self._evict(peer)
        ):
            _reject("peer-connections")
            raw.abort()
            return
        if len(self._connections) >= self.max_connections and not self._evict(None):
            _reject("connections")
            raw.abort()
            return
        raw.pause_reading()  # the ClientHello waits in the kernel for start_tls
        conn = _Connection(self, peer, raw)
        self._connections.add(conn)
        self._peak = max(self._peak, len(self._connections))
        self._per_peer.setdefault(peer, {})[conn] = None
        conn.arm(self.header_timeout, "header-timeout")
        task = asyncio.get_running_loop().create_task(self._handshake(conn))
        self._handshakes.add(task)
        task.add_done_callback(self._handshakes.discard)

    def _evict(self, peer: str | None) -> bool:
        """Makes room for a new connection: closes the oldest connection not being
        answered (idle between requests, or still in its handshake or headers) of ``peer``,
        or with None of the peer that holds the most. False when every candidate is being
        answered. Why the biggest holder: an attacker who fills the port holds the most,
        so the API server's few connections are the last to go, however many peers the
        attacker has; and why the oldest: a new connection is the one about to be used."""
        if peer is None:
            holders = sorted(self._per_peer.items(), key=lambda item: -len(item[1]))
        else:
            holders = [(peer, self._per_peer.get(peer, {}))]
        for _, conns in holders:
            victim = next((c for c in conns if not c.busy), None)
            if victim is not None:
                _reject("evicted")
                victim.disarm()
                victim.raw.abort()
                self._release(victim)
                return True
        return False

    async def _handshake(self, conn: _Connection) -> None:
        loop = asyncio.get_running_loop()
        try:
            tls = await loop.start_tls(
                conn.raw, conn, self.ssl_context(), server_side=True,
                ssl_handshake_timeout=self.header_timeout,
            )  # fmt: skip
        except (OSError, ssl.SSLError, asyncio.TimeoutError, ConnectionError) as exc:
            # scanners, health checks of load balancers, a client that gave up
            logger.debug("webhook TLS handshake with %s failed: %s", conn.peer, exc)
            conn.raw.abort()
            conn.disarm()
            self._release(conn)
            return
        if tls is None or tls.is_closing():
            conn.disarm()
            self._release(conn)
            return
        conn.connection_made(tls)

    def _release(self, conn: _Connection) -> None:
        if conn.released:
            return
        conn.released = True
        self._connections.discard(conn)
        mine = self._per_peer.get(conn.peer)
        if mine is not None:
            mine.pop(conn, None)
            if not mine:
                self._per_peer.pop(conn.peer, None)
        if self._peak >= TRIM_AFTER and len(self._connections) <= self._peak // 4:
            # a flood is over: give its memory back (a few ms, once per flood)
            self._peak = len(self._connections)
            asyncio.get_running_loop().call_soon(trim_memory)

    async def watch_certificates(self) -> None:
        """Runs until cancelled: re-reads the certificate files every reload_interval."""
        while True:
            await asyncio.sleep(self.reload_interval)
            self.reload_if_changed()

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for task in list(self._handshakes):
            task.cancel()
        for conn in list(self._connections):
            conn.raw.abort()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._decoder is not None:
            self._decoder.shutdown(wait=False, cancel_futures=True)
            self._decoder = None

    async def handle(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        transport = request.transport
        conn = transport.get_protocol() if transport is not None else None
        if not isinstance(conn, _Connection):
            return await self._handle(request, asyncio.get_running_loop().time())
        started = conn.start_request()
        try:
            return await self._handle(request, started)
        finally:
            conn.end_request()

    async def _read(self, request: aiohttp.web.Request) -> bytes:
        """The request's body, within the body timeout and MAX_BODY; or an HTTP error."""
        try:
            return await asyncio.wait_for(request.read(), self.body_timeout)
        except asyncio.TimeoutError:
            _reject("body-timeout")
            if request.transport is not None:
                request.transport.abort()
            raise aiohttp.web.HTTPRequestTimeout(reason="body not sent in time") from None
        except aiohttp.web.HTTPRequestEntityTooLarge:
            _reject(safejson.TOO_LARGE)
            raise

    async def _slot(self, left: float) -> bool:
        """One of the ``active_reviews`` slots, waited for at most ``left`` seconds."""
        acquiring = asyncio.ensure_future(self._active.acquire())
        done, _ = await asyncio.wait({acquiring}, timeout=max(0.0, left))
        if done:
            return True
        acquiring.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await acquiring
        return not acquiring.cancelled()  # it may have got the slot as it was cancelled

    async def _handle(self, request: aiohttp.web.Request, started: float) -> aiohttp.web.Response:
        webhook = request.match_info.get("id", "")
        review = self.routes.get(webhook)
        if review is None:
            raise aiohttp.web.HTTPNotFound(reason=f"no webhook {webhook[:40]!r} here")
        raw = await self._read(request)
        failure = self.failure.get(webhook, FailureAnswer())
        timeout = request_timeout(request.query.get("timeout"), failure.timeout_seconds)
        seconds = DEADLINE_SHARE * timeout
        loop = asyncio.get_running_loop()
        deadline = started + seconds
        if safejson.items(raw) > REVIEW_MAX_ITEMS:
            # no real workload has that many values; decoding it would hold the GIL
            _reject("too-many-values")
            return self._undecoded(webhook, raw, failure, seconds, "too-many-values")
        if not await self._slot(started + SHED_SHARE * timeout - loop.time()):
            # as many reviews running as the loop can carry: this one waited its time
            shed = await self._decode(raw, deadline)
            if shed is None:
                return self._undecoded(webhook, raw, failure, seconds, "shed")
            return self._failed(webhook, shed, failure, seconds, "shed")
        try:
            decoded = await self._decode(raw, deadline)
        except aiohttp.web.HTTPException:
            self._active.release()
            raise
        if decoded is None:
            self._active.release()
            return self._undecoded(webhook, raw, failure, seconds, "decode")
        data = decoded
        pending = _Pending()
        token = _PENDING.set(pending)
        try:
            task = loop.create_task(self._review(webhook, review, data))
        finally:
            _PENDING.reset(token)
        task.add_done_callback(self._review_done)  # frees the slot, in time or not
        done, _ = await asyncio.wait({task}, timeout=max(0.0, deadline - loop.time()))
        if task in done:
            return aiohttp.web.json_response(task.result())
        pending.abandoned = True
        return self._failed(webhook, data, failure, seconds, "deadline")

    async def _decode(self, raw: bytes, deadline: float) -> dict[str, Any] | None:
        """decode_body, in the loop for a small body and in the decoding thread for a
        larger one; None when the thread could not get to it by ``deadline``."""
        if len(raw) <= INLINE_DECODE or self._decoder is None:
            return decode_body(raw)
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._decoder, decode_body, raw)
        done, _ = await asyncio.wait({future}, timeout=max(0.0, deadline - loop.time()))
        if not done:
            future.cancel()  # not started yet: dropped from the queue
            return None
        return future.result()

    def _undecoded(
        self, webhook: str, raw: bytes, failure: FailureAnswer, seconds: float, cause: str
    ) -> aiohttp.web.Response:
        """The failurePolicy's answer to a review that was not decoded, to its uid (read
        from the body's head, where the API server writes it); a body with none gets a 400,
        which the API server answers as its failurePolicy says."""
        match = _REVIEW_UID.match(raw[:4096])
        if match is None:
            raise aiohttp.web.HTTPBadRequest(reason="not decoded, and no request.uid at its head")
        review = {"request": {"uid": match.group(1).decode("ascii")}}
        return self._failed(webhook, review, failure, seconds, cause, use_fallback=False)

    def _review_done(self, task: asyncio.Task[Mapping[str, Any]]) -> None:
        self._active.release()
        if not task.cancelled():
            task.exception()  # retrieved: an abandoned review's own errors are logged there

    async def _review(
        self, webhook: str, review: ReviewFn, data: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        try:
            return await review(data)
        except Exception:
            logger.exception("webhook %s failed; admitting the object unchanged", webhook)
            label = webhook if webhook in _KNOWN else "unknown"
            metrics.ADMISSIONS.labels(webhook=label, outcome="error").inc()
            return admit_unchanged(data)

    def _failed(
        self,
        webhook: str,
        data: Mapping[str, Any],
        failure: FailureAnswer,
        seconds: float,
        cause: str,
        *,
        use_fallback: bool = True,
    ) -> aiohttp.web.Response:
        label = webhook if webhook in _KNOWN else "unknown"
        metrics.WEBHOOK_DEADLINE_ANSWERS.labels(webhook=label, cause=cause).inc()
        now = asyncio.get_running_loop().time()
        self._unlogged += 1
        if now - self._logged_at >= 10.0:  # one line per 10 s: an overload is no log flood
            logger.warning(
                "webhook %s: %d review(s) answered without the rules since the last such"
                " line (this one: %s, within %.1f s)",
                webhook, self._unlogged, _CAUSES.get(cause, cause), seconds,
            )  # fmt: skip
            self._logged_at, self._unlogged = now, 0
        fallback = self.fallbacks.get(webhook) if use_fallback else None
        if fallback is not None:
            try:
                return aiohttp.web.json_response(fallback(data, seconds))
            except Exception:
                logger.exception("webhook %s: its answer by the deadline failed", webhook)
        why = (
            f"the object has more than {REVIEW_MAX_ITEMS:,} JSON values, more than any"
            " workload needs; make it smaller"
            if cause == "too-many-values"
            else None
        )
        return aiohttp.web.json_response(
            failure_answer(webhook, data, failure.policy, seconds, why=why)
        )


def decode_body(raw: bytes) -> dict[str, Any]:
    """The AdmissionReview, decoded as hostile input (decoding.decode_review); or a 400.
    The object's managedFields are dropped (a user may nest them 1,000 deep: a 400
    would let the API server fail open and admit it unjudged); an object nested too
    deep elsewhere is judged with that part replaced by a marker (no real manifest
    nests that deep), never admitted unread."""
    if len(raw) > MAX_BODY:
        _reject(safejson.TOO_LARGE)
        raise aiohttp.web.HTTPBadRequest(reason=f"{safejson.TOO_LARGE}: {len(raw)} bytes")
    data, why = decode_review(raw, "AdmissionReview")
    if why is not None:
        _reject(why.reason)
        logger.warning("review: %s", why.display)
    if data is None:
        reason = why.reason if why is not None else safejson.NOT_JSON
        raise aiohttp.web.HTTPBadRequest(reason=f"{reason}: {why.detail if why else ''}"[:200])
    if not isinstance(data, dict) or not isinstance(data.get("request"), dict):
        _reject("not-a-review")
        raise aiohttp.web.HTTPBadRequest(reason="not an AdmissionReview request")
    return data


def failure_answer(
    webhook: str,
    review: Mapping[str, Any],
    policy: str,
    seconds: float,
    *,
    why: str | None = None,
) -> dict[str, Any]:
    """The answer of a webhook that could not decide in time (or at all: ``why``), as its
    failurePolicy says: Ignore admits (unchanged, with a warning that says so), Fail
    refuses (503, to retry)."""
    answer = admit_unchanged(review)
    response = answer["response"]
    why = why or f"the operator could not answer within {seconds:.1f} s (overloaded)"
    if policy == "Fail":
        response["allowed"] = False
        response["status"] = {
            "code": 503,
            "reason": "ServiceUnavailable",
            "message": f"vllm-preflight: not checked: {why}; refused, as the webhook's"
            " failurePolicy Fail says. Retry shortly.",
        }
    elif webhook == constants.MUTATE_PODS_WEBHOOK_ID:
        response["warnings"] = [
            f"vllm-preflight: not checked: {why}; the pod is admitted without the GPU"
            " preflight check, as the webhook's failurePolicy Ignore says."
        ]
    else:
        response["warnings"] = [
            f"vllm-preflight: not checked: {why}; admitted, as the webhook's failurePolicy"
            " Ignore says. The operator still judges it and records the result on its"
            " GPUValidation."
        ]
    return answer


def admit_unchanged(review: Mapping[str, Any]) -> dict[str, Any]:
    """An AdmissionReview response that admits the object as it is."""
    request = review.get("request") or {}
    uid = request.get("uid", "") if isinstance(request, Mapping) else ""
    return {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": {"uid": uid if isinstance(uid, str) else "", "allowed": True},
    }
