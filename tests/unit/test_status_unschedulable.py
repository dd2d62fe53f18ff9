"""A vLLM pod that no node fits never runs its check: the GPUValidation says why (REASON
`unschedulable`, RuntimeChecksPassed Unknown/Unschedulable with kube-scheduler's words and
the fix) instead of "waiting for pod results" forever."""

from __future__ import annotations

from typing import Any

from preflight_operator.core.gpuvalidation import StatusInputs, build_status
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.podresults import PodResult, unschedulable
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.static import Plan, StaticResult
from preflight_operator.core.store import PodState, Store
from preflight_operator.core.workloads import WorkloadRef

REF = WorkloadRef("ns", "Deployment", "vllm-big", "apps/v1")
PLAN = Plan(tp=8, pp=1, dp=1, dp_local=1, gpus_needed=8, container="vllm")
WHY = (
    "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. no new claims to deallocate,"
    " preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
)


def inputs(**overrides: Any) -> StatusInputs:
    base: dict[str, Any] = {
        "ref": REF,
        "generation": 1,
        "static": StaticResult("pass", plan=PLAN, gpus_requested=8),
        "static_checked_at": "2026-12-01T00:00:00Z",
        "policy": ResolvedPolicy("", PolicySpec()),
        "live_results": (),
        "pending_pods": 1,
        "previous": {},
        "remediation": None,
        "now": "2026-12-01T00:00:05Z",
    }
    return StatusInputs(**{**base, **overrides})


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status["conditions"]}


def test_unschedulable_pod_gives_the_reason_and_the_fix() -> None:
    status = build_status(inputs(unschedulable=[("vllm-big-abc", WHY)]))
    assert (status["runtimeVerdict"], status["reason"]) == ("pending", "unschedulable")
    runtime = conditions(status)["RuntimeChecksPassed"]
    assert (runtime["status"], runtime["reason"]) == ("Unknown", "Unschedulable")
    assert runtime["message"].startswith("pod vllm-big-abc is not scheduled, so its check")
    assert "2 Insufficient nvidia.com/gpu" in runtime["message"]
    assert "Fix: no node has that many free GPUs" in runtime["message"]
    assert conditions(status)["Ready"]["status"] == "Unknown"


def test_other_scheduling_failures_name_no_gpu_fix() -> None:
    status = build_status(
        inputs(unschedulable=[("a", "0/3 nodes are available: 3 node(s) didn't match"), ("b", "x")])
    )
    message = conditions(status)["RuntimeChecksPassed"]["message"]
    assert "pod a (and 1 more pod(s)) is not scheduled" in message
    assert "Fix: make the pod fit a node" in message


def test_without_unschedulable_pods_it_still_waits() -> None:
    status = build_status(inputs())
    assert status["reason"] == "waiting for pod results"
    assert conditions(status)["RuntimeChecksPassed"]["reason"] == "WaitingForPods"


def test_a_result_wins_over_an_old_scheduling_failure() -> None:
    passed = PodResult("p", "u", "n", "pass", 0, 0, "2026-12-01T00:00:03Z")
    status = build_status(inputs(live_results=[passed], pending_pods=0, unschedulable=[("q", WHY)]))
    assert status["runtimeVerdict"] == "pass"
    assert status["reason"] == ""


def _pod(node: str = "", **cond: str) -> dict[str, Any]:
    return {
        "spec": {"nodeName": node} if node else {},
        "status": {"conditions": [cond] if cond else []},
    }


def test_unschedulable_reads_the_pod_scheduled_condition() -> None:
    assert (
        unschedulable(
            _pod(type="PodScheduled", status="False", reason="Unschedulable", message=WHY)
        )
        == WHY
    )
    assert unschedulable(_pod(type="PodScheduled", status="False", reason="SchedulingGated")) == ""
    assert unschedulable(_pod(type="PodScheduled", status="True")) == ""
    assert (
        unschedulable(_pod("n1", type="PodScheduled", status="False", reason="Unschedulable")) == ""
    )
    assert unschedulable({}) == ""


def test_store_reports_unschedulable_pods_and_the_change() -> None:
    store = Store()
    key = REF.key
    assert store.put_pod(key, PodState("p", "u", "", None), 0.0) is True
    assert store.put_pod(key, PodState("p", "u", "", None, unschedulable=WHY), 1.0) is True
    assert store.unschedulable_pods(key) == [("p", WHY)]
    assert store.put_pod(key, PodState("p", "u", "", None, unschedulable=WHY), 2.0) is False
    assert store.put_pod(key, PodState("p", "u", "n1", None), 3.0) is True  # bound later
    assert store.unschedulable_pods(key) == []
