"""What a static rule takes, checked in one place (docs/ARCHITECTURE.md, "A static rule").

A rule is written in three files: its module under ``core/rules/ruleset/`` (the function,
its metadata with the fix, ``@register``, and its docs section in the module's docstring;
the package imports every module itself) and its two examples in ``tests/data/rules/<id>/``
(``allowed.yaml``, ``disallowed.yaml``). docs/RULES.md (its row and section) and README.md
(its row) are rendered from the module by hack/gen_rule_docs.py. For every registered id
this test names each place that is missing, with the step that adds it, in one message; the
tests beside it (test_rule_examples, test_rule_docs, test_rules, test_docs, test_lint_sarif)
then check what each place says.
"""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_docs import _table_rows
from tests.unit.test_lint_sarif import _github_anchors
from tests.unit.test_rule_docs import generator
from tests.unit.test_rule_examples import EXAMPLES, EXEMPT

from preflight_operator.cli.lint_sarif import MODEL_RULES_ANCHOR, help_anchor
from preflight_operator.core.rules import ruleset
from preflight_operator.core.rules.registry import REGISTRY, RULE_INFO

REPO = Path(__file__).resolve().parents[2]
RULES_MD = REPO / "docs" / "RULES.md"
README = REPO / "README.md"
STEPS = "docs/ARCHITECTURE.md, 'A static rule'"


def _docs() -> tuple[set[str], set[str], set[str], set[str]]:
    """(ids with a section in a rule module's docstring, RULES.md heading anchors, ids with
    a RULES.md table row, ids with a README row)."""
    gen = generator()
    sectioned = {r for heading in gen.module_sections() for r in gen.ids_of(heading, RULE_INFO)}
    rules_md = RULES_MD.read_text(encoding="utf-8")
    table = set(_table_rows(rules_md, "\n## Rules\n"))
    readme = set(_table_rows(README.read_text(encoding="utf-8"), "### What the static rules say"))
    return sectioned, _github_anchors(rules_md), table, readme


def missing_places(rule_id: str, docs: tuple[set[str], set[str], set[str]]) -> list[str]:
    """The places ``rule_id`` lacks, each with the step that adds it ([] when none)."""
    out: list[str] = []
    if rule_id not in RULE_INFO:
        out.append(
            "1. its module: @register it in a module under core/rules/ruleset/ "
            "(or declare it in core/rules/engine.py when the engine emits it)"
        )
    directory = EXAMPLES / rule_id
    if rule_id not in EXEMPT:
        for kind in ("allowed", "disallowed"):
            if not any(directory.glob(f"{kind}*.yaml")):
                out.append(f"2. its examples: tests/data/rules/{rule_id}/{kind}.yaml")
    sectioned, headings, table, readme = docs
    info = RULE_INFO.get(rule_id)
    if info is not None and not info.fix:
        out.append("1. its module: a fix= in its @register (README's row)")
    # a model rule's section is RULES.md's "Model rules", where lint's help link points
    if rule_id not in sectioned and help_anchor(rule_id) != MODEL_RULES_ANCHOR:
        out.append("1. its module: a '### `id`' section in the module's docstring")
    if rule_id not in table or rule_id not in readme:
        out.append("3. its docs: run python3 hack/gen_rule_docs.py (RULES.md and README rows)")
    elif help_anchor(rule_id) not in headings:  # where lint's SARIF help link points
        out.append("3. its docs: run python3 hack/gen_rule_docs.py (its RULES.md section)")
    return out


def test_every_rule_has_its_places() -> None:
    docs = _docs()
    lacking = {rule: missing_places(rule, docs) for rule in sorted(RULE_INFO)}
    lacking = {rule: places for rule, places in lacking.items() if places}
    assert not lacking, f"rules missing a place ({STEPS}): {lacking}"


def test_the_check_names_every_place_a_new_rule_lacks() -> None:
    """The check can fail: an id with nothing but a name lacks all of them."""
    places = missing_places("throwaway-rule", _docs())
    assert [p.split(":")[0] for p in places] == [
        "1. its module",
        "2. its examples",
        "2. its examples",
        "1. its module",
        "3. its docs",
    ]


def test_every_module_of_rules_is_imported_and_registers_one() -> None:
    """A module of rules/ruleset/ needs no list: the package imports every one, so a rule
    in a new module is registered (a module that registers nothing is a helper in the
    wrong place)."""
    found = sorted(p.stem for p in Path(ruleset.__file__).parent.glob("[!_]*.py"))
    assert list(ruleset.MODULES) == found
    registering = {fn.__module__.rsplit(".", 1)[-1] for _, fn in REGISTRY}
    assert set(found) <= registering, set(found) - registering
