"""The docs users read first stay true to the code: every check and rule id the code can
report has a row, with its fix, in README.md's troubleshooting tables and in the detailed
docs (docs/CHECKS.md, docs/RULES.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from preflight_contract.check_ids import CHECKS
from preflight_operator.core.rules import RULE_INFO

REPO = Path(__file__).resolve().parents[2]


def _table_rows(markdown: str, heading: str) -> dict[str, str]:
    """First-column id -> last column, for the table under ``heading``."""
    section = markdown.split(heading, 1)[1].split("\n### ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        match = re.match(r"^\| `([a-z0-9-]+)` \|(.*)\|\s*$", line)
        if match:
            rows[match.group(1)] = match.group(2).rsplit("|", 1)[-1].strip()
    return rows


@pytest.fixture(scope="module")
def readme() -> str:
    return (REPO / "README.md").read_text()


def test_readme_has_every_check_with_a_fix(readme: str) -> None:
    rows = _table_rows(readme, "### What the runtime check says, and the fix")
    assert sorted(rows) == sorted(CHECKS)
    assert all(fix for fix in rows.values()), rows


def test_readme_has_every_rule_with_a_fix(readme: str) -> None:
    rows = _table_rows(readme, "### What the static rules say, and the fix")
    assert sorted(rows) == sorted(RULE_INFO)
    assert all(fix for fix in rows.values()), rows


def test_checks_doc_has_every_check() -> None:
    text = (REPO / "docs" / "CHECKS.md").read_text()
    missing = [check_id for check_id in CHECKS if f"| `{check_id}` |" not in text]
    assert not missing


def test_readme_quick_start_names_the_entry_points(readme: str) -> None:
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    for command in ("make demo", "make test", "make cluster"):
        assert command in quick_start
