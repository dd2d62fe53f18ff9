"""Which namespaces are under Enforce, and the patch that keeps the fail-closed webhook
entry in step with them (pure; runtime/failclosedsync.py reads and writes).

Why (issue 34): with the chart's ``failurePolicy: Ignore`` an Enforce policy held only
while every replica answered in time. Two pods holding the webhook port's connections, or
a flood of reviews on a loaded host, and the API server admitted broken Deployments under
Enforce. ``Fail`` everywhere would block every opted-in namespace while no replica answers,
Warn and Audit ones included (which must never block). So the validating webhook has one
more entry, ``enforce.validate.vllm-preflight.io``, with ``failurePolicy: Fail``, scoped to
exactly the namespaces a policy puts under Enforce (Kyverno's default is Fail, scoped by
namespace; Gatekeeper's Ignore); the ``namespace`` entry (Ignore) leaves them out.

How the list is kept: both entries carry one ``kubernetes.io/metadata.name`` expression
whose first value is :data:`SENTINEL` (``In`` on the Fail entry, ``NotIn`` on the Ignore
one), and the operator replaces that expression's values. Why names in the configuration
and not a label the operator puts on namespaces: a patch of one named
ValidatingWebhookConfiguration (``resourceNames``) is the least right that does it, while
labelling namespaces needs patch on every namespace of the cluster, and a namespace label
is one more thing a namespace admin can change. The sentinel is a label value that no
namespace name can be (a namespace is a DNS label: no dots), so the entry selects nothing
until the operator fills it, and ``In`` never has an empty list (the API server refuses one).

Never under Enforce here: the excluded namespaces (system ones, the release namespace),
whatever a policy says: a fail-closed entry there could stop the cluster or the operator's
own pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from preflight_contract.actions import ENFORCE
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.policy import Policy

ENFORCE_ENTRY = "enforce.validate.vllm-preflight.io"
NAMESPACE_ENTRY = "namespace.validate.vllm-preflight.io"
SENTINEL = "none.vllm-preflight.io"
NAME_KEY = "kubernetes.io/metadata.name"
# The list's own bound: a selector value list is stored in the configuration object
# (etcd's 1.5 MiB); 5,000 names of 63 characters stay under 330 KB. Past it the rest stay
# on the Ignore entry, as before, and the operator says so.
MAX_NAMES = 5000
_OPERATORS = {ENFORCE_ENTRY: "In", NAMESPACE_ENTRY: "NotIn"}


def enforces(spec: PolicySpec) -> bool:
    """Can this policy deny at admission: its action, or one rule's own action."""
    return spec.action == ENFORCE or any(action == ENFORCE for _, action in spec.rule_actions)


def under_enforce(policies: Iterable[Policy], default: PolicySpec) -> bool:
    """Whether some workload of a namespace with these policies may be judged under
    Enforce: a policy that can be reached (none with an empty selector ranks above it)
    enforces, or the default does and no policy selects every workload."""
    ranked = sorted(policies, key=lambda p: (-p.priority, p.name))
    for policy in ranked:
        if enforces(policy.spec):
            return True
        catch_all = not policy.selector.match_labels and not policy.selector.requirements
        if catch_all:
            return False  # every workload below it resolves to this one
    return enforces(default)


def enforced_namespaces(
    opted_in: Iterable[str],
    policies: Callable[[str], Sequence[Policy]],
    default: PolicySpec,
    excluded: Callable[[str], bool],
) -> tuple[str, ...]:
    """The opted-in namespaces under Enforce, sorted, at most MAX_NAMES."""
    names = sorted(
        ns for ns in opted_in if not excluded(ns) and under_enforce(policies(ns), default)
    )
    return tuple(names[:MAX_NAMES])


def selector_patch(config: Mapping[str, Any], names: Sequence[str]) -> list[dict[str, Any]]:
    """The JSON patch that puts ``names`` into both entries' sentinel expressions of this
    ValidatingWebhookConfiguration; [] when they hold them already or the configuration
    has no such entry (a chart without the fail-closed entry: nothing to keep). Each
    replace is guarded by a ``test`` of the entry's name, so a configuration changed
    meanwhile (a helm upgrade reordering entries) makes the patch fail, not land elsewhere."""
    wanted = [SENTINEL, *names]
    ops: list[dict[str, Any]] = []
    webhooks = config.get("webhooks")
    if not isinstance(webhooks, list):
        return []
    for i, entry in enumerate(webhooks):
        if not isinstance(entry, Mapping) or entry.get("name") not in _OPERATORS:
            continue
        selector = entry.get("namespaceSelector")
        exprs = selector.get("matchExpressions") if isinstance(selector, Mapping) else None
        if not isinstance(exprs, list):
            continue
        for j, expr in enumerate(exprs):
            if _is_ours(expr, _OPERATORS[str(entry["name"])]) and expr.get("values") != wanted:
                ops.append({"op": "test", "path": f"/webhooks/{i}/name", "value": entry["name"]})
                path = f"/webhooks/{i}/namespaceSelector/matchExpressions/{j}/values"
                ops.append({"op": "replace", "path": path, "value": wanted})
    return ops


def _is_ours(expr: Any, operator: str) -> bool:
    if not isinstance(expr, Mapping):
        return False
    values = expr.get("values")
    return (
        expr.get("key") == NAME_KEY
        and expr.get("operator") == operator
        and isinstance(values, list)
        and bool(values)
        and values[0] == SENTINEL
    )


def entry_names(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The namespaces the fail-closed entry selects now (its sentinel expression)."""
    for entry in config.get("webhooks") or ():
        if isinstance(entry, Mapping) and entry.get("name") == ENFORCE_ENTRY:
            selector = entry.get("namespaceSelector") or {}
            for expr in selector.get("matchExpressions") or ():
                if _is_ours(expr, "In"):
                    return tuple(str(v) for v in expr["values"][1:])
    return ()


def fail_closed_selectors(
    label: str, enabled: str, disabled: str, excluded: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Fail entry's namespaceSelector and objectSelector as the chart renders them
    (localsetup.py builds the same for the tests): opted-in namespaces only, never an
    excluded one, the sentinel list; objects opted out stay out."""
    namespace = {
        "matchExpressions": [
            {"key": label, "operator": "In", "values": [enabled]},
            {"key": NAME_KEY, "operator": "NotIn", "values": list(excluded)},
            {"key": NAME_KEY, "operator": "In", "values": [SENTINEL]},
        ]
    }
    objects = {"matchExpressions": [{"key": label, "operator": "NotIn", "values": [disabled]}]}
    return namespace, objects
