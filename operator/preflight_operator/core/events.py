"""Kubernetes Events the operator and the webhooks post (pure builders).

Events carry the fix: a user running ``kubectl describe pod`` or ``kubectl get events``
learns what is wrong and what to change without reading the operator's logs.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from preflight_contract.verdicts import ERROR, FAIL, WARN
from preflight_operator.core import constants
from preflight_operator.core.podresults import PodResult
from preflight_operator.core.rules import redact_text
from preflight_operator.core.static import StaticResult
from preflight_operator.core.workloads import WorkloadRef

MESSAGE_LIMIT = 1000  # events.k8s.io caps a note at 1 KiB; core/v1 shows it the same way


@dataclasses.dataclass(frozen=True)
class InvolvedObject:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    @classmethod
    def of(cls, ref: WorkloadRef, uid: str = "") -> InvolvedObject:
        return cls(ref.api_version, ref.kind, ref.namespace, ref.name, uid)


@dataclasses.dataclass(frozen=True)
class EventSpec:
    involved: InvolvedObject
    type: str  # Normal | Warning
    reason: str
    message: str


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_body(event: EventSpec, instance: str, now: str) -> dict[str, Any]:
    involved: dict[str, Any] = {
        "apiVersion": event.involved.api_version,
        "kind": event.involved.kind,
        "namespace": event.involved.namespace,
        "name": event.involved.name,
    }
    if event.involved.uid:
        involved["uid"] = event.involved.uid
    message = redact_text(event.message)  # a pod's text: no secret in an Event (issue 36)
    if len(message) > MESSAGE_LIMIT:
        message = message[: MESSAGE_LIMIT - 1] + "\u2026"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "generateName": f"{event.involved.name[:200]}.",
            "namespace": event.involved.namespace,
        },
        "involvedObject": involved,
        "type": event.type,
        "reason": event.reason,
        "message": message,
        "source": {"component": constants.COMPONENT},
        "reportingComponent": constants.COMPONENT,
        "reportingInstance": instance[:128],
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def pod_result_events(
    result: PodResult, pod: InvolvedObject, workload: InvolvedObject
) -> list[EventSpec]:
    """One Event on the pod for every finished check; failures also on the workload."""
    if result.verdict in (FAIL, ERROR):
        outcome = "failed" if result.verdict == FAIL else "could not complete"
        text = f"GPU preflight check {outcome}: {result.reason}: {result.message}"
        if result.remediation:
            text += f" Fix: {result.remediation}"
        reason = "PreflightCheckFailed" if result.verdict == FAIL else "PreflightCheckError"
        return [
            EventSpec(pod, "Warning", reason, text),
            EventSpec(workload, "Warning", reason, f"pod {result.pod}: {text}"),
        ]
    if result.verdict == WARN:
        text = f"GPU preflight check passed with warnings: {result.reason}: {result.message}"
        if result.remediation:
            text += f" Fix: {result.remediation}"
        return [EventSpec(pod, "Warning", "PreflightCheckWarning", text)]
    gpus = f" on {len(result.gpus)} GPU(s)" if result.gpus else ""
    return [EventSpec(pod, "Normal", "PreflightCheckPassed", f"GPU preflight check passed{gpus}")]


def static_events(static: StaticResult, workload: InvolvedObject, action: str) -> list[EventSpec]:
    """An Event when the static verdict of a workload becomes fail or warn."""
    if static.verdict == FAIL:
        lines = "; ".join(f.one_line() for f in static.failures)
        return [EventSpec(workload, "Warning", "StaticCheckFailed", f"({action}) {lines}")]
    if static.verdict == WARN:
        lines = "; ".join(f.one_line() for f in static.warnings)
        return [EventSpec(workload, "Warning", "StaticCheckWarning", f"({action}) {lines}")]
    return []


def denied_event(ref: WorkloadRef, message: str) -> EventSpec:
    """A denied object never exists; the Event names it in its namespace."""
    return EventSpec(InvolvedObject.of(ref), "Warning", "AdmissionDenied", message)


def policy_invalid_event(namespace: str, name: str, uid: str, message: str) -> EventSpec:
    """A PreflightPolicy with fields the operator did not take (each replaced by its
    default, so pods are never blocked by it): which, and how to fix them."""
    involved = InvolvedObject(constants.API_VERSION, constants.POLICY_KIND, namespace, name, uid)
    return EventSpec(involved, "Warning", "PolicyInvalid", message)
