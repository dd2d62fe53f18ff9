"""Group membership is proven, not claimed (issue 36, item 1), on the local control plane.

The adversarial round's attack: a pod that can reach a group leader's rendezvous port
connects first, says "I am worker 1" with the real worker 1's pod name and uid (anyone who
can read pods knows them) and good facts. The leader (the real checker, as in
test_group_phase.py) cannot tell and counts it: its own report says the group passed. The
real worker 1's GPU has uncorrectable ECC errors; its check fails, and it never gets in.

The operator trusts only the API server: the leader's report lists worker 1 at the address
it connected from (127.0.0.2, the impostor's), the pod worker-1 has another status.podIP,
so the GPUValidation's group is not a pass, names the unmatched member, and carries worker
1's own failure. Here every real check runs on this machine and dials from 127.0.0.1 (the
podIP written for each pod); the impostor dials from 127.0.0.2, as another pod would from
its own address."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_group_phase import (
    INJECT,
    create_group,
    finish_checks,
    free_port,
    groups_of,
    injected,
    start_check,
)

from preflight_check.group import KIND_LWS, FrameReader, GroupConfig, encode, hello, read_verdict
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def namespace(cluster: Cluster, operator: OperatorProcess) -> Iterator[str]:
    name = cluster.create_namespace("impostor", labels=INJECT)
    yield name
    cluster.delete_namespace(name)


def impostor(port: int, group_id: str, victim: dict[str, Any]) -> str:
    """Dial the leader from 127.0.0.2 once it listens, claim the victim's place, and return
    the verdict status it was told."""
    meta = victim["metadata"]
    claimed = GroupConfig(KIND_LWS, group_id, "127.0.0.1", port, 1, 3)
    facts = {
        "node": victim["spec"]["nodeName"],
        "pod": meta["name"],
        "uid": meta["uid"],
        "gpu_uuids": ["GPU-00000000-0000-4000-8000-000000000001"],
        "verdict": "pass",
    }
    deadline = time.monotonic() + 30.0
    while True:  # the leader listens once its local checks are done: wait for that
        try:
            sock = socket.create_connection(("127.0.0.1", port), 1.0, ("127.0.0.2", 0))
            break
        except ConnectionRefusedError:
            assert time.monotonic() < deadline, "the leader never listened"
            time.sleep(0.05)
    with sock:
        sock.sendall(encode(hello(claimed, facts)))
        sock.settimeout(20.0)
        reader, frames = FrameReader(), []
        while not frames:
            data = sock.recv(65536)
            assert data, "the leader closed without a verdict"
            frames = reader.feed(data)
    return read_verdict(frames[0]).status


def test_an_impostor_first_cannot_make_a_broken_group_pass(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    pods = [injected(cluster, p) for p in create_group(cluster, namespace, "proof")]
    leader, worker1, worker2 = pods
    group_id = f"{namespace}/proof-0"
    port = free_port()
    first = [
        (leader, start_check(leader, port, tmp_path)),
        (worker2, start_check(worker2, port, tmp_path)),
    ]
    told = impostor(port, group_id, worker1)
    assert told == "pass"  # the leader was fooled: it cannot know
    # the real worker 1, whose GPU is broken, comes after the leader has closed its port
    reports = finish_checks(cluster, first, tmp_path)
    broken = start_check(worker1, port, tmp_path, "--ecc-uncorrectable", "3")
    reports |= finish_checks(cluster, [(worker1, broken)], tmp_path)

    code, report = reports["proof-0"]
    assert (code, report["group"]["status"]) == (0, "pass")  # the leader's own view
    assert report["group"]["members"][0].endswith("/127.0.0.2")  # ...names where member 1 was
    code, report = reports["proof-0-1"]
    assert code == 1
    assert "ecc" in {c["id"] for c in report["checks"] if c["status"] == "fail"}

    def settled() -> dict[str, Any] | None:
        groups = groups_of(cluster, namespace, "LeaderWorkerSet/proof")
        found = [g for g in groups or [] if g.get("group") == group_id]
        return found[0] if found and found[0].get("podsReported") == 3 else None

    group = wait_for(settled)
    assert group["leaderVerdict"] == "pass"
    assert group["verdict"] == "fail", json.dumps(group)  # worker 1's own failure stands
    assert group["membersProven"] == 1  # worker 2
    unmatched = " | ".join(group["unmatched"])
    assert f"member 1 (uid {worker1['metadata']['uid']}, connected from 127.0.0.2)" in unmatched
    assert "pod proof-0-1's IP is 127.0.0.1" in unmatched
