"""The checker's 'model-source' result from what collection found (checks/modelready)."""

from __future__ import annotations

from preflight_check.checks.modelready import model_source
from preflight_check.facts import Facts
from preflight_check.options import Options
from preflight_check.plan import Plan
from preflight_contract.modelsource import FoundModel, Readiness
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, SKIP, WARN


def run(found: FoundModel | None, model: str = "acme/llm") -> CheckResult:
    facts = Facts(plan=Plan())
    facts.model = found
    options = Options()
    options.model_args = {"model": model} if model else {}
    (result,) = model_source(facts, options)
    return result


def test_no_model_is_skipped() -> None:
    assert run(None, model="").status == SKIP


def test_a_lookup_that_did_not_finish_is_a_warning_not_a_pass() -> None:
    result = run(FoundModel("acme/llm", None, "timed out"))
    assert result.status == WARN
    assert "timed out" in result.message


def test_the_readiness_is_reported_with_its_fix_and_evidence() -> None:
    ready = Readiness("fail", "acme/llm is a gated repo and HF_TOKEN is not set", "set HF_TOKEN",
                      {"env": "HF_TOKEN"}, 12.0)  # fmt: skip
    result = run(FoundModel("acme/llm", None, "", ready=ready))
    assert result.status == FAIL
    assert result.remediation == "set HF_TOKEN"
    assert result.evidence == {"env": "HF_TOKEN"}
