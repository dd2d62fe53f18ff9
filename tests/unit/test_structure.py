"""The operator's rooms stay small (issue 28): no class of the operator over 300 lines.

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
