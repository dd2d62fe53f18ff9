"""The chart's serving-stack kinds are generated from the one kind registry (issue 28):
hack/gen_chart_kinds.py writes templates/_kinds.tpl, and `make lint` runs it with --check."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType

import pytest
from tests.unit import hackscripts

from preflight_operator.core.rules import kinds
from preflight_operator.core.workloads import FAMILIES, VALIDATED_KINDS, WRAPPER_KINDS

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    return hackscripts.load("gen_chart_kinds")


def test_the_chart_list_is_what_the_registry_says() -> None:
    assert _generator().main(["--check"]) == 0


def test_the_drift_check_fails_on_a_kind_the_chart_lacks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = _generator()
    target = tmp_path / "_kinds.tpl"
    monkeypatch.setattr(gen, "TARGET", target)
    target.write_text(gen.render())
    assert gen.main(["--check"]) == 0
    model = next(k for k in kinds.KINDS if k.kind == "Model")
    extra = dataclasses.replace(model, kind="ModelSet", plural="modelsets")
    monkeypatch.setattr(gen, "KINDS", (*kinds.KINDS, extra))
    assert gen.main(["--check"]) == 1
    assert '"models" "modelsets"' in capsys.readouterr().out


def test_the_operator_kinds_are_rows_of_the_registry() -> None:
    rows = {(k.group, k.kind): k for k in kinds.KINDS}
    for kind in VALIDATED_KINDS.values():
        row = rows[(kind.group, kind.kind)]
        assert (kind.version, kind.plural) == (row.version, row.resource)
        assert row.role == kinds.VALIDATED
    assert {k.family for k in WRAPPER_KINDS} == set(FAMILIES)
    assert _generator().value_key("production-stack") == "productionStack"
