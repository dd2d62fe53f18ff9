"""Groups declared outside LeaderWorkerSet and Ray (issue 26 item 1): JobSet objects are one
group of replicas x parallelism pods; a pod tells its JobSet, Kueue or Volcano group from what
each system really puts on it, and what it does not put there is said, never guessed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from preflight_operator.core.rules import groups
from preflight_operator.core.rules.kinds import kind_spec, pod_templates

DATA = Path(__file__).resolve().parents[1] / "data"


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((DATA / "groups" / name).read_text())


def test_jobset_coordinator_example_is_one_group_led_by_the_coordinator() -> None:
    obj = load("jobset-coordinator.yaml")
    found = groups.jobset(obj, "coordinator-example", "team")
    assert [t.role for t in found] == ["driver", "workers"]
    assert found[0].group is None  # judged as Job pods: no Ray spreading assumed
    members = groups.jobset_members(obj)
    assert sum(m.replicas for _, m in members) == 5
    assert [m.replicas for _, m in members] == [1, 4]
    assert found[0].path == "spec.replicatedJobs[1].template.spec.template.spec"


def test_jobset_mnist_example_through_the_registry() -> None:
    obj = load("jobset-mnist.yaml")
    spec = kind_spec(obj)
    assert spec is not None
    assert spec.kind == "JobSet"
    found = pod_templates(obj, "default")
    assert len(found) == 1
    assert found[0].family == groups.JOBSET
    assert sum(m.replicas for _, m in groups.jobset_members(obj)) == 4


def test_a_single_pod_jobset_is_no_group_and_odd_counts_are_read_as_one() -> None:
    obj = load("jobset-mnist.yaml")
    job = obj["spec"]["replicatedJobs"][0]
    job["template"]["spec"]["parallelism"] = 1
    assert [m.replicas for _, m in groups.jobset_members(obj)] == [1]
    job["replicas"] = "many"
    job["template"]["spec"]["parallelism"] = True
    assert [m.replicas for _, m in groups.jobset_members(obj)] == [1]
    assert len(groups.jobset(obj, "pytorch", None)) == 1
    assert groups.jobset({"spec": {"replicatedJobs": "x"}}, "n", None) == []


def jobset_pod(**labels: str) -> dict[str, Any]:
    base = {
        groups.JOBSET_NAME: "pytorch",
        groups.JOBSET_GLOBAL_REPLICAS: "1",
        groups.JOBSET_GLOBAL_INDEX: "0",
    }
    notes = {groups.COMPLETION_INDEX: labels.pop("index", "2")}
    if "coordinator" in labels:
        notes[groups.JOBSET_COORDINATOR] = labels.pop("coordinator")
    return {"metadata": {"labels": {**base, **labels}, "annotations": notes}}


def test_jobset_pod_rank_and_leader_from_what_jobset_writes() -> None:
    found = groups.pod_group(jobset_pod(coordinator="pytorch-workers-0-0.pytorch"))
    assert found is not None
    assert (found.system, found.name, found.index) == ("jobset", "pytorch", 2)
    assert found.leader == "pytorch-workers-0-0.pytorch"
    assert found.size is None  # the Job's parallelism is not on the pod
    assert "spec.parallelism is not on the pod" in groups.declared_warning(found)


def test_jobset_pod_without_coordinator_says_how_to_get_one() -> None:
    found = groups.pod_group(jobset_pod())
    assert found is not None
    assert found.leader is None
    assert "set spec.coordinator" in groups.declared_warning(found)


def test_kueue_pod_group_size_from_the_annotation() -> None:
    pod = {
        "metadata": {
            "labels": {groups.KUEUE_GROUP: "sample-group", groups.KUEUE_INDEX: "1"},
            "annotations": {groups.KUEUE_TOTAL: "2"},
        }
    }
    found = groups.pod_group(pod)
    assert found is not None
    assert (found.system, found.size, found.index, found.leader) == ("kueue", 2, 1, None)
    assert "leader's address" in groups.declared_warning(found)


def test_volcano_pod_group_is_named_and_the_rest_unknown() -> None:
    pod = {"metadata": {"annotations": {groups.VOLCANO_GROUP: "vllm-pg"}}}
    found = groups.pod_group(pod)
    assert found is not None
    assert found.system == "volcano"
    assert found.size is None
    assert "minMember" in groups.declared_warning(found)


def test_hostile_values_are_not_counts() -> None:
    pod = {
        "metadata": {
            "labels": {groups.KUEUE_GROUP: "g" * 10_000},
            "annotations": {groups.KUEUE_TOTAL: "9" * 50},
        }
    }
    found = groups.pod_group(pod)
    assert found is not None
    assert found.size is None
    assert len(found.name) <= 253
    assert groups.pod_group({"metadata": "x"}) is None
    assert groups.pod_group({}) is None
