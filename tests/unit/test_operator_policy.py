"""PreflightPolicy selection: selectors, priority, then name; the default when none."""

from __future__ import annotations

from typing import Any

import pytest

from preflight_operator.core.operatorconfig import ConfigError, PolicySpec
from preflight_operator.core.policy import (
    PolicyBook,
    parse_policy,
    parse_selector,
    policy_status,
    resolve_policy,
    status_differs,
)

DEFAULT = PolicySpec(action="Enforce")


def policy(name: str, *, priority: int = 0, action: str = "Warn", **labels: str) -> Any:
    selector = {"matchLabels": labels} if labels else None
    return parse_policy(
        {
            "metadata": {"namespace": "ns", "name": name},
            "spec": {"priority": priority, "action": action, "selector": selector},
        }
    )


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        ({}, {}, True),
        ({"matchLabels": {"app": "x"}}, {"app": "x", "tier": "a"}, True),
        ({"matchLabels": {"app": "x"}}, {"app": "y"}, False),
        (
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x", "y"]}]},
            {"app": "y"},
            True,
        ),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]}, {}, False),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]}, {}, True),
        (
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]},
            {"app": "x"},
            False,
        ),
        ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, {"gpu": ""}, True),
        ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, {"gpu": "1"}, False),
    ],
)
def test_selectors_follow_kubernetes(selector: Any, labels: dict[str, str], selected: bool) -> None:
    assert parse_selector(selector).matches(labels) is selected


def test_no_policy_gives_the_default() -> None:
    resolved = resolve_policy([policy("a", app="other")], {"app": "vllm"}, DEFAULT)
    assert resolved.name == ""
    assert resolved.spec is DEFAULT


def test_highest_priority_wins_then_the_name() -> None:
    policies = [
        policy("b-low", priority=1, action="Audit"),
        policy("z-high", priority=5, action="Warn"),
        policy("a-high", priority=5, action="Enforce"),
    ]
    assert resolve_policy(policies, {}, DEFAULT).name == "a-high"
    assert resolve_policy(list(reversed(policies)), {}, DEFAULT).name == "a-high"


def test_malformed_policies_are_reported() -> None:
    bad = parse_policy({"metadata": {"name": "x"}, "spec": {"priority": "high"}})
    assert bad.priority == 0
    assert [p.field for p in bad.problems] == ["spec.priority"]
    with pytest.raises(ConfigError, match="matchExpressions"):
        parse_selector({"matchExpressions": [{"key": "a"}]})
    broken = parse_policy({"metadata": {"name": "x"}, "spec": {"selector": {"matchLabels": "x"}}})
    assert [p.field for p in broken.problems] == ["spec.selector"]
    assert not broken.selector.matches({})  # never everything: that could Enforce a namespace


@pytest.mark.parametrize(
    "priority", [2**62, -(2**62), 2**31, -(2**31) - 1, pytest.param(10**5000, id="10^5000")]
)
def test_a_priority_out_of_int32_says_so_and_gives_the_range(priority: int) -> None:
    parsed = parse_policy({"metadata": {"name": "x"}, "spec": {"priority": priority}})
    assert parsed.priority == 0
    [problem] = parsed.problems
    assert problem.field == "spec.priority"
    assert "not an integer" not in problem.message
    assert "out of range" in problem.message
    assert "-2147483648 to 2147483647" in problem.message


@pytest.mark.parametrize("priority", [2**31 - 1, -(2**31), 0])
def test_a_priority_within_int32_is_taken(priority: int) -> None:
    parsed = parse_policy({"metadata": {"name": "x"}, "spec": {"priority": priority}})
    assert (parsed.priority, parsed.problems) == (priority, ())


def test_an_unknown_operator_makes_the_selector_invalid_not_a_silent_miss() -> None:
    with pytest.raises(ConfigError, match=r"matchExpressions\[0\]\.operator"):
        parse_selector({"matchExpressions": [{"key": "gpu", "operator": "Unknown"}]})


def body(spec: dict[str, Any], generation: int = 3) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": "p", "generation": generation}, "spec": spec}


@pytest.mark.parametrize(
    ("thresholds", "field", "words"),
    [
        ({"shmMin": "abc"}, "shmMin", "not a size the check reads; write a quantity such as 1Gi"),
        ({"shmMin": "1Pi"}, "shmMin", "not a size the check reads"),
        ({"shmMin": "1E"}, "shmMin", "not a size the check reads"),
        ({"shmMin": "1e3"}, "shmMin", "not a size the check reads"),
        ({"shmMin": "2000Gi"}, "shmMin", "over 1Ti"),
        ({"shmMin": 2**41}, "shmMin", "over 1Ti"),
        ({"shmMin": True}, "shmMin", "expected a quantity"),
        ({"gpuMemoryUtilization": 0}, "gpuMemoryUtilization", "above 0 and at most 1"),
        ({"gpuMemoryUtilization": 1.5}, "gpuMemoryUtilization", "above 0 and at most 1"),
        ({"gpuMemoryUtilization": float("nan")}, "gpuMemoryUtilization", "above 0"),
        ({"extraGPUsAllowed": -1}, "extraGPUsAllowed", "integer >= 0"),
        ({"extraGPUsAllowed": 10**6}, "extraGPUsAllowed", "at most 1024"),
    ],
)
def test_a_bad_threshold_falls_back_to_the_default_and_says_which_field(
    thresholds: dict[str, Any], field: str, words: str
) -> None:
    parsed = parse_policy(body({"action": "Warn", "thresholds": thresholds}))
    assert parsed.spec.action == "Warn"  # the good fields are kept
    assert parsed.spec.thresholds == PolicySpec().thresholds  # the bad one is the default
    (problem,) = parsed.problems
    assert problem.field == f"spec.thresholds.{field}"
    assert words in problem.message
    assert "instead" in problem.message


@pytest.mark.parametrize("value", ["1Gi", "512Mi", "1.5Gi", "1073741824", 1073741824, "1Ti", "0"])
def test_good_sizes_are_taken_as_written(value: Any) -> None:
    parsed = parse_policy(body({"thresholds": {"shmMin": value}}))
    assert parsed.problems == ()
    assert parsed.spec.thresholds.shm_min == str(value)


def test_bad_enums_lists_and_flags_fall_back_field_by_field() -> None:
    parsed = parse_policy(
        body(
            {
                "action": "Block",
                "tier": "deep",
                "checks": {"disabled": "shm"},
                "injection": {"enabled": "yes", "mode": "Sidecar"},
                "onRuntimeFailure": "Delete",
            }
        )
    )
    assert parsed.spec == PolicySpec(tier="deep")
    assert [p.field for p in parsed.problems] == [
        "spec.action",
        "spec.checks.disabled",
        "spec.onRuntimeFailure",
        "spec.injection.enabled",
        "spec.injection.mode",
    ]


def test_the_status_names_each_bad_field_and_keeps_its_transition_time() -> None:
    bad = body({"thresholds": {"shmMin": "1E"}})
    parsed = parse_policy(bad)
    status = policy_status(bad, parsed.problems, "2026-01-01T00:00:00Z")
    (condition,) = status["conditions"]
    assert status["observedGeneration"] == 3
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Valid",
        "False",
        "InvalidFields",
    )
    assert "spec.thresholds.shmMin" in condition["message"]
    assert "using '1Gi' instead" in condition["message"]
    assert condition["observedGeneration"] == 3
    stored = {**bad, "status": status}
    again = policy_status(stored, parsed.problems, "2026-02-02T00:00:00Z")
    assert again == status
    assert not status_differs(stored, again)
    fixed = body({"thresholds": {"shmMin": "2Gi"}}, generation=4)
    fixed["status"] = status
    good = policy_status(fixed, parse_policy(fixed).problems, "2026-03-03T00:00:00Z")
    assert good["conditions"][0]["status"] == "True"
    assert good["conditions"][0]["lastTransitionTime"] == "2026-03-03T00:00:00Z"
    assert status_differs(fixed, good)


def test_policy_book_is_per_namespace_and_counts_changes() -> None:
    book = PolicyBook()
    book.put(policy("a", action="Audit"))
    revision = book.revision
    assert book.resolve("ns", {}, DEFAULT).action == "Audit"
    assert book.resolve("other", {}, DEFAULT).action == "Enforce"
    book.remove("ns", "missing")
    assert book.revision == revision
    book.remove("ns", "a")
    assert book.revision > revision
    assert book.resolve("ns", {}, DEFAULT).name == ""


@pytest.mark.parametrize(
    ("spec", "ttl", "fields"),
    [
        ({}, 0, []),
        ({"verdictReuse": {"ttlSeconds": 3600}}, 3600, []),
        ({"verdictReuse": {"ttlSeconds": 0}}, 0, []),
        ({"verdictReuse": {"ttlSeconds": -1}}, 0, ["spec.verdictReuse.ttlSeconds"]),
        ({"verdictReuse": {"ttlSeconds": "1h"}}, 0, ["spec.verdictReuse.ttlSeconds"]),
        ({"verdictReuse": {"ttlSeconds": True}}, 0, ["spec.verdictReuse.ttlSeconds"]),
        ({"verdictReuse": {"ttlSeconds": 10**12}}, 0, ["spec.verdictReuse.ttlSeconds"]),
        ({"verdictReuse": "on"}, 0, ["spec.verdictReuse"]),
    ],
)
def test_the_reuse_ttl_is_off_unless_a_valid_number_of_seconds(
    spec: dict[str, Any], ttl: int, fields: list[str]
) -> None:
    """Issue 29 item 3: a bad TTL turns reuse off (the deep tier runs) and is named."""
    parsed = parse_policy({"metadata": {"name": "x"}, "spec": spec})
    assert parsed.reuse_ttl_s == ttl
    assert [p.field for p in parsed.problems] == fields
