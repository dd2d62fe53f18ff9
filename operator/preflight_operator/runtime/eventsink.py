"""Posts Events in the background, best effort, so a slow Events API never delays a status.

The queue is bounded: under a storm (thousands of pods failing at once) the newest Events
are dropped and counted rather than held in memory; the GPUValidation status is the
record, Events are the notification.

AdmissionDenied Events go through ``DenialEvents`` first: they come from a request to the
webhook port, which anyone who reaches the port can send (issue 23: an unauthenticated
POST made the operator write Warning Events, with text from its body, into ``default``).
So they are off unless configured (``webhook.admissionEvents.enabled``, as Gatekeeper's
``--emit-admission-events``), and when on they are written only in namespaces that opted
in, at most ``perMinute`` a minute in all and a quarter of that for one namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Protocol

from preflight_operator.core.events import EventSpec, to_body
from preflight_operator.core.operatorconfig import WebhookConfig
from preflight_operator.runtime import metrics
from preflight_operator.runtime.api import API_ERRORS, KubeApi

logger = logging.getLogger(__name__)


class EventSink:
    def __init__(
        self, api: KubeApi, instance: str, now: Callable[[], str], capacity: int = 1000
    ) -> None:
        self._api = api
        self._instance = instance
        self._now = now
        self._queue: asyncio.Queue[EventSpec] = asyncio.Queue(maxsize=capacity)
        self._task: asyncio.Task[None] | None = None

    def post(self, event: EventSpec) -> None:
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            metrics.EVENTS_DROPPED.inc()

    def start(self, workers: int = 2) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(workers))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self, workers: int) -> None:
        await asyncio.gather(*(self._worker() for _ in range(workers)))

    async def _worker(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self._api.create_event(to_body(event, self._instance, self._now()))
            except API_ERRORS as exc:
                metrics.EVENTS_DROPPED.inc()
                logger.debug("event %s on %s not posted: %s", event.reason, event.involved, exc)
            finally:
                self._queue.task_done()

    async def drain(self, timeout: float = 5.0) -> None:
        """Waits until the queued Events are posted (tests and shutdown)."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout)


class Poster(Protocol):
    def post(self, event: EventSpec) -> None: ...


class _Bucket:
    """A token bucket: ``capacity`` tokens, refilled at ``capacity`` a minute."""

    def __init__(self, capacity: float, now: float) -> None:
        self.capacity = capacity
        self.tokens = capacity
        self.at = now

    def take(self, now: float) -> bool:
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.capacity / 60.0)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


class DenialEvents:
    """The gate of AdmissionDenied Events (see the module's docstring)."""

    NAMESPACES_KEPT = 10_000  # per-namespace buckets; past it they start afresh

    def __init__(
        self,
        sink: Poster | None,
        config: WebhookConfig,
        opted_in: Callable[[str], bool] | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sink = sink if config.admission_events else None
        self._opted_in = opted_in
        self._clock = clock
        self._per_minute = config.events_per_minute
        self._all: _Bucket | None = None
        self._namespaces: dict[str, _Bucket] = {}

    @property
    def enabled(self) -> bool:
        return self._sink is not None

    def post(self, event: EventSpec) -> None:
        if self._sink is None:
            return
        namespace = event.involved.namespace
        if self._opted_in is None or not self._opted_in(namespace):
            metrics.ADMISSION_EVENTS_SKIPPED.labels(reason="not-opted-in").inc()
            return
        now = self._clock()
        if self._all is None:
            self._all = _Bucket(self._per_minute, now)
        bucket = self._namespaces.get(namespace)
        if bucket is None:
            if len(self._namespaces) >= self.NAMESPACES_KEPT:
                self._namespaces.clear()
            bucket = self._namespaces[namespace] = _Bucket(max(1, self._per_minute // 4), now)
        if not bucket.take(now) or not self._all.take(now):
            metrics.ADMISSION_EVENTS_SKIPPED.labels(reason="rate-limited").inc()
            return
        self._sink.post(event)
