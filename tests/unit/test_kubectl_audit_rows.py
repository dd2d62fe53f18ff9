"""`kubectl vllm-preflight audit`'s core: for live workloads, the webhook's own answer."""

from __future__ import annotations

import copy
import json

from test_admission_webhook import service
from test_lint_policy import POLICIES, WORKLOADS

from preflight_operator.cli import audit
from preflight_operator.core import constants
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.policy import parse_policy


def rows(default: str = "Enforce") -> dict[str, audit.AuditRow]:
    policies = [parse_policy(p) for p in POLICIES]
    got = audit.audit_rows(WORKLOADS, [], policies, PolicySpec(action=default))
    return {r.name: r for r in got}


def test_each_workload_gets_the_webhooks_answer() -> None:
    svc, _ = service("Enforce", POLICIES)
    expected = {}
    for obj in WORKLOADS:
        answer = svc.validate(obj, old=None, operation="CREATE", dry_run=True)
        name = obj["metadata"]["name"]
        policy = svc.policy_for("team", obj["metadata"]["labels"])
        expected[name] = (policy.name, answer.outcome, answer.decision.message)
    names = {"denied": audit.DENY, "warned": audit.WARN, "allowed": audit.ADMIT}
    got = rows()
    assert {
        n: (r.policy, r.answer, r.message if r.answer == audit.DENY else "")
        for n, r in got.items()
    } == {
        n: (p, names[o], m if o == "denied" else "")
        for n, (p, o, m) in expected.items()
    }  # fmt: skip
    assert got["prod-bad"].answer == audit.DENY
    assert "gpu-count-too-low" in got["prod-bad"].message


def test_what_the_webhook_skips_is_skipped() -> None:
    opted_out = copy.deepcopy(WORKLOADS[0])
    opted_out["metadata"]["name"] = "opted-out"
    opted_out["spec"]["template"]["metadata"] = {
        "labels": {constants.LABEL_INJECT: constants.INJECT_DISABLED}
    }
    made = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "made-pod",
            "namespace": "team",
            "ownerReferences": [{"kind": "ReplicaSet", "name": "x", "uid": "u"}],
        },
        "spec": WORKLOADS[0]["spec"]["template"]["spec"],
    }
    bare = {**made, "metadata": {"name": "bare-pod", "namespace": "team"}}
    got = audit.audit_rows([opted_out, made, bare], [], [], PolicySpec())
    assert [(r.kind, r.name, r.answer) for r in got] == [("Pod", "bare-pod", audit.DENY)]


def test_the_default_action_is_the_charts_default_policy() -> None:
    got = audit.audit_rows(WORKLOADS[:1], [], [], PolicySpec(action="Warn"))
    assert [(r.policy, r.action, r.answer) for r in got] == [("", "Warn", audit.WARN)]


def test_table_and_json() -> None:
    found = sorted(rows().values(), key=lambda r: r.name)
    text = audit.render(found, colour=False)
    assert "team        Deployment/prod-bad" in text
    assert "2 would be denied" in text
    doc = json.loads(json.dumps(audit.document(found, ["a note"])))
    assert doc["counts"] == {"deny": 2, "warn": 2, "admit": 2}
    assert {i["name"] for i in doc["items"] if i["admission"] == "deny"} == {
        "prod-bad",
        "prod-shm",
    }
    assert doc["notes"] == ["a note"]
    assert audit.render([], colour=False) == "no vLLM workloads found\n"
