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

from preflight_operator.core.operatorconfig import (
    ConfigError,
    FieldProblem,
    PolicySpec,
    parse_policy_spec,
)
from preflight_operator.core.workloads import label_key_problem, label_value_problem

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
        return False  # unknown operators select nothing (parse_selector refuses them)


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
    # spec.verdictReuse.ttlSeconds (parse_reuse_ttl): 0 turns verdict reuse off
    reuse_ttl_s: int = 0
    # Fields the operator did not take (each replaced by the default): the policy's Valid
    # condition and a PolicyInvalid Event say which and how to fix them.
    problems: tuple[FieldProblem, ...] = ()


@dataclasses.dataclass(frozen=True)
class ResolvedPolicy:
    """The policy that applies, with its name ("" for the configuration's default)."""

    name: str
    spec: PolicySpec
    reuse_ttl_s: int = 0  # Policy.reuse_ttl_s; the chart's default policy never reuses

    @property
    def action(self) -> str:
        return self.spec.action


# spec.verdictReuse.ttlSeconds: at most a week (a deep pass older than that proves little
# about today's GPUs; the CRD's maximum says the same).
REUSE_TTL_MAX_S = 7 * 24 * 3600


def parse_reuse_ttl(spec: Any, problems: list[FieldProblem]) -> int:
    """``spec.verdictReuse.ttlSeconds`` (issue 29 item 3; preflight_contract/reuse.py): how
    long a deep pass on a node may be reused by a later pod of the namespace. 0 (the
    default) turns reuse off; a bad value is named in ``problems`` and turns it off too
    (the safe side: the deep tier runs)."""
    raw = spec.get("verdictReuse") if isinstance(spec, Mapping) else None
    if raw is None:
        return 0
    if not isinstance(raw, Mapping):
        problems.append(
            FieldProblem("spec.verdictReuse", "spec.verdictReuse: expected a mapping; reuse off")
        )
        return 0
    ttl = raw.get("ttlSeconds", 0)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 0 <= ttl <= REUSE_TTL_MAX_S:
        problems.append(
            FieldProblem(
                "spec.verdictReuse.ttlSeconds",
                f"spec.verdictReuse.ttlSeconds: {ttl!r:.40} is not a whole number of seconds "
                f"from 0 to {REUSE_TTL_MAX_S} (a week); reuse off (0)",
            )
        )
        return 0
    return ttl


# spec.groups.socketFallback: the action on a multi-node group whose NCCL fell back to TCP
# sockets while its nodes have RDMA devices (the check's group-transport, issue 26).
SOCKET_FALLBACK_ACTIONS = ("Warn", "Fail")
SOCKET_FALLBACK_DEFAULT = "Warn"


def parse_socket_fallback(spec: Any, problems: list[FieldProblem]) -> str:
    """``spec.groups.socketFallback``: ``Warn`` (the default) or ``Fail``, as the CRD's enum
    says. A bad value is named in ``problems`` and gives ``Warn``: an unknown setting never
    turns a healthy-but-slow group into a failure (unknown is a warning)."""
    raw = spec.get("groups") if isinstance(spec, Mapping) else None
    if raw is None:
        return SOCKET_FALLBACK_DEFAULT
    if not isinstance(raw, Mapping):
        problems.append(
            FieldProblem(
                "spec.groups",
                "spec.groups: expected a mapping such as {socketFallback: Fail}; using "
                f"socketFallback {SOCKET_FALLBACK_DEFAULT} (one of Warn, Fail)",
            )
        )
        return SOCKET_FALLBACK_DEFAULT
    value = raw.get("socketFallback", SOCKET_FALLBACK_DEFAULT)
    if not isinstance(value, str) or value not in SOCKET_FALLBACK_ACTIONS:
        problems.append(
            FieldProblem(
                "spec.groups.socketFallback",
                f"spec.groups.socketFallback: {value!r:.40} is not one of Warn, Fail (written "
                f"exactly so); using {SOCKET_FALLBACK_DEFAULT}",
            )
        )
        return SOCKET_FALLBACK_DEFAULT
    return value


SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NEEDS_VALUES = ("In", "NotIn")
# spec.priority is an int32 in the CRD's schema (format: int32).
PRIORITY_MIN, PRIORITY_MAX = -(2**31), 2**31 - 1


def _key_problem(path: str, key: object) -> str | None:
    if not isinstance(key, str):
        return f"{path}: key {key!r:.60} is not a string"
    problem = label_key_problem(key)
    return None if problem is None else f"{path}: {key!r:.80} is no valid label key ({problem})"


def _value_problem(path: str, value: object) -> str | None:
    if not isinstance(value, str):
        return f"{path}: value {value!r:.60} is not a string"
    problem = label_value_problem(value)
    return None if problem is None else f"{path}: {value!r:.80} is no valid label value ({problem})"


def parse_selector(data: Any) -> Selector:
    """A LabelSelector as the API server takes one (apimachinery's LabelSelectorAsSelector:
    keys and values of label syntax, operators In/NotIn with values, Exists/DoesNotExist
    without): anything else raises ConfigError naming the field, so that a selector
    Kubernetes would refuse never selects workloads here (tests/unit/test_selector_oracle.py
    compares both on generated selectors). Absent: selects every workload."""
    if data is None:
        return Selector()
    if not isinstance(data, Mapping):
        raise ConfigError("spec.selector: expected a mapping")
    labels = data.get("matchLabels")
    exprs = data.get("matchExpressions")
    if labels is not None and not isinstance(labels, Mapping):
        raise ConfigError("spec.selector.matchLabels: expected a map of label to value")
    if exprs is not None and not isinstance(exprs, list):
        raise ConfigError("spec.selector.matchExpressions: expected a list")
    for key, value in (labels or {}).items():
        path = "spec.selector.matchLabels"
        problem = _key_problem(path, key) or _value_problem(f"{path}[{key!r:.80}]", value)
        if problem is not None:
            raise ConfigError(problem)
    requirements = tuple(
        _requirement(f"spec.selector.matchExpressions[{i}]", expr)
        for i, expr in enumerate(exprs or ())
    )
    return Selector(
        match_labels=tuple(sorted((labels or {}).items())),
        requirements=requirements,
    )


def _requirement(path: str, expr: Any) -> Requirement:
    """One matchExpressions entry, checked as labels.NewRequirement checks it."""
    if not isinstance(expr, Mapping):
        raise ConfigError(f"{path}: expected a mapping with key, operator and values")
    problem = _key_problem(f"{path}.key", expr.get("key"))
    if problem is not None:
        raise ConfigError(problem)
    operator = expr.get("operator")
    if operator not in SELECTOR_OPERATORS:
        raise ConfigError(
            f"{path}.operator: {operator!r:.40} is not one of {', '.join(SELECTOR_OPERATORS)}"
        )
    values = expr.get("values")
    if values is None:
        values = []
    if not isinstance(values, list):
        raise ConfigError(f"{path}.values: expected a list of strings")
    if operator in NEEDS_VALUES and not values:
        raise ConfigError(f"{path}.values: operator {operator} needs at least one value")
    if operator not in NEEDS_VALUES and values:
        raise ConfigError(f"{path}.values: operator {operator} takes no values; remove them")
    for j, value in enumerate(values):
        problem = _value_problem(f"{path}.values[{j}]", value)
        if problem is not None:
            raise ConfigError(problem)
    return Requirement(str(expr["key"]), str(operator), tuple(values))


def _shown(number: int) -> str:
    """The number, or its size when printing it would be long (or refused: Python
    converts at most 4300 digits)."""
    return str(number) if abs(number) < 10**30 else f"a {number.bit_length()}-bit integer"


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
    if isinstance(priority, bool) or not isinstance(priority, int):
        problems.append(
            FieldProblem(
                "spec.priority",
                f"spec.priority: {priority!r:.40} is not an integer; using 0 instead",
            )
        )
        priority = 0
    elif not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        problems.append(
            FieldProblem(
                "spec.priority",
                f"spec.priority: {_shown(priority)} is out of range (an int32: "
                f"{PRIORITY_MIN} to {PRIORITY_MAX}); using 0 instead",
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
    reuse_ttl_s = parse_reuse_ttl(spec, problems)
    parsed = dataclasses.replace(parsed, socket_fallback=parse_socket_fallback(spec, problems))
    return Policy(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        priority=priority,
        selector=selector,
        spec=parsed,
        reuse_ttl_s=reuse_ttl_s,
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
    return ResolvedPolicy(best.name, best.spec, best.reuse_ttl_s)


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
