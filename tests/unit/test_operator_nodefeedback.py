"""Node feedback (issue 16): the pure builders of nodefeedback.py and the calls of
nodehealth.py against a small in-memory API."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from preflight_contract.check_ids import CHECKS
from preflight_operator.core import nodefeedback as nf
from preflight_operator.core.operatorconfig import NodeAccess
from preflight_operator.core.podresults import Failure, PodResult
from preflight_operator.core.verdictreuse import DeepPass
from preflight_operator.runtime.api import Conflict, NotFound
from preflight_operator.runtime.nodehealth import NODE_FEEDBACK, NODE_UNHEALTHY_GPUS, NodeFeedback
from preflight_operator.runtime.nodeproberunner import ProbeImage

GPU0 = "GPU-ea300b2e-0352-789c-6847-ce5195328e81"
GPU1 = "GPU-7b01fc6f-1b00-4d5e-8f90-a1b2c3d4e5f6"
ALL = nf.Levels(event=True, label=True, taint=True)
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def result(
    verdict: str, *failures: Failure, at: str = "2026-12-01T08:00:00Z", node: str = "n1"
) -> PodResult:
    return PodResult(
        pod="vllm-0",
        uid="u",
        node=node,
        verdict=verdict,
        exit_code=1 if verdict == "fail" else 0,
        restarts=0,
        checked_at=at,
        failures=failures,
        gpus=((0, GPU0, "0000:06:00.0"), (1, GPU1, "0000:07:00.0")),
    )


ROW_REMAP = Failure(
    "row-remap",
    "fail",
    "row remapping failed on GPU 1 (GPU-7b01fc6f, bus 0000:07:00.0): ...",
    "drain the node and have the GPU serviced (an RMA)",
)
MANIFEST = Failure("gpu-count", "fail", "CUDA sees 2 GPUs, the plan needs 4", "request 4 GPUs")


def node(**meta: Any) -> dict[str, Any]:
    taints = meta.pop("taints", [NOT_READY])
    return {
        "metadata": {"name": "n1", "uid": "node-uid", "resourceVersion": "7", **meta},
        "spec": {"taints": taints},
    }


def test_every_node_check_is_a_check_id_and_no_manifest_check_is_one() -> None:
    assert set(CHECKS) >= nf.NODE_CHECKS
    for manifest_fault in ("gpu-count", "cuda-visible-devices", "shm", "cuda-compat", "mig"):
        assert manifest_fault not in nf.NODE_CHECKS


def test_levels_are_off_unless_set_and_typos_stay_off() -> None:
    assert nf.parse_levels({}) == (nf.Levels(), [])
    assert nf.parse_levels({"nodeFeedback": {"taint": True}})[0] == nf.Levels(taint=True)
    levels, problems = nf.parse_levels({"nodeFeedback": {"taint": "yes", "event": True}})
    assert levels == nf.Levels(event=True)
    assert problems == ["spec.nodeFeedback.taint: 'yes' is not true or false; off"]


def test_a_node_failure_names_the_gpu_its_message_names() -> None:
    found = nf.finding(result("fail", ROW_REMAP, MANIFEST), "ns")
    assert found is not None
    assert found.failing == ((GPU1, ("row-remap",)),)
    assert found.pod == "ns/vllm-0"
    assert not found.passed


def test_a_node_failure_without_a_gpu_in_its_message_names_every_gpu_of_the_pod() -> None:
    ctx = Failure("context-ranks", "fail", "rank 0: cuDevicePrimaryCtxRetain failed", "drain")
    found = nf.finding(result("fail", ctx), "ns")
    assert found is not None
    assert [uuid for uuid, _ in found.failing] == sorted([GPU0, GPU1])


def test_manifest_faults_and_warnings_never_touch_the_node() -> None:
    found = nf.finding(result("fail", MANIFEST), "ns")
    assert found is not None
    assert found.failing == ()
    assert not found.passed
    assert nf.next_record(nf.Record(), found, ALL) is None
    warned = Failure("row-remap", "warn", "a row remapping waits ... GPU-7b01fc6f", "reset")
    found = nf.finding(result("warn", warned), "ns")
    assert found is not None
    assert found.failing == ()
    assert found.passed


def test_set_then_clear() -> None:
    failed = nf.finding(result("fail", ROW_REMAP), "ns")
    assert failed is not None
    record = nf.next_record(nf.Record(), failed, ALL)
    assert record is not None
    patch = nf.node_patch(node(), record, ALL)
    assert patch is not None
    assert patch["metadata"]["labels"] == {nf.KEY: "unhealthy"}
    annotation = json.loads(patch["metadata"]["annotations"][nf.KEY])
    assert annotation["gpus"] == {GPU1: ["row-remap"]}
    assert patch["spec"]["taints"] == [
        NOT_READY,
        {"key": nf.KEY, "value": "unhealthy", "effect": "NoSchedule"},
    ]
    assert patch["metadata"]["resourceVersion"] == "7"  # the taint list is replaced whole
    tainted = node(
        labels={nf.KEY: "unhealthy"},
        annotations={nf.KEY: record.to_annotation()},
        taints=patch["spec"]["taints"],
    )
    assert nf.read_record(tainted) == record
    assert nf.node_patch(tainted, record, ALL) is None  # idempotent

    passed = nf.finding(result("pass", at="2026-12-01T08:05:00Z"), "ns")
    assert passed is not None
    assert passed.passed
    # a pass under a policy that does not record on nodes clears nothing (issue 23)
    assert nf.next_record(record, passed, nf.Levels()) is None
    cleared = nf.next_record(record, passed, nf.Levels(label=True))
    assert cleared == nf.Record()
    patch = nf.node_patch(tainted, cleared, nf.Levels())
    assert patch == {
        "metadata": {
            "annotations": {nf.KEY: None},
            "labels": {nf.KEY: None},
            "resourceVersion": "7",
        },
        "spec": {"taints": [NOT_READY]},
    }


def test_an_older_run_does_not_undo_a_newer_one() -> None:
    record = nf.Record(((GPU1, ("xid",)),), "2026-12-01T09:00:00Z", "ns/new")
    old_pass = nf.finding(result("pass", at="2026-12-01T08:00:00Z"), "ns")
    assert old_pass is not None
    assert nf.next_record(record, old_pass, ALL) is None


def test_a_pass_on_other_gpus_clears_only_those() -> None:
    record = nf.Record(((GPU1, ("xid",)), ("GPU-other", ("nvlink",))), "2026-12-01T07:00:00Z")
    passed = nf.finding(result("pass"), "ns")
    assert passed is not None
    after = nf.next_record(record, passed, ALL)
    assert after is not None
    assert after.gpus == (("GPU-other", ("nvlink",)),)
    # Label and taint stay while a GPU is still recorded.
    assert nf.node_patch(node(labels={nf.KEY: "unhealthy"}), after, nf.Levels()) == {
        "metadata": {"annotations": {nf.KEY: after.to_annotation()}}
    }


def test_the_event_names_gpus_checks_and_fix() -> None:
    failed = nf.finding(result("fail", ROW_REMAP), "ns")
    assert failed is not None
    event = nf.node_event(node(), nf.Record(), nf.Record(), failed, ALL, now="t")
    assert event is not None
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Node",
        "name": "n1",
        "uid": "node-uid",
    }
    assert event["metadata"]["namespace"] == "default"
    assert (event["type"], event["reason"]) == ("Warning", "GPUUnhealthy")
    assert f"{GPU1}: row-remap" in event["message"]
    assert "Fix: drain the node" in event["message"]
    assert "until a check passes here" in event["message"]
    assert nf.node_event(node(), nf.Record(), nf.Record(), failed, nf.Levels(), now="t") is None


class FakeApi:
    """GET/PATCH of one Node and Event creation, as the API server answers them."""

    def __init__(self, obj: dict[str, Any] | None, conflicts: int = 0) -> None:
        self.node = obj
        self.conflicts = conflicts
        self.patches: list[dict[str, Any]] = []
        self.status_patches: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []

    async def get(self, path: str) -> dict[str, Any]:
        if self.node is None:
            raise NotFound(404, "nodes not found")
        return json.loads(json.dumps(self.node))

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        if path == "/api/v1/nodes/n1/status":  # a strategic merge: conditions by type
            assert method == "PATCH"
            assert kwargs["content_type"] == nf.STRATEGIC_MERGE_PATCH
            assert self.node is not None
            status = self.node.setdefault("status", {})
            for condition in kwargs["body"]["status"]["conditions"]:
                kept = [c for c in status.get("conditions", []) if c["type"] != condition["type"]]
                status["conditions"] = [*kept, condition]
            self.status_patches.append(kwargs["body"])
            return self.node
        assert (method, path) == ("PATCH", "/api/v1/nodes/n1")
        if self.conflicts:
            self.conflicts -= 1
            raise Conflict(409, "the object has been modified")
        patch = kwargs["body"]
        assert self.node is not None
        meta = self.node["metadata"]
        for field in ("labels", "annotations"):
            for key, value in (patch["metadata"].get(field) or {}).items():
                if value is None:
                    meta.setdefault(field, {}).pop(key, None)
                else:
                    meta.setdefault(field, {})[key] = value
        if "spec" in patch:
            self.node["spec"]["taints"] = patch["spec"]["taints"]
        self.patches.append(patch)
        return self.node

    async def create_event(self, event: dict[str, Any]) -> dict[str, Any]:
        self.events.append(event)
        return event


def _value(metric: Any, **labels: str) -> float:
    return float(metric.labels(**labels)._value.get())


def test_the_shell_sets_clears_counts_and_retries_a_conflict() -> None:
    api = FakeApi(node(), conflicts=1)
    feedback = NodeFeedback(api, now=lambda: "2026-12-01T08:00:01Z")  # type: ignore[arg-type]
    failed = nf.finding(result("fail", ROW_REMAP), "ns")
    passed = nf.finding(result("pass", at="2026-12-01T08:05:00Z"), "ns")
    assert failed is not None
    assert passed is not None
    tainted_before = _value(NODE_FEEDBACK, node="n1", action="taint")

    asyncio.run(feedback.apply(failed, ALL))
    assert api.node is not None
    assert api.node["metadata"]["labels"][nf.KEY] == "unhealthy"
    assert any(t["key"] == nf.KEY for t in api.node["spec"]["taints"])
    assert _value(NODE_UNHEALTHY_GPUS, node="n1") == 1
    assert _value(NODE_FEEDBACK, node="n1", action="taint") == tainted_before + 1
    assert [e["reason"] for e in api.events] == ["GPUUnhealthy"]

    asyncio.run(feedback.apply(passed, ALL))
    assert nf.KEY not in api.node["metadata"]["labels"]
    assert nf.KEY not in api.node["metadata"]["annotations"]
    assert api.node["spec"]["taints"] == [NOT_READY]
    assert _value(NODE_UNHEALTHY_GPUS, node="n1") == 0
    assert [e["reason"] for e in api.events] == ["GPUUnhealthy", "GPUHealthy"]


def test_the_shell_ignores_failures_without_a_level_and_missing_nodes() -> None:
    api = FakeApi(None)
    feedback = NodeFeedback(api, now=lambda: "t")  # type: ignore[arg-type]
    failed = nf.finding(result("fail", ROW_REMAP), "ns")
    assert failed is not None
    feedback.observe(failed, nf.Levels())
    assert feedback._queue.empty()
    asyncio.run(feedback.apply(failed, ALL))  # the node is gone: nothing, no error
    assert api.patches == []
    assert api.events == []


@pytest.mark.parametrize("verdict", ["pass", "warn"])
def test_a_pass_on_a_node_known_clean_costs_no_call(verdict: str) -> None:
    api = FakeApi(node())
    feedback = NodeFeedback(api, now=lambda: "t")  # type: ignore[arg-type]
    passed = nf.finding(result(verdict), "ns")
    assert passed is not None
    asyncio.run(feedback.apply(passed, nf.Levels()))
    feedback.observe(passed, nf.Levels())
    assert feedback._queue.empty()


PROBE = ProbeImage("vllm-preflight", "check@sha256:" + "c" * 64, "IfNotPresent", 120)


def test_passes_are_read_only_where_a_record_can_exist() -> None:
    feedback = NodeFeedback(FakeApi(node()), now=lambda: "t", probe=PROBE)  # type: ignore[arg-type]
    passed = nf.finding(result("pass", node="elsewhere"), "ns")
    assert passed is not None
    feedback.observe(passed, nf.Levels())
    assert feedback._queue.empty()  # its policy records nothing on nodes: no read, no clear
    feedback.observe(passed, nf.Levels(event=True))
    assert feedback._queue.empty()  # an Event is no record either
    feedback.observe(passed, nf.Levels(taint=True))
    assert feedback._queue.qsize() == 1


def test_a_failure_naming_no_gpu_is_cleared_only_by_a_run_that_saw_every_gpu() -> None:
    """Issue 23: one tenant's pass on one GPU never clears what another run found on the
    node as a whole (a report without GPUs is recorded as the unknown GPU)."""
    record = nf.Record(((nf.UNKNOWN_GPU, ("fabric",)),), "2026-12-01T07:00:00Z", "a/p")
    passed = nf.finding(result("pass"), "b")  # saw 2 GPUs
    assert passed is not None
    assert nf.next_record(record, passed, ALL, node_gpus=8) is None
    assert nf.next_record(record, passed, ALL, node_gpus=None) is None
    assert nf.next_record(record, passed, ALL, node_gpus=2) == nf.Record()


def test_failures_of_several_runs_are_a_union_by_gpu() -> None:
    first = nf.finding(result("fail", ROW_REMAP), "a")
    assert first is not None
    record = nf.next_record(nf.Record(), first, ALL)
    assert record is not None
    other = Failure("xid", "fail", f"XID 79 on GPU 0 ({GPU0[:12]})", "drain")
    second = nf.finding(result("fail", other, at="2026-12-01T08:01:00Z"), "b")
    assert second is not None
    both = nf.next_record(record, second, ALL)
    assert both is not None
    assert dict(both.gpus) == {GPU1: ("row-remap",), GPU0: ("xid",)}


def test_a_deep_record_on_the_node_is_an_empty_record_not_a_crash() -> None:
    deep = "[" * 5000 + "]" * 5000
    assert nf.read_record(node(annotations={nf.KEY: deep})) == nf.Record()


KUBELET_READY = {"type": "Ready", "status": "True", "reason": "KubeletReady"}


def conditions(obj: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    assert obj is not None
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def test_the_condition_is_off_unless_set_and_a_typo_stays_off() -> None:
    assert nf.parse_levels({"nodeFeedback": {"condition": True}})[0] == nf.Levels(condition=True)
    assert nf.Levels(condition=True).records  # the annotation is what the clear works from
    levels, problems = nf.parse_levels({"nodeFeedback": {"condition": "on"}})
    assert levels == nf.Levels()
    assert problems == ["spec.nodeFeedback.condition: 'on' is not true or false; off"]


def test_the_condition_is_set_false_by_a_gpu_fault_and_true_by_a_later_pass() -> None:
    only = nf.Levels(condition=True)
    api = FakeApi({**node(), "status": {"conditions": [KUBELET_READY]}})
    feedback = NodeFeedback(api, now=lambda: "2026-12-01T08:00:01Z")  # type: ignore[arg-type]
    failed = nf.finding(result("fail", ROW_REMAP), "ns")
    passed = nf.finding(result("pass", at="2026-12-01T08:05:00Z"), "ns")
    assert failed is not None
    assert passed is not None

    asyncio.run(feedback.apply(failed, only))
    ours = conditions(api.node)[nf.CONDITION]
    assert (ours["status"], ours["reason"]) == ("False", "GPUCheckFailed")
    assert f"pod ns/vllm-0 failed on this node's GPUs ({GPU1}: row-remap)" in ours["message"]
    assert ours["lastTransitionTime"] == "2026-12-01T08:00:01Z"
    assert conditions(api.node)["Ready"] == KUBELET_READY  # the kubelet's own, untouched
    assert api.node is not None
    assert nf.KEY in api.node["metadata"]["annotations"]  # the record the clear works from
    assert nf.KEY not in api.node["metadata"].get("labels", {})  # no label level
    assert [t for t in api.node["spec"]["taints"] if t["key"] == nf.KEY] == []

    asyncio.run(feedback.apply(failed, only))  # the same again: no second status write
    assert len(api.status_patches) == 1

    asyncio.run(feedback.apply(passed, only))
    ours = conditions(api.node)[nf.CONDITION]
    assert (ours["status"], ours["reason"]) == ("True", "GPUCheckPassed")
    assert ours["message"].endswith("pod ns/vllm-0 passed on this node (2026-12-01T08:05:00Z)")
    assert nf.KEY not in api.node["metadata"]["annotations"]


def test_no_condition_level_no_status_write_and_a_clean_node_gets_none() -> None:
    api = FakeApi(node())
    feedback = NodeFeedback(api, now=lambda: "t")  # type: ignore[arg-type]
    failed = nf.finding(result("fail", ROW_REMAP), "ns")
    passed = nf.finding(result("pass", at="2026-12-01T08:05:00Z"), "ns")
    assert failed is not None
    assert passed is not None
    asyncio.run(feedback.apply(failed, nf.Levels(label=True)))
    asyncio.run(feedback.apply(passed, nf.Levels(label=True)))
    assert api.status_patches == []
    clean = FakeApi(node())
    asyncio.run(NodeFeedback(clean, now=lambda: "t").apply(passed, nf.Levels(condition=True)))  # type: ignore[arg-type]
    assert clean.status_patches == []  # a pass where nothing failed writes nothing


def test_a_condition_we_set_is_cleared_by_a_pass_under_any_recording_level() -> None:
    failed = nf.finding(result("fail", ROW_REMAP), "ns")
    passed = nf.finding(result("pass", at="2026-12-01T08:05:00Z"), "ns")
    assert failed is not None
    assert passed is not None
    record = nf.next_record(nf.Record(), failed, nf.Levels(condition=True))
    assert record is not None
    set_false = nf.condition_patch(node(), record, failed, nf.Levels(condition=True), now="t1")
    assert set_false is not None
    failing = {**node(), "status": set_false["status"]}
    # a later pass under a policy that records with the label only still clears it
    cleared = nf.next_record(record, passed, nf.Levels(label=True))
    assert cleared == nf.Record()
    patch = nf.condition_patch(failing, cleared, passed, nf.Levels(label=True), now="t2")
    assert patch is not None
    (condition,) = patch["status"]["conditions"]
    assert (condition["status"], condition["lastTransitionTime"]) == ("True", "t2")
    # and a pass under a policy that does not record clears nothing (issue 23)
    assert nf.next_record(record, passed, nf.Levels(event=True)) is None


# What the RBAC grants (config.NodeAccess, the chart's nodeFeedback values): CI's run of
# 2026-12-02 saw the chart's operator GET a Node it had no rights on (a 403 logged for a
# leftover policy's deep pass); a level not granted is now never attempted, and named once
# in the policy's Valid condition instead.
NO_NODES = NodeAccess(write=False, status=False)
NO_STATUS = NodeAccess(write=True, status=False)


def test_no_rights_on_nodes_no_level_and_no_call() -> None:
    feedback = NodeFeedback(FakeApi(node()), now=lambda: "t", access=NO_NODES)  # type: ignore[arg-type]
    failed = nf.finding(result("fail", ROW_REMAP), "ns")
    assert failed is not None
    feedback.observe(failed, ALL)
    assert feedback._queue.empty()
    assert nf.granted(ALL, NodeAccess()) == ALL
    assert nf.granted(nf.Levels(taint=True, condition=True), NO_STATUS) == nf.Levels(taint=True)


def test_no_rights_on_nodes_keeps_a_deep_pass_in_memory_only() -> None:
    api = FakeApi(node())
    feedback = NodeFeedback(api, now=lambda: "t", access=NO_NODES)  # type: ignore[arg-type]
    passed = DeepPass(
        namespace="ns", key="k", digest="sha256:" + "a" * 64, plan="tp1", pod="ns/p",
        at="2026-12-01T08:00:00Z", workload="deployment.vllm",
    )  # fmt: skip
    feedback.record_deep_pass("n1", passed)
    assert feedback._queue.empty()  # nothing to write: no GET the RBAC would refuse
    assert feedback.deep_passes("ns") == {"n1": [passed]}


def test_the_policy_names_a_level_the_rbac_does_not_grant() -> None:
    spec = {"nodeFeedback": {"taint": True, "condition": True}}
    assert nf.policy_problems(spec, NodeAccess()) == []
    [problem] = nf.policy_problems(spec, NO_NODES)
    assert problem.field == "spec.nodeFeedback"
    assert "nodeFeedback.enabled=true" in problem.message
    [problem] = nf.policy_problems(spec, NO_STATUS)
    assert problem.field == "spec.nodeFeedback.condition"
    assert "nodeFeedback.condition=true" in problem.message
    assert nf.policy_problems({"nodeFeedback": {"taint": True}}, NO_STATUS) == []
    assert nf.policy_problems({}, NO_NODES) == []  # asks for nothing: nothing to say
    [typo] = nf.policy_problems({"nodeFeedback": {"taint": "yes"}}, NodeAccess())
    assert "is not true or false" in typo.message


def test_a_tenants_fault_only_requests_a_probe_and_changes_nothing() -> None:
    """Issue 34: a tenant's image printing an ECC failure tainted a shared node. Before the
    fix apply() patched the node here; now the report requests the operator's probe."""
    api = FakeApi(node())
    feedback = NodeFeedback(api, now=lambda: "t", probe=PROBE)  # type: ignore[arg-type]
    failed = nf.finding(result("fail", ROW_REMAP), "ns")
    assert failed is not None
    assert feedback.probes is not None
    asyncio.run(feedback.apply(failed, ALL, confirmed=False))
    assert api.patches == []
    assert api.events == []
    assert api.status_patches == []
    assert feedback.probes.pending() == {"n1": ALL}
    # the probe agrees: now the node changes
    asyncio.run(feedback.apply(failed, ALL, confirmed=True))
    assert any(t["key"] == nf.KEY for t in api.node["spec"]["taints"])  # type: ignore[index]


def test_a_tenants_pass_naming_the_quarantined_gpus_clears_nothing() -> None:
    """Issue 34: another tenant's pass naming the GPU UUIDs cleared a real quarantine."""
    record = nf.Record(((GPU1, ("ecc",)),), "2026-12-01T07:00:00Z", "a/p")
    api = FakeApi(node(annotations={nf.KEY: record.to_annotation()}))
    feedback = NodeFeedback(api, now=lambda: "t", probe=PROBE)  # type: ignore[arg-type]
    passed = nf.finding(result("pass"), "b")
    assert passed is not None
    assert feedback.probes is not None
    asyncio.run(feedback.apply(passed, nf.Levels(taint=True), confirmed=False))
    assert api.patches == []
    assert feedback.probes.pending() == {"n1": nf.Levels(taint=True)}
    # a claim that would change nothing (the fault is recorded already) costs no probe
    known = nf.Record(((GPU1, ("row-remap",)),), "2026-12-01T07:00:00Z", "a/p")
    api = FakeApi(node(annotations={nf.KEY: known.to_annotation()}))
    again = NodeFeedback(api, now=lambda: "t", probe=PROBE)  # type: ignore[arg-type]
    failed = nf.finding(result("fail", ROW_REMAP), "ns")
    assert failed is not None
    assert again.probes is not None
    asyncio.run(again.apply(failed, nf.Levels(taint=True), confirmed=False))
    assert again.probes.pending() == {}


def test_without_a_probe_no_report_reaches_a_node() -> None:
    feedback = NodeFeedback(FakeApi(node()), now=lambda: "t")  # type: ignore[arg-type]
    failed = nf.finding(result("fail", ROW_REMAP), "ns")
    assert failed is not None
    feedback.observe(failed, ALL)
    assert feedback._queue.empty()
    assert feedback.probes is None
