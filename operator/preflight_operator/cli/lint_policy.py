"""`vllm-preflight lint --policy FILE` and `--fail-on`: what admission would do, offline.

A platform team asks of a manifest in CI what the cluster will answer when it is applied.
So lint resolves PreflightPolicies exactly as the webhook does, with the webhook's own
functions (no copy to drift): the policy of a workload is ``policy.resolve_policy`` over
the policies of its namespace by the workload's labels; its thresholds and disabled checks
are ``analysis.rules_policy`` of that policy's spec; and what each finding does is
``admissiondecision.finding_action`` (the rule's entry in ``spec.rules``, else the policy's action,
Warn for a heuristic rule under Enforce). A workload no policy selects takes lint's own
flags (``--shm-min``, ``--allow-extra-gpus``) under an Enforce policy: the chart's
``defaultPolicy``. ``--disable`` hides its rules everywhere, as it does without a policy.

The policy file is read strictly, unlike the operator: the operator takes a bad field's
default so that a typo never blocks pods (and says so in the policy's ``Valid``
condition); in CI a typo would silently judge by another policy, so lint names the field
and the fix and exits 2 before judging anything.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from preflight_contract.actions import ENFORCE
from preflight_operator.core.admissiondecision import finding_action
from preflight_operator.core.analysis import rules_policy
from preflight_operator.core.constants import GROUP, POLICY_KIND
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.policy import (
    DEFAULT_POLICY_NAME,
    Policy,
    ResolvedPolicy,
    resolve_policy,
)
from preflight_operator.core.policy import parse_policy as parse_policy_object
from preflight_operator.core.rules import (
    FAIL,
    UNJUDGED,
    WARN,
    ClusterLookup,
    ContainerResult,
    Finding,
    check_objects,
)
from preflight_operator.core.rules import Policy as RulesPolicy

# --fail-on: what makes lint exit 1. "deny" (the default): a failure admission would deny
# under the policy (without --policy, the default Enforce policy: lint's behaviour before
# --fail-on); "fail": any failure, whatever its rule's action; "warn": any failure or warning;
# "unjudged": what "deny" exits on, and any vLLM container that was not judged (its vLLM
# command line could not be read: a CI gate that must not pass what it did not check).
FAIL_ON_DENY, FAIL_ON_FAIL, FAIL_ON_WARN = "deny", "fail", "warn"
FAIL_ON_UNJUDGED = UNJUDGED
FAIL_ON = (FAIL_ON_DENY, FAIL_ON_FAIL, FAIL_ON_WARN, FAIL_ON_UNJUDGED)
DEFAULT = ResolvedPolicy(DEFAULT_POLICY_NAME, PolicySpec())
DEFAULT_NAMESPACE = "default"  # where kubectl apply puts an object that names none


class PolicyFileError(Exception):
    """The policy file cannot be used: each line names the policy, the field and the fix."""


@dataclasses.dataclass(frozen=True)
class Judged:
    """lint's results, each workload's policy (by object index) and what each finding does."""

    results: list[ContainerResult]
    policies: Mapping[int, ResolvedPolicy]
    default: ResolvedPolicy = DEFAULT

    def policy_of(self, result: ContainerResult) -> ResolvedPolicy:
        index = result.object_index
        return self.policies.get(index, self.default) if index is not None else self.default

    def action(self, result: ContainerResult, finding: Finding) -> str:
        """Enforce, Warn or Audit: admissiondecision.finding_action under the workload's policy."""
        return finding_action(finding, self.policy_of(result))

    def denies(self, result: ContainerResult, finding: Finding) -> bool:
        return finding.severity == FAIL and self.action(result, finding) == ENFORCE

    def counts(self, result: ContainerResult, finding: Finding, fail_on: str) -> bool:
        """The finding makes lint exit 1 under ``--fail-on`` (and is a JUnit failure)."""
        if fail_on == FAIL_ON_FAIL:
            return finding.severity == FAIL
        if fail_on == FAIL_ON_WARN:
            return finding.severity in (FAIL, WARN)
        if fail_on == FAIL_ON_UNJUDGED and result.verdict == UNJUDGED:
            return finding.severity in (FAIL, WARN)  # what says why it was not judged
        return self.denies(result, finding)

    def failed(self, fail_on: str) -> bool:
        """Whether lint exits 1 under ``--fail-on``."""
        return any(self.counts(r, f, fail_on) for r in self.results for f in r.findings)


def parse_policies(
    objects: Sequence[tuple[str, Mapping[str, Any]]], default_namespace: str | None
) -> list[Policy]:
    """The PreflightPolicies of the policy file (``(where, object)`` pairs, as lint read
    them), each in its namespace (the object's, else ``-n``, else default, as kubectl apply
    would place it). Raises PolicyFileError listing every field the operator would not
    take, and any object that is not a PreflightPolicy."""
    policies: list[Policy] = []
    errors: list[str] = []
    seen: dict[tuple[str, str], str] = {}
    for where, obj in objects:
        kind, api = obj.get("kind"), obj.get("apiVersion")
        group = api.partition("/")[0] if isinstance(api, str) else None
        if kind != POLICY_KIND or group != GROUP:
            errors.append(
                f"{where}: kind {kind!r:.60} (apiVersion {api!r:.60}) is not a {POLICY_KIND} "
                f"({GROUP}/...): give a file of PreflightPolicy objects only"
            )
            continue
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        name, raw_namespace = meta.get("name"), meta.get("namespace")
        if not isinstance(name, str) or not name:
            errors.append(f"{where}: metadata.name: missing; name the policy")
            continue
        if raw_namespace is not None and not isinstance(raw_namespace, str):
            errors.append(f"{where}: metadata.namespace: expected a string")
            continue
        namespace = raw_namespace or default_namespace or DEFAULT_NAMESPACE
        body = {**obj, "metadata": {**meta, "namespace": namespace}}
        policy = parse_policy_object(body)
        label = f"{where}: PreflightPolicy {namespace}/{name}"
        errors += [
            f"{label}: {problem.message} (the operator would mark the policy Valid=False "
            "and do the same; fix the field)"
            for problem in policy.problems
        ]
        if (namespace, name) in seen:
            errors.append(f"{label}: also defined at {seen[namespace, name]}; keep one")
        seen[namespace, name] = where
        policies.append(policy)
    if not objects:
        errors.append("no PreflightPolicy in it")
    if errors:
        raise PolicyFileError("\n".join(errors))
    return policies


def judge(
    objects: Sequence[Mapping[str, Any]],
    policies: Sequence[Policy] | None,
    base: RulesPolicy,
    *,
    lookup: ClusterLookup,
    default_namespace: str | None,
    default: PolicySpec = DEFAULT.spec,
) -> Judged:
    """The rules over the manifest set, each workload under its policy's thresholds and
    disabled checks (one pass over the set for each distinct rules policy; one pass without
    --policy, as before). ``base``: the rules' policy of a workload no policy selects, whose
    policy is ``default`` (the chart's defaultPolicy: Enforce unless told)."""
    fallback = ResolvedPolicy(DEFAULT_POLICY_NAME, default)
    if policies is None:
        plain = check_objects(objects, base, lookup=lookup, default_namespace=default_namespace)
        return Judged(plain, {}, fallback)
    resolved = {
        index: resolve_for(obj, policies, default_namespace, default)
        for index, obj in enumerate(objects)
    }
    by_rules: dict[RulesPolicy, set[int]] = {}
    for index, policy in resolved.items():
        rules = base if policy.name == DEFAULT_POLICY_NAME else rules_policy(policy.spec)
        rules = dataclasses.replace(rules, disabled=rules.disabled | base.disabled)
        by_rules.setdefault(rules, set()).add(index)
    results: list[ContainerResult] = []
    for rules, indexes in by_rules.items():
        checked = check_objects(objects, rules, lookup=lookup, default_namespace=default_namespace)
        results += [r for r in checked if r.object_index in indexes]
    results.sort(key=lambda r: -1 if r.object_index is None else r.object_index)  # stable
    return Judged(results, resolved, fallback)


def resolve_for(
    obj: Mapping[str, Any],
    policies: Sequence[Policy],
    default_namespace: str | None,
    default: PolicySpec = DEFAULT.spec,
) -> ResolvedPolicy:
    """The policy admission would resolve for this object: policy.resolve_policy over the
    policies of its namespace, by its own labels (the webhook's AdmissionService.policy_for
    with the object's metadata)."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    namespace = meta.get("namespace") or default_namespace or DEFAULT_NAMESPACE
    labels = meta.get("labels")
    labels = labels if isinstance(labels, Mapping) else {}
    return resolve_policy((p for p in policies if p.namespace == namespace), labels, default)


def annotate(doc: dict[str, Any], judged: Judged) -> None:
    """--format json with --policy: each result names its policy and each finding its
    action (additive: the schema stays 1)."""
    for result, entry in zip(judged.results, doc["results"]):
        policy = judged.policy_of(result)
        entry["policy"] = {"name": policy.name, "action": policy.action}
        for finding, shown in zip(result.findings, entry["findings"]):
            shown["action"] = judged.action(result, finding)


__all__ = [
    "FAIL_ON",
    "FAIL_ON_DENY",
    "Judged",
    "PolicyFileError",
    "annotate",
    "judge",
    "parse_policies",
    "resolve_for",
]
