"""Group membership is proven, not claimed (issue 36, item 1), the checker's half: members
present their pod name and uid, the leader records the address each connected from (never
what the peer says) and lists every member it counted; an impostor that reaches the leader
first is counted under the address it really has, so the operator can refuse it
(core/groupproof.py; test_group_proof.py is the operator's half). Everything a peer can
make the leader keep is bounded.

Sockets on 127.0.0.0/8: the impostor dials from 127.0.0.2, the real members from
127.0.0.1, as two pods of a cluster have two addresses."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from preflight_check import groupnet
from preflight_check.checks.group import summary
from preflight_check.group import (
    KIND_LWS,
    MAGIC,
    FrameReader,
    GroupConfig,
    GroupVerdict,
    clean_facts,
    encode,
    group_config,
    hello,
    read_verdict,
)
from preflight_contract.report import CheckResult, Report, group_summary
from preflight_operator.core.groupproof import group_results
from preflight_operator.core.podresults import pod_result

UIDS = [f"{i:08x}-1111-4222-8333-{i:012x}" for i in range(4)]


def cfg(index: int, size: int, port: int) -> GroupConfig:
    return GroupConfig(
        KIND_LWS,
        "ns/g-0",
        "127.0.0.1",
        port,
        index,
        size,
        "127.0.0.1",
        "test",
        pod=f"g-0-{index}",
        uid=UIDS[index],
    )


def facts(index: int, verdict: str = "pass", **over: Any) -> dict[str, Any]:
    base = {
        "node": f"node-{index}",
        "pod": f"g-0-{index}",
        "uid": UIDS[index],
        "gpu_uuids": [f"GPU-{index}"],
        "verdict": verdict,
        "failed": ["ecc"] if verdict == "fail" else [],
    }
    base.update(over)
    return base


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Leader(threading.Thread):
    def __init__(self, config: GroupConfig, budget: float) -> None:
        super().__init__(daemon=True)
        self.config, self.budget = config, budget
        self.verdict: GroupVerdict | None = None

    def run(self) -> None:
        self.verdict = groupnet.lead(self.config, facts(0), time.monotonic() + self.budget)


def dial(port: int, source: str = "127.0.0.1", within: float = 5.0) -> socket.socket:
    """Connect from ``source`` once the leader listens (a condition, not a sleep)."""
    deadline = time.monotonic() + within
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), 1.0, (source, 0))
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def impostor_hello(port: int, config: GroupConfig, claimed: dict[str, Any]) -> GroupVerdict:
    """A process on another address that says it is ``config``'s member, and hears the
    verdict it got counted into."""
    with dial(port, "127.0.0.2") as sock:
        sock.sendall(encode(hello(config, claimed)))
        sock.settimeout(5.0)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return read_verdict(FrameReader().feed(data)[0])


def test_members_present_their_pod_and_the_leader_records_the_address_it_saw() -> None:
    env = {
        "PREFLIGHT_GROUP_ADDRESS": "leader.ns",
        "PREFLIGHT_GROUP_SIZE": "2",
        "PREFLIGHT_GROUP_INDEX": "1",
        "PREFLIGHT_POD_NAME": "g-0-1",
        "PREFLIGHT_POD_UID": UIDS[1].upper(),
    }
    got = group_config(env)
    assert got is not None
    assert (got.pod, got.uid) == ("g-0-1", UIDS[1])
    hostile = group_config({**env, "PREFLIGHT_POD_NAME": "Bad Name", "PREFLIGHT_POD_UID": "x"})
    assert hostile is not None
    assert (hostile.pod, hostile.uid) == ("", "")
    # a peer's word about its own address is dropped; malformed identities too
    cleaned = clean_facts({"peer_ip": "10.9.9.9", "uid": "not-a-uid", "pod": "x" * 300})
    assert "peer_ip" not in cleaned
    assert "uid" not in cleaned
    assert "pod" not in cleaned

    port = free_port()
    leader = Leader(cfg(0, 2, port), 5.0)
    leader.start()
    verdict = groupnet.join(cfg(1, 2, port), facts(1), time.monotonic() + 5.0)
    leader.join(6)
    assert leader.verdict is not None
    assert verdict.status == leader.verdict.status == "pass", verdict.message
    assert leader.verdict.evidence["roster"] == [f"1/{UIDS[1]}/127.0.0.1"]
    listed = leader.verdict.evidence["members"][1]
    assert (listed["pod"], listed["uid"], listed["peer_ip"]) == ("g-0-1", UIDS[1], "127.0.0.1")


def test_an_impostor_first_is_counted_under_its_own_address_and_the_operator_fails_the_group() -> (
    None
):
    """The adversarial round's attack: a pod that reaches the leader first with good facts,
    claiming the real member's index and uid. The leader cannot tell (it has no API); it
    counts the impostor at the address it connected from. The real member's own checks
    failed (ECC) and it never gets in. The operator, from the two pods' own reports and the
    API server's podIP, names the unmatched member and fails the group."""
    port = free_port()
    leader = Leader(cfg(0, 2, port), 5.0)
    leader.start()
    heard = impostor_hello(port, cfg(1, 2, port), facts(1))  # good facts, stolen uid
    leader.join(6)
    assert leader.verdict is not None
    assert heard.status == leader.verdict.status == "pass"  # the leader was fooled...
    assert leader.verdict.evidence["roster"] == [f"1/{UIDS[1]}/127.0.0.2"]  # ...but says where
    # the real member: its own checks failed, and the leader is gone
    real = groupnet.join(cfg(1, 2, port), facts(1, "fail"), time.monotonic() + 0.3)
    assert real.status == "fail"

    evidence = leader.verdict.evidence
    leader_result = CheckResult("group", "pass", leader.verdict.message, "", evidence)
    leader_report = Report(checks=[leader_result], group=summary(cfg(0, 2, port), [leader_result]))
    member_checks = [
        CheckResult("ecc", "fail", "GPU 0 has 3 uncorrectable ECC errors"),
        CheckResult("group", "fail", real.message, "", real.evidence),
    ]
    member_report = Report(checks=member_checks, group=summary(cfg(1, 2, port), member_checks))
    entries = [
        pod_entry("g-0", UIDS[0], "127.0.0.1", leader_report),
        pod_entry("g-0-1", UIDS[1], "127.0.0.1", member_report),
    ]
    groups = group_results(entries)
    assert len(groups) == 1
    group = groups[0]
    assert group["leaderVerdict"] == "pass"
    assert group["verdict"] == "fail"  # the member's own failure stands
    assert group["membersProven"] == 0
    assert any(
        "member 1" in u and "127.0.0.2" in u and "g-0-1's IP is 127.0.0.1" in u
        for u in group["unmatched"]
    ), group["unmatched"]


def pod_entry(name: str, uid: str, ip: str, report: Report) -> dict[str, Any]:
    """The pod's GPUValidation entry, through the termination message and the operator's
    reader, as the API server would hand the pod over."""
    code = 0 if report.verdict == "pass" else 1
    status = {
        "podIP": ip,
        "initContainerStatuses": [
            {
                "name": "preflight-check",
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "message": report.to_termination_message(),
                        "finishedAt": "2026-12-06T05:00:00Z",
                    }
                },
            }
        ],
    }
    pod = {
        "metadata": {"name": name, "uid": uid, "namespace": "ns"},
        "spec": {"nodeName": "n", "initContainers": [{"name": "preflight-check"}]},
        "status": status,
    }
    result = pod_result(pod)
    assert result is not None
    return result.to_status()


def test_one_pod_cannot_be_two_members() -> None:
    port = free_port()
    leader = Leader(cfg(0, 3, port), 2.0)
    leader.start()
    twins = [
        threading.Thread(
            target=groupnet.join,
            args=(cfg(i, 3, port), facts(1), time.monotonic() + 3.0),  # both present uid 1
            daemon=True,
        )
        for i in (1, 2)
    ]
    for twin in twins:
        twin.start()
    leader.join(4)
    for twin in twins:
        twin.join(4)
    assert leader.verdict is not None
    assert leader.verdict.status == "fail"
    assert "one pod is one member" in leader.verdict.message


def test_a_flood_of_strangers_leaves_a_bounded_trace() -> None:
    port = free_port()
    leader = Leader(cfg(0, 2, port), 8.0)
    leader.start()
    for _ in range(3 * groupnet.MAX_NOTES):
        with dial(port, "127.0.0.3") as sock:
            sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
            sock.settimeout(5.0)
            assert sock.recv(100) == b""  # refused and closed before the next one
    with dial(port, "127.0.0.3") as sock:  # a framed hello of another group, told why
        sock.sendall(encode({**hello(cfg(1, 2, port), facts(1)), "group": "other"}))
        sock.settimeout(5.0)
        assert sock.recv(4).startswith(MAGIC[:1])
    verdict = groupnet.join(cfg(1, 2, port), facts(1), time.monotonic() + 5.0)
    leader.join(9)
    assert leader.verdict is not None
    assert verdict.status == "pass", verdict.message
    rejected = leader.verdict.evidence["rejected"]
    assert len(rejected) <= groupnet.MAX_NOTES + 1
    assert rejected[-1] == f"{3 * groupnet.MAX_NOTES + 1 - groupnet.MAX_NOTES} more not listed"


def test_the_roster_survives_the_termination_message_bounded_and_typed() -> None:
    roster = [f"{i}/{UIDS[i % 4]}/10.1.0.{i}" for i in range(1, 40)]
    summary_in = {"id": "ns/g-0", "index": 0, "size": 40, "status": "pass", "joined": 40}
    got = group_summary({**summary_in, "members": [*roster, "1/evil/1.2.3.4", 7]})
    assert got["members"] == roster[:16]
    checks = [CheckResult(f"filler-{i}", "pass", "x" * 300) for i in range(30)]
    back = Report.from_json(Report(checks=checks, group=got).to_termination_message())
    assert back.group["members"] == roster[:16]
