"""PreflightPolicy selection: selectors, priority, then name; the default when none."""

from __future__ import annotations

from typing import Any

import pytest

from preflight_operator.config import ConfigError, PolicySpec
from preflight_operator.policy import PolicyBook, parse_policy, parse_selector, resolve_policy

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
        ({"matchExpressions": [{"key": "gpu", "operator": "Unknown"}]}, {"gpu": "1"}, False),
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
    with pytest.raises(ConfigError, match="priority"):
        parse_policy({"metadata": {"name": "x"}, "spec": {"priority": "high"}})
    with pytest.raises(ConfigError, match="matchExpressions"):
        parse_selector({"matchExpressions": [{"key": "a"}]})


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
