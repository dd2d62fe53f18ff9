"""What the validating webhook answers, from the static result and the policy (pure).

* Enforce denies a failing workload with every failure listed — each names the manifest
  field and the fix — and admits one with only warnings, showing them.
* Warn admits with one admission warning per finding (kubectl prints ``Warning: ...``).
* Audit admits silently.

The action is per rule (issue 24): the policy's ``spec.rules`` names a rule's own action,
as Gatekeeper names one per constraint; a rule not named takes the policy's action, except
that a rule whose certainty source is a heuristic (rules.certainty) is Warn under Enforce.

The result is recorded on the GPUValidation by the operator either way; a denied object
never exists, so the webhook handler records the denial as an Event instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from preflight_contract import actions
from preflight_contract.verdicts import FAIL, WARN
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.rules import Finding, action_for
from preflight_operator.core.static import StaticResult
from preflight_operator.core.workloads import WorkloadRef

# The API server keeps the denial message in the Status it returns; kubectl shows it whole.
MESSAGE_LIMIT = 4000
# Each admission warning is printed on its own line; the API server truncates long ones.
WARNING_LIMIT = 400
MAX_WARNINGS = 20


@dataclasses.dataclass(frozen=True)
class AdmissionDecision:
    allowed: bool
    message: str = ""
    warnings: tuple[str, ...] = ()


ALLOW = AdmissionDecision(allowed=True)


def _policy_label(policy: ResolvedPolicy) -> str:
    name = f"PreflightPolicy {policy.name}" if policy.name else "the default policy"
    return f"{name}, action {policy.action}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def finding_action(finding: Finding, policy: ResolvedPolicy) -> str:
    """What this finding does under the policy: its rule's entry in ``spec.rules``, else
    the policy's action (Warn for a rule whose certainty source is a heuristic)."""
    return action_for(finding.id, policy.action, policy.spec.rule_actions)


def _warning_line(finding: Finding, action: str, policy: ResolvedPolicy) -> str:
    label = finding.severity
    if finding.severity == FAIL and action != policy.action:
        label = f"fail (admitted: rule action {action})"
    return _cut(f"vllm-preflight {label}: {finding.one_line()}", WARNING_LIMIT)


def decide(static: StaticResult, policy: ResolvedPolicy, ref: WorkloadRef) -> AdmissionDecision:
    """Each finding by its rule's action: a failure of an Enforce rule denies; a failure
    of a Warn rule, and every warning, is an admission warning; an Audit rule's findings
    are only recorded (on the GPUValidation)."""
    if not static.has_vllm or static.error or static.verdict not in (FAIL, WARN):
        return ALLOW
    denying: list[Finding] = []
    shown: list[tuple[Finding, str]] = []
    for finding in [*static.failures, *static.warnings]:
        action = finding_action(finding, policy)
        if action == actions.AUDIT:
            continue
        if finding.severity == FAIL and action == actions.ENFORCE:
            denying.append(finding)
        else:
            shown.append((finding, action))
    if denying:
        lines = [
            f"vllm-preflight: {ref.display} cannot run on the GPUs it requests "
            f"({_policy_label(policy)}); {len(denying)} problem(s):"
        ]
        lines += [f"{i}. {f.one_line()}" for i, f in enumerate(denying, 1)]
        if shown:
            lines.append("Also:")
            lines += [f"- {f.one_line()}" for f, _ in shown]
        return AdmissionDecision(allowed=False, message=_cut("\n".join(lines), MESSAGE_LIMIT))
    if not shown:
        return ALLOW
    return AdmissionDecision(
        allowed=True,
        warnings=tuple(_warning_line(f, a, policy) for f, a in shown[:MAX_WARNINGS]),
    )


def unchecked(policy: ResolvedPolicy, ref: WorkloadRef, reason: str) -> AdmissionDecision:
    """The answer when the rules could not finish within their budget (rulesworker.py).

    Never a silent admit under Enforce: the API server's own timeout would admit it
    silently under failurePolicy Ignore, and a hostile manifest would then pass
    unchecked. So Enforce denies, saying it could not be checked and why; Warn admits with
    a warning; Audit admits (the GPUValidation records it as a rules error either way)."""
    what = (
        f"{ref.display} could not be checked in time: the rules stopped, {reason}"
        f" ({_policy_label(policy)})"
    )
    cause = (
        "Likely cause: environment variables that reference each other twice ($(A)$(A)) or"
        " a shell script that doubles a variable, which expand to gigabytes."
        " Fix: remove the self-doubling references from env, command and args"
    )
    if policy.action == actions.ENFORCE:
        return AdmissionDecision(
            allowed=False,
            message=_cut(
                f"vllm-preflight: {what}; under Enforce nothing unchecked is admitted."
                f" {cause}, or select the workload with a PreflightPolicy whose action is"
                " Warn to admit it unchecked.",
                MESSAGE_LIMIT,
            ),
        )
    if policy.action == actions.WARN:
        return AdmissionDecision(
            allowed=True,
            warnings=(
                _cut(f"vllm-preflight warn: {what}; admitted unchecked. {cause}.", WARNING_LIMIT),
            ),
        )
    return ALLOW


def spec_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    """Whether an UPDATE touches the spec. Metadata-only updates (our own annotations, the
    garbage collector, kubectl label) are never judged: that would let a workload admitted
    under Warn block its own bookkeeping after the policy became Enforce."""
    if old is None or new is None:
        return True
    return old.get("spec") != new.get("spec")
