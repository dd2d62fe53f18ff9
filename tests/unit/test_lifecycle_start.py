"""The operator's start-up when the API server cannot be reached yet (a pod whose network is
still being set up, an API server restarting): one log line and a retry in seconds, not a
traceback and a minute's wait (seen on a real node, tests/e2e/test_helm_test_real_node.py:
kopf logged the aiohttp traceback of `Network is unreachable` and retried after 60 s)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import kopf
import pytest

from preflight_operator.handlers import lifecycle
from preflight_operator.runtime.options import RunOptions


def start_handler() -> Any:
    registry = kopf.OperatorRegistry()
    lifecycle.register(registry, RunOptions())
    (handler,) = [h for h in registry._activities.get_all_handlers() if h.id.endswith("start")]
    return handler.fn


class Unreachable:
    """Watches and a controller whose priming cannot reach the API server."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.started = False
        self.analyser = object()  # not a RulesAnalyser: isolate() makes no worker
        self.config = None

    async def prime(self) -> None:
        raise self.error

    async def start(self, **_: Any) -> None:
        self.started = True


@pytest.mark.parametrize(
    "error",
    [
        OSError(101, "Network is unreachable"),
        ConnectionRefusedError(111, "Connection refused"),
        asyncio.TimeoutError(),
    ],
)
def test_an_unreachable_api_server_is_a_temporary_error_retried_soon(error: Exception) -> None:
    fake = Unreachable(error)
    memo = SimpleNamespace(controller=fake, watches=fake)
    settings = kopf.OperatorSettings()
    with pytest.raises(kopf.TemporaryError) as raised:
        asyncio.run(start_handler()(settings=settings, memo=memo))
    assert raised.value.delay == lifecycle.START_RETRY_SECONDS
    assert "the Kubernetes API is not reachable yet" in str(raised.value)
    assert raised.value.__cause__ is None  # logged as one line by kopf
    assert not fake.started  # nothing started that a retry would start twice


def test_any_other_failure_is_left_to_kopf() -> None:
    fake = Unreachable(ValueError("a bug"))
    memo = SimpleNamespace(controller=fake, watches=fake)
    with pytest.raises(ValueError, match="a bug"):
        asyncio.run(start_handler()(settings=kopf.OperatorSettings(), memo=memo))
