"""The operator's rooms stay small (issue 28): no class of the operator over 300 lines; and (issue
37) no hand-written module of the product over 800 lines, no two operator modules of one name.

A class that outgrows this has taken a second job; split the job out into a class of its
own, wired where the others are (main.build, or the Controller's constructor), as the
Controller's policy statuses, analyses, workers and reads were.
"""

from __future__ import annotations

import ast
from pathlib import Path

OPERATOR = Path(__file__).resolve().parents[2] / "operator" / "preflight_operator"
MAX_CLASS_LINES = 300


def class_sizes(root: Path) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                name = f"{path.relative_to(root)}:{node.name}"
                sizes[name] = node.end_lineno - node.lineno + 1
    return sizes


def test_no_class_of_the_operator_exceeds_300_lines() -> None:
    too_long = {n: s for n, s in class_sizes(OPERATOR).items() if s > MAX_CLASS_LINES}
    assert not too_long, f"split these (lines): {too_long}"


def test_the_size_check_can_fail(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_CLASS_LINES))
    (tmp_path / "big.py").write_text(f"class Big:\n{body}\n")
    assert class_sizes(tmp_path) == {"big.py:Big": MAX_CLASS_LINES + 1}


# -- modules (issue 37): none hand-written over 800 lines, no two of one name -----------------

MAX_MODULE_LINES = 800
PRODUCT = (OPERATOR, OPERATOR.parents[1] / "initcontainer")


def module_sizes(roots: tuple[Path, ...]) -> dict[str, int]:
    """Lines of every hand-written module: a generated table says GENERATED in its first
    line (hack/models/gen_*.py, hack/vllm/gen_versions.py write it) and is not counted."""
    sizes: dict[str, int] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            if lines and "GENERATED" not in lines[0]:
                sizes[str(path.relative_to(root.parent))] = len(lines)
    return sizes


def test_no_hand_written_module_exceeds_800_lines() -> None:
    too_long = {n: s for n, s in module_sizes(PRODUCT).items() if s > MAX_MODULE_LINES}
    assert not too_long, f"split these by concern (lines): {too_long}"


def test_generated_tables_say_so_in_their_first_line() -> None:
    contract = PRODUCT[1] / "preflight_contract"
    for name in ("model_defaults.py", "vllm_registry.py", "vllm_versions.py"):
        first = (contract / name).read_text(encoding="utf-8").splitlines()[0]
        assert "GENERATED" in first, name


def test_the_module_size_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    (tmp_path / "pkg" / "table.py").write_text('"""GENERATED"""\n' + "x = 1\n" * 900)
    assert module_sizes((tmp_path / "pkg",)) == {"pkg/big.py": MAX_MODULE_LINES + 1}


def test_no_two_modules_of_the_operator_share_a_file_name() -> None:
    seen: dict[str, list[str]] = {}
    for path in sorted(OPERATOR.rglob("*.py")):
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(str(path.relative_to(OPERATOR)))
    assert not {n: p for n, p in seen.items() if len(p) > 1}
