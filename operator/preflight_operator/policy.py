"""PreflightPolicy resolution: which policy applies to a workload (pure).

A policy selects workloads of its own namespace by label selector (empty selects all).
When several select the same workload the highest ``priority`` wins, then the name in
alphabetical order, so every replica of the operator and every webhook call reaches the
same answer from the same inputs. When none selects it, the configuration's
``defaultPolicy`` applies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from preflight_operator.config import ConfigError, FieldProblem, PolicySpec, parse_policy_spec

DEFAULT_POLICY_NAME = ""  # shown as an empty `policy` on the GPUValidation
VALID_CONDITION = "Valid"
CONDITION_MESSAGE_LIMIT = 2000


@dataclasses.dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        return False  # unknown operators select nothing (the CRD's enum forbids them anyway)


@dataclasses.dataclass(frozen=True)
class Selector:
    match_labels: tuple[tuple[str, str], ...] = ()
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            r.matches(labels) for r in self.requirements
        )


@dataclasses.dataclass(frozen=True)
class Policy:
    namespace: str
    name: str
    priority: int
    selector: Selector
    spec: PolicySpec
    # Fields the operator did not take (each replaced by the default): the policy's Valid
    # condition and a PolicyInvalid Event say which and how to fix them.
    problems: tuple[FieldProblem, ...] = ()


@dataclasses.dataclass(frozen=True)
class ResolvedPolicy:
    """The policy that applies, with its name ("" for the configuration's default)."""

    name: str
    spec: PolicySpec

    @property
    def action(self) -> str:
        return self.spec.action


def parse_selector(data: Any) -> Selector:
    if data is None:
        return Selector()
    if not isinstance(data, Mapping):
        raise ConfigError("spec.selector: expected a mapping")
    labels = data.get("matchLabels") or {}
    exprs = data.get("matchExpressions") or []
    if not isinstance(labels, Mapping) or not isinstance(exprs, list):
        raise ConfigError("spec.selector: matchLabels must be a map, matchExpressions a list")
    requirements = []
    for expr in exprs:
        if not isinstance(expr, Mapping) or "key" not in expr or "operator" not in expr:
            raise ConfigError(f"spec.selector.matchExpressions: malformed entry {expr!r:.100}")
        requirements.append(
            Requirement(
                key=str(expr["key"]),
                operator=str(expr["operator"]),
                values=tuple(str(v) for v in expr.get("values") or ()),
            )
        )
    return Selector(
        match_labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())),
        requirements=tuple(requirements),
    )


def parse_policy(body: Mapping[str, Any]) -> Policy:
    """A Policy from a PreflightPolicy object. Never raises on a bad field: that field
    takes the CRD's default and is listed in ``problems``. The CRD's
    schema rejects most such values; this catches what it cannot (sizes over 1Ti, a
    schema older than the operator) so that no bad value ever reaches a pod's
    PREFLIGHT_* env, where the check would refuse it and block the pod."""
    meta = body.get("metadata") or {}
    raw = body.get("spec")
    spec = raw if isinstance(raw, Mapping) else {}
    problems: list[FieldProblem] = []
    if raw is not None and not isinstance(raw, Mapping):
        problems.append(FieldProblem("spec", "spec: expected a mapping; using the defaults"))
    priority = spec.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int) or abs(priority) > 2**31:
        problems.append(
            FieldProblem(
                "spec.priority",
                f"spec.priority: {priority!r:.40} is not an integer; using 0 instead",
            )
        )
        priority = 0
    try:
        selector = parse_selector(spec.get("selector"))
    except ConfigError as exc:
        # Selecting everything instead could put a whole namespace under Enforce.
        problems.append(FieldProblem("spec.selector", f"{exc}; the policy selects no workload"))
        selector = Selector(requirements=(Requirement("", "Invalid"),))
    parsed = parse_policy_spec(spec, "spec", PolicySpec(), problems)
    return Policy(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        priority=priority,
        selector=selector,
        spec=parsed,
        problems=tuple(problems),
    )


def policy_status(
    body: Mapping[str, Any], problems: Sequence[FieldProblem], now: str
) -> dict[str, Any]:
    """The status the operator writes on a PreflightPolicy: ``observedGeneration`` and a
    ``Valid`` condition naming every field it did not take. ``lastTransitionTime`` moves
    only when the condition's status does."""
    meta = body.get("metadata") or {}
    generation = meta.get("generation")
    valid = not problems
    message = "every field was taken" if valid else "; ".join(p.message for p in problems)
    if len(message) > CONDITION_MESSAGE_LIMIT:
        message = message[: CONDITION_MESSAGE_LIMIT - 1] + "\u2026"
    stored = stored_status(body)
    before = next(
        (
            c
            for c in stored.get("conditions") or []
            if isinstance(c, Mapping) and c.get("type") == VALID_CONDITION
        ),
        None,
    )
    status_text = "True" if valid else "False"
    since = (
        str(before.get("lastTransitionTime"))
        if before is not None
        and before.get("status") == status_text
        and before.get("lastTransitionTime")
        else now
    )
    condition: dict[str, Any] = {
        "type": VALID_CONDITION,
        "status": status_text,
        "reason": "Valid" if valid else "InvalidFields",
        "message": message,
        "lastTransitionTime": since,
    }
    status: dict[str, Any] = {"conditions": [condition]}
    if isinstance(generation, int):
        condition["observedGeneration"] = generation
        status["observedGeneration"] = generation
    return status


def stored_status(body: Mapping[str, Any]) -> Mapping[str, Any]:
    status = body.get("status")
    return status if isinstance(status, Mapping) else {}


def status_differs(body: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    stored = stored_status(body)
    return any(stored.get(k) != v for k, v in wanted.items())


def resolve_policy(
    policies: Iterable[Policy], labels: Mapping[str, str] | None, default: PolicySpec
) -> ResolvedPolicy:
    """The policy of the workload with these labels, among its namespace's policies."""
    labels = labels or {}
    best: Policy | None = None
    for policy in policies:
        if not policy.selector.matches(labels):
            continue
        if best is None or (-policy.priority, policy.name) < (-best.priority, best.name):
            best = policy
    if best is None:
        return ResolvedPolicy(DEFAULT_POLICY_NAME, default)
    return ResolvedPolicy(best.name, best.spec)


class PolicyBook:
    """The current PreflightPolicies by namespace (filled by a watch; read by everyone)."""

    def __init__(self) -> None:
        self._by_namespace: dict[str, dict[str, Policy]] = {}
        self.revision = 0  # bumps on every change; cheap staleness check for memoised results

    def put(self, policy: Policy) -> None:
        self._by_namespace.setdefault(policy.namespace, {})[policy.name] = policy
        self.revision += 1

    def remove(self, namespace: str, name: str) -> None:
        if self._by_namespace.get(namespace, {}).pop(name, None) is not None:
            self.revision += 1

    def replace_all(self, policies: Iterable[Policy]) -> None:
        fresh: dict[str, dict[str, Policy]] = {}
        for policy in policies:
            fresh.setdefault(policy.namespace, {})[policy.name] = policy
        self._by_namespace = fresh
        self.revision += 1

    def in_namespace(self, namespace: str) -> Sequence[Policy]:
        return list(self._by_namespace.get(namespace, {}).values())

    def resolve(
        self, namespace: str, labels: Mapping[str, str] | None, default: PolicySpec
    ) -> ResolvedPolicy:
        return resolve_policy(self._by_namespace.get(namespace, {}).values(), labels, default)
