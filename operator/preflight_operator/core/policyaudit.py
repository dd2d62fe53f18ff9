"""What admission would answer for workloads that already exist, per policy (pure).

Before a platform team turns a PreflightPolicy to Enforce it asks what that would deny in
the cluster today. ``kubectl vllm-preflight audit`` answers it from a terminal
(cli/audit.py); the operator answers it continuously: every workload it tracks has a
static result under its policy, re-judged when the policy is created or changed
(runtime/policywatch.py re-analyses the namespace), and admissiondecision.decide turns that into the
answer. Two answers per workload:

* ``answer``: what admission answers now, under the policy as written (Audit admits);
* ``underEnforce``: what it would answer were the policy's action Enforce (its per-rule
  actions kept: a rule set to Audit or Warn still does not deny).

The GPUValidation carries both (``status.admission``); each PreflightPolicy carries the
counts of its workloads that Enforce would deny and that are admitted with warnings under
Enforce (``status.wouldDeny``, ``status.warned``, the first ``MAX_NAMED`` of each named),
and ``lastAudit``, which moves only when those change or the policy's generation does, so
the echo of our own write writes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from preflight_contract import actions
from preflight_operator.core.admissiondecision import AdmissionDecision, decide
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.static import StaticResult
from preflight_operator.core.workloads import WorkloadRef

DENY, WARN, ADMIT = "deny", "warn", "admit"
MESSAGE_LIMIT = 300
# Workloads named in a policy's status per answer: enough to act on, bounded whatever the
# namespace holds (a name is at most 253 + kind bytes).
MAX_NAMED = 20


def answer_of(decision: AdmissionDecision) -> str:
    """deny | warn | admit: the one word for an admission decision."""
    return DENY if not decision.allowed else WARN if decision.warnings else ADMIT


def enforced(policy: ResolvedPolicy) -> ResolvedPolicy:
    """The same policy with its action Enforce (its per-rule actions unchanged)."""
    return ResolvedPolicy(policy.name, dataclasses.replace(policy.spec, action=actions.ENFORCE))


def _first_line(decision: AdmissionDecision) -> str:
    text = decision.message or (decision.warnings[0] if decision.warnings else "")
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "\u2026"


def admission_section(
    static: StaticResult, policy: ResolvedPolicy, ref: WorkloadRef
) -> dict[str, Any]:
    """The GPUValidation's ``status.admission``: the answer now and under Enforce."""
    now = decide(static, policy, ref)
    strict = decide(static, enforced(policy), ref)
    out: dict[str, Any] = {"answer": answer_of(now), "underEnforce": answer_of(strict)}
    message = _first_line(strict if strict != now and not strict.allowed else now)
    if message:
        out["message"] = message
    return out


@dataclasses.dataclass(frozen=True)
class PolicyAudit:
    """One policy's workloads as Enforce would answer them, names sorted."""

    would_deny: tuple[str, ...] = ()
    warned: tuple[str, ...] = ()


def audit_policies(
    workloads: Iterable[tuple[WorkloadRef, StaticResult | None, ResolvedPolicy]],
) -> dict[str, PolicyAudit]:
    """Per policy name (the default policy, "", left out): its workloads Enforce would
    deny, and those it would admit with warnings. A workload not analysed yet counts in
    neither."""
    deny: dict[str, list[str]] = {}
    warn: dict[str, list[str]] = {}
    for ref, static, policy in workloads:
        if not policy.name or static is None or not static.has_vllm:
            continue
        deny.setdefault(policy.name, [])
        warn.setdefault(policy.name, [])
        answer = answer_of(decide(static, enforced(policy), ref))
        if answer == DENY:
            deny[policy.name].append(ref.display)
        elif answer == WARN:
            warn[policy.name].append(ref.display)
    return {
        name: PolicyAudit(tuple(sorted(deny[name])), tuple(sorted(warn[name]))) for name in deny
    }


def audit_status(
    stored: Mapping[str, Any], audit: PolicyAudit, generation: Any, now: str
) -> dict[str, Any]:
    """The audit fields of a PreflightPolicy's status. ``lastAudit`` moves only when the
    counts, the names or the policy's generation changed since the stored status."""
    fields: dict[str, Any] = {
        "wouldDeny": len(audit.would_deny),
        "warned": len(audit.warned),
        "wouldDenyWorkloads": list(audit.would_deny[:MAX_NAMED]),
        "warnedWorkloads": list(audit.warned[:MAX_NAMED]),
    }
    if isinstance(generation, int) and not isinstance(generation, bool):
        fields["auditedGeneration"] = generation
    same = all(stored.get(k) == v for k, v in fields.items())
    last = stored.get("lastAudit")
    fields["lastAudit"] = last if same and isinstance(last, str) and last else now
    return fields
