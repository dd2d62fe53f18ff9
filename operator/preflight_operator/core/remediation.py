"""What to do to a workload whose pods fail the runtime check (pure).

Per the policy's ``onRuntimeFailure``:

* ``None`` — nothing: under Enforce the failing init container already keeps vLLM from
  starting.
* ``PauseRollout`` — a Deployment gets ``spec.paused: true`` (no further ReplicaSets roll
  out a broken template).
* ``ScaleToZero`` — a Deployment, StatefulSet or LeaderWorkerSet gets ``replicas: 0``; the
  previous count is kept in an annotation written in the same patch, so a crash between
  that patch and the status write loses nothing.

Both are recorded on the GPUValidation (``status.remediation``) and marked on the workload
with ``vllm-preflight.io/remediated``; a user removes that annotation (after fixing the
workload) and the operator undoes what it did: unpauses, or restores the replicas — unless
the user changed them meanwhile. A remediation undone is not re-applied for the same
failure: only a pod result newer than the undo counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from preflight_contract.verdicts import FAIL
from preflight_operator.core import constants
from preflight_operator.core.workloads import WorkloadKind

NONE = "None"
PAUSE_ROLLOUT = "PauseRollout"
SCALE_TO_ZERO = "ScaleToZero"
ACTIVE = (PAUSE_ROLLOUT, SCALE_TO_ZERO)
ANNOTATION_PREVIOUS_REPLICAS = constants.PREFIX + "previous-replicas"


@dataclasses.dataclass(frozen=True)
class WorkloadFacts:
    kind: WorkloadKind
    replicas: int | None
    paused: bool
    annotations: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class Decision:
    """The workload patch to send (None: none), the record for status.remediation, and an
    Event (type, reason, message) or a note for the log."""

    workload_patch: dict[str, Any] | None = None
    record: dict[str, Any] | None = None
    event: tuple[str, str, str] | None = None
    note: str = ""
    metric: tuple[str, str] | None = None  # (type, "applied" | "reverted")


def _previous_from_annotation(annotations: Mapping[str, str]) -> int | None:
    try:
        return int(annotations.get(ANNOTATION_PREVIOUS_REPLICAS, ""))
    except ValueError:
        return None


def decide(
    *,
    facts: WorkloadFacts,
    on_runtime_failure: str,
    runtime_verdict: str,
    newest_failure_at: str,
    recorded: Mapping[str, Any] | None,
    now: str,
) -> Decision:
    marked = facts.annotations.get(constants.ANNOTATION_REMEDIATED)
    recorded = dict(recorded or {})
    active = recorded.get("type") in ACTIVE

    if marked in ACTIVE and not active:
        # Applied to the workload but never recorded (a crash in between): record it now.
        record: dict[str, Any] = {"type": marked, "appliedAt": recorded.get("appliedAt", now)}
        previous = _previous_from_annotation(facts.annotations)
        if previous is not None:
            record["previousReplicas"] = previous
        return Decision(record=record)

    if active and marked is None:
        return _revert(facts, recorded, now)

    if active or marked is not None:
        return Decision(record=recorded or None)

    wants = on_runtime_failure in ACTIVE and runtime_verdict == FAIL
    reverted_at = str(recorded.get("revertedAt", ""))
    if not wants or (reverted_at and newest_failure_at <= reverted_at):
        return Decision(record=recorded or None)
    return _apply(facts, on_runtime_failure, recorded, now)


def _apply(
    facts: WorkloadFacts, kind_of_remedy: str, recorded: Mapping[str, Any], now: str
) -> Decision:
    kind = facts.kind
    undo = f"remove the annotation {constants.ANNOTATION_REMEDIATED} once the workload is fixed"
    if kind_of_remedy == PAUSE_ROLLOUT:
        if not kind.pausable:
            return Decision(
                record=dict(recorded) or None,
                note=f"onRuntimeFailure PauseRollout does not apply to a {kind.key}",
            )
        patch: dict[str, Any] = {
            "metadata": {"annotations": {constants.ANNOTATION_REMEDIATED: PAUSE_ROLLOUT}},
            "spec": {"paused": True},
        }
        return Decision(
            workload_patch=patch,
            record={"type": PAUSE_ROLLOUT, "appliedAt": now},
            metric=(PAUSE_ROLLOUT, "applied"),
            event=(
                "Warning",
                "RolloutPaused",
                f"paused the rollout: its pods fail the GPU preflight check; to resume, {undo}",
            ),
        )
    if not kind.scalable:
        return Decision(
            record=dict(recorded) or None,
            note=f"onRuntimeFailure ScaleToZero does not apply to a {kind.key}",
        )
    if not facts.replicas:
        return Decision(record=dict(recorded) or None, note="already at zero replicas")
    patch = {
        "metadata": {
            "annotations": {
                constants.ANNOTATION_REMEDIATED: SCALE_TO_ZERO,
                ANNOTATION_PREVIOUS_REPLICAS: str(facts.replicas),
            }
        },
        "spec": {"replicas": 0},
    }
    return Decision(
        workload_patch=patch,
        record={"type": SCALE_TO_ZERO, "appliedAt": now, "previousReplicas": facts.replicas},
        metric=(SCALE_TO_ZERO, "applied"),
        event=(
            "Warning",
            "ScaledToZero",
            f"scaled from {facts.replicas} to 0 replicas: its "
            f"pods fail the GPU preflight check; to restore them, {undo}",
        ),
    )


def _revert(facts: WorkloadFacts, recorded: Mapping[str, Any], now: str) -> Decision:
    record = {"type": NONE, "revertedAt": now}
    kind_of_remedy = recorded.get("type")
    spec: dict[str, Any] = {}
    if kind_of_remedy == PAUSE_ROLLOUT:
        if facts.paused:
            spec["paused"] = False
        message = "resumed the rollout (the remediated annotation was removed)"
    else:
        previous = recorded.get("previousReplicas")
        if previous is None:
            previous = _previous_from_annotation(facts.annotations)
        if isinstance(previous, int) and facts.replicas == 0:
            spec["replicas"] = previous
            message = f"restored {previous} replicas (the remediated annotation was removed)"
        else:
            message = "left the replicas as they are: they changed since the scale to zero"
    patch: dict[str, Any] = {
        "metadata": {"annotations": {ANNOTATION_PREVIOUS_REPLICAS: None}},
    }
    if spec:
        patch["spec"] = spec
    event = ("Normal", "RemediationReverted", message)
    metric = (str(kind_of_remedy), "reverted")
    if ANNOTATION_PREVIOUS_REPLICAS not in facts.annotations and not spec:
        return Decision(record=record, event=event, metric=metric)
    return Decision(workload_patch=patch, record=record, event=event, metric=metric)
