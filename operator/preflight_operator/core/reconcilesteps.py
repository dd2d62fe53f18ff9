"""The steps of one reconcile of one workload, worked out without touching the API (pure).

The reconciler feeds in what the store knows and gets back, in order: the remediation
patch for the workload (sent first, so the annotation that records it exists before the
status says so), the whole GPUValidation status to write (or None when the stored one is
already right), the annotation patch for the workload, and the Events to post.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from preflight_contract.verdicts import FAIL, worst
from preflight_operator.core import constants, remediation
from preflight_operator.core.events import (
    EventSpec,
    InvolvedObject,
    pod_result_events,
    static_events,
)
from preflight_operator.core.gpuvalidation import (
    NOT_INJECTED,
    PENDING,
    RUNTIME_CONDITION,
    StatusInputs,
    build_status,
    overall_status,
)
from preflight_operator.core.podresults import PodResult
from preflight_operator.core.store import WorkloadState
from preflight_operator.core.workloads import POD


@dataclasses.dataclass(frozen=True)
class ReconcileSteps:
    """What one reconcile does, in order: the remediation patch, the status write, the
    annotation patch and the Events."""

    status: dict[str, Any]
    status_write: dict[str, Any] | None
    remediation_patch: dict[str, Any] | None
    annotation_patch: dict[str, Any] | None
    events: list[EventSpec]
    note: str = ""
    remediation_metric: tuple[str, str] | None = None


def without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def replacing_merge_patch(
    previous: Mapping[str, Any], desired: Mapping[str, Any]
) -> dict[str, Any]:
    """A merge patch that leaves exactly ``desired``: every desired value in full (so a
    stale view of ``previous`` cannot leave a wrong value behind) and null for every key
    ``previous`` has and ``desired`` lacks, at every level of nested maps."""
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        before = previous.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            patch[key] = replacing_merge_patch(before, value)
        else:
            patch[key] = value
    for key in previous:
        if key not in desired:
            patch[key] = None
    return patch


def _runtime_reason(status: Mapping[str, Any]) -> str:
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == RUNTIME_CONDITION:
            return str(condition.get("reason", ""))
    return ""


def _announced(history: Sequence[Mapping[str, Any]]) -> set[tuple[str, int, str]]:
    return {
        (str(e.get("uid", "")), int(e.get("restarts", 0) or 0), str(e.get("checkedAt", "")))
        for e in history
        if isinstance(e, Mapping)
    }


def reconcile_steps(
    workload: WorkloadState,
    live: Sequence[PodResult],
    pending_pods: int,
    stored_status: Mapping[str, Any],
    *,
    history_limit: int,
    now: str,
    not_injected: Sequence[str] = (),
    unschedulable: Sequence[tuple[str, str]] = (),
) -> ReconcileSteps:
    """``not_injected``: names of the workload's pods that run without the check;
    ``unschedulable``: (pod, scheduler message) of its pods no node fits."""
    ref = workload.ref

    def status_with(record: Mapping[str, Any] | None) -> dict[str, Any]:
        return build_status(
            StatusInputs(
                ref=ref,
                generation=workload.generation,
                static=workload.static if workload.static.has_vllm else None,
                static_checked_at=workload.static_checked_at,
                policy=workload.policy,
                live_results=live,
                pending_pods=pending_pods,
                previous=stored_status,
                remediation=record,
                now=now,
                history_limit=history_limit,
                injection_enabled=workload.policy.spec.injection_enabled,
                not_injected=not_injected,
                unschedulable=unschedulable,
            )
        )

    recorded = stored_status.get("remediation")
    status = status_with(recorded)
    runtime = str(status["runtimeVerdict"])
    # Remediation acts only on results of pods the workload's controller made
    # (provenance.py): a pod anyone else made can be shown, never scale a workload.
    trusted = [r for r in live if r.trusted]
    acting_on = worst([r.verdict for r in trusted]) if trusted else PENDING
    failures = [r.checked_at for r in trusted if r.verdict == FAIL]
    kind = ref.workload_kind
    decision = remediation.Decision(record=dict(recorded) if recorded else None)
    if kind is not None and kind is not POD:
        decision = remediation.decide(
            facts=remediation.WorkloadFacts(
                kind=kind,
                replicas=workload.replicas,
                paused=workload.paused,
                annotations=workload.annotations,
            ),
            on_runtime_failure=workload.policy.spec.on_runtime_failure,
            runtime_verdict=acting_on,
            newest_failure_at=max(failures, default=""),
            recorded=recorded,
            now=now,
        )
        if decision.record != (dict(recorded) if recorded else None):
            status = status_with(decision.record)

    status_write = None
    if without_nulls(dict(stored_status)) != status:
        status_write = replacing_merge_patch(stored_status, status)

    overall = overall_status(workload.static if workload.static.has_vllm else None, runtime)
    reason = str(status.get("reason", ""))
    annotation_patch = None
    if (
        workload.annotations.get(constants.ANNOTATION_STATUS) != overall
        or workload.annotations.get(constants.ANNOTATION_REASON, "") != reason
    ):
        annotation_patch = {
            "metadata": {
                "annotations": {
                    constants.ANNOTATION_STATUS: overall,
                    constants.ANNOTATION_REASON: reason or None,
                    constants.ANNOTATION_CHECKED_AT: now,
                }
            }
        }

    events: list[EventSpec] = []
    involved = InvolvedObject.of(ref, workload.uid)
    before_static = stored_status.get("static") or {}
    after_static = status.get("static") or {}
    if workload.static.has_vllm and (
        before_static.get("verdict") != after_static.get("verdict")
        or before_static.get("findings") != after_static.get("findings")
    ):
        events += static_events(workload.static, involved, workload.policy.action)
    announced = _announced((stored_status.get("runtime") or {}).get("pods") or [])
    for result in live:
        if result.run_key in announced:
            continue
        pod = InvolvedObject("v1", "Pod", ref.namespace, result.pod, result.uid)
        for_pod = pod_result_events(result, pod, involved)
        # A bare Pod is its own workload: one Event, not the same one twice.
        events += for_pod[:1] if kind is POD else for_pod
    if _runtime_reason(status) == NOT_INJECTED and _runtime_reason(stored_status) != NOT_INJECTED:
        message = next(c["message"] for c in status["conditions"] if c["type"] == RUNTIME_CONDITION)
        events.append(EventSpec(involved, "Warning", NOT_INJECTED, message))
    if decision.event is not None:
        type_, reason_, message = decision.event
        events.append(EventSpec(involved, type_, reason_, message))

    return ReconcileSteps(
        status=status,
        status_write=status_write,
        remediation_patch=decision.workload_patch,
        annotation_patch=annotation_patch,
        events=events,
        note=decision.note,
        remediation_metric=decision.metric,
    )
