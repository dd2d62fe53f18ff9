"""One parallel plan (issue 37): the GPUs a pod needs are computed in one class.

The contract's ``ParallelPlan`` is the plan; the checker's ``Plan`` is that class with where
its numbers came from, the rules' context takes a pod's count (or its share of a spread
group) from it, and the operator's status holds the number the rules reported. Four
formulas for the one number the product exists to get right had drifted apart before
(the checker floored at 1 GPU, the contract did not; the context re-derived the group's
count). The tree is searched for another definition, and the shared answers are compared.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from preflight_check.plan import Plan
from preflight_contract.vllm_args import ParallelPlan, parse_vllm_args

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = (ROOT / "operator" / "preflight_operator", ROOT / "initcontainer")
ONLY = "preflight_contract/vllm_args/results.py:ParallelPlan"


def definitions(roots: tuple[Path, ...], word: str = "gpus") -> list[str]:
    """Every function, method or property whose name says it computes a GPU count that is
    needed (``gpus_needed``, ``group_gpus_needed``, ...), as file:Class.name."""
    found: list[str] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)] + [tree]:
                for node in getattr(cls, "body", []):
                    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                        continue
                    if word in node.name and "needed" in node.name:
                        owner = cls.name if isinstance(cls, ast.ClassDef) else "<module>"
                        found.append(f"{path.relative_to(root.parent)}:{owner}.{node.name}")
    return found


def test_only_the_contracts_plan_computes_the_gpus_a_pod_needs() -> None:
    found = definitions(PRODUCT)
    assert [f.replace("initcontainer/", "") for f in found] == [f"{ONLY}.gpus_needed"], found


def test_the_search_can_fail(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "x.py").write_text(
        "class P:\n    @property\n    def gpus_needed(self):\n        return 1\n"
        "def group_gpus_needed():\n    return 2\n"
    )
    assert definitions((tmp_path / "pkg",)) == [
        "pkg/x.py:P.gpus_needed",
        "pkg/x.py:<module>.group_gpus_needed",
    ]


def test_the_checkers_plan_is_the_contracts() -> None:
    assert issubclass(Plan, ParallelPlan)
    assert "gpus_needed" not in Plan.__dict__  # inherited, never redefined


@pytest.mark.parametrize(
    "argv",
    [
        "vllm serve m -tp 4",
        "vllm serve m -tp 2 -pp 2 -dp 2",
        "vllm serve m -tp 8 --nnodes 2 --node-rank 1",
        "vllm serve m -tp 4 -dp 4 --data-parallel-size-local 2 --nnodes 2",
        "vllm serve m -tp 2 --prefill-context-parallel-size 2",
    ],
)
def test_the_checker_counts_as_the_rules_do(argv: str) -> None:
    """The checker's plan, built from the numbers the contract's parse gives it (its
    ``nnodes`` is the pods one replica spans), needs the GPUs the contract's plan does."""
    plan = parse_vllm_args(argv.split()).plan
    checker = Plan(tp=plan.tp, pp=plan.pp, dp_local=plan.dp_local, pcp=plan.pcp,
                   nnodes=plan.nodes_per_replica)  # fmt: skip
    assert checker.gpus_needed == plan.gpus_needed
    assert checker.nodes == plan.nodes_per_replica
