"""A de-duplicating work queue of workload keys, like client-go's workqueue.

Many pod events for one workload collapse into one reconcile; a key is never processed by
two workers at once (a key added while it is being processed is processed again after);
a failed key comes back after an exponential backoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self) -> None:
        self._queued: dict[K, None] = {}  # insertion-ordered set
        self._active: set[K] = set()
        self._dirty: set[K] = set()
        self._failures: dict[K, int] = {}
        self._nonempty = asyncio.Event()
        self._closed = False

    def __len__(self) -> int:
        return len(self._queued)

    def idle(self) -> bool:
        """Nothing queued and nothing being processed (retries waiting on a timer aside)."""
        return not self._queued and not self._active

    def add(self, key: K) -> None:
        if key in self._active:
            self._dirty.add(key)
            return
        if key not in self._queued:
            self._queued[key] = None
            self._nonempty.set()

    async def get(self) -> K:
        """The oldest queued key not being processed; waits while there is none."""
        while not self._queued:
            if self._closed:
                raise asyncio.CancelledError
            self._nonempty.clear()
            await self._nonempty.wait()
        key = next(iter(self._queued))
        del self._queued[key]
        self._active.add(key)
        return key

    def done(self, key: K, *, failed: bool = False) -> float:
        """Marks the key finished; returns the backoff before its retry (0 when none)."""
        self._active.discard(key)
        delay = 0.0
        if failed:
            attempts = self._failures.get(key, 0) + 1
            self._failures[key] = attempts
            delay = min(30.0, 0.25 * 2 ** (attempts - 1))
            asyncio.get_running_loop().call_later(delay, self.add, key)
        else:
            self._failures.pop(key, None)
        if key in self._dirty:
            self._dirty.discard(key)
            if not failed:
                self.add(key)
        return delay

    def close(self) -> None:
        self._closed = True
        self._nonempty.set()
