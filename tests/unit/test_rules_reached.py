"""Issue 39: code only tests reach is a capability on paper. Every public function of
core/rules (a top-level ``def`` whose name does not start with ``_``) is referenced by the
product: by name somewhere in operator/ outside its own body (a call, an import, an
attribute, a registry entry), or registered by a decorator (``@register`` rules). The
call graph is static (``ast``): a name used only by tests or only inside its own
definition fails here. The allow-list is explicit, each entry with why it stays."""

from __future__ import annotations

import ast
from pathlib import Path

OPERATOR = Path(__file__).resolve().parents[2] / "operator" / "preflight_operator"
RULES = OPERATOR / "core" / "rules"

# name -> why it is not reached from the product (each entry is debt, named in the report)
ALLOWED: dict[str, str] = {}


MODULES = frozenset(f.stem for f in OPERATOR.rglob("*.py"))


def _names(node: ast.AST) -> list[str]:
    """The names a piece of code uses: a bare name, an imported one, and ``module.name``
    (an attribute of anything else, ``ref.pod_group``, is a field of the same spelling,
    not a use of the function). A variable or parameter of the same spelling in the
    enclosing function (workloadapi's local ``pod_group``) is not a use either."""
    found: list[str] = []

    def scope_locals(fn: ast.AST) -> set[str]:
        names = {n.arg for n in ast.walk(fn) if isinstance(n, ast.arg)}
        names |= {
            n.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
        }
        return names

    def visit(n: ast.AST, local: frozenset[str]) -> None:
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            local = local | scope_locals(n)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local:
            found.append(n.id)
        elif isinstance(n, ast.Attribute):
            if isinstance(n.value, ast.Name) and n.value.id in MODULES:
                found.append(n.attr)
        elif isinstance(n, ast.alias):
            found.append(n.name.rsplit(".", 1)[-1])
        for child in ast.iter_child_nodes(n):
            visit(child, local)

    visit(node, frozenset())
    return found


def _unreached() -> list[str]:
    trees = {f: ast.parse(f.read_text()) for f in sorted(OPERATOR.rglob("*.py"))}
    uses: dict[str, int] = {}
    for tree in trees.values():
        for name in _names(tree):
            uses[name] = uses.get(name, 0) + 1
    missing = []
    for path, tree in trees.items():
        if RULES not in path.parents:
            continue
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if node.name.startswith("_") or node.decorator_list:
                continue
            own = sum(1 for name in _names(node) if name == node.name)
            if uses.get(node.name, 0) - own > 0:
                continue
            missing.append(f"{path.stem}.{node.name}")
    return missing


def test_every_public_function_of_the_rules_is_reached_from_the_product() -> None:
    missing = [m for m in _unreached() if m not in ALLOWED]
    assert missing == [], f"reached only from tests (wire them in or delete them): {missing}"


def test_the_allow_list_holds_only_what_is_still_unreached() -> None:
    assert sorted(ALLOWED) == sorted(m for m in _unreached() if m in ALLOWED)


def test_the_check_can_fail() -> None:
    """A reader that only tests call is found: the gang path's own entry, were its callers
    (kinds, crdgroups) to stop using it, would be listed; here a synthetic module shows the
    walk sees a definition with no other use."""
    tree = ast.parse("def lonely():\n    return lonely\n\ndef used():\n    return 1\n\nused()\n")
    uses: dict[str, int] = {}
    for name in _names(tree):
        uses[name] = uses.get(name, 0) + 1
    unreached = [
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef)
        and uses[n.name] - sum(1 for m in _names(n) if m == n.name) == 0
    ]
    assert unreached == ["lonely"]
