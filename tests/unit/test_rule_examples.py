"""Every rule id has examples beside it, and each example's verdict holds.

tests/data/rules/<rule-id>/ holds ``allowed*.yaml`` (the rule's id is not reported) and
``disallowed*.yaml`` (the id is reported with its registered severity), judged the way a
user judges a manifest offline: ``vllm-preflight lint --format json FILE`` (in-process).
The format, and the optional ``case.json`` (model configs, a severity other than the
registered one), are described in tests/data/rules/README.md. Adding a rule means adding
its two examples: this test names every id of the registry that has none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from preflight_operator.cli import lint
from preflight_operator.core.rules import engine
from preflight_operator.core.rules.registry import REGISTRY, RULE_INFO

REPO = Path(__file__).parents[2]
EXAMPLES = REPO / "tests" / "data" / "rules"

HOW_TO = (
    "add tests/data/rules/<id>/allowed.yaml (the fix applied: the id is not reported) and "
    "disallowed.yaml (the id is reported with its registered severity); see "
    "tests/data/rules/README.md"
)

# Ids no manifest can trigger. Each needs its reason; aim for none.
EXEMPT: dict[str, str] = {
    # The engine reports it when one of its own rules raises: a manifest that triggers it
    # is a bug in vllm-preflight, to be fixed (and the manifest kept as that rule's
    # regression test), never an example to keep; test_hostile_inputs.py,
    # test_rules_properties.py and test_shell.py assert that no input produces it.
    # test_a_rule_that_raises_is_reported_and_admits below shows its verdict instead.
    "rules-internal-error": "only a bug in a rule (a rule that raises) produces it",
}


@dataclass(frozen=True)
class Example:
    rule: str
    path: Path
    allowed: bool
    severity: str  # what a disallowed example must report (the registered one by default)
    model_config: Path | None

    @property
    def name(self) -> str:
        return f"{self.rule}/{self.path.name}"


def _case(directory: Path) -> dict[str, Any]:
    path = directory / "case.json"
    if not path.exists():
        return {}
    case = json.loads(path.read_text())
    assert isinstance(case, dict), f"{path}: a JSON object"
    unknown = set(case) - {"model-config", "severity", "why"}
    assert not unknown, f"{path}: unknown keys {sorted(unknown)} (README.md lists them)"
    return case


def examples() -> list[Example]:
    found: list[Example] = []
    if not EXAMPLES.is_dir():
        return found
    for directory in sorted(p for p in EXAMPLES.iterdir() if p.is_dir()):
        rule = directory.name
        case = _case(directory)
        model_config = REPO / case["model-config"] if "model-config" in case else None
        severities: dict[str, str] = case.get("severity", {})
        for path in sorted(directory.glob("*.yaml")):
            allowed = path.name.startswith("allowed")
            if not allowed and not path.name.startswith("disallowed"):
                continue
            registered = RULE_INFO[rule].severity if rule in RULE_INFO else "?"
            severity = severities.get(path.name, registered)
            found.append(Example(rule, path, allowed, severity, model_config))
    return found


EXAMPLE_LIST = examples()


def test_every_rule_id_has_an_allowed_and_a_disallowed_example() -> None:
    missing = []
    for rule in sorted(RULE_INFO):
        if rule in EXEMPT:
            continue
        kinds = {e.allowed for e in EXAMPLE_LIST if e.rule == rule}
        lacking = [name for flag, name in ((True, "allowed"), (False, "disallowed"))
                   if flag not in kinds]  # fmt: skip
        if lacking:
            missing.append(f"{rule} (no {' and no '.join(lacking)} example)")
    assert not missing, f"rule ids without examples: {', '.join(missing)}; {HOW_TO}"


def test_every_example_directory_names_a_registered_rule() -> None:
    """A renamed or removed rule leaves no examples behind that test nothing."""
    stray = sorted({e.rule for e in EXAMPLE_LIST} - set(RULE_INFO))
    assert not stray, f"tests/data/rules/ directories naming no registered rule id: {stray}"
    assert not set(EXEMPT) - set(RULE_INFO), "EXEMPT names an id that is not registered"


def test_the_overridden_severities_say_why() -> None:
    for directory in sorted(p for p in EXAMPLES.iterdir() if p.is_dir()):
        case = _case(directory)
        for name in case.get("severity", {}):
            assert (directory / name).exists(), f"{directory.name}/case.json names {name}"
            assert name in case.get("why", {}), f"{directory.name}/case.json: no why for {name}"


@pytest.mark.parametrize("example", EXAMPLE_LIST, ids=lambda e: e.name)
def test_the_example_verdict_holds(example: Example, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--format", "json", str(example.path)]
    if example.model_config is not None:
        argv += ["--model-config", str(example.model_config)]
    code = lint.main(argv)
    out, err = capsys.readouterr()
    assert code in (lint.EXIT_OK, lint.EXIT_FAILED), f"{example.name} unreadable: {err}"
    results = json.loads(out)["results"]
    # an allowed example that runs no vLLM container would pass for the wrong reason
    assert results, f"{example.name}: lint judged no vLLM container in it"
    reported = [
        (f["id"], f["severity"], r["workload"], r["container"])
        for r in results
        for f in r["findings"]
    ]
    mine = [r for r in reported if r[0] == example.rule]
    if example.allowed:
        assert not mine, f"{example.name}: allowed, yet reported: {mine}"
    else:
        assert any(r[1] == example.severity for r in mine), (
            f"{example.name}: disallowed, expected {example.rule} ({example.severity}); "
            f"reported: {reported}"
        )


def test_a_rule_that_raises_is_reported_and_admits(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """rules-internal-error, the exempt id: an allowed example judged while one rule
    raises reports it (a warn) and still exits 0 (the object is admitted)."""
    path = EXAMPLES / "gpu-count-too-low" / "allowed.yaml"

    def crash(ctx: Any, policy: Any) -> Any:
        raise RuntimeError("a bug in a rule")

    def ids() -> tuple[int, list[tuple[str, str]]]:
        code = lint.main(["--format", "json", str(path)])
        doc = json.loads(capsys.readouterr().out)
        return code, [(f["id"], f["severity"]) for r in doc["results"] for f in r["findings"]]

    assert ids() == (lint.EXIT_OK, [])
    monkeypatch.setattr(engine, "REGISTRY", [*REGISTRY, (RULE_INFO["rules-internal-error"], crash)])
    code, found = ids()
    assert code == lint.EXIT_OK
    assert found == [("rules-internal-error", RULE_INFO["rules-internal-error"].severity)]
