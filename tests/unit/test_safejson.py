"""preflight_contract.safejson: the one bounded decoder for input that is not ours
(issue 23: a Deployment with managedFields nested 1,000 deep stopped the operator)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from preflight_contract import safejson


def reference_depth(text: str) -> int:
    """Depth by decoding (the slow, recursive, obviously right way)."""

    def walk(value: object) -> int:
        if isinstance(value, dict):
            return 1 + max((walk(v) for v in value.values()), default=0)
        if isinstance(value, list):
            return 1 + max((walk(v) for v in value), default=0)
        return 0

    return walk(json.loads(text))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:'),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=60,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_depth_equals_the_decoded_depth(value: object) -> None:
    text = json.dumps(value)
    assert safejson.depth(text, limit=1000) == reference_depth(text)
    assert safejson.loads(text) == value


def poisoned_deployment(levels: int) -> str:
    """The shape of issue 23's object, written as text (json.dumps itself recurses)."""
    fields = '{"f:x":' * levels + "{}" + "}" * levels
    return (
        '{"kind":"Deployment","metadata":{"name":"poison","managedFields":'
        f'[{{"manager":"m","fieldsV1":{fields}}}]}}}}'
    )


def test_a_managedfields_bomb_is_refused_not_a_recursion_error() -> None:
    text = poisoned_deployment(1000)
    with pytest.raises(RecursionError):
        json.loads(text)  # what kopf and api.py did: not a ValueError
    with pytest.raises(safejson.Rejected) as caught:
        safejson.loads(text)
    assert caught.value.reason == safejson.TOO_DEEP
    assert isinstance(caught.value, ValueError)  # callers' `except ValueError` catches it


@pytest.mark.parametrize("limit", [1, 5, safejson.DEFAULT_MAX_DEPTH])
def test_the_bound_is_the_limit_not_pythons_recursion(limit: int) -> None:
    """One level past the limit is refused by the bound itself, far below the depth at
    which Python's decoder would hit its recursion limit (issue 37 item 6: with the bound
    removed, the RecursionError backstop kept every other test here green)."""
    at_limit = "[" * limit + "]" * limit
    past = "[" * (limit + 1) + "]" * (limit + 1)
    assert safejson.loads(at_limit, max_depth=limit) == json.loads(at_limit)
    json.loads(past)  # Python itself decodes it: only the bound can refuse it
    with pytest.raises(safejson.Rejected) as caught:
        safejson.loads(past, max_depth=limit)
    assert caught.value.reason == safejson.TOO_DEEP
    assert f"deeper than {limit} levels" in str(caught.value)


def test_a_real_objects_depth_is_accepted() -> None:
    text = poisoned_deployment(40)
    assert safejson.loads(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    ["Infinity", "-Infinity", "NaN", "[1e400]", '{"joined": -1e999}', "9" * 5000, "{", "", "[]]"],
)
def test_non_json_numbers_and_broken_text_are_refused(text: str) -> None:
    with pytest.raises(safejson.Rejected) as caught:
        safejson.loads(text)
    assert caught.value.reason == safejson.NOT_JSON


def test_size_is_refused_before_decoding() -> None:
    with pytest.raises(safejson.Rejected) as caught:
        safejson.loads(b"[" + b"1," * 100 + b"1]", max_bytes=50)
    assert caught.value.reason == safejson.TOO_LARGE


@pytest.mark.parametrize(
    "skeleton",
    [
        b"[]" * 100_000,  # wide: one pass
        (b"[" * 99 + b"]" * 99) * 1000,  # deep chains: one linear pass over few runs
        b"[" * 99 + b"[]" * 50_000 + b"]" * 99,
        (b"[[]" * 49 + b"]" * 49 + b",") * 500,
    ],
)
def test_adversarial_shapes_agree_with_a_plain_count(skeleton: bytes) -> None:
    deepest = level = 0
    for byte in skeleton:
        level += 1 if byte == ord("[") else -1 if byte == ord("]") else 0
        deepest = max(deepest, level)
    assert safejson.depth(skeleton, limit=1000) == deepest


def test_unclosed_brackets_are_measured_not_recursed() -> None:
    assert safejson.depth(b"[" * 5000, limit=100) == 101
    with pytest.raises(safejson.Rejected) as caught:
        safejson.loads(b"[" * 5000)
    assert caught.value.reason == safejson.TOO_DEEP


def test_brackets_inside_strings_do_not_count() -> None:
    assert safejson.depth(json.dumps({"a": "[[[[[[", "b": '\\"]]]]'})) == 1
    assert safejson.depth(b'["\\\\", "[[["]') == 1


def test_pruning_keeps_everything_but_the_bomb() -> None:
    text = poisoned_deployment(1000).replace('"kind"', '"spec":{"replicas":2},"kind"')
    value, paths = safejson.loads_pruned(text)
    assert value["spec"] == {"replicas": 2}
    assert value["metadata"]["name"] == "poison"
    assert len(paths) == 1
    assert paths[0][:4] == ("metadata", "managedFields", 0, "fieldsV1")
    assert len(paths[0]) == safejson.DEFAULT_MAX_DEPTH  # cut where depth 101 would start
    assert safejson.depth(json.dumps(value), limit=1000) <= safejson.DEFAULT_MAX_DEPTH


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_pruning_changes_nothing_within_the_limit(value: object) -> None:
    text = json.dumps(value)
    assert safejson.loads_pruned(text) == (value, [])


def test_pruning_cuts_every_deep_branch_and_names_it() -> None:
    deep = "[" * 8 + "1" + "]" * 8
    value, paths = safejson.loads_pruned(
        f'{{"a": {deep}, "b": {{"c": {deep}}}, "d": 1}}', max_depth=4
    )
    assert value["d"] == 1
    assert sorted(paths) == [("a", 0, 0, 0), ("b", "c", 0, 0)]  # the 5th level is cut
