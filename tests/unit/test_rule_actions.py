"""Per-rule enforcement (issue 24, item 8): a PreflightPolicy's ``spec.rules`` gives a rule
its own action, as Gatekeeper gives one per constraint; heuristic rules default to Warn;
lint exits by the same defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_rules_support import deployment, pod_spec, vllm

from preflight_operator.cli import lint
from preflight_operator.core.admissiondecision import decide
from preflight_operator.core.operatorconfig import ConfigError, PolicySpec, parse_config
from preflight_operator.core.policy import ResolvedPolicy, parse_policy, policy_status
from preflight_operator.core.rules import RULE_INFO
from preflight_operator.core.rules.certainty import HEURISTIC
from preflight_operator.core.rules.vocabulary import Finding
from preflight_operator.core.static import StaticResult
from preflight_operator.core.workloads import WorkloadRef

REF = WorkloadRef("ns", "Deployment", "vllm", "apps/v1")
TOO_LOW = Finding("gpu-count-too-low", "fail", "vLLM needs 4 devices", "limits", "request 4")
SHM_SMALL = Finding("shm-too-small", "fail", "sizeLimit 512Mi under 1Gi", "volumes[0]", "raise")
EXTRA = Finding("gpu-count-extra", "warn", "2 GPUs idle", "limits", "request fewer")


def body(spec: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": "p", "generation": 1}, "spec": spec}


def resolved(action: str = "Enforce", **rules: str) -> ResolvedPolicy:
    spec = parse_policy(body({"action": action, "rules": rules})).spec
    return ResolvedPolicy("p", spec)


def static(*findings: Finding) -> StaticResult:
    verdict = "fail" if any(f.severity == "fail" for f in findings) else "warn"
    return StaticResult(verdict, findings)


def test_the_policy_takes_per_rule_actions() -> None:
    parsed = parse_policy(body({"rules": {"shm-too-small": "Warn", "gpu-count-too-low": "Audit"}}))
    assert parsed.problems == ()
    assert parsed.spec.rule_actions == (("gpu-count-too-low", "Audit"), ("shm-too-small", "Warn"))


def test_a_former_rule_id_names_its_successor() -> None:
    parsed = parse_policy(body({"rules": {"vllm-env-unresolved": "Audit"}}))
    assert parsed.spec.rule_actions == (("plan-unresolved", "Audit"),)


@pytest.mark.parametrize(
    ("rules", "field", "words"),
    [
        ({"shm-too-smal": "Warn"}, "spec.rules['shm-too-smal']", "not a rule id"),
        ({"shm-too-small": "Block"}, "spec.rules['shm-too-small']", "not one of Enforce"),
        ({"shm-too-small": None}, "spec.rules['shm-too-small']", "not one of Enforce"),
        ({3: "Warn"}, "spec.rules[3]", "not a rule id"),
        (["shm-too-small"], "spec.rules", "expected a map of rule id"),
        ("Warn", "spec.rules", "expected a map of rule id"),
    ],
)
def test_a_bad_entry_is_a_named_problem_and_never_a_crash(
    rules: Any, field: str, words: str
) -> None:
    parsed = parse_policy(body({"action": "Warn", "rules": rules}))
    assert parsed.spec.action == "Warn"  # the other fields are kept
    assert parsed.spec.rule_actions == ()
    (problem,) = parsed.problems
    assert problem.field == field
    assert words in problem.message
    condition = policy_status(body({}), parsed.problems, "now")["conditions"][0]
    assert condition["status"] == "False"
    assert field in condition["message"]


def test_a_bad_entry_leaves_the_good_ones() -> None:
    parsed = parse_policy(body({"rules": {"nope": "Warn", "shm-missing": "Warn"}}))
    assert parsed.spec.rule_actions == (("shm-missing", "Warn"),)
    assert [p.field for p in parsed.problems] == ["spec.rules['nope']"]


def test_the_configuration_file_is_strict_about_default_policy_rules() -> None:
    config = parse_config({"defaultPolicy": {"rules": {"gpu-count-too-low": "Warn"}}})
    assert config.default_policy.rule_actions == (("gpu-count-too-low", "Warn"),)
    with pytest.raises(ConfigError, match=r"defaultPolicy.rules\['nope'\]: not a rule id"):
        parse_config({"defaultPolicy": {"rules": {"nope": "Warn"}}})


def test_a_rule_set_to_warn_is_admitted_with_a_warning_line() -> None:
    decision = decide(static(TOO_LOW), resolved(**{"gpu-count-too-low": "Warn"}), REF)
    assert decision.allowed
    (line,) = decision.warnings
    assert line.startswith("vllm-preflight fail (admitted: rule action Warn): gpu-count-too-low")


def test_a_rule_set_to_audit_is_only_recorded() -> None:
    decision = decide(static(TOO_LOW, EXTRA), resolved(**{"gpu-count-too-low": "Audit"}), REF)
    assert decision.allowed
    assert [w.split(": ", 2)[1] for w in decision.warnings] == ["gpu-count-extra"]


def test_other_rules_still_deny_beside_a_relaxed_one() -> None:
    decision = decide(static(TOO_LOW, SHM_SMALL), resolved(**{"shm-too-small": "Audit"}), REF)
    assert not decision.allowed
    assert "1. gpu-count-too-low" in decision.message
    assert "shm-too-small" not in decision.message


def test_a_heuristic_rule_warns_under_enforce_unless_named() -> None:
    assert RULE_INFO["shm-too-small"].basis.kind == HEURISTIC
    decision = decide(static(SHM_SMALL), resolved(), REF)
    assert decision.allowed
    assert decision.warnings[0].startswith("vllm-preflight fail (admitted: rule action Warn)")
    named = decide(static(SHM_SMALL), resolved(**{"shm-too-small": "Enforce"}), REF)
    assert not named.allowed
    assert "shm-too-small" in named.message


def test_a_named_rule_enforces_even_under_an_audit_policy() -> None:
    assert decide(static(TOO_LOW), resolved("Audit"), REF).allowed
    decision = decide(static(TOO_LOW), resolved("Audit", **{"gpu-count-too-low": "Enforce"}), REF)
    assert not decision.allowed


def test_the_default_policy_spec_decides_as_before_for_certain_rules() -> None:
    decision = decide(static(TOO_LOW), ResolvedPolicy("", PolicySpec()), REF)
    assert not decision.allowed


def test_lint_exit_code_follows_the_default_actions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "512Mi"}}
    heuristic = deployment(pod_spec(vllm("m", "-tp", "2", gpus=2), volumes=(small,)))
    certain = deployment(pod_spec(vllm("m", "-tp", "4", gpus=2)))
    (tmp_path / "h.yaml").write_text(yaml.safe_dump(heuristic))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(certain))
    assert lint.main([str(tmp_path / "h.yaml")]) == lint.EXIT_OK
    assert "FAIL shm-too-small" in capsys.readouterr().out
    assert lint.main([str(tmp_path / "c.yaml")]) == lint.EXIT_FAILED
