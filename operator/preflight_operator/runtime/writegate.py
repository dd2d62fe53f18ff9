"""Which replica may write: one ``coordination.k8s.io/v1`` Lease, Kubernetes' own leader
election (the rules of client-go's ``leaderelection`` package), decided here as pure
functions; ``elector.py`` carries them out against the API.

Why a Lease and not kopf's peering: every replica serves both webhooks and keeps its
caches warm (kopf's watches run on every replica, in kopf's standalone mode; our own
reflectors too), and only the holder of the Lease reconciles and writes. kopf's peering
pauses *all* of a replica's kopf watches and says nothing about it through a public API,
so a second runtime had to re-implement its rule to know who writes (issue 12). A Lease
is one object every Kubernetes user knows (``kubectl get lease -n <release ns>``), with
optimistic concurrency from the API server: of two replicas that try to take it at once,
exactly one update carries the current ``resourceVersion``; the other gets 409.

The rules, in the holder's and the followers' terms:
- A follower counts a holder's term from when *it* saw the record change (its own
  monotonic clock, never the holder's timestamps: clocks of two nodes may disagree), and
  may take the Lease once ``leaseDurationSeconds`` have passed without a change, or at once
  when the holder is empty (released).
- The holder writes only until ``renew_deadline`` after the start of its last successful
  renewal. ``renew_deadline`` < ``lease_duration``, so a holder that can no longer renew
  (partitioned, stalled) stops writing before any follower may take over: there is no
  moment with two writers, short of a clock running 1.5x fast (the defaults 15 s / 10 s
  leave 5 s; client-go's defaults, and the same caveat).
- A malformed record counts as held by somebody else (never as free, which could make two
  writers).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

# client-go's defaults (leaderelection.LeaderElectionConfig, kube-controller-manager).
DEFAULT_LEASE_DURATION_S = 15
DEFAULT_RENEW_DEADLINE_S = 10.0
DEFAULT_RETRY_PERIOD_S = 2.0

CREATE, RENEW, TAKE, WAIT = "create", "renew", "take", "wait"


@dataclasses.dataclass(frozen=True)
class LeaseRecord:
    """What a Lease says (``spec``), plus its ``metadata.resourceVersion``."""

    holder: str
    duration_s: int
    acquire_time: str
    renew_time: str
    transitions: int
    resource_version: str

    @property
    def fingerprint(self) -> tuple[str, str, str]:
        """A change of any of these restarts a follower's count (a renewal changes the
        renew time, and every write changes the resourceVersion)."""
        return (self.holder, self.renew_time, self.resource_version)


def parse_lease(body: Mapping[str, Any]) -> LeaseRecord:
    spec = body.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    meta = body.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    holder = spec.get("holderIdentity")
    if holder is None:
        holder = ""
    elif not isinstance(holder, str):
        holder = "<malformed holderIdentity>"  # somebody, never nobody
    return LeaseRecord(
        holder=holder,
        duration_s=max(1, _int(spec.get("leaseDurationSeconds"), DEFAULT_LEASE_DURATION_S)),
        acquire_time=str(spec.get("acquireTime") or ""),
        renew_time=str(spec.get("renewTime") or ""),
        transitions=max(0, _int(spec.get("leaseTransitions"), 0)),
        resource_version=str(meta.get("resourceVersion") or ""),
    )


def decide(record: LeaseRecord | None, identity: str, expired: bool) -> str:
    """CREATE (no Lease yet), RENEW (ours), TAKE (free or expired) or WAIT."""
    if record is None:
        return CREATE
    if record.holder == identity:
        return RENEW
    if not record.holder or expired:
        return TAKE
    return WAIT


def claimed_spec(
    record: LeaseRecord | None, identity: str, duration_s: int, now: str
) -> dict[str, Any]:
    """The Lease's spec after this replica creates, takes or renews it."""
    if record is None:
        return {
            "holderIdentity": identity,
            "leaseDurationSeconds": duration_s,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
    renewing = record.holder == identity
    transitions = record.transitions + (0 if renewing else 1)
    return {
        "holderIdentity": identity,
        "leaseDurationSeconds": duration_s,
        "acquireTime": record.acquire_time if renewing and record.acquire_time else now,
        "renewTime": now,
        "leaseTransitions": transitions,
    }


def released_spec(record: LeaseRecord, now: str) -> dict[str, Any]:
    """What the holder writes when it stops (client-go's ReleaseOnCancel): nobody holds
    it, so a follower takes over at its next try instead of a whole lease duration later."""
    return {
        "holderIdentity": "",
        "leaseDurationSeconds": 1,
        "acquireTime": record.acquire_time or now,
        "renewTime": now,
        "leaseTransitions": record.transitions,
    }


def lease_object(
    namespace: str, name: str, spec: Mapping[str, Any], resource_version: str = ""
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/managed-by": "vllm-preflight"},
    }
    if resource_version:
        meta["resourceVersion"] = resource_version  # the update fails (409) if it moved
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": dict(spec),
    }


def microtime(moment: datetime.datetime | None = None) -> str:
    """A ``metav1.MicroTime`` (RFC 3339 with microseconds, UTC), as the Lease fields want."""
    moment = moment or datetime.datetime.now(datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclasses.dataclass
class Observation:
    """A follower's view of the holder's term: when the record last changed, by its own
    clock."""

    fingerprint: tuple[str, str, str] | None = None
    changed_at: float = 0.0
    duration_s: int = DEFAULT_LEASE_DURATION_S

    def see(self, record: LeaseRecord, now: float) -> None:
        if record.fingerprint != self.fingerprint:
            self.fingerprint = record.fingerprint
            self.changed_at = now
        self.duration_s = record.duration_s

    def expired(self, now: float) -> bool:
        return self.fingerprint is not None and now >= self.changed_at + self.duration_s


@dataclasses.dataclass
class WriteGate:
    """``allows()`` is True while this replica holds the Lease and its last renewal is
    younger than the renew deadline. ``standalone`` (one replica, no election): always."""

    identity: str
    standalone: bool = False
    clock: Callable[[], float] = time.monotonic
    _held_until: float = dataclasses.field(default=-math.inf, repr=False)

    def allows(self) -> bool:
        return self.standalone or self.clock() < self._held_until

    def held(self, renewal_started: float, renew_deadline: float) -> None:
        """A create, take or renewal that started at ``renewal_started`` succeeded."""
        self._held_until = renewal_started + renew_deadline

    def lost(self) -> None:
        self._held_until = -math.inf


def validate_timing(lease_duration: float, renew_deadline: float, retry_period: float) -> str:
    """ "" when the three durations make sense together, else what is wrong and the fix."""
    if lease_duration < 1 or int(lease_duration) != lease_duration:
        return "--lease-duration must be a whole number of seconds >= 1"
    if not 0 < retry_period < renew_deadline:
        return "--retry-period must be > 0 and shorter than --renew-deadline"
    if renew_deadline >= lease_duration:
        return (
            "--renew-deadline must be shorter than --lease-duration (a holder that cannot "
            "renew must stop writing before another replica may take the Lease)"
        )
    return ""


def _int(value: object, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return default
