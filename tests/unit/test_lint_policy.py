"""`vllm-preflight lint --policy FILE` and `--fail-on`: the webhook's own answer, offline.

The oracle is the validating webhook itself (webhooks.AdmissionService with the same
PreflightPolicies): for each workload, lint must pick the same policy and reach the same
outcome (denied, admitted with warnings, admitted silently)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_admission_webhook import service
from test_rules_support import deployment, pod_spec, vllm

from preflight_contract.actions import AUDIT, ENFORCE
from preflight_operator.cli import lint

API = "vllm-preflight.io/v1alpha1"
SMALL_SHM = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "512Mi"}}


def policy(name: str, namespace: str = "team", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "PreflightPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def workload(name: str, labels: dict[str, str], kind: str) -> dict[str, Any]:
    if kind == "bad":  # TP=4 on 2 GPUs: gpu-count-too-low, an Enforce rule
        spec = pod_spec(vllm("m", "--tensor-parallel-size", "4", gpus=2))
    elif kind == "small-shm":  # shm-too-small: a heuristic rule, Warn under Enforce
        spec = pod_spec(vllm("m", "--tensor-parallel-size", "2", gpus=2), volumes=[SMALL_SHM])
    else:  # cvd-set: a warning
        spec = pod_spec(vllm("m", gpus=1, env=[{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]))
    obj = deployment(spec, name=name, namespace="team")
    obj["metadata"]["labels"] = labels
    return obj


POLICIES = [
    policy(
        "prod-enforce",
        action="Enforce",
        priority=10,
        selector={"matchLabels": {"tier": "prod"}},
        rules={"shm-too-small": "Enforce"},
    ),
    # same priority, selects the same: loses on its name (admission's tie-break)
    policy("zz-audit", action="Audit", priority=10, selector={"matchLabels": {"tier": "prod"}}),
    policy("all-warn", action="Warn"),
    policy(
        "dev-audit",
        action="Audit",
        priority=5,
        selector={"matchExpressions": [{"key": "tier", "operator": "In", "values": ["dev"]}]},
    ),
    policy(
        "big-shm-ok",
        action="Enforce",
        priority=20,
        selector={"matchLabels": {"tier": "big"}},
        thresholds={"shmMin": "256Mi"},
    ),
    policy("elsewhere", namespace="other", action="Enforce", rules={"cvd-set": "Enforce"}),
]
WORKLOADS = [
    workload("prod-bad", {"tier": "prod"}, "bad"),
    workload("prod-shm", {"tier": "prod"}, "small-shm"),
    workload("dev-bad", {"tier": "dev"}, "bad"),
    workload("plain-bad", {}, "bad"),
    workload("plain-warn", {"app": "x"}, "warn"),
    workload("big-shm", {"tier": "big"}, "small-shm"),
]


def lint_outcomes(result: dict[str, Any]) -> tuple[str, str]:
    """(policy name, outcome) from lint's JSON for one workload, as admissiondecision.decide
    would answer: denied by an Enforce failure, warned by anything not Audit."""
    findings = result["findings"]
    if any(f["severity"] == "fail" and f["action"] == ENFORCE for f in findings):
        return result["policy"]["name"], "denied"
    if any(f["action"] != AUDIT for f in findings):
        return result["policy"]["name"], "warned"
    return result["policy"]["name"], "allowed"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = lint.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_lint_answers_what_the_webhook_answers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policies = tmp_path / "policies.yaml"
    policies.write_text(yaml.safe_dump_all(POLICIES))
    manifests = tmp_path / "workloads.yaml"
    manifests.write_text(yaml.safe_dump_all(WORKLOADS))
    code, out, err = run(capsys, "--format", "json", "--policy", str(policies), str(manifests))
    assert err == ""
    by_name = {r["workload"].split("/")[1]: r for r in json.loads(out)["results"]}
    svc, _ = service("Enforce", POLICIES)
    expected: dict[str, tuple[str, str]] = {}
    for obj in WORKLOADS:
        name = obj["metadata"]["name"]
        answer = svc.validate(obj, old=None, operation="CREATE", dry_run=True)
        chosen = svc.policy_for("team", obj["metadata"]["labels"]).name
        expected[name] = (chosen, answer.outcome)
    got = {name: lint_outcomes(by_name[name]) for name in expected}
    assert got == expected
    # the cases are not all alike: each outcome and the tie-break occur
    assert expected == {
        "prod-bad": ("prod-enforce", "denied"),
        "prod-shm": ("prod-enforce", "denied"),  # its rules entry: Enforce
        "dev-bad": ("dev-audit", "allowed"),
        "plain-bad": ("all-warn", "warned"),
        "plain-warn": ("all-warn", "warned"),
        "big-shm": ("big-shm-ok", "allowed"),  # its shmMin: no finding at all
    }
    assert by_name["big-shm"]["findings"] == []
    assert code == lint.EXIT_FAILED  # something would be denied


def test_without_a_policy_nothing_changes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifests = tmp_path / "workloads.yaml"
    manifests.write_text(yaml.safe_dump_all(WORKLOADS))
    code, out, _ = run(capsys, "--format", "json", str(manifests))
    assert code == lint.EXIT_FAILED
    results = json.loads(out)["results"]
    assert all("policy" not in r for r in results)
    assert all("action" not in f for r in results for f in r["findings"])


def test_an_audit_policy_admits_and_fail_on_is_stricter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policies = tmp_path / "audit.yaml"
    policies.write_text(yaml.safe_dump(policy("audit", action="Audit")))
    manifests = tmp_path / "bad.yaml"
    manifests.write_text(yaml.safe_dump(WORKLOADS[0]))
    assert run(capsys, "--policy", str(policies), str(manifests))[0] == lint.EXIT_OK
    code = run(capsys, "--policy", str(policies), "--fail-on", "fail", str(manifests))[0]
    assert code == lint.EXIT_FAILED
    code, out, _ = run(capsys, "--policy", str(policies), str(manifests))
    assert "policy audit (Audit)" in out


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "apiVersion: vllm-preflight.io/v1alpha1\nkind: PreflightPolicy\n"
            "metadata: {name: p, namespace: team}\nspec: {action: enforce}\n",
            "PreflightPolicy team/p: spec.action: 'enforce' is not one of Enforce, Warn, Audit",
        ),
        (
            "apiVersion: vllm-preflight.io/v1alpha1\nkind: PreflightPolicy\n"
            "metadata: {name: p}\nspec: {rules: {no-such-rule: Enforce}}\n",
            "spec.rules",
        ),
        (
            "apiVersion: vllm-preflight.io/v1alpha1\nkind: PreflightPolicy\n"
            "metadata: {name: p}\nspec: {selector: {matchLabels: {'a b': x}}}\n",
            "spec.selector.matchLabels",
        ),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "is not a PreflightPolicy"),
        (
            "apiVersion: vllm-preflight.io/v1alpha1\nkind: PreflightPolicy\nspec: {}\n",
            "metadata.name: missing",
        ),
        ("", "no PreflightPolicy in it"),
        ("kind: PreflightPolicy\nmetadata: {name: a\n", "invalid YAML at line 3"),
    ],
)
def test_a_bad_policy_file_is_named_with_its_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, said: str
) -> None:
    policies = tmp_path / "policy.yaml"
    policies.write_text(text)
    manifests = tmp_path / "bad.yaml"
    manifests.write_text(yaml.safe_dump(WORKLOADS[0]))
    code, out, err = run(capsys, "--policy", str(policies), str(manifests))
    assert code == lint.EXIT_UNREADABLE
    assert out == ""
    assert said in err
    assert f"--policy {policies}" in err
    assert "Traceback" not in err


def test_policy_and_manifests_cannot_both_be_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--policy", "-", "-")
    assert code == lint.EXIT_UNREADABLE
    assert "standard input is read once" in err
