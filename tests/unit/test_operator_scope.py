"""Scope and forgetting (issue 34): the ``injected`` label is anyone's to write, so it alone
gets no state; a bare pod that is gone is forgotten, and a 404 ends its key."""

from __future__ import annotations

import copy
import json
from typing import Any

from test_builders_status import inputs
from test_operator_controller import NS, FakeApi, controller, deployment, run, settle

from preflight_operator.core import constants
from preflight_operator.core.gpuvalidation import STATUS_LIMIT, bound_status, build_status
from preflight_operator.core.rules.vocabulary import Finding
from preflight_operator.core.static import StaticResult
from preflight_operator.core.workloads import DEPLOYMENT

ELSEWHERE = "tenant-b"  # a namespace that never opted in


def bare_pod(name: str, namespace: str = NS, **labels: str) -> dict[str, Any]:
    template = copy.deepcopy(deployment()["spec"]["template"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": {constants.LABEL_INJECTED: "true", **labels},
        },
        "spec": {**template["spec"], "nodeName": "n1"},
        "status": {},
    }


def test_labelled_pods_in_a_namespace_that_never_opted_in_get_no_state() -> None:
    async def scenario() -> tuple[FakeApi, Any]:
        api = FakeApi()
        ctl = controller(api)
        for i in range(5):
            ctl.observe_pod(bare_pod(f"p{i}", ELSEWHERE), deleted=False)
        await settle(ctl)
        await ctl.stop()
        return api, ctl

    api, ctl = run(scenario())
    assert api.gpuvals == {}
    assert ctl.store.workloads == {}
    assert ctl.store.pods == {}


def test_a_pods_own_opt_in_counts_unless_its_namespace_opted_out() -> None:
    """The webhooks' object entries: a pod labelled inject=enabled, in a namespace that
    is not labelled disabled."""

    async def scenario() -> FakeApi:
        api = FakeApi()
        ctl = controller(api)
        ctl.scope.observe_namespace("opted-out", opted_in=False, opted_out=True)
        enabled = {constants.LABEL_INJECT: constants.INJECT_ENABLED}
        ctl.observe_pod(bare_pod("mine", ELSEWHERE, **enabled), deleted=False)
        ctl.observe_pod(bare_pod("theirs", "opted-out", **enabled), deleted=False)
        await settle(ctl)
        await ctl.stop()
        return api

    api = run(scenario())
    assert set(api.gpuvals) == {(ELSEWHERE, "pod-mine")}


def test_a_deleted_bare_pod_is_forgotten_and_its_gpuvalidation_not_made_again() -> None:
    """Before: the pod's workload stayed in the store; the garbage collector deleted the
    GPUValidation (owned by the pod), whose deletion queued the key, which made it again,
    in a loop (19 retries/s for 52 keys)."""

    async def scenario() -> tuple[FakeApi, Any, list[Any]]:
        api = FakeApi()
        ctl = controller(api)
        pod = bare_pod("solo")
        ctl.observe_pod(pod, deleted=False)
        await settle(ctl)
        made = copy.deepcopy(api.gpuvals)
        ctl.observe_pod(pod, deleted=True)
        gone = api.gpuvals.pop((NS, "pod-solo"))  # the garbage collector
        ctl.validations.observe(gone, deleted=True)
        await settle(ctl)
        await ctl.stop()
        return api, ctl, list(made)

    api, ctl, made = run(scenario())
    assert made == [(NS, "pod-solo")]
    assert api.gpuvals == {}
    assert ctl.store.workloads == {}
    assert [w for w in api.writes if w[0] == "create"] == [("create", "pod-solo")]


def test_a_404_ends_the_key_of_a_gpuvalidation_collected_with_its_owner() -> None:
    """A deletion the pod watch missed: the GPUValidation's deletion makes the operator
    read the workload (FakeApi answers 404) before making it again."""

    async def scenario() -> tuple[FakeApi, Any]:
        api = FakeApi()
        ctl = controller(api)
        ctl.observe_pod(bare_pod("missed"), deleted=False)
        await settle(ctl)
        gone = api.gpuvals.pop((NS, "pod-missed"))
        ctl.validations.observe(gone, deleted=True)
        await settle(ctl)
        await ctl.stop()
        return api, ctl

    api, ctl = run(scenario())
    assert api.gpuvals == {}
    assert ctl.store.workloads == {}
    assert len([w for w in api.writes if w[0] == "create"]) == 1


def test_a_status_stays_under_its_bound_with_findings_past_the_cap_counted() -> None:
    findings = tuple(
        Finding(f"r{i}", "fail" if i % 2 else "warn", "m" * 1000, "f" * 300, "x" * 1000)
        for i in range(20)
    )
    status = build_status(inputs(static=StaticResult("fail", findings=findings)))
    assert len(json.dumps(status, separators=(",", ":"))) <= STATUS_LIMIT
    assert all(len(f["message"]) <= 200 for f in status["static"]["findings"])
    small = bound_status(status, limit=6000)
    assert len(json.dumps(small, separators=(",", ":"))) <= 6000
    listed = small["static"]["findings"]
    assert len(listed) < 20
    assert listed[-1]["id"] == "more-findings"
    assert listed[-1]["message"].startswith(f"{20 - len(listed) + 1} more finding(s)")


def test_a_deletion_seen_at_a_re_list_still_finds_the_pods_workload() -> None:
    """The pod cache keeps what a deletion needs (before: only a resourceVersion, so a pod
    deleted while the watch was down was observed without a namespace and ignored)."""
    from test_operator_controller import injected_pod

    from preflight_operator.runtime.watches import _pod_body, _pod_identity

    async def scenario() -> tuple[Any, Any]:
        api = FakeApi()
        ctl = controller(api)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        pod = injected_pod("p1", "u1")
        solo = bare_pod("solo")
        ctl.observe_pod(pod, deleted=False)
        ctl.observe_pod(solo, deleted=False)
        await settle(ctl)
        kept = {k: list(v) for k, v in ctl.store.pods.items()}
        for body in (pod, solo):
            ctl.observe_pod(_pod_body(_pod_identity(body)), deleted=True)
        await settle(ctl)
        await ctl.stop()
        return kept, ctl

    kept, ctl = run(scenario())
    assert kept == {(NS, "Deployment", "vllm-good"): ["u1"], (NS, "Pod", "solo"): ["uid-solo"]}
    assert ctl.store.pods == {}
    assert (NS, "Pod", "solo") not in ctl.store.workloads
