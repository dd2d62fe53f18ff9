"""The group phase's protocol: framing, settings, the verdict, and the sockets on
127.0.0.1 (a member that never comes, one that comes late, mismatched facts, garbage)."""

from __future__ import annotations

import shlex
import socket
import threading
import time
from typing import Any

import pytest

from preflight_check import groupnet
from preflight_check.group import (
    DEFAULT_PORT,
    KIND_DP,
    KIND_LWS,
    KIND_NNODES,
    FrameReader,
    GroupConfig,
    GroupError,
    GroupVerdict,
    ProtocolError,
    args_hash,
    clean_facts,
    encode,
    engine_args,
    group_config,
    hello,
    judge,
    read_hello,
)

ARGS = {"model": "m", "tp": "8", "pp": "3"}


def facts(node: str, **over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "node": node,
        "gpu_uuids": [f"GPU-{node}-0", f"GPU-{node}-1"],
        "gpu_names": ["NVIDIA H200"],
        "driver": "580.95.05",
        "cuda_driver": "13.0",
        "args": dict(ARGS),
        "verdict": "pass",
        "local_ms": 100.0,
    }
    base.update(over)
    return clean_facts(base)


def config(index: int = 0, size: int = 3, port: int = DEFAULT_PORT) -> GroupConfig:
    return GroupConfig(KIND_LWS, "g-0", "127.0.0.1", port, index, size, "127.0.0.1", "test")


# -- framing --------------------------------------------------------------------------


def test_frames_round_trip_in_pieces() -> None:
    data = encode({"a": 1}) + encode({"b": "x" * 1000})
    reader = FrameReader()
    got = []
    for i in range(0, len(data), 7):
        got += reader.feed(data[i : i + 7])
    assert got == [{"a": 1}, {"b": "x" * 1000}]
    assert reader.pending == 0


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"GET / HTTP/1.1\r\n", "not this protocol"),
        (b"\x16\x03\x01\x02\x00", "not this protocol"),
        (b"VPG1\xff\xff\xff\xff", "over the"),
        (b"VPG1\x00\x00\x00\x03abc", "not UTF-8 JSON"),
        (b"VPG1\x00\x00\x00\x02[]", "not a JSON object"),
    ],
)
def test_garbage_is_refused_with_a_reason(data: bytes, why: str) -> None:
    with pytest.raises(ProtocolError, match=why):
        FrameReader().feed(data)


def test_hello_is_checked_against_the_leaders_group() -> None:
    leader = config()
    index, got = read_hello(hello(config(index=2), facts("n2")), leader)
    assert index == 2
    assert got["args_hash"] == args_hash(ARGS)
    with pytest.raises(ProtocolError, match="group 'other'"):
        read_hello({**hello(config(index=1), {}), "group": "other"}, leader)
    with pytest.raises(ProtocolError, match="believes the group has 4"):
        read_hello(hello(config(index=1, size=4), {}), leader)
    with pytest.raises(ProtocolError, match=r"not 1\.\.2"):
        read_hello(hello(config(index=0), {}), leader)


def test_odd_facts_are_bounded_not_fatal() -> None:
    got = clean_facts({"node": "x" * 10_000, "gpu_uuids": "nope", "args": {"tp": 8, "evil": 1}})
    assert len(got["node"]) == 256
    assert got["gpu_uuids"] == []
    assert got["args"] == {"tp": "8"}


# -- settings -------------------------------------------------------------------------


def test_lws_env_makes_a_group() -> None:
    env = {"LWS_LEADER_ADDRESS": "big-0.big.ns", "LWS_GROUP_SIZE": "3", "LWS_WORKER_INDEX": "2"}
    assert group_config(env) is None  # not opted in: a Ray leader's workers get no check
    env["PREFLIGHT_GROUP"] = "on"
    got = group_config(env)
    assert got is not None
    assert (got.kind, got.address, got.size, got.index, got.port) == (
        KIND_LWS,
        "big-0.big.ns",
        3,
        2,
        DEFAULT_PORT,
    )
    assert group_config({**env, "PREFLIGHT_GROUP": "off"}) is None
    assert group_config({**env, "PREFLIGHT_GROUP_PORT": "31000"}).port == 31000  # type: ignore[union-attr]


def test_nnodes_and_multinode_dp_make_a_group() -> None:
    argv = shlex.split("vllm serve m --nnodes 4 --node-rank 3 --master-addr 10.0.0.1 --headless")
    got = group_config({}, argv)
    assert got is not None
    assert (got.kind, got.address, got.size, got.index) == (KIND_NNODES, "10.0.0.1", 4, 3)
    argv = "vllm serve m -dp 16 -dpl 8 --data-parallel-address a --data-parallel-start-rank 8"
    got = group_config({}, argv.split())
    assert got is not None
    assert (got.kind, got.size, got.index) == (KIND_DP, 2, 1)
    assert group_config({}, ["vllm", "serve", "m", "-tp", "8"]) is None


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({"LWS_LEADER_ADDRESS": "a", "LWS_GROUP_SIZE": "two", "PREFLIGHT_GROUP": "on"}, "whole"),
        (
            {"LWS_LEADER_ADDRESS": "a", "LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": "2"}
            | {"PREFLIGHT_GROUP": "on"},
            "outside",
        ),
        ({"PREFLIGHT_GROUP_SIZE": "2"}, "without PREFLIGHT_GROUP_ADDRESS"),
        ({"PREFLIGHT_GROUP_ADDRESS": "a"}, "no size"),
        (
            {"LWS_LEADER_ADDRESS": "a", "LWS_GROUP_SIZE": "2", "PREFLIGHT_GROUP_PORT": "0"},
            "between",
        ),
    ],
)
def test_malformed_settings_name_the_variable(env: dict[str, str], why: str) -> None:
    with pytest.raises(GroupError, match=why):
        group_config(env)


def test_engine_args_of_the_rules_reading() -> None:
    argv = ["vllm", "serve", "m", "-tp", "8", "--dtype", "bfloat16", "--revision", "r1"]
    args = engine_args(argv)
    assert (args["tp"], args["dtype"], args["revision"]) == ("8", "bfloat16", "r1")
    assert engine_args([]) == {}  # a Ray worker: no vLLM command line


# -- the verdict ----------------------------------------------------------------------


def test_everyone_agreeing_passes_and_names_the_slowest() -> None:
    members = {0: facts("a"), 1: facts("b", local_ms=900.0), 2: facts("c")}
    verdict = judge(config(), members, waited_s=0.1)
    assert verdict.status == "pass", verdict.message
    assert verdict.evidence["joined"] == [0, 1, 2]
    assert verdict.evidence["slowest"]["member"] == "worker 1 (b)"


def test_missing_member_fails_naming_it_and_the_causes() -> None:
    verdict = judge(config(), {0: facts("a"), 1: facts("b")}, waited_s=30)
    assert verdict.status == "fail"
    assert "worker 2" in verdict.message
    assert "NetworkPolicy" in verdict.message
    assert "publishNotReadyAddresses" in verdict.message
    assert str(DEFAULT_PORT) in verdict.remediation
    assert verdict.evidence["missing"] == [2]


def test_mismatched_engine_args_fail_with_the_difference() -> None:
    odd = facts("c", args={**ARGS, "tp": "4", "dtype": "float16"})
    verdict = judge(config(), {0: facts("a"), 1: facts("b"), 2: odd}, waited_s=0.1)
    assert verdict.status == "fail"
    assert "worker 2 (c) runs vLLM with other engine arguments" in verdict.message
    assert "tp 8 vs 4" in verdict.message
    assert "dtype (default) vs float16" in verdict.message


def test_ray_workers_without_args_are_not_compared_on_args() -> None:
    members = {0: facts("a"), 1: facts("b", args={}), 2: facts("c", args={})}
    assert judge(config(), members, waited_s=0.1).status == "pass"


def test_driver_difference_warns_shared_gpu_and_local_failure_fail() -> None:
    members = {0: facts("a"), 1: facts("b", driver="570.1"), 2: facts("c")}
    verdict = judge(config(), members, waited_s=0.1)
    assert verdict.status == "warn"
    assert "NVIDIA driver differs" in verdict.message
    shared = facts("a", gpu_uuids=["GPU-a-0"])  # a second pod on node a
    broken = facts("b", verdict="fail", failed=["gpu-count"])
    verdict = judge(config(), {0: facts("a"), 1: broken, 2: shared}, waited_s=0.1)
    assert verdict.status == "fail"
    assert "Duplicate GPU detected" in verdict.message
    assert "worker 1 (b) failed its own checks: gpu-count" in verdict.message


# -- the sockets on 127.0.0.1 ---------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Member(threading.Thread):
    def __init__(
        self, cfg: GroupConfig, member_facts: dict[str, Any], budget: float, delay: float = 0.0
    ):
        super().__init__(daemon=True)
        self.cfg, self.facts, self.budget, self.delay = cfg, member_facts, budget, delay
        self.verdict: GroupVerdict | None = None

    def run(self) -> None:
        time.sleep(self.delay)
        self.verdict = groupnet.join(self.cfg, self.facts, time.monotonic() + self.budget)


def lead(cfg: GroupConfig, budget: float) -> tuple[GroupVerdict, float]:
    started = time.monotonic()
    verdict = groupnet.lead(cfg, facts("a"), started + budget)
    return verdict, time.monotonic() - started


def test_group_of_three_over_localhost_with_a_late_member() -> None:
    port = free_port()
    early = Member(config(1, port=port), facts("b"), 10)
    late = Member(config(2, port=port), facts("c"), 10, delay=0.6)
    early.start()
    late.start()
    time.sleep(0.2)  # the leader comes after the first member started dialling
    verdict, _ = lead(config(0, port=port), 8)
    early.join(5)
    late.join(5)
    assert verdict.status == "pass", verdict.message  # met, not stopped by the deadline
    assert early.verdict is not None
    assert late.verdict is not None
    assert early.verdict.status == late.verdict.status == "pass"
    assert late.verdict.evidence["joined"] == [0, 1, 2]


def test_member_that_never_comes_fails_by_the_deadline_and_members_hear_it() -> None:
    port = free_port()
    member = Member(config(1, port=port), facts("b"), 4)
    member.start()
    verdict, took = lead(config(0, port=port), 1.5)
    member.join(5)
    assert verdict.status == "fail"
    assert "worker 2" in verdict.message
    assert took >= 1.4  # it waited for the missing member until its deadline
    assert member.verdict is not None
    assert member.verdict.status == "fail"
    assert "worker 2" in member.verdict.message


def test_garbage_on_the_port_is_rejected_and_the_group_still_meets() -> None:
    port = free_port()
    result: dict[str, Any] = {}

    def leader() -> None:
        result["verdict"], _ = lead(config(0, size=2, port=port), 6)

    thread = threading.Thread(target=leader, daemon=True)
    thread.start()
    time.sleep(0.2)
    with socket.create_connection(("127.0.0.1", port), timeout=2) as stranger:
        stranger.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert stranger.recv(100) == b""  # closed on it
    silent = socket.create_connection(("127.0.0.1", port), timeout=2)  # says nothing
    member = Member(config(1, size=2, port=port), facts("b"), 5)
    member.start()
    thread.join(8)
    member.join(5)
    silent.close()
    verdict = result["verdict"]
    assert verdict.status == "pass", verdict.message
    assert any("not this protocol" in r for r in verdict.evidence["rejected"])
    assert member.verdict is not None
    assert member.verdict.status == "pass"


def test_mismatched_member_hears_the_mismatch() -> None:
    port = free_port()
    member = Member(config(1, size=2, port=port), facts("b", args={**ARGS, "pp": "2"}), 5)
    member.start()
    verdict, _ = lead(config(0, size=2, port=port), 4)
    member.join(5)
    assert verdict.status == "fail"
    assert member.verdict is not None
    assert "pp 3 vs 2" in member.verdict.message


def test_member_of_another_size_is_refused_and_says_why() -> None:
    port = free_port()
    member = Member(config(1, size=3, port=port), facts("b"), 3)
    member.start()
    verdict, _ = lead(config(0, size=2, port=port), 1.0)
    member.join(5)
    assert verdict.status == "fail"
    assert member.verdict is not None
    assert "refused this member" in member.verdict.message
    assert "believes the group has 3" in member.verdict.message


def test_member_without_a_leader_fails_naming_the_error() -> None:
    cfg = config(1, port=free_port())
    started = time.monotonic()
    verdict = groupnet.join(cfg, facts("b"), started + 0.5)
    assert verdict.status == "fail"
    assert "connection refused" in verdict.message
    unresolvable = GroupConfig(KIND_LWS, "g", "no-such-host.invalid", 1, 1, 2)
    verdict = groupnet.join(unresolvable, {}, time.monotonic() + 0.3)
    assert "DNS" in verdict.message


def test_port_in_use_is_a_failure_naming_the_port() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = int(busy.getsockname()[1])
        verdict, _ = lead(config(0, size=2, port=port), 0.5)
    assert verdict.status == "fail"
    assert str(port) in verdict.message
    assert "PREFLIGHT_GROUP_PORT" in verdict.remediation
