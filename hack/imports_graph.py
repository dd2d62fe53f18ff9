#!/usr/bin/env python3
"""Draw the repository's imports between its parts as a Mermaid graph (docs/imports.mmd).

Why: docs/ARCHITECTURE.md states which part may import which, and import-linter
(`make lint`, `[tool.importlinter]` in pyproject.toml) enforces the layers; this picture
shows what the code does today, so a reader sees at a glance that the product and the
development harness are apart (and where they are not yet). It reads the sources with
the standard library's `ast` only, so it runs without the venv:

    python3 hack/imports_graph.py             # writes docs/imports.mmd
    python3 hack/imports_graph.py --check     # exit 1 when docs/imports.mmd is stale

Every import statement counts, including the ones inside functions (lazy imports) and
under `if TYPE_CHECKING:`; each edge is labelled with the number of importing modules.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "imports.mmd"

# Where each import root lives: (directory holding the package, package name).
SOURCES = [
    (ROOT / "initcontainer", "preflight_check"),
    (ROOT / "operator", "preflight_operator"),
    (ROOT, "tests"),
]

# The checker modules the operator may import (docs/ARCHITECTURE.md, "Packages").
CHECKER_CONTRACT = {"report", "vllm_args", "check_ids", "modelfacts", "modelsource"}
# The development harness, still inside the product package (issue 12).
HARNESS = {"testing", "localsetup", "localoperator", "fakekubelet", "demo"}
# Third-party packages worth showing (the rest are standard library or small helpers).
EXTERNAL = {"kopf", "kubernetes", "aiohttp", "yaml", "pynvml", "torch", "prometheus_client"}

# Node id -> (group, label). Groups become Mermaid subgraphs.
GROUPS = {
    "checker": "checker (initcontainer/preflight_check)",
    "rules": "rules engine (pure)",
    "core": "operator core (operator/preflight_operator)",
    "harness": "development harness (ships in the wheel today)",
    "tests": "tests",
    "external": "third-party",
}


def node_of(module: str) -> tuple[str, str] | None:
    """The graph node (id, group) a dotted module name belongs to, or None to leave it out."""
    parts = module.split(".")
    top = parts[0]
    if top == "preflight_check":
        sub = parts[1] if len(parts) > 1 else ""
        if sub in CHECKER_CONTRACT:
            return "check_contract", "checker"
        if sub in {"checks", "driver"}:
            return f"check_{sub}", "checker"
        return "check_core", "checker"
    if top == "preflight_operator":
        sub = parts[1] if len(parts) > 1 else ""
        if sub == "rules":
            if len(parts) > 2 and parts[2] == "checks":
                return "rules_checks", "rules"
            return "rules", "rules"
        if sub in HARNESS:
            return f"harness_{sub}", "harness"
        if sub == "handlers":
            return "op_handlers", "core"
        if sub in {"api", "webhookserver"}:
            return f"op_{sub}", "core"
        return "op_core", "core"
    if top == "tests":
        sub = parts[1] if len(parts) > 1 and not parts[1].startswith(("conftest", "hub")) else ""
        return (f"tests_{sub}" if sub else "tests_root"), "tests"
    if top in EXTERNAL:
        return f"ext_{top}", "external"
    return None


LABELS = {
    "check_core": "checker core<br/>cli, gather, runner, plan, options, ...",
    "check_checks": "preflight_check.checks",
    "check_driver": "preflight_check.driver<br/>ctypes libcuda + NVML",
    "check_contract": "contract modules<br/>report, vllm_args, check_ids,<br/>"
    "modelfacts, modelsource",
    "rules": "preflight_operator.rules<br/>engine, kinds, registry, model, ...",
    "rules_checks": "preflight_operator.rules.checks",
    "op_core": "operator core<br/>controller, planning, store, workqueue, ...",
    "op_handlers": "handlers (kopf, thin)",
    "op_api": "api.py<br/>the one API module",
    "op_webhookserver": "webhookserver.py",
    "tests_root": "tests/conftest.py, hubserver.py",
}


def module_name(path: Path, base: Path) -> str:
    """The dotted name of a source file relative to its import root."""
    rel = path.relative_to(base).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, module: str) -> set[str]:
    """Every module a file imports (absolute names; relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            # `from pkg import name` may name a submodule: count it as pkg.name (a class
            # or function under pkg.name still maps to pkg's part).
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def collect() -> dict[tuple[str, str], set[str]]:
    """(from node, to node) -> the importing modules, over every source file."""
    edges: dict[tuple[str, str], set[str]] = defaultdict(set)
    for base, package in SOURCES:
        for path in sorted((base / package).rglob("*.py")):
            if "__pycache__" in path.parts or "data" in path.relative_to(base).parts:
                continue
            module = module_name(path, base)
            source = node_of(module)
            if source is None:
                continue
            for target_name in imports_of(path, module):
                target = node_of(target_name)
                if target is None or target[0] == source[0]:
                    continue
                edges[(source[0], target[0])].add(module)
    return edges


def render(edges: dict[tuple[str, str], set[str]]) -> str:
    """The Mermaid text: one subgraph per group, one labelled edge per node pair."""
    nodes: dict[str, str] = {}
    for a, b in edges:
        for name in (a, b):
            nodes[name] = name
    by_group: dict[str, list[str]] = defaultdict(list)
    for name in sorted(nodes):
        group = next(g for g in GROUPS if _group_of(name) == g)
        by_group[group].append(name)
    lines = [
        "%% Generated by hack/imports_graph.py from the sources (stdlib ast); do not edit.",
        "%% Edge label: how many modules of the source part import the target part.",
        "graph LR",
    ]
    for group, title in GROUPS.items():
        if not by_group[group]:
            continue
        lines.append(f'  subgraph {group}["{title}"]')
        for name in by_group[group]:
            lines.append(f'    {name}["{_label(name)}"]')
        lines.append("  end")
    harness_edges = []
    for index, ((a, b), modules) in enumerate(sorted(edges.items())):
        lines.append(f"  {a} -->|{len(modules)}| {b}")
        if _group_of(a) != "harness" and _group_of(b) == "harness" and _group_of(a) != "tests":
            harness_edges.append(index)
    for index in harness_edges:
        lines.append(f"  linkStyle {index} stroke:#d00,stroke-width:2px")
    return "\n".join(lines) + "\n"


def _group_of(name: str) -> str:
    prefix = name.split("_", 1)[0]
    return {
        "check": "checker",
        "rules": "rules",
        "op": "core",
        "harness": "harness",
        "tests": "tests",
        "ext": "external",
    }[prefix]


def _label(name: str) -> str:
    if name in LABELS:
        return LABELS[name]
    if name.startswith("harness_"):
        return f"{name.removeprefix('harness_')}"
    if name.startswith("tests_"):
        return f"tests/{name.removeprefix('tests_')}"
    if name.startswith("ext_"):
        return name.removeprefix("ext_")
    return name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the file is stale")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    text = render(collect())
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale: run python3 hack/imports_graph.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output.relative_to(ROOT)} ({text.count('-->')} edges)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
