"""Naming GPUValidations and attributing a pod to its workload from the pod alone."""

from __future__ import annotations

from typing import Any

import pytest

from preflight_operator.workloads import (
    DEPLOYMENT,
    LEADERWORKERSET,
    POD,
    gpuvalidation_name,
    template_labels,
    workload_label_value,
    workload_of_pod,
)


def pod(labels: dict[str, str] | None = None, owner: dict[str, Any] | None = None) -> Any:
    meta: dict[str, Any] = {"name": "p-1", "namespace": "ns", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"controller": True, **owner}]
    return {"metadata": meta}


def test_deployment_from_the_replicaset_name_and_template_hash() -> None:
    ref = workload_of_pod(
        pod(
            {"pod-template-hash": "5d9c7b"},
            {"kind": "ReplicaSet", "name": "vllm-5d9c7b", "apiVersion": "apps/v1"},
        )
    )
    assert (ref.kind, ref.name, ref.api_version) == ("Deployment", "vllm", "apps/v1")


def test_a_replicaset_without_deployment_stays_a_replicaset() -> None:
    ref = workload_of_pod(
        pod({}, {"kind": "ReplicaSet", "name": "bare-rs", "apiVersion": "apps/v1"})
    )
    assert (ref.kind, ref.name) == ("ReplicaSet", "bare-rs")


@pytest.mark.parametrize(
    ("owner", "kind"),
    [
        ({"kind": "StatefulSet", "name": "w", "apiVersion": "apps/v1"}, "StatefulSet"),
        ({"kind": "Job", "name": "w", "apiVersion": "batch/v1"}, "Job"),
        ({"kind": "InferenceService", "name": "w", "apiVersion": "x.io/v1"}, "InferenceService"),
    ],
)
def test_direct_owners(owner: dict[str, str], kind: str) -> None:
    ref = workload_of_pod(pod({}, owner))
    assert (ref.kind, ref.name, ref.api_version) == (kind, "w", owner["apiVersion"])


def test_leaderworkerset_pods_by_label_whatever_owns_them() -> None:
    # A worker pod of an LWS is owned by a StatefulSet owned by the leader pod.
    ref = workload_of_pod(
        pod(
            {"leaderworkerset.sigs.k8s.io/name": "big"},
            {"kind": "StatefulSet", "name": "big-0", "apiVersion": "apps/v1"},
        )
    )
    assert (ref.kind, ref.name, ref.api_version) == (
        "LeaderWorkerSet",
        "big",
        LEADERWORKERSET.api_version,
    )


def test_bare_pod_is_its_own_workload() -> None:
    ref = workload_of_pod(pod())
    assert (ref.kind, ref.name, ref.namespace) == (POD.kind, "p-1", "ns")


def test_gpuvalidation_names_fit_and_stay_unique() -> None:
    assert gpuvalidation_name("Deployment", "vllm") == "deployment-vllm"
    long_a, long_b = "a" * 260, "a" * 259 + "b"
    name_a, name_b = (
        gpuvalidation_name("Deployment", long_a),
        gpuvalidation_name("Deployment", long_b),
    )
    assert len(name_a) <= 253
    assert len(name_b) <= 253
    assert name_a != name_b
    assert gpuvalidation_name("Deployment", long_a) == name_a  # stable


def test_workload_label_only_when_it_is_a_valid_label_value() -> None:
    ref = workload_of_pod(pod({"pod-template-hash": "h"}, {"kind": "ReplicaSet", "name": "x-h"}))
    assert workload_label_value(ref) == "deployment.x"
    long_ref = workload_of_pod(
        pod({"pod-template-hash": "h"}, {"kind": "ReplicaSet", "name": "x" * 70 + "-h"})
    )
    assert workload_label_value(long_ref) is None
    assert workload_label_value(workload_of_pod({"metadata": {"namespace": "ns"}})) is None


def test_template_labels_cover_templates_and_the_object() -> None:
    lws = {
        "metadata": {"labels": {"team": "a"}},
        "spec": {
            "leaderWorkerTemplate": {
                "leaderTemplate": {"metadata": {"labels": {"role": "leader"}}},
                "workerTemplate": {"metadata": {"labels": {"vllm-preflight.io/inject": "enabled"}}},
            }
        },
    }
    assert template_labels(LEADERWORKERSET, lws) == {
        "team": "a",
        "role": "leader",
        "vllm-preflight.io/inject": "enabled",
    }
    deploy = {"spec": {"template": {"metadata": {"labels": {"app": "x"}}}}}
    assert template_labels(DEPLOYMENT, deploy) == {"app": "x"}
