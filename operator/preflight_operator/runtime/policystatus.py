"""PreflightPolicy statuses: observedGeneration and a Valid condition naming every field the
operator did not take, and a PolicyInvalid Event when that is new.

Apart from the Controller (issue 28): the controller decides *when* (a policy changed, this
replica started to lead); this class writes, one namespace at a time under one lock, and
only while the write gate is open. Namespaces met while following wait in ``pending``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from preflight_operator.core.events import policy_invalid_event
from preflight_operator.core.policy import (
    VALID_CONDITION,
    parse_policy,
    policy_status,
    status_differs,
    stored_status,
)
from preflight_operator.runtime import metrics
from preflight_operator.runtime.api import API_ERRORS, KubeApi
from preflight_operator.runtime.eventsink import EventSink
from preflight_operator.runtime.reflector import Reflector

logger = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, None]], None]


class PolicyStatusWriter:
    def __init__(
        self,
        api: KubeApi,
        policies: Reflector,
        events: EventSink,
        *,
        allowed: Callable[[], bool],
        spawn: Spawn,
        now: Callable[[], str],
    ) -> None:
        self._api = api
        self._policies = policies
        self._events = events
        self._allowed = allowed
        self._spawn = spawn
        self._now = now
        self.pending: set[str] = set()
        self._lock = asyncio.Lock()
        self._started = False

    def start(self) -> None:
        """From now on, pending namespaces are written (the first call writes them all)."""
        self._started = True
        self.sync({ns for ns, _ in self._policies.items})

    def sync(self, namespaces: set[str]) -> None:
        """Write the statuses of these namespaces' policies (and of those held back) when
        this replica may write; otherwise keep them for later."""
        self.pending |= namespaces
        if self._started and self.pending and self._allowed():
            pending, self.pending = self.pending, set()
            self._spawn(self.write(pending))

    async def write(self, namespaces: set[str]) -> None:
        async with self._lock:
            for namespace in sorted(namespaces):
                for body in self._policies.in_namespace(namespace):
                    await self._write_one(body)

    async def _write_one(self, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        problems = parse_policy(body).problems
        wanted = policy_status(body, problems, self._now())
        if not status_differs(body, wanted):
            return
        before = next(
            (
                c
                for c in stored_status(body).get("conditions") or []
                if isinstance(c, Mapping) and c.get("type") == VALID_CONDITION
            ),
            {},
        )
        condition = wanted["conditions"][0]
        try:
            await self._api.patch_policy_status(namespace, name, wanted)
        except API_ERRORS as exc:
            logger.warning("status of PreflightPolicy %s/%s not written: %s", namespace, name, exc)
            return
        metrics.STATUS_WRITES.inc()
        if problems and (
            before.get("status") != "False" or before.get("message") != condition["message"]
        ):
            logger.warning("PreflightPolicy %s/%s: %s", namespace, name, condition["message"])
            self._events.post(
                policy_invalid_event(
                    namespace,
                    name,
                    str(meta.get("uid", "")),
                    f"{condition['message']}. Fix the field(s) named; until then the"
                    " defaults shown apply",
                )
            )
