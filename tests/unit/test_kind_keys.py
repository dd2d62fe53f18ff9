"""Issue 39: kinds keyed by (API group, kind) wherever admission and the operator look one up.

Volcano's Job (batch.volcano.sh) shares its kind name with batch/v1 Job. Both are
validated now, so each lookup on those paths (the webhook's ADMITTED_KINDS, the operator's
VALIDATED_KINDS and KNOWN_KINDS, a pod's workload, a child's serving-stack owner, the
GPUValidation's name, the denial's text) goes by ``workloads.kind_key``: the bare kind
for batch/v1 Job, ``Job.batch.volcano.sh`` for Volcano's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_gang_paths import NS, enforce, gpuvalidations, manifests, review, said
from test_gang_wiring import MODEL, pod

from preflight_operator.core.workloads import (
    ADMITTED_KINDS,
    JOB,
    KNOWN_KINDS,
    VALIDATED_KINDS,
    WorkloadRef,
    kind_key,
    object_kind_key,
    workload_of_pod,
    wrapper_owner,
)
from preflight_operator.webhook.admissionreview import review_validation_async

VOLCANO = "batch.volcano.sh/v1alpha1"


def batch_job(name: str = "vllm-mn") -> dict[str, Any]:
    spec = pod(["vllm", "serve", MODEL, "--tensor-parallel-size", "4"])
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
            "spec": {"template": {"spec": spec}}}  # fmt: skip


def owned_pod(api_version: str, kind: str, name: str = "vllm-mn") -> dict[str, Any]:
    owner = {"apiVersion": api_version, "kind": kind, "name": name, "uid": "u-1",
             "controller": True}  # fmt: skip
    meta = {"name": f"{name}-0", "namespace": NS, "ownerReferences": [owner]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def test_the_two_jobs_are_two_kinds() -> None:
    assert kind_key("batch", "Job") == "Job" == JOB.key
    assert kind_key("batch.volcano.sh", "Job") == "Job.batch.volcano.sh"
    assert kind_key(None, "Job") == "Job"  # no apiVersion: the core kinds, as lint reads them
    volcano = ADMITTED_KINDS["Job.batch.volcano.sh"]
    assert (volcano.group, volcano.kind, volcano.api_version) == (
        "batch.volcano.sh",
        "Job",
        VOLCANO,
    )
    assert ADMITTED_KINDS["Job"] is JOB
    assert JOB.group == "batch"
    assert VALIDATED_KINDS["RoleBasedGroup"].group == "workloads.x-k8s.io"
    assert object_kind_key(manifests("volcano-job")[0]) == "Job.batch.volcano.sh"
    assert object_kind_key(batch_job()) == "Job"
    # keys are (group, kind), one each
    assert len({(k.group, k.kind) for k in KNOWN_KINDS.values()}) == len(KNOWN_KINDS)


def test_a_pods_result_is_kept_under_its_own_jobs_key() -> None:
    volcano = workload_of_pod(owned_pod(VOLCANO, "Job"))
    batch = workload_of_pod(owned_pod("batch/v1", "Job"))
    assert volcano.key == (NS, "Job.batch.volcano.sh", "vllm-mn")
    assert batch.key == (NS, "Job", "vllm-mn")
    assert volcano.workload_kind is ADMITTED_KINDS["Job.batch.volcano.sh"]
    assert batch.workload_kind is JOB
    # an unknown group's "Job" is not batch/v1 Job either
    assert workload_of_pod(owned_pod("example.com/v1", "Job")).workload_kind is None


def test_a_volcano_jobs_pods_report_to_it_a_batch_jobs_do_not() -> None:
    """STACK_CHILDREN by kind_key: Volcano's job controller makes Pods; batch/v1 Job is no
    serving stack. A RoleBasedGroup's StatefulSet reports to it."""
    owner = wrapper_owner(owned_pod(VOLCANO, "Job"))
    assert owner is not None
    assert owner.key == (NS, "Job.batch.volcano.sh", "vllm-mn")
    assert wrapper_owner(owned_pod("batch/v1", "Job")) is None
    sts = {**owned_pod("workloads.x-k8s.io/v1alpha2", "RoleBasedGroup"), "apiVersion": "apps/v1",
           "kind": "StatefulSet"}  # fmt: skip
    found = wrapper_owner(sts)
    assert found is not None
    assert found.display == "RoleBasedGroup/vllm-mn"
    # a child's kind is its kind_key too: a Volcano Job is no RayCluster's batch/v1 Job
    vjob = {**owned_pod("ray.io/v1", "RayCluster"), "apiVersion": VOLCANO, "kind": "Job"}
    assert wrapper_owner(vjob) is None
    assert wrapper_owner({**vjob, "apiVersion": "batch/v1"}) is not None


@pytest.mark.parametrize(
    ("declarer", "shown"),
    [("volcano-job", "Job.batch.volcano.sh/vllm-mn"), ("rolebasedgroup", "RoleBasedGroup/vllm-mn")],
)
@pytest.mark.parametrize(
    ("broken", "rule"), [("tp", "lws-args-mismatch"), ("nnodes", "lws-nnodes-mismatch")]
)
def test_under_enforce_a_broken_gang_is_denied_naming_the_group_rule(
    declarer: str, shown: str, broken: str, rule: str
) -> None:
    (obj,) = manifests(declarer, broken)
    response = asyncio.run(review_validation_async(enforce(), review(obj)))["response"]
    assert response["allowed"] is False
    assert response["status"]["message"].startswith(f"vllm-preflight: {shown} cannot run")
    assert (rule, "fail") in said(response)
    (good,) = manifests(declarer)
    response = asyncio.run(review_validation_async(enforce(), review(good)))["response"]
    assert response["allowed"] is True
    assert said(response) == []


def test_a_volcano_job_and_a_batch_job_of_one_name_keep_two_gpuvalidations() -> None:
    (volcano,) = manifests("volcano-job", "tp")
    found = gpuvalidations([volcano, batch_job()])
    assert set(found) == {(NS, "job.batch.volcano.sh-vllm-mn"), (NS, "job-vllm-mn")}
    vgv, bgv = found[NS, "job.batch.volcano.sh-vllm-mn"], found[NS, "job-vllm-mn"]
    assert vgv["spec"]["workloadRef"]["apiVersion"] == VOLCANO
    assert vgv["spec"]["workloadRef"]["kind"] == "Job"
    assert vgv["metadata"]["ownerReferences"][0]["apiVersion"] == VOLCANO
    assert vgv["status"]["staticVerdict"] == "fail"
    assert bgv["spec"]["workloadRef"]["apiVersion"] == "batch/v1"
    assert bgv["status"]["staticVerdict"] != "fail"


def test_a_display_names_the_group_only_where_the_kind_name_is_shared() -> None:
    assert WorkloadRef(NS, "Job", "a", VOLCANO).display == "Job.batch.volcano.sh/a"
    assert WorkloadRef(NS, "Job", "a", "batch/v1").display == "Job/a"
    assert WorkloadRef(NS, "JobSet", "a", "jobset.x-k8s.io/v1alpha2").display == "JobSet/a"
