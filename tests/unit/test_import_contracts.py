"""The import-linter contracts cover every module, and the imports picture is drawn from the code.

Why: the contracts in pyproject.toml (`[tool.importlinter]`, run by `make lint`) keep the
product (preflight_contract, preflight_check, preflight_operator) from importing the
development harness (preflight_dev, under dev/), the contract package on the standard library
alone and the operator off the checker. Since issue 28 the operator's folders are its layers
(one `layers` contract, and forbidden contracts that name folders, never modules); a module
put beside the folders would escape them, and these tests fail then, naming the module and
where it belongs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from tests.unit import hackscripts
from tests.unit.test_packaging import _imports

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = {"preflight_contract", "preflight_check", "preflight_operator"}
# The import names of pyproject.toml's dependencies (runtime, deep and the harness's client).
THIRD_PARTY = {"kopf", "pynvml", "yaml", "prometheus_client", "aiohttp", "torch", "kubernetes"}


def _contracts() -> dict[str, dict[str, Any]]:
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["name"]: c for c in config["tool"]["importlinter"]["contracts"]}


def _children(package_dir: Path) -> set[str]:
    """Top-level modules and subpackages of a package directory (sources only)."""
    names = {p.stem for p in package_dir.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in package_dir.iterdir() if (p / "__init__.py").is_file()}
    return names


def _contract(fragment: str) -> dict[str, Any]:
    matches = [c for name, c in _contracts().items() if fragment in name]
    assert len(matches) == 1, f"expected one contract named like {fragment!r}"
    return matches[0]


def test_the_product_packages_as_a_whole_may_not_import_the_harness() -> None:
    contract = _contract("nothing in the product imports the development harness")
    assert set(contract["source_modules"]) == PRODUCT
    assert contract["forbidden_modules"] == ["preflight_dev"]
    assert not contract.get("ignore_imports")
    # The harness is its own package, out of the product's directories.
    # hack/imports_graph.py's HARNESS (the picture's grouping) is the one list of them.
    harness = _graph_script().HARNESS
    assert _children(ROOT / "dev" / "preflight_dev") == harness
    assert not _children(ROOT / "operator" / "preflight_operator") & harness


# The operator's folders, top to bottom, as the one `layers` contract orders them.
LAYERS = ["main", "handlers", "cli | webhook", "runtime", "core"]


def test_every_operator_module_sits_in_a_layer() -> None:
    """Issue 28: a module's folder says what it may touch. The `layers` contract orders the
    folders; a module or package put beside them at the top would escape it."""
    contract = _contract("the operator's layers")
    assert contract["type"] == "layers"
    assert contract["containers"] == ["preflight_operator"]
    assert contract["layers"] == LAYERS
    in_layers = {name.strip() for layer in LAYERS for name in layer.split("|")}
    stray = _children(ROOT / "operator" / "preflight_operator") - in_layers - {"__init__"}
    assert not stray, (
        f"preflight_operator.{sorted(stray)} is in no layer: put it in core/ (pure decisions), "
        "runtime/ (talks to the cluster), webhook/ or cli/"
    )


@pytest.mark.parametrize(
    ("fragment", "folders"),
    [
        ("core/ is pure", {"core"}),
        ("kopf only in main.py and handlers/", {"core", "runtime", "webhook", "cli"}),
        ("only runtime/api.py", {"core", "runtime", "webhook", "cli", "handlers", "main"}),
    ],
)
def test_the_outside_packages_are_forbidden_by_folder(fragment: str, folders: set[str]) -> None:
    contract = _contract(fragment)
    named = {m.split(".", 1)[1] for m in contract["source_modules"] if "." in m}
    assert named == folders
    assert all(m.count(".") <= 1 for m in contract["source_modules"]), "folders, not modules"


def test_core_rules_is_reached_through_its_face_from_every_other_folder() -> None:
    """Issue 37 item 3: outside core/rules, the operator and the harness import
    preflight_operator.core.rules (its __init__.py) and none of its modules; every folder of
    the operator is a source, core's other modules through ``core.*``."""
    contract = _contract("core/rules has one face")
    assert contract["type"] == "forbidden"
    assert contract["forbidden_modules"] == ["preflight_operator.core.rules.*"]
    assert contract["allow_indirect_imports"] is True
    assert not contract.get("ignore_imports")
    in_layers = {name.strip() for layer in LAYERS for name in layer.split("|")}
    expected = {f"preflight_operator.{name}" for name in in_layers - {"core"}}
    expected |= {"preflight_operator.core.*", "preflight_dev"}
    assert set(contract["source_modules"]) == expected


def test_the_operator_imports_nothing_of_the_checker() -> None:
    contract = _contract("the operator imports nothing of preflight_check")
    assert contract["source_modules"] == ["preflight_operator"]
    assert contract["forbidden_modules"] == ["preflight_check"]
    assert not contract.get("ignore_imports")


def test_the_contract_package_stands_on_the_standard_library_alone() -> None:
    contract = _contract("preflight_contract imports nothing but the standard library")
    assert contract["source_modules"] == ["preflight_contract"]
    assert not contract.get("ignore_imports")
    first_party = {"preflight_check", "preflight_operator", "preflight_dev"}
    assert set(contract["forbidden_modules"]) >= first_party | THIRD_PARTY
    # import-linter sees only the packages it is told of; the sources say the rest (every
    # import, lazy ones included, is the standard library's or the package's own).
    # Its subpackages too (issue 37 item 4 made packages of its biggest modules).
    package = ROOT / "initcontainer" / "preflight_contract"
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    foreign = {
        f"{path.relative_to(package)}: {name}"
        for path in sorted(package.rglob("*.py"))
        for name in _imports(path)
        if name not in stdlib and name != "preflight_contract"
    }
    assert not foreign, foreign


def _graph_script() -> ModuleType:
    return hackscripts.load("imports_graph")


def test_the_picture_shows_no_product_import_of_the_harness() -> None:
    graph = _graph_script()
    edges = graph.collect()
    group = graph._group_of
    into_harness = [
        (a, b) for a, b in edges if group(b) == "harness" and group(a) not in {"harness", "tests"}
    ]
    assert into_harness == []
    # The picture is read from the code: known edges are there, lazy imports included.
    assert ("rules", "contract_pkg") in edges
    assert ("check_core", "contract_pkg") in edges
    # The contract package imports no other part (only the standard library).
    assert not [(a, b) for a, b in edges if group(a) == "contract"]
    assert ("harness_demo", "harness_fakedriver") in edges
    assert ("tests_fakedriver", "harness_fakedriver") in edges
    # The harness stands on the product, never on the tests.
    assert not [(a, b) for a, b in edges if group(a) == "harness" and group(b) == "tests"]
    text = graph.render(edges)
    assert text.startswith("%% Generated by hack/imports_graph.py")
    assert 'subgraph grp_harness["development harness' in text


def test_relative_imports_resolve_to_their_package(tmp_path: Path) -> None:
    graph = _graph_script()
    source = tmp_path / "pkg" / "sub" / "mod.py"
    source.parent.mkdir(parents=True)
    source.write_text("from .. import other\nfrom . import sibling\nimport x.y\n")
    assert graph.imports_of(source, "pkg.sub.mod") == {"pkg.other", "pkg.sub.sibling", "x.y"}


def test_the_graph_is_embedded_between_its_markers_only() -> None:
    graph = _graph_script()
    document = f"intro\n{graph.BEGIN}\nold graph\n{graph.END}\nafter\n"
    embedded = graph.embed(document, "graph LR\n  a --> b\n")
    assert embedded == (
        f"intro\n{graph.BEGIN}\n```mermaid\ngraph LR\n  a --> b\n```\n{graph.END}\nafter\n"
    )
    assert graph.embed("no markers\n", "graph LR\n") == "no markers\n"


def _kopf_private_uses(path: Path) -> list[str]:
    """Where a module reaches into kopf's private API: an import of ``kopf._…``, an
    attribute ``kopf.<…>._x`` or ``kopf._x``, or a class built on one of kopf's classes
    (how ``_serve`` was once overridden)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kopf._"):
            found.append(f"{path.name}:{node.lineno} from {node.module} import")
        elif isinstance(node, ast.Import):
            found += [f"{path.name}:{node.lineno} import {a.name}" for a in node.names
                      if a.name.startswith("kopf._")]  # fmt: skip
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id == "kopf":
                found.append(f"{path.name}:{node.lineno} kopf…{node.attr}")
        elif isinstance(node, ast.ClassDef):
            found += [
                f"{path.name}:{node.lineno} class on kopf.{parent.attr}"
                for parent in node.bases
                if isinstance(parent, ast.Attribute)
                and isinstance(parent.value, ast.Name)
                and parent.value.id == "kopf"
            ]
    return found


def test_the_product_uses_only_kopfs_public_api() -> None:
    """Issue 12: no private kopf API anywhere in the product (a kopf upgrade must not be
    able to change silently which replica writes or how a webhook is answered)."""
    sources = [p for d in ("operator", "initcontainer") for p in (ROOT / d).rglob("*.py")]
    found = [use for path in sources for use in _kopf_private_uses(path)]
    assert not found, found


def test_the_kopf_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import kopf\nfrom kopf._core.engines import peering\n"
        "class S(kopf.WebhookServer):\n    pass\n"
        "x = kopf.WebhookServer._serve\n"
    )
    assert len(_kopf_private_uses(bad)) == 3
