"""Our quantity parser against apimachinery's own, on hypothesis-made strings.

The oracle is hack/quantity (k8s.io/apimachinery's resource.Quantity.UnmarshalJSON, the code
the API server runs on every manifest quantity), built once with Go into
~/.cache/vllm-preflight; without Go the oracle tests are skipped, the fixed cases still run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preflight_operator.core.rules.quantity import (
    MAX_DIGITS,
    MAX_EXPONENT,
    format_bytes,
    parse_quantity,
)

ORACLE_SRC = Path(__file__).parents[2] / "hack" / "quantity"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1E", 10**18),  # E alone is the exa suffix, not an exponent
        ("1Ei", 2**60),
        ("2e3", 2000),
        ("2E3", 2000),  # E with digits is an exponent
        ("1e+3", 1000),
        ("1500m", Fraction(3, 2)),
        ("1n", Fraction(1, 10**9)),
        ("1e-10", Fraction(1, 10**9)),  # rounded up to one nano unit, as stored
        ("16Ei", 2**63 - 1),  # binary quantities are capped at int64
        ("1.", 1),
        (".5Gi", 2**29),
        (" 2 ", 2),  # UnmarshalJSON trims
        ("+", 0),
        ("Ki", 0),
        ("\u00a02\u3000", 2),
    ],
)
def test_kubernetes_spellings(text: str, value: Fraction | int) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text", ["", "1e", "1ki", "1Mi3", "1e3m", "1ee3", "Pi", "-Ei", "1.5.5", "\t1", "1\n"]
)
def test_rejected_as_the_api_server_rejects(text: str) -> None:
    assert parse_quantity(text) is None


def test_hostile_sizes_are_cheap_and_none() -> None:
    started = time.process_time()  # CPU spent, not wall time: a loaded machine waits more
    assert parse_quantity("1" + "0" * 5000) is None  # beyond MAX_DIGITS (int() caps at 4300)
    assert parse_quantity("1e999999999") is None
    assert parse_quantity("9" * MAX_DIGITS) == int("9" * MAX_DIGITS)
    assert parse_quantity(10**20000) is None
    assert time.process_time() - started < 0.5


def test_format_bytes() -> None:
    assert format_bytes(2**30) == "1Gi"
    assert format_bytes(1500000) == "1500000"
    assert format_bytes(2**60) == "1Ei"


# -- the oracle ------------------------------------------------------------------------------


def _oracle_binary() -> Path | None:
    go = shutil.which("go")
    if go is None:
        return None
    key = hashlib.sha256()
    for name in ("main.go", "go.mod", "go.sum"):
        key.update((ORACLE_SRC / name).read_bytes())
    key.update(subprocess.run([go, "version"], capture_output=True, check=True).stdout)
    cache = Path(os.environ.get("VLLM_PREFLIGHT_CACHE", Path.home() / ".cache" / "vllm-preflight"))
    binary = cache / f"quantity-{key.hexdigest()[:12]}" / "quantity"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}
        built = subprocess.run(
            [go, "build", "-o", str(binary) + ".partial", "."],
            check=False,
            cwd=ORACLE_SRC,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if built.returncode != 0:
            pytest.skip(f"cannot build the apimachinery oracle: {built.stderr[-500:]}")
        os.replace(str(binary) + ".partial", binary)
    return binary


class Oracle:
    def __init__(self, binary: Path) -> None:
        self.proc = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(self, text: str) -> Fraction | None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(text) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().split()
        return Fraction(answer[1]) if answer[0] == "ok" else None


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    binary = _oracle_binary()
    if binary is None:
        pytest.skip("no Go toolchain: the apimachinery oracle cannot be built")
    found = Oracle(binary)
    yield found
    found.proc.kill()
    found.proc.wait()


SUFFIXES = [
    *("", "n", "u", "m", "k", "M", "G", "T", "P", "E"),
    *("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"),
    *("e", "E", "e3", "E3", "e+2", "e-12", "E-3", "e0", "K", "ki", "i", "Mi3", "ee3", "e3m"),
]


@st.composite
def quantities(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "", "+", "-"]))
    integer = draw(st.text("0123456789", max_size=22))
    point = draw(st.sampled_from(["", "", "."]))
    fraction = draw(st.text("0123456789", max_size=12)) if point else ""
    suffix = draw(st.sampled_from(SUFFIXES))
    pad = draw(st.sampled_from(["", "", " ", "\t"]))
    return f"{pad}{sign}{integer}{point}{fraction}{suffix}{pad}"


settings_ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _beyond_our_bounds(text: str) -> bool:
    """Inputs the parser refuses on purpose (quantity.MAX_EXPONENT, MAX_DIGITS: bounded work
    for hostile input), which apimachinery would still evaluate: documented divergence."""
    found = re.search(r"[0-9]\.?[eE]([+-]?[0-9]+)\s*$", text.strip())  # an exponent of a number
    if found and len(found.group(1)) < 12 and abs(int(found.group(1))) > MAX_EXPONENT:
        return True
    return sum(c.isdigit() for c in text) > MAX_DIGITS


def _agrees(oracle: Oracle, text: str) -> None:
    if _beyond_our_bounds(text):
        assert parse_quantity(text) is None, repr(text)
        return
    assert parse_quantity(text) == oracle.ask(text), repr(text)


@settings_
@given(quantities())
def test_grammar_matches_apimachinery(oracle: Oracle, text: str) -> None:
    _agrees(oracle, text)


@settings_
@given(st.text("0123456789.+-eEinumkKMGTP ", max_size=10))
def test_any_text_matches_apimachinery(oracle: Oracle, text: str) -> None:
    _agrees(oracle, text)


def test_the_bounds_are_what_the_parser_refuses(oracle: Oracle) -> None:
    assert parse_quantity("1E1001") is None  # apimachinery evaluates it; we refuse the work
    assert parse_quantity("1E1000") == oracle.ask("1E1000")
