"""When a workload's rules run: now, on the event loop, or later, in a rules worker.

Apart from the Controller (issue 28). With the rules in worker processes (rulesworker.py)
an analysis never holds up the event loop, which also serves the webhooks, for up to the
rules' budget: it is scheduled, and its result is handed to ``deliver`` when it comes,
unless a newer observation of the same workload was made meanwhile (that one's result
wins). A rules failure or an exceeded budget is a result too (``static.crashed``): the
rules must never stop the operator.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

from preflight_operator.core.analysis import Analyser, analyse_off_loop
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.static import StaticResult, crashed
from preflight_operator.core.store import Key
from preflight_operator.runtime import metrics
from preflight_operator.runtime.rulesworker import BudgetExceeded, RulesPool

logger = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, None]], None]
# The result, with when it was made, for the observation numbered ``seq``.
Deliver = Callable[[StaticResult, str], None]


class AnalysisScheduler:
    def __init__(self, analyser: Analyser, *, spawn: Spawn, now: Callable[[], str]) -> None:
        self.analyser = analyser
        self._spawn = spawn
        self._now = now
        # Per workload, the newest observation's number.
        self._seq: dict[Key, int] = {}
        self._running: set[Key] = set()

    @property
    def off_loop(self) -> bool:
        return isinstance(self.analyser, RulesPool)

    def observe(self, key: Key) -> int:
        """A new observation of ``key``: its number (an older pending result is dropped)."""
        self._seq[key] = seq = self._seq.get(key, 0) + 1
        return seq

    def forget(self, key: Key) -> None:
        self._seq.pop(key, None)
        self._running.discard(key)

    def busy(self, key: Key) -> bool:
        return key in self._running

    async def settled(self, key: Key, *, polls: int = 600, interval: float = 0.02) -> None:
        """Waits, within the rules' budget, until no analysis of ``key`` is pending."""
        for _ in range(polls):
            if key not in self._running:
                return
            await asyncio.sleep(interval)

    def analyse_now(
        self, display: str, typed: Mapping[str, Any], policy: ResolvedPolicy
    ) -> StaticResult:
        return _guarded(display, lambda: self.analyser.analyse(typed, policy.spec))

    def analyse_later(
        self,
        key: Key,
        display: str,
        typed: Mapping[str, Any],
        policy: ResolvedPolicy,
        *,
        seq: int,
        deliver: Deliver,
    ) -> None:
        self._running.add(key)
        self._spawn(self._run(key, display, typed, policy, seq=seq, deliver=deliver))

    async def _run(
        self,
        key: Key,
        display: str,
        typed: Mapping[str, Any],
        policy: ResolvedPolicy,
        *,
        seq: int,
        deliver: Deliver,
    ) -> None:
        try:
            static = await _guarded_async(
                display, lambda: analyse_off_loop(self.analyser, typed, policy.spec)
            )
            if self._seq.get(key) == seq:  # else a newer observation is on its way
                deliver(static, self._now())
        finally:
            if self._seq.get(key) == seq:
                self._running.discard(key)


def _crashed(display: str, exc: BaseException) -> StaticResult:
    if isinstance(exc, BudgetExceeded):  # a stored hostile object: same budget as admission
        logger.warning("rules on %s stopped: %s", display, exc.reason)
        metrics.RECONCILE_ERRORS.labels(stage="budget").inc()
        return crashed(f"could not be checked in time: the rules stopped, {exc.reason}")
    logger.error("rules failed on %s", display, exc_info=exc)
    metrics.RECONCILE_ERRORS.labels(stage="rules").inc()
    return crashed(f"{type(exc).__name__}: {exc}")


def _guarded(display: str, run: Callable[[], StaticResult]) -> StaticResult:
    """``run()``, or the crashed result of its exception (``_crashed``: one decision for
    both paths). A pair remains, this and ``_guarded_async``, because their callers differ
    in kind, not in what they decide: ``analyse_now`` runs inside the controller's
    synchronous observation (the in-process analyser: nothing there can be awaited), and
    ``_run`` awaits the rules pool. One function serving both would have to return a value
    or an awaitable and make every caller test which; the three lines that differ are the
    ``await``."""
    try:
        return run()
    except Exception as exc:  # the rules must never stop the operator
        return _crashed(display, exc)


async def _guarded_async(display: str, run: Callable[[], Awaitable[StaticResult]]) -> StaticResult:
    """``_guarded`` for an awaited analysis (why a pair: ``_guarded``)."""
    try:
        return await run()
    except Exception as exc:  # the rules must never stop the operator
        return _crashed(display, exc)
