"""The PreflightPolicies: watched, resolved, and their statuses written.

Apart from the Controller (issue 28). ``PolicyWatch`` keeps every policy as the cluster has
it (a reflector) and as parsed (the PolicyBook the workloads resolve against); a change of
what a namespace's policies *say* re-analyses that namespace, the echo of our own status
write does not. ``PolicyStatusWriter`` writes each policy's status (observedGeneration and a
Valid condition naming every field the operator did not take, and a PolicyInvalid Event
when that is new), one namespace at a time under one lock, and only while the write gate is
open; namespaces met while following wait in ``pending`` until this replica leads.

The audit (issue 29): beside the Valid condition each policy's status carries what Enforce
would answer for the workloads it selects now (policyaudit.py: ``wouldDeny``, ``warned``,
the workloads named, ``lastAudit``). The operator's own analyses are the source, so a
policy created or changed is re-judged on every workload of its namespace (the re-analysis
``said_otherwise`` starts); as those results come in, ``audit_changed`` writes the counts,
at most once per ``AUDIT_DEBOUNCE_S`` whatever the number of workloads re-judged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from preflight_operator.core.events import policy_invalid_event
from preflight_operator.core.nodefeedback import policy_problems
from preflight_operator.core.operatorconfig import NODES_GRANTED, NodeAccess
from preflight_operator.core.policy import (
    VALID_CONDITION,
    Policy,
    PolicyBook,
    parse_policy,
    policy_status,
    status_differs,
    stored_status,
)
from preflight_operator.core.policyaudit import PolicyAudit, audit_status
from preflight_operator.runtime import metrics
from preflight_operator.runtime.api import API_ERRORS, POLICIES, KubeApi, collection_path
from preflight_operator.runtime.eventsink import EventSink
from preflight_operator.runtime.reflector import Reflector

logger = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, None]], None]
# namespace -> policy name -> what Enforce would answer for its workloads (policyaudit.py)
AuditSource = Callable[[str], Mapping[str, PolicyAudit]]
# A burst of re-analysed workloads (a policy change re-judges a whole namespace) writes
# each policy's audit once, this long after the first result of the burst.
AUDIT_DEBOUNCE_S = 1.0


class PolicyWatch:
    def __init__(
        self,
        api: KubeApi,
        events: EventSink,
        *,
        allowed: Callable[[], bool],
        spawn: Spawn,
        now: Callable[[], str],
        said_otherwise: Callable[[str], None],
        audit: AuditSource | None = None,
        node_access: NodeAccess = NODES_GRANTED,
    ) -> None:
        """``said_otherwise(namespace)``: what the namespace's policies say changed;
        ``audit(namespace)``: its policies' audits (None: no audit fields written)."""
        self.book = PolicyBook()
        self.reflector = Reflector(
            api, collection_path(POLICIES, None), name="preflightpolicies",
            on_change=self._changed,
        )  # fmt: skip
        self.statuses = PolicyStatusWriter(
            api, self.reflector, events, allowed=allowed, spawn=spawn, now=now, audit=audit,
            node_access=node_access,
        )  # fmt: skip
        self._said_otherwise = said_otherwise

    def body(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.reflector.get(namespace, name)

    async def prime(self) -> None:
        await self.reflector.sync()
        self.book.replace_all(self._parsed())

    def _changed(self, namespace: str) -> None:
        before = self.book.in_namespace(namespace)
        self.book.replace_all(self._parsed())
        self.statuses.sync({namespace})
        if _by_name(before) != _by_name(self.book.in_namespace(namespace)):
            self._said_otherwise(namespace)

    def _parsed(self) -> list[Policy]:
        """Every policy, each bad field replaced by its default (policy.parse_policy)."""
        return [parse_policy(body) for body in self.reflector.items.values()]


def _by_name(policies: Sequence[Policy]) -> list[tuple[str, Policy]]:
    return sorted(((p.name, p) for p in policies), key=lambda item: item[0])


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
        audit: AuditSource | None = None,
        node_access: NodeAccess = NODES_GRANTED,
    ) -> None:
        self._api = api
        self._audit = audit
        self._node_access = node_access
        self._audit_pending: set[str] = set()
        self._audit_scheduled = False
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

    def audit_changed(self, namespace: str) -> None:
        """A workload of this namespace was judged anew (or went): its policies' audits
        are written once the burst is over (AUDIT_DEBOUNCE_S)."""
        if self._audit is None or not self._started:
            return  # start() writes every policy, audits included
        self._audit_pending.add(namespace)
        if not self._audit_scheduled:
            self._audit_scheduled = True
            self._spawn(self._flush_audits())

    async def _flush_audits(self) -> None:
        try:
            await asyncio.sleep(AUDIT_DEBOUNCE_S)
        finally:
            self._audit_scheduled = False
        pending, self._audit_pending = self._audit_pending, set()
        self.sync(pending)

    async def write(self, namespaces: set[str]) -> None:
        async with self._lock:
            for namespace in sorted(namespaces):
                for body in self._policies.in_namespace(namespace):
                    await self._write_one(body)

    async def _write_one(self, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        problems = list(parse_policy(body).problems)
        problems += policy_problems(body.get("spec"), self._node_access)
        wanted = policy_status(body, problems, self._now())
        if self._audit is not None:
            audits = self._audit(namespace)
            wanted |= audit_status(
                stored_status(body), audits.get(name, PolicyAudit()),
                meta.get("generation"), self._now(),
            )  # fmt: skip
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
