"""The fail-closed webhook entry (issue 34): which namespaces are under Enforce, and the
patch that keeps the entry's list in step (core/failclosedscope.py, runtime/failclosedsync.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from preflight_contract.actions import AUDIT, ENFORCE, WARN
from preflight_dev import localsetup
from preflight_operator.core import constants, failclosedscope
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.policy import Policy, Requirement, Selector
from preflight_operator.runtime.failclosedsync import FailClosedSync

ALL = Selector()
SOME = Selector(requirements=(Requirement("app", "In", ("a",)),))


def _policy(
    name: str, action: str, selector: Selector = ALL, priority: int = 0, **kw: Any
) -> Policy:
    return Policy("ns", name, priority, selector, PolicySpec(action=action, **kw))


def test_a_namespace_is_under_enforce_when_any_reachable_policy_can_deny() -> None:
    enforce, warn = PolicySpec(action=ENFORCE), PolicySpec(action=WARN)
    # no policy: the default decides
    assert failclosedscope.under_enforce([], enforce)
    assert not failclosedscope.under_enforce([], warn)
    # a catch-all Warn policy takes every workload from the default
    assert not failclosedscope.under_enforce([_policy("w", WARN)], enforce)
    # a selective Warn policy leaves the rest to the default
    assert failclosedscope.under_enforce([_policy("w", WARN, SOME)], enforce)
    # one Enforce rule in a Warn policy can deny
    ruled = _policy("w", WARN, rule_actions=(("gpu-count-too-low", ENFORCE),))
    assert failclosedscope.under_enforce([ruled], warn)
    # an Enforce policy below a catch-all Audit one is never reached
    low = _policy("e", ENFORCE, SOME, priority=-1)
    assert not failclosedscope.under_enforce([_policy("a", AUDIT), low], enforce)
    assert failclosedscope.under_enforce([_policy("a", AUDIT, priority=-2), low], warn)


def test_excluded_namespaces_are_never_under_enforce() -> None:
    names = failclosedscope.enforced_namespaces(
        ["team-b", "kube-system", "team-a", "vllm-preflight", "team-warn"],
        lambda ns: [_policy("w", WARN)] if ns == "team-warn" else [],
        PolicySpec(action=ENFORCE),
        lambda ns: ns in constants.SYSTEM_NAMESPACES | {"vllm-preflight"},
    )
    assert names == ("team-a", "team-b")


def _config() -> dict[str, Any]:
    validating, _ = localsetup.webhook_configurations(9443, b"ca", failure_policy="Ignore")
    return validating


def _selector(config: Mapping[str, Any], entry: str) -> list[dict[str, Any]]:
    (found,) = (w for w in config["webhooks"] if w["name"] == entry)
    return list(found["namespaceSelector"]["matchExpressions"])


def _apply(config: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    """A JSON patch of test/replace ops, as the API server applies it."""
    for op in ops:
        *parents, last = op["path"].strip("/").split("/")
        target: Any = config
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        key: Any = int(last) if isinstance(target, list) else last
        if op["op"] == "test":
            assert target[key] == op["value"]
        else:
            target[key] = op["value"]


def test_the_patch_moves_namespaces_from_the_ignore_entry_to_the_fail_entry() -> None:
    config = _config()
    enforce = next(w for w in config["webhooks"] if w["name"] == failclosedscope.ENFORCE_ENTRY)
    assert enforce["failurePolicy"] == "Fail"  # whatever the others say
    assert enforce["clientConfig"]["url"].endswith("/" + constants.VALIDATE_ENFORCE_WEBHOOK_ID)
    ops = failclosedscope.selector_patch(config, ["team-a", "team-b"])
    _apply(config, ops)
    fail_in = [e for e in _selector(config, failclosedscope.ENFORCE_ENTRY) if e["operator"] == "In"]
    assert [failclosedscope.SENTINEL, "team-a", "team-b"] in [e["values"] for e in fail_in]
    ignore = _selector(config, failclosedscope.NAMESPACE_ENTRY)
    assert {"key": failclosedscope.NAME_KEY, "operator": "NotIn",
            "values": [failclosedscope.SENTINEL, "team-a", "team-b"]} in ignore  # fmt: skip
    # the excluded namespaces stay excluded from both
    assert any(e["operator"] == "NotIn" and "kube-system" in e["values"] for e in ignore)
    assert failclosedscope.entry_names(config) == ("team-a", "team-b")
    assert failclosedscope.selector_patch(config, ["team-a", "team-b"]) == []  # in step: no write


def test_a_configuration_without_the_entry_is_left_alone() -> None:
    config = _config()
    config["webhooks"] = [
        w for w in config["webhooks"]
        if w["name"] not in (failclosedscope.ENFORCE_ENTRY, failclosedscope.NAMESPACE_ENTRY)
    ]  # fmt: skip
    assert failclosedscope.selector_patch(config, ["team-a"]) == []


class _Api:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.patches: list[list[dict[str, Any]]] = []
        self.gets = 0

    async def get_or_none(self, path: str) -> dict[str, Any] | None:
        self.gets += 1
        return self.config

    async def request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        assert method == "PATCH"
        assert kw["content_type"] == "application/json-patch+json"
        self.patches.append(kw["body"])
        _apply(self.config, kw["body"])
        return self.config


def test_only_the_lease_holder_writes_and_only_what_changed() -> None:
    api = _Api(_config())
    leading = [False]
    opted_in = ["team-a"]
    sync = FailClosedSync(
        api,  # type: ignore[arg-type]
        "vllm-preflight",
        leading=lambda: leading[0],
        opted_in=lambda: opted_in,
        policies=lambda ns: [],
        default=PolicySpec(action=ENFORCE),
        excluded=lambda ns: False,
    )

    async def rounds() -> list[bool]:
        out = [await sync.sync_once()]  # a follower: nothing
        leading[0] = True
        out.append(await sync.sync_once())  # the holder: writes team-a
        out.append(await sync.sync_once())  # unchanged: no read, no write
        opted_in.append("team-b")
        out.append(await sync.sync_once())
        return out

    assert asyncio.run(rounds()) == [False, True, False, True]
    assert api.gets == 2
    assert failclosedscope.entry_names(api.config) == ("team-a", "team-b")
