"""preflight_contract: each shared concept is defined once and both sides use that one.

Why (issue 12): the verdict order, the actions and the PREFLIGHT_* names were written out
on both sides (five ranking tables, two action lists, the env names in the injector and
in the checker). These tests pin the one order, and hold the injector and the checker to
the contract's env names, so a name added on one side only fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from preflight_contract import actions, envnames, verdicts
from preflight_contract.verdicts import (
    ERROR,
    FAIL,
    INFO,
    PASS,
    SKIP,
    UNKNOWN,
    WARN,
    rank,
    verdict_of_severities,
    worse,
    worst,
)

ROOT = Path(__file__).resolve().parents[2]


def test_one_order_from_pass_to_fail() -> None:
    ladder = [[PASS, SKIP, INFO], [WARN], [UNKNOWN], [ERROR], [FAIL]]
    for better, poorer in zip(ladder, ladder[1:]):
        assert max(rank(s) for s in better) < min(rank(s) for s in poorer)
    assert len({rank(s) for s in ladder[0]}) == 1
    # A name the contract does not know is unknown: never a pass, never above an error.
    assert rank("no-such-status") == rank(UNKNOWN)


def test_worst_and_worse() -> None:
    assert worst([]) == PASS
    assert worst([ERROR, FAIL, PASS]) == FAIL  # a real failure outranks an internal error
    assert worst([WARN, UNKNOWN]) == UNKNOWN
    assert worst([SKIP]) == SKIP  # the report turns a skipped run into a pass itself
    assert worse(PASS, WARN) == WARN
    assert worse(WARN, WARN) == WARN
    assert worse(ERROR, UNKNOWN) == ERROR


def test_a_static_verdict_from_finding_severities() -> None:
    assert verdict_of_severities([]) == PASS
    assert verdict_of_severities([INFO]) == PASS
    assert verdict_of_severities([INFO, WARN]) == WARN
    assert verdict_of_severities([WARN, FAIL, INFO]) == FAIL
    assert verdict_of_severities(["odd", WARN]) == WARN  # an unknown severity asks nothing


def test_the_vocabularies() -> None:
    assert verdicts.VERDICTS == (PASS, WARN, FAIL, ERROR)
    assert set(verdicts.CHECK_STATUSES) == {PASS, WARN, FAIL, SKIP, ERROR}
    assert verdicts.SEVERITIES == (FAIL, WARN, INFO)
    assert actions.ACTIONS == ("Enforce", "Warn", "Audit")
    assert actions.DEFAULT == actions.ENFORCE


@pytest.mark.parametrize(
    ("text", "action"),
    [("Enforce", "Enforce"), (" audit ", "Audit"), ("WARN", "Warn"), ("deny", None), ("", None)],
)
def test_parse_action(text: str, action: str | None) -> None:
    assert actions.parse_action(text) == action


def _envnames_used(paths: list[Path]) -> set[str]:
    """The env names the sources use through the contract (``envnames.X``)."""
    used: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "envnames"
            ):
                value = getattr(envnames, node.attr)
                # a name, not a value of one (envnames.ROLE_RAY_WORKER)
                if isinstance(value, str) and value.startswith(envnames.PREFIX):
                    if value == envnames.PREFIX:
                        continue
                    used.add(value)
    return used


def _bare_names(paths: list[Path]) -> list[str]:
    """String literals that are a whole PREFLIGHT_* name: a second spelling of one."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and re.fullmatch(r"PREFLIGHT_[A-Z_]*[A-Z]", value):
                found.append(f"{path.name}: {value}")
    return found


# the injection and its parts (core/injection.py, core/inject_*.py)
INJECTOR = sorted((ROOT / "operator" / "preflight_operator" / "core").glob("inject*.py"))
CHECKER = sorted((ROOT / "initcontainer" / "preflight_check").rglob("*.py"))


def test_the_injector_sets_only_contract_names_and_the_checker_reads_them() -> None:
    injected = _envnames_used(INJECTOR)
    assert injected == envnames.INJECTED
    read = _envnames_used(CHECKER)
    # Every name the injector sets is read by the checker, but the LWS replica number the
    # injector itself folds into PREFLIGHT_GROUP_ID.
    assert envnames.INJECTED - read == {envnames.GROUP_NUMBER}
    assert not _bare_names(INJECTOR + CHECKER)


def test_every_env_origin_names_an_injected_variable() -> None:
    assert set(envnames.ORIGIN) <= envnames.INJECTED
    assert all(name.startswith(envnames.PREFIX) for name in envnames.INJECTED)
