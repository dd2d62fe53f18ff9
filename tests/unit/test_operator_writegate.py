"""The write gate follows kopf's peering rule: only the replica no live peer outranks (or
ties) may reconcile and write; nobody writes before the peering object is seen."""

from __future__ import annotations

import datetime

from preflight_operator.writegate import WriteGate

NOW = datetime.datetime(2026, 11, 29, 20, 0, tzinfo=datetime.timezone.utc)


def peer(priority: int, seconds_ago: float = 1.0, lifetime: int = 60) -> dict[str, object]:
    lastseen = NOW - datetime.timedelta(seconds=seconds_ago)
    return {"priority": priority, "lifetime": lifetime, "lastseen": lastseen.isoformat()}


def gate_with(status: dict[str, object], priority: int = 100) -> WriteGate:
    gate = WriteGate("me", priority=priority)
    gate.observe({"metadata": {"name": "vllm-preflight"}, "status": status})
    return gate


def test_standalone_always_writes() -> None:
    assert WriteGate("me", priority=None).allows(NOW)


def test_closed_until_the_peering_object_is_seen() -> None:
    gate = WriteGate("me", priority=100)
    assert not gate.allows(NOW)
    gate.observe({"metadata": {"name": "p"}})  # no status yet: nobody else is there
    assert gate.allows(NOW)


def test_the_highest_priority_writes_and_the_lower_one_waits() -> None:
    status = {"me": peer(100), "other": peer(200)}
    assert not gate_with(status, priority=100).allows(NOW)
    assert WriteGate("other", 200).allows(NOW) is False  # unseen: closed
    high = WriteGate("other", 200)
    high.observe({"status": status})
    assert high.allows(NOW)


def test_equal_priorities_both_wait_as_kopf_pauses_both() -> None:
    assert not gate_with({"me": peer(100), "twin": peer(100)}).allows(NOW)


def test_a_dead_rival_stops_blocking_when_its_lifetime_runs_out() -> None:
    gate = gate_with({"me": peer(100), "gone": peer(200, seconds_ago=50, lifetime=60)})
    assert not gate.allows(NOW)
    assert gate.allows(NOW + datetime.timedelta(seconds=11))


def test_malformed_entries_block_rather_than_vanish() -> None:
    gate = gate_with({"me": peer(100), "odd": {"priority": "high", "lastseen": "yesterday"}})
    # priority unreadable -> 0 (lower): does not block; but a readable one does.
    assert gate.allows(NOW)
    assert not gate_with({"me": peer(100), "odd": {"priority": "300"}}).allows(NOW)


def test_a_deleted_peering_object_closes_the_gate() -> None:
    gate = gate_with({"me": peer(100)})
    assert gate.allows(NOW)
    gate.observe({"metadata": {"name": "vllm-preflight"}}, deleted=True)
    assert not gate.allows(NOW)
