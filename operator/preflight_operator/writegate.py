"""Which replica may write: kopf's peering rule, applied where our writes happen.

kopf's peering pauses a replica's *kopf* watches when a live peer has a higher priority
(or the same one: then everybody pauses). But the operator's reconciles are not kopf
handlers: they run from our own work queue, which GPUValidation echoes and policy changes
feed on every replica, paused or not (reflector.py says why those watches run
everywhere). Without this gate a paused replica would still reconcile from its stale
store and write, and two replicas would fight over the same status.

The gate reads the same ClusterKopfPeering object kopf keeps and applies the rule of
``kopf._core.engines.peering.process_peering_event``: a replica may write only when no
live peer (``lastseen + lifetime`` in the future) other than itself has a priority at
least its own. Until the object has been seen, nobody writes. Liveness is re-evaluated at
each call, so a peer that dies without a word stops blocking once its lifetime runs out.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_LIFETIME_S = 60  # kopf's assumption for peers that do not say


@dataclass(frozen=True)
class PeerRecord:
    identity: str
    priority: int
    deadline: datetime.datetime


def parse_peers(status: Mapping[str, Any], now: datetime.datetime) -> list[PeerRecord]:
    """The peers of a (Cluster)KopfPeering's status: ``{identity: {priority, lifetime,
    lastseen}}``; malformed entries count as live with priority 0 (never as absent, which
    could let two replicas write)."""
    peers = []
    for identity, raw in status.items():
        info: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        priority = _int(info.get("priority"), 0)
        lifetime = _int(info.get("lifetime"), DEFAULT_LIFETIME_S)
        lastseen = _time(info.get("lastseen")) or now
        peers.append(
            PeerRecord(str(identity), priority, lastseen + datetime.timedelta(seconds=lifetime))
        )
    return peers


def may_write(
    peers: list[PeerRecord], identity: str, priority: int, now: datetime.datetime
) -> bool:
    live_rivals = [p for p in peers if p.identity != identity and p.deadline > now]
    return not any(p.priority >= priority for p in live_rivals)


@dataclass
class WriteGate:
    """``allows()`` is True when this replica may reconcile and write.

    ``priority=None`` is standalone mode (no peering): always allowed.
    """

    identity: str
    priority: int | None
    _status: Mapping[str, Any] | None = field(default=None, repr=False)

    @property
    def standalone(self) -> bool:
        return self.priority is None

    def observe(self, body: Mapping[str, Any], deleted: bool = False) -> None:
        status = body.get("status")
        # A deleted peering object: kopf falls back to its own mode detection; stay closed
        # until it is re-created (the operator creates it at start when absent).
        self._status = None if deleted else (status if isinstance(status, Mapping) else {})

    def allows(self, now: datetime.datetime | None = None) -> bool:
        if self.priority is None:
            return True
        if self._status is None:
            return False
        now = now or datetime.datetime.now(datetime.timezone.utc)
        return may_write(parse_peers(self._status, now), self.identity, self.priority, now)


def _int(value: object, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return default


def _time(value: object) -> datetime.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)
