"""Leader election: tries to take or renew the Lease every retry period (writegate.py has
the rules and says why a Lease).

One loop per replica. Each round reads the Lease, decides (create, renew, take or wait)
and writes at most once; the API server's 409 on a stale ``resourceVersion`` settles every
race. The gate opens on a successful write and closes by itself when renewals stop
succeeding for ``renew_deadline`` (a partition, an API outage): no round has to run for a
stalled holder to stop writing. ``on_change(leading)`` is called on every transition, so
the controller can catch up with what it deferred while it followed.

A stopping holder releases the Lease (empty holder), so a follower takes over at its next
round rather than a lease duration later; a killed one is taken over after the lease
duration (the failover e2e test measures both).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable

from preflight_operator.runtime.api import API_ERRORS, Conflict, KubeApi, NotFound
from preflight_operator.runtime.writegate import (
    CREATE,
    RENEW,
    TAKE,
    WAIT,
    LeaseRecord,
    Observation,
    WriteGate,
    claimed_spec,
    decide,
    lease_object,
    microtime,
    parse_lease,
    released_spec,
)

logger = logging.getLogger(__name__)


class LeaderElector:
    def __init__(
        self,
        api: KubeApi,
        gate: WriteGate,
        *,
        namespace: str,
        name: str,
        lease_duration: int,
        renew_deadline: float,
        retry_period: float,
        on_change: Callable[[bool], None] = lambda leading: None,
        now: Callable[[], str] = microtime,
    ) -> None:
        self.api = api
        self.gate = gate
        self.namespace = namespace
        self.name = name
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_change = on_change
        self._now = now
        self._observed = Observation()
        self._record: LeaseRecord | None = None
        self._leading = False
        self._failing = False  # log an API outage once, not every round

    @property
    def where(self) -> str:
        return f"Lease {self.namespace}/{self.name}"

    async def run(self) -> None:
        while True:
            await self.round()
            # client-go jitters its retries (factor 1.2) so replicas started together do
            # not keep racing in step.
            await asyncio.sleep(self.retry_period * random.uniform(1.0, 1.2))

    async def round(self) -> None:
        """One try: read, decide, write at most once; then report any transition."""
        try:
            await self._try()
            if self._failing:
                logger.info("%s: reachable again", self.where)
            self._failing = False
        except API_ERRORS as exc:
            if not self._failing:
                logger.warning("%s: %s; retrying every %.1f s", self.where, exc, self.retry_period)
            self._failing = True
        except Exception:
            logger.exception("%s: leader election round failed", self.where)
        self._report()

    async def _try(self) -> None:
        started = self.gate.clock()
        try:
            body = await self.api.get_lease(self.namespace, self.name)
            record: LeaseRecord | None = parse_lease(body)
        except NotFound:
            record = None
        if record is not None:
            self._observed.see(record, started)
        self._record = record
        step = decide(record, self.gate.identity, self._observed.expired(started))
        if step == WAIT:
            self.gate.lost()  # somebody else holds it (it may have taken it from us)
            return
        spec = claimed_spec(record, self.gate.identity, self.lease_duration, self._now())
        lease = lease_object(
            self.namespace, self.name, spec, "" if record is None else record.resource_version
        )
        try:
            if step == CREATE:
                written = await self.api.create_lease(lease)
            else:
                assert step in (RENEW, TAKE)
                written = await self.api.replace_lease(lease)
        except Conflict:
            # Another replica wrote first; the next round reads who. A holder whose renewal
            # lost the race has lost the Lease.
            self.gate.lost()
            return
        self.gate.held(started, self.renew_deadline)
        self._record = parse_lease(written) if written else None
        if step != RENEW:
            logger.info(
                "%s %s by %s (transition %d)", self.where,
                "created" if step == CREATE else "taken", self.gate.identity,
                spec["leaseTransitions"],
            )  # fmt: skip

    def _report(self) -> None:
        leading = self.gate.allows()
        if leading == self._leading:
            return
        self._leading = leading
        if leading:
            logger.info("%s: this replica (%s) leads and writes", self.where, self.gate.identity)
        else:
            holder = self._record.holder if self._record else ""
            logger.info(
                "%s: this replica (%s) follows%s", self.where, self.gate.identity,
                f"; {holder} holds it" if holder and holder != self.gate.identity else "",
            )  # fmt: skip
        self._on_change(leading)

    async def release(self) -> None:
        """On a clean stop: give the Lease up if this replica holds it."""
        record = self._record
        if not self.gate.allows() or record is None or record.holder != self.gate.identity:
            self.gate.lost()
            return
        self.gate.lost()
        lease = lease_object(
            self.namespace, self.name, released_spec(record, self._now()), record.resource_version
        )
        try:
            await asyncio.wait_for(self.api.replace_lease(lease), timeout=2.0)
        except (asyncio.TimeoutError, *API_ERRORS) as exc:
            logger.info("%s not released (%s); it expires by itself", self.where, exc)
        else:
            logger.info("%s released by %s", self.where, self.gate.identity)
        self._report()
