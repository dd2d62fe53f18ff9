"""Leader election on a coordination.k8s.io Lease (writegate.py rules, elector.py loop):
exactly one writer, a follower counts the holder's term on its own clock, a holder that
cannot renew stops writing before anyone may take over, a release hands over at once."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from preflight_operator.runtime.api import ApiError, Conflict, NotFound
from preflight_operator.runtime.elector import LeaderElector
from preflight_operator.runtime.options import parse_options
from preflight_operator.runtime.writegate import (
    CREATE,
    RENEW,
    TAKE,
    WAIT,
    Observation,
    WriteGate,
    claimed_spec,
    decide,
    parse_lease,
    released_spec,
    validate_timing,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class LeaseApi:
    """The API server's part: one Lease, a resourceVersion bumped on every write, 409 on a
    stale one; ``down`` makes every call fail like an unreachable API server."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.down = False
        self.writes: list[str] = []

    def _check(self) -> None:
        if self.down:
            raise ApiError(503, "unavailable", "ServiceUnavailable")

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any]:
        self._check()
        if self.lease is None:
            raise NotFound(404, "not found", "NotFound")
        read = copy.deepcopy(self.lease)
        await asyncio.sleep(0)  # lets a racing replica read the same version
        return read

    def _store(self, lease: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        stored = copy.deepcopy(lease)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.lease = stored
        self.writes.append(stored["spec"]["holderIdentity"])
        return copy.deepcopy(stored)

    async def create_lease(self, lease: dict[str, Any]) -> dict[str, Any]:
        self._check()
        if self.lease is not None:
            raise Conflict(409, "already exists", "AlreadyExists")
        return self._store(lease)

    async def replace_lease(self, lease: dict[str, Any]) -> dict[str, Any]:
        self._check()
        assert self.lease is not None
        if lease["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise Conflict(409, "the object has been modified", "Conflict")
        return self._store(lease)


def replica(api: LeaseApi, clock: Clock, name: str, changes: list[Any]) -> LeaderElector:
    return LeaderElector(
        api,  # type: ignore[arg-type]
        WriteGate(name, clock=clock),
        namespace="vllm-preflight",
        name="vllm-preflight",
        lease_duration=15,
        renew_deadline=10.0,
        retry_period=2.0,
        on_change=lambda leading: changes.append((name, leading)),
    )


def rounds(*electors: LeaderElector) -> None:
    async def go() -> None:
        for elector in electors:
            await elector.round()

    asyncio.run(go())


def leaders(*electors: LeaderElector) -> list[str]:
    return [e.gate.identity for e in electors if e.gate.allows()]


def test_the_rules_create_renew_take_or_wait() -> None:
    held = parse_lease({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})
    assert decide(None, "b", expired=False) == CREATE
    assert decide(held, "a", expired=False) == RENEW
    assert decide(held, "b", expired=False) == WAIT
    assert decide(held, "b", expired=True) == TAKE
    assert decide(parse_lease({"spec": {"holderIdentity": ""}}), "b", expired=False) == TAKE


def test_a_malformed_lease_is_somebody_elses_never_free() -> None:
    for spec in ({"holderIdentity": 7}, {"holderIdentity": ["a"]}):
        record = parse_lease({"spec": spec, "metadata": "x"})
        assert record.holder
        assert decide(record, "b", expired=False) == WAIT
    garbage = parse_lease({"spec": {"holderIdentity": "a", "leaseDurationSeconds": "x"}})
    assert garbage.duration_s == 15
    assert parse_lease({"spec": {"leaseDurationSeconds": -3}}).duration_s == 1


def test_specs_count_transitions_and_keep_the_acquire_time_on_renewal() -> None:
    created = claimed_spec(None, "a", 15, "t0")
    assert (created["leaseTransitions"], created["acquireTime"]) == (0, "t0")
    record = parse_lease({"spec": {**created}, "metadata": {"resourceVersion": "1"}})
    renewed = claimed_spec(record, "a", 15, "t1")
    assert (renewed["acquireTime"], renewed["renewTime"], renewed["leaseTransitions"]) == (
        "t0", "t1", 0,
    )  # fmt: skip
    taken = claimed_spec(record, "b", 15, "t2")
    assert (taken["holderIdentity"], taken["acquireTime"], taken["leaseTransitions"]) == (
        "b", "t2", 1,
    )  # fmt: skip
    released = released_spec(record, "t3")
    assert released["holderIdentity"] == ""
    assert released["leaseDurationSeconds"] == 1


def test_a_follower_counts_the_term_on_its_own_clock() -> None:
    seen = Observation()
    record = parse_lease({"spec": {"holderIdentity": "a", "renewTime": "2020-01-01T00:00:00Z"}})
    seen.see(record, 100.0)
    assert not seen.expired(114.9)
    seen.see(record, 114.0)  # the same record again: the count goes on
    assert seen.expired(115.0)
    renewed = parse_lease({"spec": {"holderIdentity": "a", "renewTime": "2020-01-01T00:00:05Z"}})
    seen.see(renewed, 115.0)  # a renewal restarts it (its timestamp is not trusted)
    assert not seen.expired(129.0)
    assert not Observation().expired(1e9)  # nothing seen yet: nothing expired


def test_one_leader_of_three_and_the_others_write_nothing() -> None:
    api, clock, changes = LeaseApi(), Clock(), []
    a, b, c = (replica(api, clock, n, changes) for n in "abc")
    for _ in range(5):
        rounds(a, b, c)
        clock.now += 2
    assert leaders(a, b, c) == ["a"]
    assert set(api.writes) == {"a"}
    assert changes == [("a", True)]


def test_a_killed_leader_is_replaced_after_the_lease_duration_never_before() -> None:
    api, clock, changes = LeaseApi(), Clock(), []
    a, b = replica(api, clock, "a", changes), replica(api, clock, "b", changes)
    rounds(a, b)
    assert leaders(a, b) == ["a"]
    died_at = clock.now  # `a` is killed: it never runs another round
    while clock.now < died_at + 15:
        rounds(b)
        # `a`'s gate closed at its last renewal + renew deadline, before `b` may take it
        assert not (a.gate.allows() and b.gate.allows())
        assert not b.gate.allows()
        clock.now += 1
    rounds(b)
    assert leaders(b) == ["b"]
    assert not a.gate.allows()
    assert parse_lease(api.lease or {}).transitions == 1


def test_a_holder_that_cannot_renew_stops_writing_before_anyone_may_take_over() -> None:
    api, clock, changes = LeaseApi(), Clock(), []
    a, b = replica(api, clock, "a", changes), replica(api, clock, "b", changes)
    rounds(a, b)
    api.down = True  # `a` is cut off (so is `b`: neither can write)
    clock.now += 10
    rounds(a, b)
    assert leaders(a, b) == []  # `a` stopped at its renew deadline
    assert changes == [("a", True), ("a", False)]
    api.down = False
    rounds(a)  # back in time, and nobody took it: `a` renews and leads again
    assert leaders(a, b) == ["a"]


def test_a_race_to_take_an_expired_lease_has_one_winner() -> None:
    api, clock, changes = LeaseApi(), Clock(), []
    old, b, c = (replica(api, clock, n, changes) for n in ("old", "b", "c"))
    rounds(old, b, c)
    clock.now += 16
    # b and c read the same expired record before either writes

    async def race() -> None:
        await asyncio.gather(b.round(), c.round())

    asyncio.run(race())
    assert len(leaders(b, c)) == 1
    assert api.writes.count("b") + api.writes.count("c") == 1  # the other got 409


def test_a_release_hands_over_at_the_next_round() -> None:
    api, clock, changes = LeaseApi(), Clock(), []
    a, b = replica(api, clock, "a", changes), replica(api, clock, "b", changes)
    rounds(a, b)
    asyncio.run(a.release())
    assert not a.gate.allows()
    assert parse_lease(api.lease or {}).holder == ""
    rounds(b)
    assert leaders(a, b) == ["b"]
    asyncio.run(a.release())  # a follower's release writes nothing
    assert api.writes[-1] == "b"


def test_standalone_always_writes() -> None:
    assert WriteGate("me", standalone=True).allows()
    assert not WriteGate("me").allows()


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--lease-duration", "10", "--renew-deadline", "10"], "--renew-deadline must be shorter"),
        (["--retry-period", "0"], "--retry-period must be > 0"),
        (["--lease-duration", "0"], "--lease-duration must be a whole number"),
    ],
)
def test_bad_timing_flags_are_refused_naming_the_flag(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_options(argv, environ={})
    assert exc.value.code == 2
    assert fragment in capsys.readouterr().err


def test_the_defaults_are_client_gos_and_the_lease_lives_in_the_release_namespace() -> None:
    assert validate_timing(15, 10.0, 2.0) == ""
    options = parse_options([], environ={"POD_NAMESPACE": "vllm-preflight"})
    assert (options.lease_duration, options.renew_deadline, options.retry_period) == (15, 10, 2)
    assert options.lease_where == "vllm-preflight"
    assert parse_options(["--lease-namespace", "ops"], environ={}).lease_where == "ops"
    assert parse_options([], environ={}).lease_where == "default"
