"""Per-group results: the report's group summary survives the termination message, reaches
the pod's entry, and the GPUValidation shows each group (leader's view first)."""

from __future__ import annotations

from typing import Any

from preflight_contract.report import CheckResult, Report, group_summary
from preflight_operator.core.gpuvalidation import group_results
from preflight_operator.core.podresults import pod_result


def pod(name: str, message: str, code: int = 0) -> dict[str, Any]:
    check = {
        "name": "preflight-check",
        "restartCount": 0,
        "state": {
            "terminated": {
                "exitCode": code,
                "message": message,
                "finishedAt": "2026-12-01T08:00:00Z",
            }
        },
    }
    return {
        "metadata": {"name": name, "uid": f"u-{name}", "namespace": "ns"},
        "spec": {"nodeName": "n1", "initContainers": [{"name": "preflight-check"}]},
        "status": {"initContainerStatuses": [check]},
    }


def report(index: int, status: str, **group: Any) -> Report:
    checks = [CheckResult(f"filler-{i}", "pass", "x" * 300) for i in range(20)]
    checks.append(CheckResult("group", status, "the group verdict " + "y" * 600))
    summary = {"id": "big-0.big.ns", "index": index, "size": 3, "status": status, **group}
    return Report(checks=checks, group=group_summary(summary))


def test_group_summary_survives_compaction_and_reaches_the_pod_entry() -> None:
    rep = report(0, "fail", joined=2, missing=[2], slowest="worker 1 (n2)", slowest_ms=812)
    message = rep.to_termination_message()
    assert len(message) <= 2048
    back = Report.from_json(message)
    assert back.group["missing"] == [2]
    result = pod_result(pod("big-0", message, code=1))
    assert result is not None
    entry = result.to_status()
    assert entry["group"] == {
        "id": "big-0.big.ns",
        "index": 0,
        "size": 3,
        "verdict": "fail",
        "joined": 2,
        "missing": [2],
        "slowestMember": "worker 1 (n2)",
        "slowestLocalMs": 812,
    }


def test_group_summary_is_bounded_and_typed() -> None:
    got = group_summary({"id": "x" * 500, "size": "3", "missing": list(range(50)), "evil": 1})
    assert len(got["id"]) == 80
    assert "size" not in got
    assert "evil" not in got
    assert got["missing"] == list(range(8))
    assert group_summary("nope") == {}


def entry(pod_name: str, index: int, verdict: str, **extra: Any) -> dict[str, Any]:
    group = {"id": "g0", "index": index, "size": 3, "verdict": verdict, **extra}
    return {"pod": pod_name, "verdict": verdict, "group": group}


def test_the_leaders_view_is_the_groups() -> None:
    # the leader lists both members it counted; both are pods of this workload with the
    # address the leader saw (tests/unit/test_group_proof.py has the impostors)
    roster = [f"1/{UID[1]}/10.0.0.11", f"2/{UID[2]}/10.0.0.12"]
    history = [
        proven("w2", 2, "warn", joined=3),  # newest
        proven(
            "leader",
            0,
            "warn",
            joined=3,
            slowestMember="worker 1 (n2)",
            busBandwidthGBps=9.5,
            members=roster,
        ),
        proven("w1", 1, "pass", joined=3),
        proven("leader", 0, "pass", joined=3),  # an older run of the leader: ignored
    ]
    groups = group_results(history)
    assert groups == [
        {
            "group": "g0",
            "podsReported": 3,
            "size": 3,
            "verdict": "warn",
            "leaderVerdict": "warn",
            "membersJoined": 3,
            "membersProven": 2,
            "slowestMember": "worker 1 (n2)",
            "busBandwidthGBps": 9.5,
            "leaderReported": True,
        }
    ]


UID = {i: f"0000000{i}-0000-4000-8000-00000000000{i}" for i in range(3)}


def proven(pod_name: str, index: int, verdict: str, **extra: Any) -> dict[str, Any]:
    """A pod entry as PodResult.to_status writes it: uid, the API server's podIP, made by
    the workload's controller."""
    return {
        **entry(pod_name, index, verdict, **extra),
        "uid": UID[index],
        "podIP": f"10.0.0.1{index}",
        "createdBy": "controller",
    }


def test_without_the_leader_the_worst_member_view_stands() -> None:
    groups = group_results([entry("w1", 1, "pass", joined=3), entry("w2", 2, "fail", joined=1)])
    assert groups[0]["verdict"] == "fail"
    assert groups[0]["membersJoined"] == 1
    assert groups[0]["leaderReported"] is False
    assert group_results([{"pod": "solo", "verdict": "pass"}]) == []


def test_without_the_leader_a_failing_member_outranks_one_that_errored() -> None:
    # The one verdict order (preflight_contract.verdicts): "2 of 3 members joined" says more
    # than a member whose group check crashed, as in the checker's own report.
    history = [entry("w1", 1, "error", joined=3), entry("w2", 2, "fail", joined=1)]
    assert group_results(history)[0]["membersJoined"] == 1
    assert group_results(history)[0]["verdict"] == "fail"
    # What is not a verdict (a skipped group check, nothing) never replaces one.
    history = [entry("w1", 1, "warn", joined=3), entry("w2", 2, "skip", joined=1)]
    assert group_results(history)[0]["verdict"] == "warn"
