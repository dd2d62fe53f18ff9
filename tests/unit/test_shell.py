"""`sh -c` words and arithmetic, and the expansion budgets (issue 11 item 1, issue 19 item 1)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_rules_support import check, deployment, pod_spec, vllm

from preflight_operator.core.rules import check_object
from preflight_operator.core.rules.command import Invocation, find_invocation
from preflight_operator.core.rules.kubeenv import (
    MAX_VALUE_CHARS,
    Budget,
    build_env,
    display,
    expand,
    has_unknown,
    no_config_map,
    unknown_names,
)
from preflight_operator.core.rules.shell import expand_word
from preflight_operator.core.rules.shparse import Simple, parse

sys.path.insert(0, str(Path(__file__).parents[1] / "data" / "hostile"))
import corpus


def _words(script: str) -> list[list[str]]:
    """The simple commands of a script as the rules' reader parses them (shparse), each
    word as the text of its parts."""
    out = []
    for and_or, _ in parse(script).items:
        for pipeline in [and_or.first, *(p for _, p in and_or.rest)]:
            for command in pipeline.commands:
                assert isinstance(command, Simple), command
                out.append(["".join(p.text for p in w.parts) for w in command.words])
    return out


def _argv(script: str, env: dict[str, str]) -> tuple[str, ...]:
    """The vLLM argv the rules read from ``bash -c script`` with ``env`` (shparse, shrun)."""
    container: dict[str, Any] = {
        "name": "v",
        "image": "img",
        "command": ["bash", "-c", script],
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }
    environment = build_env(container, "c", namespace=None, config_map=no_config_map)
    found = find_invocation(container, "c", environment)
    assert isinstance(found, Invocation), found
    return found.argv


def test_substitutions_are_one_word_with_spaces_inside() -> None:
    script = 'vllm serve m -dp $((LWS_GROUP_SIZE * 8)) --x "$(cat /a | head -1)" `a; b` && echo'
    assert _words(script) == [
        [
            "vllm",
            "serve",
            "m",
            "-dp",
            "$((LWS_GROUP_SIZE * 8))",
            "--x",
            "$(cat /a | head -1)",
            "`a; b`",
        ],
        ["echo"],
    ]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("$((LWS_GROUP_SIZE * 8))", "32"),
        ("$(( (LWS_GROUP_SIZE + 1) * -3 / 2 ))", "-7"),  # C division: towards zero
        ("$((-7 % 3))", "-1"),
        ("$((N*2))", "6"),  # an env literal
        ("$(($N + ${N}))", "6"),
        ("a$((2*3))b", "a6b"),
        ("${MISSING:-$((1+1))}", "2"),
        ("$(( ${I:-0} * N ))", "0"),  # parameters expand first (llm-d's START_RANK)
        ("$(( ${N:-0} * N ))", "9"),
    ],
)
def test_arithmetic_when_every_operand_is_known(word: str, expected: str) -> None:
    values = {"LWS_GROUP_SIZE": "4", "N": "3"}
    assert expand_word(word, values.get) == expected


@pytest.mark.parametrize(
    "word",
    [
        "$((X*8))",
        "$((1/0))",
        "$((2**3))",
        "$((08))",
        "$((S+1))",
        "$((" + "(" * 80 + "1" + ")" * 80 + "))",
    ],
)
def test_arithmetic_unknown_otherwise(word: str) -> None:
    values = {"S": "\x00$(secret)\x00"}
    out = expand_word(word, values.get)
    assert has_unknown(out)
    assert display(out).startswith("$((")


def test_quoted_dollars_stay_literal() -> None:
    argv = _argv('vllm serve \'$TP\' "\\$TP" "$TP"', {"TP": "4"})
    assert argv == ("vllm", "serve", "$TP", "$TP", "4")


def test_kubelet_leaves_shell_arithmetic_alone() -> None:
    # the kubelet's $(VAR): "(X*8" is not defined, so the text stays exactly as written
    assert expand("$((X*8))", {"X": "2"}.get) == "$((X*8))"
    assert expand("-dp=$((LWS_GROUP_SIZE*8))", {}.get) == "-dp=$((LWS_GROUP_SIZE*8))"


def test_lws_group_size_reaches_the_arithmetic() -> None:
    lws = corpus.arithmetic_lws()
    container = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    env = build_env(
        container, "c", namespace="ns", config_map=lambda _n: None, injected={"LWS_GROUP_SIZE": "2"}
    )
    found = find_invocation(container, "c", env)
    assert isinstance(found, Invocation)
    assert found.argv[-2:] == ("--data-parallel-size", "16")


def test_arithmetic_in_a_deployment_plan() -> None:
    script = "N=2; vllm serve m -tp $((N * 2))"
    [result] = check(deployment(pod_spec(vllm(gpus=4, command=("sh", "-c", script)))))
    assert result.plan is not None
    assert result.plan.tp == 4


def test_unknown_arithmetic_is_never_a_failure() -> None:
    script = "vllm serve m -tp $((SHARDS * 2))"
    [result] = check(deployment(pod_spec(vllm(gpus=4, command=("sh", "-c", script)))))
    assert result.verdict != "fail", [f.to_dict() for f in result.findings]


# -- budgets -----------------------------------------------------------------------------


def _measure(obj: dict[str, Any]) -> tuple[float, int, list[Any]]:
    tracemalloc.start()
    started = time.perf_counter()
    results = check_object(obj)
    spent = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return spent, peak, results


@pytest.mark.parametrize(
    "make", [corpus.doubling_env, corpus.doubling_shell, corpus.many_refs], ids=lambda f: f.__name__
)
def test_hostile_expansion_is_cheap_and_unknown(make: Any) -> None:
    spent, peak, results = _measure(make())
    assert spent < 1.0  # measured 1-45 ms
    assert peak < 8 * 1024 * 1024  # measured 0.2-0.6 MiB (the issue: 4.2 GB in the webhook)
    assert results
    for result in results:
        assert all(f.id != "rules-internal-error" for f in result.findings), result.to_dict()


def test_doubling_env_value_is_unknown_with_a_reason() -> None:
    container = corpus.doubling_env()["spec"]["template"]["spec"]["containers"][0]
    env = build_env(container, "c", namespace="ns", config_map=lambda _n: None)
    assert len(env.values["V10"]) == 1024  # small values are exact
    last = env.values["V24"]
    assert has_unknown(last)
    assert len(last) < 1024
    assert any("longer than" in name for name in unknown_names(last))


def test_value_cap_and_container_budget() -> None:
    big = "y" * (MAX_VALUE_CHARS // 2 + 1)
    assert has_unknown(expand("$(A)$(A)", {"A": big}.get))
    assert expand("$(A)", {"A": big}.get) == big
    budget = Budget(10)
    assert expand("$(A)", {"A": "12345"}.get, budget) == "12345"
    out = expand("$(A)$(A)", {"A": "12345"}.get, budget)
    assert has_unknown(out)
    assert "passed" in unknown_names(out)[0]


# -- against a real shell ------------------------------------------------------------------

SH = shutil.which("bash")
needs_sh = pytest.mark.skipif(SH is None, reason="no bash to compare with")
VARS = {"N": "3", "LWS_GROUP_SIZE": "4", "Z": "0", "NEG": "-2"}


@st.composite
def arithmetic(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 2 or draw(st.booleans()):  # at most 8 operands below 100: no int64 wrap
        return draw(st.one_of(st.integers(0, 99).map(str), st.sampled_from([*VARS, "$N", "${N}"])))
    op = draw(st.sampled_from(["+", "-", "*", "/", "%"]))
    left, right = draw(arithmetic(depth + 1)), draw(arithmetic(depth + 1))
    text = f"{left} {op} {right}"
    return f"({text})" if draw(st.booleans()) else text


@needs_sh
@settings(max_examples=150, deadline=None)
@given(arithmetic())
def test_arithmetic_agrees_with_bash(expression: str) -> None:
    assert SH is not None
    shell = subprocess.run(
        [SH, "-c", f"echo $(( {expression} ))"],
        capture_output=True,
        text=True,
        env=VARS,
        check=False,
    )
    ours = expand_word(f"$(( {expression} ))", VARS.get)
    if shell.returncode != 0:  # division by zero
        assert has_unknown(ours), (expression, shell.stderr)
    else:
        assert ours == shell.stdout.strip(), expression


word_parts = st.sampled_from(
    ["a", "b=c", "'x y'", '"p q"', "'$N'", '"$N"', "$N", "${N}", "${U:-d}", "\\$N", "'a\"b'"]
)


@needs_sh
@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(word_parts, min_size=1, max_size=3).map("".join), min_size=1, max_size=5))
def test_words_and_quotes_agree_with_bash(words: list[str]) -> None:
    assert SH is not None
    script = "printf '%s\\0' " + " ".join(words)
    shell = subprocess.run([SH, "-c", script], capture_output=True, text=True, env=VARS, check=True)
    # the rules' reading of the same words after a vLLM start (shparse, shrun)
    ours = list(_argv("vllm serve m " + " ".join(words), VARS)[3:])
    # a variable the spec does not set is unknown to us (the image may set it), empty to
    # bash: only names that really are unset may be unknown
    for word in ours:
        assert all(name not in VARS for name in unknown_names(word)), (script, word)
    theirs = shell.stdout.split("\0")[:-1]
    if any(has_unknown(word) for word in ours):  # bash also drops an unquoted empty word
        ours = [w for w in (re.sub("\x00[^\x00]*\x00", "", word) for word in ours) if w]
        theirs = [w for w in theirs if w]
    assert ours == theirs, script
