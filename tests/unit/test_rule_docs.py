"""The rules' docs are rendered from the rule modules (issue 28): hack/gen_rule_docs.py
writes docs/RULES.md's Rules table and sections and README.md's rule table from the
registry and the modules' docstrings, and `make lint` runs it with --check."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType

import pytest
from tests.unit import hackscripts

from preflight_operator.core.rules.registry import RULE_INFO


def generator() -> ModuleType:
    return hackscripts.load("gen_rule_docs")


def test_the_docs_are_what_the_rule_modules_say() -> None:
    assert generator().main(["--check"]) == 0


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ModuleType:
    """The generator writing to copies of the two files."""
    gen = generator()
    for name in ("RULES_MD", "README"):
        copy = tmp_path / Path(getattr(gen, name)).name
        copy.write_text(Path(getattr(gen, name)).read_text(encoding="utf-8"), encoding="utf-8")
        monkeypatch.setattr(gen, name, copy)
    assert gen.main(["--check"]) == 0
    return gen


def test_the_drift_check_fails_on_a_rule_the_docs_lack(
    copies: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    info = dataclasses.replace(RULE_INFO["cvd-set"], id="cvd-new", fix="the new fix")
    monkeypatch.setattr(copies, "RULE_INFO", {**RULE_INFO, "cvd-new": info})
    assert copies.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "+| `cvd-new` | the new fix |" in out  # README's row
    assert "+| `cvd-new` | warn |" in out  # RULES.md's row
    assert "README.md is stale" in out
    assert "RULES.md is stale" in out
    assert copies.main([]) == 0  # writing brings both up to date
    assert copies.main(["--check"]) == 0


def test_a_changed_section_or_basis_is_drift(
    copies: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sections = copies.module_sections()
    heading = "`shm-too-small`"
    module, text = sections[heading]
    changed = {**sections, heading: (module, text + "One more sentence.\n")}
    monkeypatch.setattr(copies, "module_sections", lambda: changed)
    assert copies.main(["--check"]) == 1
    assert "+One more sentence." in capsys.readouterr().out
    monkeypatch.setattr(copies, "module_sections", lambda: sections)
    basis = dataclasses.replace(RULE_INFO["shm-too-small"].basis, kind="vllm-code")
    info = dataclasses.replace(RULE_INFO["shm-too-small"], basis=basis)
    monkeypatch.setattr(copies, "RULE_INFO", {**RULE_INFO, "shm-too-small": info})
    assert copies.main(["--check"]) == 1
    assert "+*Certainty source:* vllm-code: " in capsys.readouterr().out


def test_two_sections_for_one_id_or_one_naming_none_are_refused(
    copies: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sections = copies.module_sections()
    twice = {**sections, "More on `cvd-set`": ("some.module", "text\n")}
    monkeypatch.setattr(copies, "module_sections", lambda: twice)
    assert copies.main(["--check"]) == 1
    assert "cvd-set has two sections" in capsys.readouterr().err
    orphan = {**sections, "`no-such-rule`": ("some.module", "text\n")}
    monkeypatch.setattr(copies, "module_sections", lambda: orphan)
    assert copies.main(["--check"]) == 1
    assert "names no registered id" in capsys.readouterr().err


def test_every_section_lives_in_the_module_that_registers_its_rule() -> None:
    """A registered rule's section is in its function's module (declared ids: in the module
    that declares them, which the registry does not record)."""
    from preflight_operator.core.rules.registry import REGISTRY

    where = {info.id: fn.__module__ for info, fn in REGISTRY}
    gen = generator()
    for heading, (module, _) in gen.module_sections().items():
        for rule_id in gen.ids_of(heading, RULE_INFO):
            if rule_id in where:
                assert where[rule_id] == module, (rule_id, module)
