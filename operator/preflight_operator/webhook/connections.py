"""The webhook port's connections: accepted, counted and capped before TLS (issues 23, 34).

WebhookServer (webhookserver.py) answers the requests; this table owns the connections
they come on: it accepts plain TCP, applies the caps, starts TLS (asyncio's start_tls)
and hands each connection to aiohttp's request handler behind a ``Connection`` that adds
the timers aiohttp lacks, then forgets it when it closes.

- Timed and capped per connection: a connection must finish its TLS handshake and the
  headers of a request within ``header_timeout`` of its accept (or of the request's first
  byte on a kept-alive connection); idle kept-alive connections close at aiohttp's
  keep-alive timeout (the server's ``idle_timeout``). One peer may hold
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
- The memory of a flood goes back to the system once it is over (keep_memory_returnable,
  trim_memory): without it a replica kept the peak of a flood of connections for good.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import ssl
from collections.abc import Callable
from typing import Any

from preflight_operator.runtime import metrics

logger = logging.getLogger(__name__)

# Connections open at once past which their memory is handed back once most have closed.
TRIM_AFTER = 64
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


def reject(reason: str) -> None:
    """Counts a request or connection the webhook port refused or closed unfinished."""
    metrics.WEBHOOK_REJECTIONS.labels(reason=reason).inc()


class Connection(asyncio.Protocol):
    """One accepted connection: aiohttp's request handler behind asyncio's TLS, with the
    timers aiohttp lacks. Between requests it is idle (aiohttp's keep-alive timeout,
    ``idle_timeout``); from the accept, or a request's first byte, it must reach the
    server's handler within ``header_timeout``."""

    def __init__(self, table: ConnectionTable, peer: str, raw: asyncio.Transport) -> None:
        self.table = table
        self.peer = peer
        self.raw = raw
        self.handler: asyncio.Protocol = table.web()  # aiohttp's RequestHandler
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
        reject(reason)
        self.raw.abort()

    def start_request(self) -> float:
        """The server's handler has the request: its headers are in. Returns when the
        request began (its first byte, or the accept). From now until its answer the
        connection is never dropped to make room (``ConnectionTable._evict``)."""
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
            self.arm(self.table.header_timeout, "header-timeout")
        self.handler.data_received(data)

    def eof_received(self) -> bool | None:
        return self.handler.eof_received() if self._made else None

    def pause_writing(self) -> None:
        self.handler.pause_writing()

    def resume_writing(self) -> None:
        self.handler.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        self.table.release(self)
        if self._made:
            self.handler.connection_lost(exc)


class _Accept(asyncio.Protocol):
    """The plain TCP side of an accept: the caps are checked here, before TLS."""

    def __init__(self, table: ConnectionTable) -> None:
        self.table = table

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.table.accepted(transport)


class ConnectionTable:
    """The webhook port's open connections, by peer, within the caps (module docstring).
    ``web``: a new aiohttp request handler (the AppRunner's protocol factory);
    ``ssl_context``: the serving certificate's live context, read at each handshake."""

    def __init__(
        self,
        web: Callable[[], asyncio.Protocol],
        ssl_context: Callable[[], ssl.SSLContext],
        *,
        max_connections: int,
        max_connections_per_peer: int,
        header_timeout: float,
    ) -> None:
        self.web = web
        self.ssl_context = ssl_context
        self.max_connections = max_connections
        self.max_connections_per_peer = min(max_connections_per_peer, max_connections)
        self.header_timeout = header_timeout
        self._connections: set[Connection] = set()
        # peer -> its connections, oldest first (dicts keep insertion order)
        self._per_peer: dict[str, dict[Connection, None]] = {}
        self._handshakes: set[asyncio.Task[None]] = set()
        self._peak = 0  # most connections open since the last trim_memory

    @property
    def open_connections(self) -> int:
        return len(self._connections)

    def protocol(self) -> asyncio.Protocol:
        """The listener's protocol factory: a plain TCP accept, checked against the caps."""
        return _Accept(self)

    def accepted(self, raw: asyncio.Transport) -> None:
        peername = raw.get_extra_info("peername")
        peer = str(peername[0]) if isinstance(peername, tuple) and peername else "?"
        if len(self._per_peer.get(peer, ())) >= self.max_connections_per_peer and not (
            self._evict(peer)
        ):
            reject("peer-connections")
            raw.abort()
            return
        if len(self._connections) >= self.max_connections and not self._evict(None):
            reject("connections")
            raw.abort()
            return
        raw.pause_reading()  # the ClientHello waits in the kernel for start_tls
        conn = Connection(self, peer, raw)
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
                reject("evicted")
                victim.disarm()
                victim.raw.abort()
                self.release(victim)
                return True
        return False

    async def _handshake(self, conn: Connection) -> None:
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
            self.release(conn)
            return
        if tls is None or tls.is_closing():
            conn.disarm()
            self.release(conn)
            return
        conn.connection_made(tls)

    def release(self, conn: Connection) -> None:
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

    def close(self) -> None:
        """Stops the handshakes under way and resets every open connection."""
        for task in list(self._handshakes):
            task.cancel()
        for conn in list(self._connections):
            conn.raw.abort()
