"""Runtime-failure remediation: applied once, recorded, undone by removing the annotation."""

from __future__ import annotations

from typing import Any

from preflight_operator.core import constants
from preflight_operator.core.remediation import ANNOTATION_PREVIOUS_REPLICAS, WorkloadFacts, decide
from preflight_operator.core.workloads import DEPLOYMENT, JOB, STATEFULSET, WorkloadKind

NOW = "2026-01-01T00:10:00Z"


def facts(
    kind: WorkloadKind = DEPLOYMENT,
    replicas: int | None = 3,
    paused: bool = False,
    **annotations: str,
) -> WorkloadFacts:
    return WorkloadFacts(kind=kind, replicas=replicas, paused=paused, annotations=annotations)


def run(
    f: WorkloadFacts,
    remedy: str,
    verdict: str = "fail",
    recorded: Any = None,
    failure_at: str = "2026-01-01T00:05:00Z",
) -> Any:
    return decide(
        facts=f,
        on_runtime_failure=remedy,
        runtime_verdict=verdict,
        newest_failure_at=failure_at,
        recorded=recorded,
        now=NOW,
    )


def test_none_does_nothing() -> None:
    decision = run(facts(), "None")
    assert decision.workload_patch is None
    assert decision.record is None


def test_pause_rollout_patches_spec_and_annotation_together() -> None:
    decision = run(facts(), "PauseRollout")
    assert decision.workload_patch == {
        "metadata": {"annotations": {constants.ANNOTATION_REMEDIATED: "PauseRollout"}},
        "spec": {"paused": True},
    }
    assert decision.record == {"type": "PauseRollout", "appliedAt": NOW}
    assert decision.event is not None
    assert "remove the annotation" in decision.event[2]
    assert decision.metric == ("PauseRollout", "applied")


def test_scale_to_zero_keeps_the_replicas_in_the_same_patch() -> None:
    decision = run(facts(STATEFULSET, replicas=4), "ScaleToZero")
    assert decision.workload_patch == {
        "metadata": {
            "annotations": {
                constants.ANNOTATION_REMEDIATED: "ScaleToZero",
                ANNOTATION_PREVIOUS_REPLICAS: "4",
            }
        },
        "spec": {"replicas": 0},
    }
    assert decision.record == {"type": "ScaleToZero", "appliedAt": NOW, "previousReplicas": 4}


def test_no_remedy_without_a_failure_or_for_kinds_that_cannot_take_it() -> None:
    assert run(facts(), "ScaleToZero", verdict="pass").workload_patch is None
    assert run(facts(), "ScaleToZero", verdict="error").workload_patch is None
    job = run(facts(JOB, replicas=None), "ScaleToZero")
    assert job.workload_patch is None
    assert "Job" in job.note
    sts = run(facts(STATEFULSET), "PauseRollout")
    assert sts.workload_patch is None
    assert "StatefulSet" in sts.note


def test_applied_once_and_not_again_while_active() -> None:
    applied = run(facts(), "PauseRollout")
    marked = facts(paused=True, **{constants.ANNOTATION_REMEDIATED: "PauseRollout"})
    again = run(marked, "PauseRollout", recorded=applied.record)
    assert again.workload_patch is None
    assert again.record == applied.record


def test_removing_the_annotation_undoes_a_scale_to_zero() -> None:
    recorded = {"type": "ScaleToZero", "appliedAt": NOW, "previousReplicas": 4}
    undo = run(
        facts(replicas=0, **{ANNOTATION_PREVIOUS_REPLICAS: "4"}), "ScaleToZero", recorded=recorded
    )
    assert undo.workload_patch == {
        "metadata": {"annotations": {ANNOTATION_PREVIOUS_REPLICAS: None}},
        "spec": {"replicas": 4},
    }
    assert undo.record == {"type": "None", "revertedAt": NOW}
    assert undo.metric == ("ScaleToZero", "reverted")


def test_replicas_changed_by_the_user_are_left_alone() -> None:
    recorded = {"type": "ScaleToZero", "appliedAt": NOW, "previousReplicas": 4}
    undo = run(facts(replicas=2), "ScaleToZero", recorded=recorded)
    assert undo.workload_patch is None or "spec" not in undo.workload_patch
    assert undo.event is not None
    assert "left the replicas" in undo.event[2]


def test_undoing_a_pause_unpauses() -> None:
    undo = run(facts(paused=True), "PauseRollout", recorded={"type": "PauseRollout"})
    assert undo.workload_patch is not None
    assert undo.workload_patch["spec"] == {"paused": False}


def test_the_old_failure_does_not_trigger_it_again_after_an_undo() -> None:
    reverted = {"type": "None", "revertedAt": NOW}
    stale = run(facts(), "PauseRollout", recorded=reverted, failure_at="2026-01-01T00:05:00Z")
    assert stale.workload_patch is None
    fresh = run(facts(), "PauseRollout", recorded=reverted, failure_at="2026-01-01T00:11:00Z")
    assert fresh.workload_patch is not None


def test_a_crash_between_patch_and_status_is_recovered_from_the_annotations() -> None:
    marked = facts(
        replicas=0,
        **{constants.ANNOTATION_REMEDIATED: "ScaleToZero", ANNOTATION_PREVIOUS_REPLICAS: "5"},
    )
    decision = run(marked, "ScaleToZero", recorded=None)
    assert decision.workload_patch is None
    assert decision.record == {"type": "ScaleToZero", "appliedAt": NOW, "previousReplicas": 5}
