"""The GPUValidation object and its status, computed from what the operator knows (pure).

One function, ``build_status``, turns the workload's static result, the results of its
pods that exist now, the history already recorded and the remediation state into the
whole status. The reconciler writes it only when it differs from what is stored, so a
restart that finds nothing new writes nothing.

Runtime verdict: the worst verdict of the pods that exist and have reported (a pod still
failing is a failure now); while none has reported, ``pending`` if some exist, else the
newest recorded result (a workload scaled to zero keeps showing why). Only the results of
pods the workload's controller made decide it while there are any (provenance.py): a pod
anyone else made is listed, marked ``createdBy: other``, and outranks nothing.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from preflight_contract.verdicts import ERROR, FAIL, PASS, UNKNOWN, WARN, worst
from preflight_operator.core import constants
from preflight_operator.core.groupproof import group_results
from preflight_operator.core.loadtime import load_section
from preflight_operator.core.podresults import PodResult
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.policyaudit import admission_section
from preflight_operator.core.rules import redact_status
from preflight_operator.core.static import MAX_FINDINGS, MORE_FINDINGS, StaticResult
from preflight_operator.core.workloads import WorkloadRef, gpuvalidation_name

PENDING = "pending"
STATIC_CONDITION = "StaticChecksPassed"
RUNTIME_CONDITION = "RuntimeChecksPassed"
READY_CONDITION = "Ready"
CONDITION_MESSAGE_LIMIT = 1000
# The whole status, as JSON: far under etcd's 1.5 MiB request limit and kubectl's patience.
# Every part is capped already (findings, pod entries); this is the last guard. 32 KiB: a
# list page of GPUValidations is bounded by what the operator writes, whatever a tenant's
# manifest holds (issue 34: 20 containers with a long CUDA_VISIBLE_DEVICES made 27 KB
# statuses; the largest built from tests/data/realworld is under 8 KB).
STATUS_LIMIT = 32 * 1024
# Findings kept listed when the status is still over STATUS_LIMIT once their texts are
# cut: the rest are counted in one summary finding (failures first, as static.py orders).
MIN_LISTED_FINDINGS = 5


@dataclasses.dataclass(frozen=True)
class StatusInputs:
    ref: WorkloadRef
    generation: int | None
    static: StaticResult | None  # None: the workload was not analysed (yet)
    static_checked_at: str
    policy: ResolvedPolicy
    live_results: Sequence[PodResult]
    pending_pods: int
    previous: Mapping[str, Any]  # the stored status ({} when none)
    remediation: Mapping[str, Any] | None
    now: str
    history_limit: int = 10
    injection_enabled: bool = True
    # Pods of the workload that run without the injected check (created while no
    # operator replica answered the injection webhook under failurePolicy Ignore).
    not_injected: Sequence[str] = ()
    # (pod, kube-scheduler's message) of pods waiting for a node that no node fits: they
    # never run the check, so "waiting for pod results" would wait forever.
    unschedulable: Sequence[tuple[str, str]] = ()


def desired_object(ref: WorkloadRef, uid: str) -> dict[str, Any]:
    """The GPUValidation to create for a workload (status is written separately)."""
    owner = {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "name": ref.name,
        "uid": uid,
        "controller": False,
        "blockOwnerDeletion": False,
    }
    return {
        "apiVersion": constants.API_VERSION,
        "kind": constants.GPUVALIDATION_KIND,
        "metadata": {
            "name": gpuvalidation_name(ref.kind_key, ref.name),
            "namespace": ref.namespace,
            "labels": {"app.kubernetes.io/managed-by": constants.COMPONENT},
            "ownerReferences": [owner],
        },
        "spec": {
            "workloadRef": {
                "apiVersion": ref.api_version,
                "kind": ref.kind,
                "name": ref.name,
                "uid": uid,
            }
        },
    }


def merge_history(
    previous: Sequence[Mapping[str, Any]], live: Sequence[PodResult], limit: int
) -> list[dict[str, Any]]:
    """Newest first, one entry per pod (its latest run), at most ``limit`` entries."""
    by_uid: dict[str, dict[str, Any]] = {}
    for entry in previous:
        if isinstance(entry, Mapping) and entry.get("uid"):
            by_uid[str(entry["uid"])] = dict(entry)
    for result in live:
        by_uid[result.uid] = result.to_status()
    ordered = sorted(
        by_uid.values(),
        key=lambda e: (str(e.get("checkedAt", "")), str(e.get("pod", ""))),
        reverse=True,
    )
    return ordered[:limit]


def deciding(live: Sequence[PodResult]) -> list[PodResult]:
    """The results that decide: the controller's pods', else (none of those) all of them."""
    return [r for r in live if r.trusted] or list(live)


def runtime_verdict(
    live: Sequence[PodResult], pending_pods: int, history: Sequence[Mapping[str, Any]]
) -> str:
    if live:
        return worst([r.verdict for r in live])
    if pending_pods or not history:
        return PENDING
    return str(history[0].get("verdict", UNKNOWN))


def _condition(
    *,
    type_: str,
    status: str,
    reason: str,
    message: str,
    generation: int | None,
    previous: Mapping[str, Mapping[str, Any]],
    now: str,
) -> dict[str, Any]:
    before = previous.get(type_) or {}
    changed = before.get("status") != status
    out: dict[str, Any] = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message[:CONDITION_MESSAGE_LIMIT],
        "lastTransitionTime": now if changed else before.get("lastTransitionTime", now),
    }
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def _static_condition(static: StaticResult | None) -> tuple[str, str, str]:
    if static is None:
        return "Unknown", "NotAnalysed", "the workload has not been analysed yet"
    if static.error:
        return "Unknown", "RulesError", f"the rules engine failed: {static.error}"
    if static.verdict == FAIL:
        return "False", "RulesFailed", "; ".join(f.one_line() for f in static.failures)
    if static.verdict == WARN:
        return "True", "PassedWithWarnings", "; ".join(f.one_line() for f in static.warnings)
    if static.verdict == PASS:
        return "True", "Passed", "the manifest requests what its parallel plan needs"
    return "Unknown", "NotAnalysed", "the workload's vLLM command line could not be analysed"


PLAN_UNKNOWN = "unknown"
PLAN_UNKNOWN_REASON = "plan-unknown"
# the reasons a plan-unknown workload shows as plan-unknown: the rules' findings that say
# the plan was not read, and the check's own warning of it
_PLAN_REASONS = frozenset(("vllm-command-unparsed", "plan-unresolved", "plan", ""))
_RESULT_REASONS = frozenset(("Passed", "PassedWithWarnings", "CheckFailed", "CheckError"))
_UNKNOWN_WHY = ("vllm-command-unparsed", "plan-unresolved")


def plan_unknown(static: StaticResult | None) -> str:
    """ "plan unknown: <why>" when the rules recognised vLLM in the workload but read no
    parallel plan (its pods' checks then ran without one: injection.py), else ""."""
    if static is None or not static.has_vllm or static.error or static.plan is not None:
        return ""
    found = [f for f in static.findings if f.id in _UNKNOWN_WHY]
    why = f"{found[0].id}: {found[0].message}" if found else "the rules read no parallel plan"
    text = " ".join(f"plan unknown: {why}".split())
    return text if len(text) <= 300 else text[:299] + "\u2026"


def _mark_plan_unknown(status: dict[str, Any], unknown: str, runtime: str) -> None:
    """planUnknown, and the REASON plan-unknown where it would name only that (the rules'
    finding that the plan was not read, or the check's warning of it)."""
    if not unknown:
        return
    status["planUnknown"] = unknown
    if runtime not in (FAIL, ERROR) and status["reason"] in _PLAN_REASONS:
        status["reason"] = PLAN_UNKNOWN_REASON


def _said_planless(state: tuple[str, str, str], unknown: str) -> tuple[str, str, str]:
    """The RuntimeChecksPassed condition of a check's result, said to rest on no plan the
    rules read."""
    if not unknown or state[1] not in _RESULT_REASONS:
        return state
    return state[0], state[1], f"{unknown}. {state[2]}"


NOT_INJECTED = "NotInjected"
NOT_INJECTED_REASON = "not-injected"


def not_injected_message(ref: WorkloadRef, pods: Sequence[str]) -> str:
    shown = ", ".join(pods[:5]) + (f" and {len(pods) - 5} more" if len(pods) > 5 else "")
    return (
        f"{len(pods)} pod(s) run without the preflight check ({shown}): they were created"
        " while no operator replica answered the injection webhook (failurePolicy Ignore),"
        " or the webhook skipped them (see vllm_preflight_injections_total). Fix: once the"
        f" operator runs, restart the workload (kubectl rollout restart {ref.kind_key.lower()}/"
        f"{ref.name} -n {ref.namespace}; delete the pods of a Job) so its new pods get the"
        " check"
    )


UNSCHEDULABLE_REASON = "unschedulable"


def unschedulable_message(pods: Sequence[tuple[str, str]]) -> str:
    """The RuntimeChecksPassed message while pods fit no node: the scheduler's own words,
    and the fix when it is the GPUs (the usual case: more per pod than any node has)."""
    name, why = pods[0]
    more = f" (and {len(pods) - 1} more pod(s))" if len(pods) > 1 else ""
    text = f"pod {name}{more} is not scheduled, so its check cannot run: {why.strip()}"
    if "Insufficient nvidia.com/gpu" in why or "Insufficient amd.com/gpu" in why:
        return (
            f"{text} Fix: no node has that many free GPUs; request at most what one node"
            " has (lower --tensor-parallel-size x --pipeline-parallel-size and"
            " resources.limits with it, or spread the model over pods with a"
            " LeaderWorkerSet), or add nodes with more GPUs"
        )
    return f"{text} Fix: make the pod fit a node (what the scheduler names above)"


def _runtime_condition(
    verdict: str,
    live: Sequence[PodResult],
    history: Sequence[Mapping[str, Any]],
    injection_enabled: bool,
    *,
    not_injected: Sequence[str] = (),
    ref: WorkloadRef | None = None,
    unschedulable: Sequence[tuple[str, str]] = (),
) -> tuple[str, str, str]:
    if not injection_enabled and not live and not history:
        return "Unknown", "InjectionDisabled", "the policy disables the injected check"
    if not_injected and not live and ref is not None:
        return "Unknown", NOT_INJECTED, not_injected_message(ref, not_injected)
    if verdict == PENDING and unschedulable:
        return "Unknown", "Unschedulable", unschedulable_message(unschedulable)
    if verdict == PENDING:
        return "Unknown", "WaitingForPods", "no pod of the workload has finished its check yet"
    failing = [r for r in live if r.verdict in (FAIL, ERROR)]
    source: Mapping[str, Any] = (
        failing[0].to_status() if failing else (history[0] if history else {})
    )
    detail = f"pod {source.get('pod', '?')}: {source.get('reason', '')}: " + str(
        source.get("message", "")
    )
    if source.get("remediation"):
        detail += f" Fix: {source['remediation']}"
    if verdict == FAIL:
        return "False", "CheckFailed", detail
    if verdict == ERROR:
        return "False", "CheckError", detail
    if verdict == WARN:
        return "True", "PassedWithWarnings", detail
    passed = sum(1 for r in live if r.verdict == PASS) or len(history)
    return "True", "Passed", f"{passed} pod(s) passed the GPU preflight check"


def _ready_condition(static_status: str, runtime_status: str) -> tuple[str, str, str]:
    if "False" in (static_status, runtime_status):
        which = "static rules" if static_status == "False" else "runtime check"
        return "False", "ChecksFailed", f"the {which} failed; see the other conditions"
    if static_status == runtime_status == "True":
        return "True", "ChecksPassed", "safe to start vLLM"
    return "Unknown", "ChecksIncomplete", "waiting for the static or runtime result"


def overall_status(static: StaticResult | None, runtime: str) -> str:
    """pass | warn | fail | pending: the `vllm-preflight.io/status` annotation."""
    static_verdict = static.verdict if static is not None else UNKNOWN
    if FAIL in (static_verdict, runtime) or runtime == ERROR:
        return FAIL
    if runtime == PENDING:
        return PENDING
    if WARN in (static_verdict, runtime):
        return WARN
    return PASS


def status_reason(
    static: StaticResult | None,
    runtime: str,
    live: Sequence[PodResult],
    history: Sequence[Mapping[str, Any]],
    unschedulable: Sequence[tuple[str, str]] = (),
) -> str:
    """The REASON column: first runtime failure, else static failure, else warnings;
    while no result is in, `unschedulable` when a pod fits no node."""

    def runtime_reason(verdicts: tuple[str, ...]) -> str:
        for result in live:
            if result.verdict in verdicts and result.reason:
                return result.reason
        if not live and history and history[0].get("verdict") in verdicts:
            return str(history[0].get("reason", ""))
        return ""

    if runtime in (FAIL, ERROR):
        reason = runtime_reason((FAIL, ERROR))
        if reason:
            return reason
    if static is not None and static.verdict in (FAIL, ERROR):
        return static.first_reason
    if runtime == WARN:
        reason = runtime_reason((WARN,))
        if reason:
            return reason
    if static is not None and static.verdict == WARN:
        return static.first_reason
    if runtime == PENDING:
        return UNSCHEDULABLE_REASON if unschedulable else "waiting for pod results"
    return ""


def build_status(inputs: StatusInputs) -> dict[str, Any]:
    previous = inputs.previous
    prev_runtime = previous.get("runtime") or {}
    history = merge_history(
        prev_runtime.get("pods") or [], inputs.live_results, inputs.history_limit
    )
    live = deciding(inputs.live_results)
    runtime = runtime_verdict(live, inputs.pending_pods, history)
    static = inputs.static
    plan = static.plan if static is not None else None
    requested = static.gpus_requested if static is not None else None

    unknown = plan_unknown(static)
    needed = "?" if plan is None else str(plan.gpus_needed)
    status: dict[str, Any] = {
        "workload": inputs.ref.display,
        "staticVerdict": static.verdict if static is not None else UNKNOWN,
        "runtimeVerdict": runtime,
        "reason": status_reason(static, runtime, live, history, inputs.unschedulable),
        "action": inputs.policy.action,
        "policy": inputs.policy.name,
        "gpus": f"{'?' if requested is None else requested}/{PLAN_UNKNOWN if unknown else needed}",
        # the TP column: never blank where the plan was not read (issue 35/36, item 3)
        "tp": PLAN_UNKNOWN if unknown else "?" if plan is None else str(plan.tp),
    }
    _mark_plan_unknown(status, unknown, runtime)
    if inputs.generation is not None:
        status["observedGeneration"] = inputs.generation
    if plan is not None:
        status["plan"] = plan.to_status()
    if requested is not None:
        status["gpusRequested"] = requested
    if static is not None:
        status["static"] = _static_section(static, inputs.static_checked_at, previous)
    status["runtime"] = {
        "podsChecked": len(history),
        "podsPassed": sum(1 for e in history if e.get("verdict") in (PASS, WARN)),
        "podsFailed": sum(1 for e in history if e.get("verdict") in (FAIL, ERROR)),
        "pods": history,
    }
    if history and history[0].get("checkedAt"):
        status["runtime"]["lastCheckedAt"] = history[0]["checkedAt"]
    groups = group_results(history, [r.to_status() for r in inputs.live_results])
    if groups:
        status["runtime"]["groups"] = groups
    loaded = measured_load(prev_runtime, inputs.live_results)
    if loaded:
        status["runtime"]["loadTime"] = loaded
    if static is not None:
        status["admission"] = admission_section(static, inputs.policy, inputs.ref)
    if inputs.remediation:
        status["remediation"] = dict(inputs.remediation)

    prev_conditions = {
        str(c.get("type")): c for c in previous.get("conditions") or [] if isinstance(c, Mapping)
    }
    static_state = _static_condition(static)
    runtime_state = _runtime_condition(
        runtime,
        live,
        history,
        inputs.injection_enabled,
        not_injected=inputs.not_injected,
        ref=inputs.ref,
        unschedulable=inputs.unschedulable,
    )
    if runtime_state[1] == NOT_INJECTED and runtime == PENDING:
        status["reason"] = NOT_INJECTED_REASON
    runtime_state = _said_planless(runtime_state, unknown)
    conditions = [
        (STATIC_CONDITION, static_state),
        (RUNTIME_CONDITION, runtime_state),
        (READY_CONDITION, _ready_condition(static_state[0], runtime_state[0])),
    ]
    status["conditions"] = [
        _condition(
            type_=type_,
            status=state,
            reason=reason,
            message=message,
            generation=inputs.generation,
            previous=prev_conditions,
            now=inputs.now,
        )
        for type_, (state, reason, message) in conditions
    ]
    return bound_status(redact_status(status))


def measured_load(previous_runtime: Mapping[str, Any], live: Sequence[PodResult]) -> dict[str, Any]:
    """``runtime.loadTime``: the measured starts (loadtime.py) of the pods the workload's
    controller made, merged with those recorded; a pod anyone else made never counts."""
    return load_section(
        previous_runtime, [r.load for r in live if r.trusted and r.load is not None]
    )


def _size(value: Any) -> int:
    # ASCII-escaped: never smaller than the UTF-8 the API server stores, so an upper bound
    return len(json.dumps(value, separators=(",", ":")))


def bound_status(status: dict[str, Any], limit: int = STATUS_LIMIT) -> dict[str, Any]:
    """``status`` within ``limit`` bytes of JSON: first the findings' texts are cut short,
    then findings past MIN_LISTED_FINDINGS are counted in one, not listed, then the oldest
    pod entries go (the newest are kept). Unchanged when it fits, so a status that fits is
    written as built."""
    if _size(status) <= limit:
        return status
    out = copy.deepcopy(status)
    static = out.get("static") or {}
    for finding in static.get("findings") or []:
        for key, cap in (("message", 200), ("fix", 200), ("field", 100)):
            if isinstance(finding.get(key), str) and len(finding[key]) > cap:
                finding[key] = finding[key][: cap - 1] + "\u2026"
    if _size(out) > limit and len(static.get("findings") or []) > MIN_LISTED_FINDINGS:
        static["findings"] = _counted(static["findings"])
    pods = (out.get("runtime") or {}).get("pods") or []
    while pods and _size(out) > limit:
        pods.pop()
    return out


def _counted(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first findings listed, the rest counted (an earlier summary's count included)."""
    kept = findings[: MIN_LISTED_FINDINGS - 1]
    rest = findings[MIN_LISTED_FINDINGS - 1 :]
    more = 0
    for finding in rest:
        counted = re.match(r"(\d+) more", str(finding.get("message", "")))
        summary = finding.get("id") == MORE_FINDINGS and counted
        more += int(counted.group(1)) if summary and counted else 1
    failures = sum(1 for f in rest if f.get("severity") == FAIL)
    summary = {
        "id": MORE_FINDINGS,
        "severity": FAIL if failures else WARN,
        "message": f"{more} more finding(s) not listed (the status is bounded)",
        "fix": "run `vllm-preflight lint` on the manifest to see every finding",
    }
    return [*kept, summary]


def _static_section(
    static: StaticResult, checked_at: str, previous: Mapping[str, Any]
) -> dict[str, Any]:
    findings = [f.to_status() for f in static.findings[:MAX_FINDINGS]]
    before = previous.get("static") or {}
    # Keep the old timestamp when nothing changed, so re-analysis writes nothing.
    same = before.get("verdict") == static.verdict and (before.get("findings") or []) == findings
    section: dict[str, Any] = {
        "verdict": static.verdict,
        "checkedAt": before.get("checkedAt", checked_at) if same else checked_at,
    }
    if findings:
        section["findings"] = findings
    return section
