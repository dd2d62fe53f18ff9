"""The rule registry: every rule is a small pure function registered with its id and the
source of its certainty (rules.certainty.Basis)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from preflight_operator.core.rules.certainty import Basis, rule_action
from preflight_operator.core.rules.vocabulary import Finding, Policy, RuleInfo

if TYPE_CHECKING:
    from preflight_operator.core.rules.context import ContainerContext

Rule = Callable[["ContainerContext", Policy], Iterable[Finding]]

REGISTRY: list[tuple[RuleInfo, Rule]] = []
RULE_INFO: dict[str, RuleInfo] = {}


def register(
    rule_id: str, severity: str, summary: str, basis: Basis, *, fix: str
) -> Callable[[Rule], Rule]:
    """Declare a rule; the function gets the container context and the policy and yields
    findings (use ``RULE_INFO[rule_id].finding(...)`` or the ``info`` it is given).

    ``summary`` (what it detects) and ``fix`` (in a few words) are the rule's rows in
    docs/RULES.md and README.md; its section there is the ``### `rule-id``` part of the
    module's docstring (hack/gen_rule_docs.py renders all three)."""

    def wrap(fn: Rule) -> Rule:
        if rule_id in RULE_INFO:
            raise ValueError(f"rule {rule_id} registered twice")
        info = RuleInfo(rule_id, severity, summary, basis, fix)
        RULE_INFO[rule_id] = info
        REGISTRY.append((info, fn))
        return fn

    return wrap


def declare(rule_id: str, severity: str, summary: str, basis: Basis, *, fix: str) -> RuleInfo:
    """A rule id emitted by a registered function besides its own, or by the engine itself
    (its docs as ``register`` says)."""
    if rule_id in RULE_INFO:
        raise ValueError(f"rule {rule_id} declared twice")
    info = RuleInfo(rule_id, severity, summary, basis, fix)
    RULE_INFO[rule_id] = info
    return info


def action_for(rule_id: str, policy_action: str, per_rule: Iterable[tuple[str, str]] = ()) -> str:
    """What a failure of ``rule_id`` does under a policy (its action and its per-rule
    entries): rules.certainty.rule_action with the rule's own Basis."""
    info = RULE_INFO.get(rule_id)
    return rule_action(rule_id, info.basis if info else None, policy_action, per_rule)
