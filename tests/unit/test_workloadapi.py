"""Groups declared through the Kubernetes Workload API (issue 26): a pod and the object it
names, shaped exactly as each Kubernetes version defines them (1.35: spec.workloadRef and a
scheduling.k8s.io/v1alpha1 Workload; 1.36/1.37: spec.schedulingGroup and a v1alpha2,
v1alpha3 or v1beta1 PodGroup; sources in workloadapi's docstring). The group's minimum is
read, its size, rank and leader are said to be unknown (never guessed), and hostile objects
are unknown too."""

from __future__ import annotations

from typing import Any

import pytest

from preflight_operator.core.rules import groups, workloadapi


def pod_135(ref: Any, namespace: str = "team") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "vllm", "image": "vllm/vllm-openai"}]}
    if ref is not None:
        spec["workloadRef"] = ref
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "vllm-0", "namespace": namespace},
        "spec": spec,
    }


def workload_135(pod_groups: list[dict[str, Any]], name: str = "vllm") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {
            "controllerRef": {"apiGroup": "apps", "kind": "StatefulSet", "name": "vllm"},
            "podGroups": pod_groups,
        },
    }


def pod_136(group: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "vllm-0", "namespace": "team"},
        "spec": {
            "containers": [{"name": "vllm", "image": "vllm/vllm-openai"}],
            "schedulingGroup": {"podGroupName": group},
        },
    }


def podgroup(policy: dict[str, Any], version: str = "v1alpha2") -> dict[str, Any]:
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": "vllm-0", "namespace": "team"},
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": "vllm", "podGroupTemplateName": "engine"}
            },
            "schedulingPolicy": policy,
        },
    }


GANG4 = {"name": "engine", "policy": {"gang": {"minCount": 4}}}


def test_a_pod_without_a_reference_is_no_workload_group() -> None:
    assert workloadapi.workload_group(pod_135(None), None) is None
    assert workloadapi.reference({"spec": "junk"}) is None


def test_135_gang_gives_the_minimum_never_the_size_rank_or_leader() -> None:
    pod = pod_135({"name": "vllm", "podGroup": "engine"})
    found = workloadapi.workload_group(pod, workload_135([GANG4]))
    assert found is not None
    assert (found.policy, found.min_count) == ("gang", 4)
    d = found.declared
    assert (d.system, d.name) == ("workload-api", "vllm/engine")
    assert (d.size, d.index, d.leader) == (None, None, None)
    assert d.gang == 4  # all or none: the shared field for Volcano's minAvailable too
    assert d.source == "spec.workloadRef -> Workload vllm spec.podGroups[engine].policy"
    assert any("minCount 4 is the least pods" in u for u in d.unknown)
    assert "minCount 4" in groups.declared_warning(d)  # a warning, and it says why


def test_135_replica_key_names_the_replica() -> None:
    pod = pod_135({"name": "vllm", "podGroup": "engine", "podGroupReplicaKey": "r1"})
    found = workloadapi.workload_group(pod, workload_135([GANG4]))
    assert found is not None
    assert found.declared.name == "vllm/engine replica r1"
    assert found.reference.replica_key == "r1"


def test_135_basic_policy_is_a_group_without_a_minimum() -> None:
    pod = pod_135({"name": "vllm", "podGroup": "web"})
    workload = workload_135([GANG4, {"name": "web", "policy": {"basic": {}}}])
    found = workloadapi.workload_group(pod, workload)
    assert found is not None
    assert (found.policy, found.min_count) == ("basic", None)
    assert any("basic policy" in u for u in found.declared.unknown)


@pytest.mark.parametrize("version", ["v1alpha2", "v1alpha3", "v1beta1"])
def test_136_and_137_podgroup_gang(version: str) -> None:
    ref = workloadapi.reference(pod_136("vllm-0"))
    assert ref == workloadapi.GroupReference("PodGroup", "vllm-0")
    assert ref.field == "spec.schedulingGroup.podGroupName"
    found = workloadapi.workload_group(
        pod_136("vllm-0"), podgroup({"gang": {"minCount": 2}}, version)
    )
    assert found is not None
    assert (found.policy, found.min_count, found.declared.name) == ("gang", 2, "vllm-0")
    assert found.declared.source.endswith("PodGroup vllm-0 spec.schedulingPolicy")


def test_the_object_not_read_is_unknown_with_the_reason() -> None:
    found = workloadapi.workload_group(pod_136("vllm-0"), None, missing="forbidden")
    assert found is not None
    assert (found.policy, found.min_count) == (None, None)
    assert found.declared.unknown[0] == "the PodGroup 'vllm-0' (forbidden)"


@pytest.mark.parametrize(
    ("obj", "said"),
    [
        # another Kubernetes version's shape: never read as this one
        ({**workload_135([GANG4]), "apiVersion": "scheduling.k8s.io/v1beta1"}, "known:"),
        ({**workload_135([GANG4]), "kind": "PodGroup"}, "known:"),
        (workload_135([GANG4], name="other"), "named 'other'"),
        (
            {**workload_135([GANG4]), "metadata": {"name": "vllm", "namespace": "elsewhere"}},
            "namespace 'elsewhere'",
        ),
        (workload_135([]), "no entries"),
        (workload_135([GANG4, GANG4]), "2 entries"),
        (workload_135([{"name": "engine", "policy": {"gang": {"minCount": 0}}}]), "minCount"),
        (workload_135([{"name": "engine", "policy": {"gang": {"minCount": "4"}}}]), "'4'"),
        (workload_135([{"name": "engine", "policy": {"gang": {"minCount": True}}}]), "True"),
        (workload_135([{"name": "engine", "policy": {"gang": {"minCount": 10**9}}}]), "minCount"),
        (
            workload_135([{"name": "engine", "policy": {"basic": {}, "gang": {"minCount": 2}}}]),
            "not exactly one",
        ),
        (workload_135([{"name": "engine", "policy": "gang"}]), "not exactly one"),
        ({"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload"}, "named None"),
        ({**workload_135([GANG4]), "spec": {"podGroups": "x" * 10**6}}, "no entries"),
    ],
)
def test_a_hostile_or_unknown_object_is_unknown_never_a_minimum(obj: Any, said: str) -> None:
    pod = pod_135({"name": "vllm", "podGroup": "engine"})
    found = workloadapi.workload_group(pod, obj)
    assert found is not None
    assert found.min_count is None
    assert any(said in u for u in found.declared.unknown), found.declared.unknown
    assert all(len(u) < 400 for u in found.declared.unknown)


@pytest.mark.parametrize(
    ("pod", "said"),
    [
        (pod_135({"name": "Not_A_Name", "podGroup": "engine"}), "workloadRef.name is"),
        (pod_135({"name": "vllm"}), "workloadRef.podGroup is None"),
        (pod_135({"name": "vllm", "podGroup": "e", "podGroupReplicaKey": 7}), "ReplicaKey is int"),
        (pod_135("vllm"), "workloadRef.name is NoneType"),
        (pod_136("x" * 300), "podGroupName is"),
        (pod_136(None), "podGroupName is NoneType"),
        (
            {"spec": {"workloadRef": {"name": "a", "podGroup": "b"}, "schedulingGroup": {}}},
            "both",
        ),
    ],
)
def test_a_malformed_reference_is_unknown(pod: Any, said: str) -> None:
    found = workloadapi.workload_group(pod, workload_135([GANG4]))
    assert found is not None
    assert (found.policy, found.min_count) == (None, None)
    assert said in found.declared.unknown[0], found.declared.unknown


def test_a_long_hostile_value_is_bounded_in_the_message() -> None:
    pod = pod_135({"name": "vllm", "podGroup": "engine"})
    obj = workload_135([GANG4])
    obj["kind"] = "K" * 100_000
    found = workloadapi.workload_group(pod, obj)
    assert found is not None
    assert len(groups.declared_warning(found.declared)) < 1000
