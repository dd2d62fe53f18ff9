"""Polling for eventual consistency: controllers, informers and webhooks configuration all
act a little after the API call that triggers them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TypeVar

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T | Literal[False] | None],
    *,
    timeout: float = 30.0,
    interval: float = 0.2,
    what: str = "",
) -> T:
    """Calls `condition` until it returns something truthy and returns that. Raises
    TimeoutError naming `what` and the last value seen. Exceptions from `condition`
    propagate: catch the expected ones inside it."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            label = what or getattr(condition, "__name__", "condition")
            raise TimeoutError(f"{label}: not true after {timeout:.0f} s (last: {value!r})")
        time.sleep(interval)
