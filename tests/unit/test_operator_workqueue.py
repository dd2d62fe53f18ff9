"""The work queue: one entry per key, never two workers on a key, back-off on failure."""

from __future__ import annotations

import asyncio

from preflight_operator.runtime.workqueue import WorkQueue


def test_keys_are_deduplicated_in_order() -> None:
    async def scenario() -> list[str]:
        queue: WorkQueue[str] = WorkQueue()
        for key in ["a", "b", "a", "c", "b"]:
            queue.add(key)
        assert len(queue) == 3
        return [await queue.get() for _ in range(3)]

    assert asyncio.run(scenario()) == ["a", "b", "c"]


def test_a_key_added_while_active_comes_back_after_it_is_done() -> None:
    async def scenario() -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        key = await queue.get()
        queue.add("a")  # an event arrives while "a" is being reconciled
        assert len(queue) == 0
        assert not queue.idle()
        queue.done(key)
        assert len(queue) == 1
        assert await queue.get() == "a"
        queue.done("a")
        assert queue.idle()

    asyncio.run(scenario())


def test_failures_come_back_after_a_growing_back_off() -> None:
    async def scenario() -> list[float]:
        queue: WorkQueue[str] = WorkQueue()
        delays = []
        for _ in range(3):
            queue.add("a")
            await queue.get()
            delays.append(queue.done("a", failed=True))
        await asyncio.sleep(0.3)
        assert len(queue) == 1  # the first retry fired
        await queue.get()
        queue.done("a")  # a success resets the back-off
        queue.add("a")
        await queue.get()
        delays.append(queue.done("a", failed=True))
        return delays

    assert asyncio.run(scenario()) == [0.25, 0.5, 1.0, 0.25]


def test_close_releases_waiting_workers() -> None:
    async def scenario() -> bool:
        queue: WorkQueue[str] = WorkQueue()
        waiter = asyncio.create_task(queue.get())
        await asyncio.sleep(0)
        queue.close()
        try:
            await waiter
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(scenario())
