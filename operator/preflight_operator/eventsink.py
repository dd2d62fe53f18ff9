"""Posts Events in the background, best effort, so a slow Events API never delays a status.

The queue is bounded: under a storm (thousands of pods failing at once) the newest Events
are dropped and counted rather than held in memory; the GPUValidation status is the
record, Events are the notification.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from preflight_operator import metrics
from preflight_operator.api import API_ERRORS, KubeApi
from preflight_operator.events import EventSpec, to_body

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
