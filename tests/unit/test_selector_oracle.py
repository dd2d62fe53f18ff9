"""PreflightPolicy selectors against apimachinery's own, on hypothesis-made selectors.

The oracle is hack/selector (k8s.io/apimachinery's metav1.LabelSelectorAsSelector, which
builds every requirement through labels.NewRequirement, then Selector.Matches), built
once with Go into ~/.cache/vllm-preflight like hack/quantity; without Go the oracle tests
are skipped, the fixed cases still run. Both verdicts are compared: valid or not, and for
a valid selector which label sets it selects.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preflight_dev.testing.oracles import oracle_binary
from preflight_operator.core.operatorconfig import ConfigError
from preflight_operator.core.policy import parse_policy, parse_selector

# -- the tester's selectors, and the syntax edges ---------------------------------------------


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["vllm"]}]},
        {"matchExpressions": [{"key": "app", "operator": "DoesNotExist", "values": ["x"]}]},
        {"matchExpressions": [{"key": "app", "operator": "NotIn"}]},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "app", "operator": "in", "values": ["x"]}]},
        {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]},
        {"matchExpressions": [{"key": "bad key", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a b"]}]},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": [1]}]},
        {"matchExpressions": [{"operator": "Exists"}]},
        {"matchExpressions": ["app"]},
        {"matchLabels": {"app": "-x"}},
        {"matchLabels": {"a/b/c": "x"}},
        {"matchLabels": {"/app": "x"}},
        {"matchLabels": {"Example.com/app": "x"}},  # the prefix is lower case
        {"matchLabels": {"app": "x" * 64}},
        {"matchLabels": {"x" * 64: "v"}},
        {"matchLabels": {"app\n": "x"}},  # a trailing newline: Go's regexp `$` refuses it
        {"matchLabels": {"app": None}},
        {"matchLabels": {"app": "\ud800"}},  # a lone surrogate, as JSON may carry one
        {"matchLabels": {"\ud800": "x"}},
        {"matchLabels": "app=x"},
        "app=x",
    ],
)
def test_a_selector_kubernetes_refuses_is_refused(selector: Any) -> None:
    with pytest.raises(ConfigError):
        parse_selector(selector)


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["vllm"]}]},
        {"matchExpressions": [{"key": "app", "operator": "NotIn"}]},
    ],
)
def test_an_invalid_selector_makes_the_policy_invalid_and_selects_nothing(selector: Any) -> None:
    policy = parse_policy(
        {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"selector": selector}}
    )
    assert [p.field for p in policy.problems] == ["spec.selector"]
    assert "spec.selector.matchExpressions[0].values" in policy.problems[0].message
    assert "selects no workload" in policy.problems[0].message
    for labels in ({}, {"app": "vllm"}, {"app": "other"}):
        assert not policy.selector.matches(labels)


@pytest.mark.parametrize(
    "selector",
    [
        {},
        {"matchLabels": {}, "matchExpressions": []},
        {"matchLabels": {"example.com/app": "", "a_b.c-d": "Z9"}},
        {"matchLabels": {"x" * 63: "v" * 63, "a" * 253 + "/b": "c"}},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": [""]}]},
        {"matchExpressions": [{"key": "app", "operator": "Exists", "values": []}]},
        {"matchExpressions": [{"key": "app", "operator": "DoesNotExist", "values": None}]},
    ],
)
def test_a_selector_kubernetes_takes_is_taken(selector: Any) -> None:
    parse_selector(selector)


# -- the oracle ------------------------------------------------------------------------------


def _binary() -> Path:
    binary, why = oracle_binary("selector")
    if binary is None:
        pytest.skip(why)
    return binary


class Oracle:
    def __init__(self, binary: Path) -> None:
        self.proc = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(self, selector: Any, label_sets: list[dict[str, str]]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"selector": selector, "labels": label_sets}) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    found = Oracle(_binary())
    yield found
    found.proc.kill()
    found.proc.wait()


# Keys, values and operators near the edges of each rule, so that most draws are valid
# and the invalid ones are invalid for one reason at a time.
KEYS = [
    "app", "tier", "a", "A9", "a.b_c-d", "example.com/app", "k8s.io/x", "a" * 63, "a" * 64,
    "a" * 253 + "/b", "a" * 254 + "/b", "", "/app", "app/", "a/b/c", "-app", "app-", "_a",
    "Example.com/app", "ex_ample.com/app", "ex..com/app", "bad key", "app\n", "é",
]  # fmt: skip
VALUES = [
    "", "x", "vllm", "Z9", "a.b_c-d", "v" * 63, "v" * 64, "-x", "x-", ".x", "a b", "x\n", "é",
]  # fmt: skip
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "in", "Equals", "=", "Gt", ""]

keys = st.sampled_from(KEYS)
values = st.sampled_from(VALUES)


@st.composite
def expressions(draw: st.DrawFn) -> dict[str, Any]:
    expr: dict[str, Any] = {"key": draw(keys), "operator": draw(st.sampled_from(OPERATORS))}
    choice = draw(st.sampled_from(["absent", "null", "list", "list", "list"]))
    if choice == "null":
        expr["values"] = None
    elif choice == "list":
        expr["values"] = draw(st.lists(values, max_size=3))
    return expr


@st.composite
def selectors(draw: st.DrawFn) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    if draw(st.booleans()):
        selector["matchLabels"] = draw(st.dictionaries(keys, values, max_size=3))
    if draw(st.booleans()):
        selector["matchExpressions"] = draw(st.lists(expressions(), max_size=3))
    return selector


label_sets = st.lists(
    st.dictionaries(st.sampled_from(["app", "tier", "a", "example.com/app"]), values, max_size=3),
    min_size=1,
    max_size=4,
)


def _ours(selector: Mapping[str, Any], sets: list[dict[str, str]]) -> dict[str, Any]:
    try:
        parsed = parse_selector(selector)
    except ConfigError:
        return {"valid": False}
    return {"valid": True, "matches": [parsed.matches(s) for s in sets]}


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(selectors(), label_sets)
def test_verdicts_and_matches_follow_apimachinery(
    oracle: Oracle, selector: dict[str, Any], sets: list[dict[str, str]]
) -> None:
    theirs = oracle.ask(selector, sets)
    expected = {"valid": theirs["valid"]}
    if theirs["valid"]:
        expected["matches"] = theirs.get("matches") or [False] * len(sets)
    assert _ours(selector, sets) == expected, (selector, theirs.get("error"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=70), st.text(max_size=70))
def test_any_text_as_key_and_value_follows_apimachinery(
    oracle: Oracle, key: str, value: str
) -> None:
    selector = {"matchLabels": {key: value}}
    theirs = oracle.ask(selector, [{key: value}])
    assert _ours(selector, [{key: value}])["valid"] == theirs["valid"], (key, value, theirs)


def test_the_tester_selectors_are_refused_by_apimachinery_too(oracle: Oracle) -> None:
    for selector in (
        {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["vllm"]}]},
        {"matchExpressions": [{"key": "app", "operator": "NotIn"}]},
    ):
        assert oracle.ask(selector, [{}])["valid"] is False
        assert _ours(selector, [{}]) == {"valid": False}
