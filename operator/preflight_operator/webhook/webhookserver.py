"""The HTTPS server of both webhooks (/validate and /mutate-pods): a plain aiohttp app.

kopf serves no webhook here (its admission server is not configured): both webhooks
are answered by functions of ``webhook/admissionreview.py`` from the AdmissionReview, with
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
- Timed and capped per connection (issues 23, 34): the TLS handshake and a request's
  headers within ``header_timeout``, at most ``max_connections_per_peer`` connections of
  one peer and ``max_connections`` in all, the oldest idle one closed to make room. The
  ConnectionTable of connections.py keeps these (its docstring says why); here the body
  must come within ``body_timeout`` after the headers, and idle kept-alive connections
  close after ``idle_timeout`` (aiohttp's keep-alive timeout).
- Bodies are decoded off the event loop (issue 34): over ``INLINE_DECODE`` bytes in one
  decoding thread, and a body of more than ``REVIEW_MAX_ITEMS`` JSON values is not
  decoded at all (answered as the webhook's failurePolicy says). json's C decoder holds
  the GIL for a whole body (measured: 36 ms for 150,000 values, 185 ms for 450,000 on the
  shared 2-core machine), so the thread alone bounds the loop's stall to one bounded
  body, not the sum of a burst: 400 reviews decoded in the loop held it 22.7 s.
- Answered in time: a review not answered by its deadline (70 % of the ``?timeout=`` the
  API server sends, else of the configured timeoutSeconds, counted from the request's
  first byte) is answered without the rules, by its webhook's fallback or failurePolicy
  (deadline.py says what and why). At most ``ACTIVE_REVIEWS`` reviews are judged at once;
  one that gets no slot by its deadline is answered so (``cause="shed"``), one whose
  rules are not done by then likewise (``cause="deadline"``). The review is not cancelled
  (a rules worker's exchange must finish), only no longer awaited, and keeps its slot
  until it ends; a denial it reaches then posts no Event (``still_awaited``).
- Never a 500: an exception of a review function admits the request unchanged, logged
  and counted as an error (fail open), like the review functions' own failures.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import logging
import re
import ssl
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp.web

from preflight_contract import safejson
from preflight_operator.core.decoding import decode_review
from preflight_operator.core.operatorconfig import WebhookConfig
from preflight_operator.runtime import metrics
from preflight_operator.webhook.connections import (
    Connection,
    ConnectionTable,
    keep_memory_returnable,
    reject,
)
from preflight_operator.webhook.deadline import (
    REVIEW_MAX_ITEMS,
    DeadlineAnswers,
    FailureAnswer,
    FallbackFn,
    admit_unchanged,
    failure_answers,
    request_timeout,
    webhook_label,
)
from preflight_operator.webhook.tls import ServingCertificate

logger = logging.getLogger(__name__)

ReviewFn = Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
MAX_BODY = 1024 * 1024  # what kopf's server allowed (aiohttp's default client_max_size)
# Bodies up to this size are decoded in the loop: about a millisecond, less than the hop to
# the decoding thread and back costs a burst of ordinary reviews (a vLLM Deployment is 2-20
# KB; kubectl's last-applied annotation doubles it).
INLINE_DECODE = 64 * 1024
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
# Reviews judged at once, those past their deadline included (they run on, holding their
# decoded body, until their rules end); the others wait for a slot. Why this bound: each
# holds up to 1 MiB of body and its decoded object (a few MiB), so 32 stay far from the
# chart's 512Mi; and the CPU they take from the event loop (decoding, sending to a rules
# worker) stays a short share of a loop iteration. Ordinary reviews take about a
# millisecond each: 32 are never the limit for them.
ACTIVE_REVIEWS = 32


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
        self.answers = DeadlineAnswers(failure, fallbacks)
        self.connections = ConnectionTable(
            self._web, self.ssl_context,
            max_connections=max_connections,
            max_connections_per_peer=max_connections_per_peer,
            header_timeout=header_timeout,
        )  # fmt: skip
        self.body_timeout = body_timeout
        self.idle_timeout = idle_timeout
        self._runner: aiohttp.web.AppRunner | None = None
        self._listener: asyncio.AbstractServer | None = None
        # bodies over INLINE_DECODE are decoded here, one at a time (module docstring)
        self._decoder: concurrent.futures.ThreadPoolExecutor | None = None
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
        return self.connections.open_connections

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
        ``server``): the ConnectionTable (connections.py). aiohttp's own TCPSite would
        start TLS at accept, before any cap."""
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
            self.connections.protocol, self.addr or None, self.port,
            reuse_address=True, backlog=min(1024, self.connections.max_connections),
        )  # fmt: skip
        logger.info("webhooks served at https://%s:%d/{%s}", self.addr or "*", self.port,
                    ",".join(sorted(self.routes)))  # fmt: skip

    def _web(self) -> asyncio.Protocol:
        assert self._runner is not None
        assert self._runner.server is not None
        handler: asyncio.Protocol = self._runner.server()
        return handler

    async def watch_certificates(self) -> None:
        """Runs until cancelled: re-reads the certificate files every reload_interval."""
        while True:
            await asyncio.sleep(self.reload_interval)
            self.reload_if_changed()

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        self.connections.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._decoder is not None:
            self._decoder.shutdown(wait=False, cancel_futures=True)
            self._decoder = None

    async def handle(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        transport = request.transport
        conn = transport.get_protocol() if transport is not None else None
        if not isinstance(conn, Connection):
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
            reject("body-timeout")
            if request.transport is not None:
                request.transport.abort()
            raise aiohttp.web.HTTPRequestTimeout(reason="body not sent in time") from None
        except aiohttp.web.HTTPRequestEntityTooLarge:
            reject(safejson.TOO_LARGE)
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
        failure = self.answers.of(webhook)
        timeout = request_timeout(request.query.get("timeout"), failure.timeout_seconds)
        seconds = DEADLINE_SHARE * timeout
        loop = asyncio.get_running_loop()
        deadline = started + seconds
        if safejson.items(raw) > REVIEW_MAX_ITEMS:
            # no real workload has that many values; decoding it would hold the GIL
            reject("too-many-values")
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
            metrics.ADMISSIONS.labels(webhook=webhook_label(webhook), outcome="error").inc()
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
        """The answer without the rules (deadline.py), sent as it is."""
        text = self.answers.answer(
            webhook, data, failure, seconds, cause, use_fallback=use_fallback
        )
        return aiohttp.web.json_response(text=text)


def decode_body(raw: bytes) -> dict[str, Any]:
    """The AdmissionReview, decoded as hostile input (decoding.decode_review); or a 400.
    The object's managedFields are dropped (a user may nest them 1,000 deep: a 400
    would let the API server fail open and admit it unjudged); an object nested too
    deep elsewhere is judged with that part replaced by a marker (no real manifest
    nests that deep), never admitted unread."""
    if len(raw) > MAX_BODY:
        reject(safejson.TOO_LARGE)
        raise aiohttp.web.HTTPBadRequest(reason=f"{safejson.TOO_LARGE}: {len(raw)} bytes")
    data, why = decode_review(raw, "AdmissionReview")
    if why is not None:
        reject(why.reason)
        logger.warning("review: %s", why.display)
    if data is None:
        reason = why.reason if why is not None else safejson.NOT_JSON
        raise aiohttp.web.HTTPBadRequest(reason=f"{reason}: {why.detail if why else ''}"[:200])
    if not isinstance(data, dict) or not isinstance(data.get("request"), dict):
        reject("not-a-review")
        raise aiohttp.web.HTTPBadRequest(reason="not an AdmissionReview request")
    return data
