"""The wheel and the images hold the product only, never the development harness.

Why (issue 12): the local control plane, the kubelet stand-in, the demo and the fake
driver are development tools. They live in dev/preflight_dev, a distribution of its own
(dev/pyproject.toml) that `make venv` installs editable; the product's wheel is found by
`[tool.setuptools.packages.find]` in pyproject.toml, and the operator image installs that
wheel. These tests read the same configuration setuptools and the Dockerfile read, so a
`where` that grows to include dev/, a harness module put back under operator/, a COPY of
dev/ or `kubernetes` back among the runtime dependencies fails here, fast and without a
build. (The wheel itself: `pip wheel --no-deps -w /tmp/wheel .`, then list it; the
command and its result are in docs/ARCHITECTURE.md, "Packages".)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = {"preflight_contract", "preflight_check", "preflight_operator"}
HARNESS_NAMES = {"testing", "localsetup", "localoperator", "fakekubelet", "demo", "fakedriver"}


def _pyproject(path: Path) -> dict[str, Any]:
    tomllib = pytest.importorskip("tomllib")
    return dict(tomllib.loads(path.read_text(encoding="utf-8")))


def _wheel_modules() -> set[str]:
    """Every module the product's wheel would hold, found the way setuptools finds them."""
    from setuptools import find_namespace_packages

    find = _pyproject(ROOT / "pyproject.toml")["tool"]["setuptools"]["packages"]["find"]
    assert find.get("namespaces", True), "the test follows setuptools' default (namespaces)"
    modules: set[str] = set()
    for where in find["where"]:
        base = ROOT / where
        packages = find_namespace_packages(
            where=str(base), include=find.get("include", ["*"]), exclude=find.get("exclude", [])
        )
        for package in packages:
            folder = base / package.replace(".", "/")
            modules.add(package)
            modules.update(f"{package}.{p.stem}" for p in folder.glob("*.py"))
    return modules


def test_the_wheel_holds_the_product_packages_and_nothing_else() -> None:
    modules = _wheel_modules()
    assert {m.split(".")[0] for m in modules} == PRODUCT
    assert "preflight_operator.cli" in modules  # the entry point's module is in it
    # The contract package both sides import ships with them, with its py.typed.
    assert "preflight_contract.report" in modules
    assert (ROOT / "initcontainer" / "preflight_contract" / "py.typed").is_file()
    harness = sorted(m for m in modules if set(m.split(".")[1:]) & HARNESS_NAMES)
    assert not harness, f"harness modules would ship in the wheel: {harness}"


def test_the_harness_is_its_own_distribution() -> None:
    dev = _pyproject(ROOT / "dev" / "pyproject.toml")
    assert dev["project"]["name"] != _pyproject(ROOT / "pyproject.toml")["project"]["name"]
    assert dev["tool"]["setuptools"]["packages"]["find"]["include"][0] == "preflight_dev"
    assert (ROOT / "dev" / "preflight_dev" / "__init__.py").is_file()
    # make venv installs it (editable) next to the product.
    assert "-e ./dev" in (ROOT / "Makefile").read_text(encoding="utf-8")


def test_the_image_build_never_sees_dev() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    copies = [line for line in dockerfile.splitlines() if line.startswith("COPY ")]
    assert copies
    assert not [c for c in copies if re.search(r"\sdev/|\s\.\s", c)], copies
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    # The build context is an allowlist ("*", then "!path" lines) that never admits dev/.
    assert "*" in ignore
    assert not [line for line in ignore if line.startswith("!") and "dev" in line]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_kubernetes_is_a_development_dependency_only() -> None:
    project = _pyproject(ROOT / "pyproject.toml")["project"]
    runtime = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    assert "kubernetes" not in runtime
    assert any(d.startswith("kubernetes") for d in project["optional-dependencies"]["dev"])
    # Nothing shipped imports it (lazy imports included), so the image needs no client.
    importers = [
        str(path.relative_to(ROOT))
        for where in ("initcontainer", "operator")
        for path in sorted((ROOT / where).rglob("*.py"))
        if "kubernetes" in _imports(path)
    ]
    assert importers == []
    assert "kubernetes" not in (ROOT / "Dockerfile").read_text(encoding="utf-8").split()
