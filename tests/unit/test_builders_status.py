"""The GPUValidation status builder: verdicts, conditions, reasons, bounded history."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from preflight_operator.core.gpuvalidation import (
    StatusInputs,
    build_status,
    desired_object,
    merge_history,
    overall_status,
)
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.podresults import PodResult
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.reconcilesteps import replacing_merge_patch, without_nulls
from preflight_operator.core.rules.vocabulary import Finding
from preflight_operator.core.static import Plan, StaticResult
from preflight_operator.core.store import StoredValidation
from preflight_operator.core.workloads import WorkloadRef

REF = WorkloadRef("ns", "Deployment", "vllm", "apps/v1")
PLAN = Plan(tp=2, pp=1, dp=1, dp_local=1, gpus_needed=2, container="vllm")
PASSING = StaticResult("pass", plan=PLAN, gpus_requested=2)
FAILING = StaticResult(
    "fail",
    findings=(Finding("gpu-count-too-low", "fail", "needs 4", "spec.x", "request 4"),),
    plan=dataclasses.replace(PLAN, tp=4, gpus_needed=4),
    gpus_requested=2,
)


def result(
    uid: str, verdict: str = "pass", at: str = "2026-01-01T00:00:01Z", **kw: Any
) -> PodResult:
    return PodResult(
        pod=f"pod-{uid}",
        uid=uid,
        node="n",
        verdict=verdict,
        exit_code=0,
        restarts=kw.pop("restarts", 0),
        checked_at=at,
        **kw,
    )


def inputs(**overrides: Any) -> StatusInputs:
    base = StatusInputs(
        ref=REF,
        generation=3,
        static=PASSING,
        static_checked_at="2026-01-01T00:00:00Z",
        policy=ResolvedPolicy("", PolicySpec()),
        live_results=(),
        pending_pods=0,
        previous={},
        remediation=None,
        now="2026-01-01T00:00:05Z",
    )
    return dataclasses.replace(base, **overrides)


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_pending_until_a_pod_reports_then_pass() -> None:
    pending = build_status(inputs(pending_pods=1))
    assert (pending["staticVerdict"], pending["runtimeVerdict"]) == ("pass", "pending")
    assert pending["gpus"] == "2/2"
    assert pending["plan"]["tp"] == 2
    assert conditions(pending)["Ready"] == ("Unknown", "ChecksIncomplete")
    done = build_status(inputs(live_results=[result("a")], previous=pending))
    assert done["runtimeVerdict"] == "pass"
    assert conditions(done) == {
        "StaticChecksPassed": ("True", "Passed"),
        "RuntimeChecksPassed": ("True", "Passed"),
        "Ready": ("True", "ChecksPassed"),
    }
    assert done["runtime"]["podsChecked"] == 1
    assert done["runtime"]["lastCheckedAt"]
    assert all(c["observedGeneration"] == 3 for c in done["conditions"])


def test_a_failing_pod_fails_the_workload_and_its_reason_leads() -> None:
    failed = result("b", "fail", reason="gpu-count", message="sees 2", remediation="ask for 4")
    status = build_status(inputs(live_results=[result("a"), failed]))
    assert status["runtimeVerdict"] == "fail"
    assert status["reason"] == "gpu-count"
    assert conditions(status)["RuntimeChecksPassed"] == ("False", "CheckFailed")
    message = next(c for c in status["conditions"] if c["type"] == "RuntimeChecksPassed")["message"]
    assert "pod-b" in message
    assert "Fix: ask for 4" in message
    assert overall_status(PASSING, status["runtimeVerdict"]) == "fail"


def test_static_failure_is_the_reason_while_the_runtime_is_fine() -> None:
    status = build_status(inputs(static=FAILING, live_results=[result("a")]))
    assert (status["staticVerdict"], status["reason"], status["gpus"]) == (
        "fail",
        "gpu-count-too-low",
        "2/4",
    )
    assert conditions(status)["StaticChecksPassed"][0] == "False"
    assert status["static"]["findings"][0]["fix"] == "request 4"
    assert conditions(status)["Ready"] == ("False", "ChecksFailed")


def test_transition_times_move_only_on_a_status_change() -> None:
    first = build_status(inputs(pending_pods=1, now="T1"))
    same = build_status(inputs(pending_pods=1, previous=first, now="T2"))
    assert [c["lastTransitionTime"] for c in same["conditions"]] == ["T1", "T1", "T1"]
    changed = build_status(inputs(live_results=[result("a")], previous=same, now="T3"))
    times = {c["type"]: c["lastTransitionTime"] for c in changed["conditions"]}
    assert times == {"StaticChecksPassed": "T1", "RuntimeChecksPassed": "T3", "Ready": "T3"}


def test_a_workload_without_pods_keeps_its_last_known_result() -> None:
    failed = build_status(inputs(live_results=[result("a", "fail", reason="shm")]))
    gone = build_status(inputs(live_results=[], previous=failed))
    assert gone["runtimeVerdict"] == "fail"
    assert gone["reason"] == "shm"


def test_history_is_newest_first_one_entry_per_pod_and_bounded() -> None:
    previous = [result(str(i), at=f"2026-01-01T00:00:{i:02d}Z").to_status() for i in range(10)]
    rerun = result("3", "fail", at="2026-01-01T00:01:00Z", restarts=1)
    merged = merge_history(previous, [rerun], limit=5)
    assert [e["uid"] for e in merged] == ["3", "9", "8", "7", "6"]
    assert merged[0]["restarts"] == 1
    status = build_status(
        inputs(live_results=[rerun], previous={"runtime": {"pods": previous}}, history_limit=5)
    )
    assert len(status["runtime"]["pods"]) == 5


def test_rebuilding_from_the_stored_status_is_stable() -> None:
    first = build_status(inputs(live_results=[result("a")]))
    again = build_status(inputs(live_results=[result("a")], previous=first, now="later"))
    assert again == first


def test_a_status_kept_packed_reads_back_equal_so_an_unchanged_plan_writes_nothing() -> None:
    """The store keeps statuses packed (StoredValidation): what it reads back must equal
    what was built, or every reconcile would write the status again."""
    results = [result("a"), result("b", "fail", restarts=2)]
    for static in (PASSING, FAILING):
        built = build_status(inputs(live_results=results, static=static, pending_pods=1))
        stored = StoredValidation("gv", "uid", built, 7)
        assert stored.status == built
        again = build_status(inputs(live_results=results, static=static, pending_pods=1,
                                    previous=stored.status, now="later"))  # fmt: skip
        assert again == built
        assert replacing_merge_patch(stored.status, again) == built  # nothing to remove
        copy = stored.status
        copy["runtimeVerdict"] = "changed"
        assert stored.status == built  # a read is a copy
        assert stored.same_status(StoredValidation("gv", "uid", json.loads(json.dumps(built))))
        assert not stored.same_status(StoredValidation("gv", "uid", copy))


def test_the_merge_patch_leaves_exactly_the_desired_status() -> None:
    old = {"a": 1, "runtime": {"pods": [1], "lastCheckedAt": "x"}, "gone": True}
    new = {"a": 1, "runtime": {"pods": [2]}}
    full = replacing_merge_patch(old, new)
    assert full == {"a": 1, "runtime": {"pods": [2], "lastCheckedAt": None}, "gone": None}
    assert without_nulls(full) == new


def test_desired_object_is_owned_without_blocking_deletion() -> None:
    obj = desired_object(REF, "uid-1")
    owner = obj["metadata"]["ownerReferences"][0]
    assert owner == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "vllm",
        "uid": "uid-1",
        "controller": False,
        "blockOwnerDeletion": False,
    }
    assert obj["metadata"]["name"] == "deployment-vllm"
    assert obj["spec"]["workloadRef"]["uid"] == "uid-1"


def test_findings_are_capped_each_and_in_number_with_a_summary_of_the_rest() -> None:
    from preflight_operator.core.analysis import RulesAnalyser

    pad = 100_000  # each finding quotes the value twice: 9 of them made a 1.8 MB status
    containers = [
        {
            "name": f"vllm-{i}",
            "image": "vllm/vllm-openai:v0.11.0",
            "command": ["vllm", "serve", "m", "--tensor-parallel-size", "4" + "x" * pad],
            "resources": {"limits": {"nvidia.com/gpu": 2}},
        }
        for i in range(30)
    ]
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "huge", "namespace": "ns"},
        "spec": {"template": {"spec": {"containers": containers}}},
    }
    static = RulesAnalyser().analyse(body, PolicySpec(action="Warn"))
    assert len(static.findings) == 20
    assert all(len(f.message) <= 1000 and len(f.fix) <= 1000 for f in static.findings)
    summary = static.findings[-1]
    assert summary.id == "more-findings"
    assert summary.message.startswith("11 more finding(s) not shown (11 failure(s))")
    assert summary.severity == "fail"
    status = build_status(inputs(static=static))
    assert len(json.dumps(status)) < 64 * 1024


def test_the_whole_status_is_bounded_keeping_the_newest_pods() -> None:
    from preflight_operator.core.gpuvalidation import STATUS_LIMIT, bound_status

    findings = tuple(Finding(f"r{i}", "warn", "m" * 1000, "f" * 300, "x" * 1000) for i in range(20))
    big = StaticResult("warn", findings=findings, plan=PLAN, gpus_requested=2)
    live = [
        result(f"u{i:02d}", "fail", at=f"2026-01-01T00:00:{i:02d}Z", message="y" * 300)
        for i in range(20)
    ]
    status = build_status(inputs(static=big, live_results=live, history_limit=20))
    assert len(json.dumps(status).encode()) <= STATUS_LIMIT
    small = bound_status(status, limit=20_000)
    assert len(json.dumps(small, separators=(",", ":")).encode()) <= 20_000
    pods = small["runtime"]["pods"]
    assert pods
    assert pods[0]["uid"] == "u19"  # newest kept
    assert all(len(f["message"]) <= 200 for f in small["static"]["findings"])
    assert bound_status(status) is status  # what fits is written as built


def test_pods_that_run_without_the_check_are_named_with_the_fix() -> None:
    status = build_status(inputs(not_injected=["vllm-1", "vllm-2"], pending_pods=0))
    runtime = next(c for c in status["conditions"] if c["type"] == "RuntimeChecksPassed")
    assert (runtime["status"], runtime["reason"]) == ("Unknown", "NotInjected")
    assert "2 pod(s) run without the preflight check (vllm-1, vllm-2)" in runtime["message"]
    assert "kubectl rollout restart deployment/vllm -n ns" in runtime["message"]
    assert status["reason"] == "not-injected"
    assert status["runtimeVerdict"] == "pending"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "Unknown"
    # once an injected pod reports, its result is the runtime verdict again
    again = build_status(inputs(not_injected=["vllm-1"], live_results=(result("u1"),)))
    runtime = next(c for c in again["conditions"] if c["type"] == "RuntimeChecksPassed")
    assert runtime["reason"] == "Passed"


def test_not_injected_is_announced_once() -> None:
    from preflight_operator.core.reconcilesteps import reconcile_steps
    from preflight_operator.core.store import WorkloadState

    workload = WorkloadState(
        ref=REF, uid="u", generation=1, labels={}, annotations={}, replicas=2, paused=False,
        static=PASSING, static_checked_at="2026-01-01T00:00:00Z",
        policy=ResolvedPolicy("", PolicySpec()), static_key=None,
    )  # fmt: skip
    first = reconcile_steps(workload, (), 0, {}, history_limit=10, now="t", not_injected=["p"])
    assert [e.reason for e in first.events] == ["NotInjected"]
    assert "p" in first.events[0].message
    second = reconcile_steps(
        workload, (), 0, first.status, history_limit=10, now="t", not_injected=["p"]
    )
    assert [e.reason for e in second.events] == []
