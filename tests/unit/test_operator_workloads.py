"""Naming GPUValidations and attributing a pod to its workload from the pod alone."""

from __future__ import annotations

from typing import Any

import pytest

from preflight_operator.core.workloads import (
    DEPLOYMENT,
    KNOWN_KINDS,
    LEADERWORKERSET,
    POD,
    STACK_CHILDREN,
    VALIDATED_KINDS,
    WRAPPER_KINDS,
    gpuvalidation_name,
    label_key_problem,
    label_value_problem,
    owner_uid,
    template_labels,
    workload_label_value,
    workload_of_pod,
    wrapper_owner,
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


# -- serving-stack ownership --------------------------------------------------------------


def child(kind: str, *owners: dict[str, Any]) -> dict[str, Any]:
    known = KNOWN_KINDS.get(kind)  # its own apiVersion: children are keyed (group, kind)
    return {
        "apiVersion": known.api_version if known else "apps/v1",
        "kind": kind,
        "metadata": {"name": "c", "namespace": "ns", "ownerReferences": list(owners)},
    }


ISVC = {
    "apiVersion": "serving.kserve.io/v1beta1",
    "kind": "InferenceService",
    "name": "llm",
    "uid": "u-1",
    "controller": True,
}
RAYSERVICE = {**ISVC, "apiVersion": "ray.io/v1", "kind": "RayService", "name": "rs"}


def test_a_stack_child_of_a_kind_its_controller_makes_belongs_to_the_stack() -> None:
    owner = wrapper_owner(child("Deployment", ISVC))
    assert owner is not None
    assert (owner.namespace, owner.kind, owner.name) == ("ns", "InferenceService", "llm")
    assert owner_uid(child("Deployment", ISVC)) == "u-1"
    ray = wrapper_owner(child("RayCluster", RAYSERVICE))
    assert ray is not None
    assert ray.kind == "RayService"


def test_a_deployment_pointing_at_a_rayservice_is_the_users_own() -> None:
    """KubeRay's RayService makes RayClusters, never Deployments: the issue's bypass."""
    assert wrapper_owner(child("Deployment", RAYSERVICE)) is None
    # the kind given by the caller wins over a body without one (LIST items carry none)
    body = child("Deployment", RAYSERVICE)
    del body["kind"]
    assert wrapper_owner(body, "Deployment") is None
    assert wrapper_owner(body, "RayCluster") is not None


@pytest.mark.parametrize(
    "owner",
    [
        {**ISVC, "controller": False},
        {k: v for k, v in ISVC.items() if k != "controller"},
        {**ISVC, "controller": "true"},  # not the boolean the API server stores
        {**ISVC, "apiVersion": "evil.example.com/v1beta1"},  # the kind, another group
    ],
)
def test_only_a_controller_reference_of_the_stack_group_counts(owner: dict[str, Any]) -> None:
    assert wrapper_owner(child("Deployment", owner)) is None


def test_a_second_plain_reference_does_not_hide_the_controller() -> None:
    plain = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u-2"}
    assert wrapper_owner(child("Deployment", plain, ISVC)) is not None
    assert wrapper_owner(child("Deployment", {**ISVC, "controller": False}, plain)) is None


@pytest.mark.parametrize("meta", [None, "x", {"ownerReferences": "x"}, {"ownerReferences": [1]}])
def test_hostile_metadata_is_no_owner(meta: Any) -> None:
    assert wrapper_owner({"kind": "Deployment", "metadata": meta}) is None
    assert owner_uid({"kind": "Deployment", "metadata": meta}) == ""


def test_the_children_table_covers_every_stack_kind_with_judged_kinds_only() -> None:
    assert set(STACK_CHILDREN) == {k.key for k in WRAPPER_KINDS}
    for children in STACK_CHILDREN.values():
        assert children <= set(VALIDATED_KINDS)


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("app", True), ("example.com/app", True), ("a" * 63, True), ("a" * 64, False),
        ("a" * 253 + "/b", True), ("a" * 254 + "/b", False), ("/a", False), ("a/", False),
        ("a/b/c", False), ("Example.com/a", False), ("app\n", False), ("", False),
    ],
)  # fmt: skip
def test_label_keys(key: str, ok: bool) -> None:
    assert (label_key_problem(key) is None) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [("", True), ("x", True), ("v" * 63, True), ("v" * 64, False), ("-x", False),
     ("x\n", False), ("a b", False)],
)  # fmt: skip
def test_label_values(value: str, ok: bool) -> None:
    assert (label_value_problem(value) is None) is ok
