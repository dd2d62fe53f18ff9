"""The operator's audit (issue 29 item 1): a PreflightPolicy created or changed re-judges
the workloads that exist; its status counts and names what Enforce would deny or warn, and
each GPUValidation says what admission answers for its workload now and under Enforce."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from test_loadtime import crd_schema, undeclared
from test_operator_controller import NS, FakeApi, controller, deployment, run, settle

from preflight_contract import actions
from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.policyaudit import (
    PolicyAudit,
    admission_section,
    audit_policies,
    audit_status,
)
from preflight_operator.core.workloads import DEPLOYMENT, ref_of
from preflight_operator.runtime import policywatch

BAD = "bad-tp4-deployment.yaml"  # Deployment vllm-bad: asks for fewer GPUs than TP needs


def judged(name: str, action: str = actions.AUDIT) -> tuple[Any, Any, ResolvedPolicy]:
    body = deployment(name)
    policy = ResolvedPolicy("rollout", PolicySpec(action=action))
    static = RulesAnalyser().analyse(body, policy.spec)
    return ref_of(body, DEPLOYMENT), static, policy


def test_a_failing_workload_is_admitted_under_audit_and_denied_under_enforce() -> None:
    ref, static, policy = judged(BAD)
    section = admission_section(static, policy, ref)
    assert (section["answer"], section["underEnforce"]) == ("admit", "deny")
    assert "cannot run on the GPUs it requests" in section["message"]
    ref, static, policy = judged("good-tp2-deployment.yaml")
    assert admission_section(static, policy, ref) == {"answer": "admit", "underEnforce": "admit"}


def test_counts_per_policy_name_the_workloads_and_skip_the_default_policy() -> None:
    bad, good = judged(BAD), judged("good-tp2-deployment.yaml")
    default = (bad[0], bad[1], ResolvedPolicy("", PolicySpec()))
    audits = audit_policies([bad, good, default, (good[0], None, good[2])])
    assert audits == {"rollout": PolicyAudit(would_deny=("Deployment/vllm-bad",), warned=())}


def test_last_audit_moves_only_when_the_result_or_the_generation_does() -> None:
    """The echo of our own status write must write nothing (no write loop)."""
    audit = PolicyAudit(would_deny=("Deployment/a",))
    first = audit_status({}, audit, 2, "2026-01-01T00:00:00Z")
    assert first["lastAudit"] == "2026-01-01T00:00:00Z"
    again = audit_status(first, audit, 2, "2026-01-01T00:05:00Z")
    assert again == first
    moved = audit_status(first, PolicyAudit(), 2, "2026-01-01T00:06:00Z")
    assert (moved["wouldDeny"], moved["lastAudit"]) == (0, "2026-01-01T00:06:00Z")
    assert audit_status(first, audit, 3, "2026-01-01T00:07:00Z")["lastAudit"] != first["lastAudit"]


def test_names_are_bounded_whatever_the_namespace_holds() -> None:
    audit = PolicyAudit(would_deny=tuple(f"Deployment/w{i:03d}" for i in range(500)))
    status = audit_status({}, audit, 1, "2026-01-01T00:00:00Z")
    assert status["wouldDeny"] == 500
    assert len(status["wouldDenyWorkloads"]) == 20


class ListingApi(FakeApi):
    """Lists the namespace's Deployments too (a policy change re-reads them)."""

    def __init__(self) -> None:
        super().__init__()
        self.deployments: list[dict[str, Any]] = []

    async def list_pages(self, path: str, params: Any = None) -> Any:
        if path.endswith("/deployments"):
            yield [copy.deepcopy(d) for d in self.deployments], "1"
            return
        async for page in super().list_pages(path, params):
            yield page


def test_a_policy_created_over_existing_workloads_counts_and_names_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(policywatch, "AUDIT_DEBOUNCE_S", 0.0)
    api = ListingApi()
    api.deployments = [deployment(BAD), deployment("good-tp2-deployment.yaml")]
    policy = {
        "apiVersion": "vllm-preflight.io/v1alpha1",
        "kind": "PreflightPolicy",
        "metadata": {"namespace": NS, "name": "rollout", "uid": "p1", "generation": 1,
                     "resourceVersion": "5"},
        "spec": {"action": "Audit"},
    }  # fmt: skip

    async def scenario() -> dict[str, Any]:
        ctl = controller(api)
        await ctl.prime()
        for body in api.deployments:
            ctl.observe_workload(DEPLOYMENT, body, deleted=False)
        await settle(ctl)
        api.policies[NS, "rollout"] = copy.deepcopy(policy)
        ctl.policy_watch.reflector.apply({"type": "ADDED", "object": copy.deepcopy(policy)})
        for _ in range(400):  # until the re-judged results are written (bounded)
            await asyncio.sleep(0.01)
            status = api.policies[NS, "rollout"].get("status") or {}
            if status.get("wouldDeny") == 1:
                break
        await settle(ctl)
        await ctl.stop()
        return api.policies[NS, "rollout"]["status"]

    status = run(scenario())
    assert status["wouldDeny"] == 1
    assert status["wouldDenyWorkloads"] == ["Deployment/vllm-bad"]
    assert status["warned"] == 0
    assert status["lastAudit"]
    bad = api.gpuvals[NS, "deployment-vllm-bad"]["status"]
    assert bad["policy"] == "rollout"
    assert bad["admission"]["answer"] == "admit"  # Audit records only
    assert bad["admission"]["underEnforce"] == "deny"
    good = api.gpuvals[NS, "deployment-vllm-good"]["status"]
    assert good["admission"] == {"answer": "admit", "underEnforce": "admit"}
    schema = crd_schema("preflightpolicies.vllm-preflight.io.yaml")
    obj = {**policy, "status": status}
    assert undeclared(obj, schema) == []
    Draft202012Validator(schema).validate(obj)
    gv = crd_schema("gpuvalidations.vllm-preflight.io.yaml")
    assert undeclared({"status": bad}, gv) == []
