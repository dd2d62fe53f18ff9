"""JobSet as a validated kind (issue 26 item 2): judged at admission and watched like the
other serving-stack kinds, its Jobs report to it, and remediation never acts on what a
JobSet does not have (no spec.replicas, no spec.paused)."""

from __future__ import annotations

from typing import Any

from preflight_operator.core.remediation import WorkloadFacts, decide
from preflight_operator.core.rules import kinds
from preflight_operator.core.workloads import (
    ADMITTED_KINDS,
    FAMILIES,
    VALIDATED_KINDS,
    workload_of_pod,
    wrapper_owner,
)

NOW = "2026-01-01T00:10:00Z"


def test_jobset_is_validated_at_its_served_version() -> None:
    row = next(k for k in kinds.KINDS if k.kind == "JobSet")
    assert row.role == kinds.VALIDATED
    kind = VALIDATED_KINDS["JobSet"]
    assert kind is ADMITTED_KINDS["JobSet"]
    # the upstream CRD (tests/data/crds/jobset) serves v1alpha2 only
    assert (kind.api_version, kind.plural) == ("jobset.x-k8s.io/v1alpha2", "jobsets")
    assert "jobset" in FAMILIES  # chart value workloadKinds.jobset


def job_of(jobset_uid: str = "u-1") -> dict[str, Any]:
    """A Job as JobSet's controller makes it (constructJob + SetControllerReference)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "serve-vllm-0",
            "namespace": "team",
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": "serve",
                    "uid": jobset_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
    }


def test_its_jobs_are_its_own() -> None:
    ref = wrapper_owner(job_of())
    assert ref is not None
    assert (ref.kind, ref.name, ref.namespace) == ("JobSet", "serve", "team")
    # its pods are the Job's (whose results the operator hands up to the JobSet)
    pod = {
        "metadata": {
            "namespace": "team",
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "serve-vllm-0",
                 "controller": True}
            ],
        }
    }  # fmt: skip
    assert workload_of_pod(pod).kind == "Job"


def test_remediation_does_not_apply_to_a_jobset() -> None:
    kind = VALIDATED_KINDS["JobSet"]
    assert not kind.scalable
    assert not kind.pausable
    for remedy in ("ScaleToZero", "PauseRollout"):
        got = decide(
            facts=WorkloadFacts(kind=kind, replicas=None, paused=False, annotations={}),
            on_runtime_failure=remedy,
            runtime_verdict="fail",
            newest_failure_at="2026-01-01T00:05:00Z",
            recorded=None,
            now=NOW,
        )
        assert got.workload_patch is None
        assert f"{remedy} does not apply to a JobSet" in got.note


def test_a_jobset_whose_pods_take_their_rank_from_the_completion_index_is_judged() -> None:
    """`--node-rank $(JOB_COMPLETION_INDEX)` (the Job controller's env of an Indexed Job,
    JobSet's default): the plan resolves, as for the Job's pod 0, and a GPU count too low
    for TP 8 over 2 nodes is found; before, the plan was unresolved and nothing judged."""
    from preflight_operator.core.analysis import rules_policy
    from preflight_operator.core.operatorconfig import PolicySpec
    from preflight_operator.core.rules import check_object

    def body(tp: int) -> dict[str, Any]:
        script = f"vllm serve m -tp {tp} --nnodes 2 --node-rank $(JOB_COMPLETION_INDEX)"
        pod = {
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.2",  # --nnodes: 0.11.1 on (issue 38)
                    "command": ["sh", "-c", script],
                    "resources": {"limits": {"nvidia.com/gpu": 2}},
                    "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        }
        job = {"parallelism": 2, "completions": 2, "template": {"spec": pod}}
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "serve", "namespace": "team"},
            "spec": {"replicatedJobs": [{"name": "vllm", "template": {"spec": job}}]},
        }

    policy = rules_policy(PolicySpec())
    (good,) = check_object(body(4), policy)
    assert (good.verdict, good.gpus_needed) == ("pass", 2)
    (bad,) = check_object(body(8), policy)
    assert bad.verdict == "fail"
    assert [f.id for f in bad.findings] == ["gpu-count-too-low"]
