"""The fast subset of the reliability suite for CI (hack/reliability/inputs.py runs it all,
with peak RSS, as `make reliability`): every hostile lint input exits as expected without a
traceback, and every hostile object goes through the rules engine (the webhook's
check_object) in bounded time without an internal error. `check`'s hostile inputs are in
tests/fakedriver/test_check_hostile.py."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from preflight_operator.cli import lint
from preflight_operator.core.rules import check_object

sys.path.insert(0, str(Path(__file__).parents[1] / "data" / "hostile"))
import corpus

LINT = list(corpus.lint_cases(full=False))
OBJECTS = list(corpus.object_cases(full=False))


@pytest.mark.parametrize("case", LINT, ids=[c[0] for c in LINT])
def test_lint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: tuple[str, str, str, tuple[int, ...]]
) -> None:
    name, file_name, text, codes = case
    path = tmp_path / file_name
    if name == "not-utf8":
        path.write_bytes(text.encode("latin-1"))
    else:
        path.write_text(text, encoding="utf-8")
    started = time.process_time()  # CPU spent, not wall time: a loaded machine waits more
    code = lint.main([str(path)])
    spent = time.process_time() - started
    out, err = capsys.readouterr()
    assert code in codes, (out, err)
    assert "Traceback" not in out + err
    assert "rules-internal-error" not in out
    assert spent < 3


@pytest.mark.parametrize(("name", "obj"), OBJECTS, ids=[c[0] for c in OBJECTS])
def test_engine(name: str, obj: dict[str, Any]) -> None:
    started = time.process_time()
    results = check_object(obj)
    assert time.process_time() - started < 2
    for result in results:
        assert all(f.id != "rules-internal-error" for f in result.findings), result.to_dict()
        result.to_dict()  # serialisable, as the webhook sends it
