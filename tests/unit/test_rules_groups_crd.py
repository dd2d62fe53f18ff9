"""Groups declared by objects of their own (issue 26 item 1): Kueue Workloads, Volcano Jobs
and PodGroups, RoleBasedGroups (rules/crdgroups.py). The upstream examples of
tests/data/groups are read as their systems describe them; hostile or partial shapes are
unknown (a warning), never a crash and never a group failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_operator.core.rules import crdgroups, groups
from preflight_operator.core.rules.kinds import kind_spec, pod_templates
from preflight_operator.core.rules.spread import RAY
from preflight_operator.core.rules.template import LWS

DATA = Path(__file__).resolve().parents[1] / "data"


def load(name: str, where: str = "groups") -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((DATA / where / name).read_text()) if d]
    return docs[0]  # the group object comes first in every file read here


def test_the_new_kinds_are_registered_kueue_lint_only() -> None:
    """A Kueue Workload is Kueue's own record (lint only); a Volcano Job and a
    RoleBasedGroup are validated since issue 39 (test_gang_paths)."""
    for name, role in (("kueue-workload.yaml", "lint"), ("volcano-pytorch.yaml", "validated"),
                       ("rbg-agg-leader-worker.yaml", "validated")):  # fmt: skip
        obj = load(name)
        spec = kind_spec(obj)
        assert spec is not None, obj["kind"]
        assert spec.role == role, name
    # batch/v1 Job stays the core kind
    assert kind_spec({"apiVersion": "batch/v1", "kind": "Job"}).family == "core"  # type: ignore[union-attr]


def test_kueue_workload_is_the_sum_of_its_pod_sets_with_no_rank_or_leader() -> None:
    obj = load("kueue-workload.yaml")
    found = pod_templates(obj, "team-a")
    assert [(t.role, t.path, t.group) for t in found] == [
        ("main", "spec.podSets[0].template.spec", None)
    ]
    # a single-node command: no gang (test_gang_wiring covers the --nnodes shape)
    assert found[0].index_offsets is None


def test_volcano_pytorch_plugin_names_rank_and_master() -> None:
    obj = load("volcano-pytorch.yaml")
    found = pod_templates(obj, "ns")
    assert [t.role for t in found] == ["master", "worker"]
    assert all(t.group is None for t in found)  # not a Ray cluster: pods judged one by one
    group = crdgroups.volcano_job_group(obj)
    assert group is not None
    assert (group.size, group.gang) == (3, 1)
    assert group.rank_source.startswith("RANK")
    assert group.leader_source.startswith("MASTER_ADDR")
    assert group.leader == "pytorch-job-master-0.pytorch-job"
    assert group.unknown == ()


def test_volcano_env_and_svc_plugins_give_an_index_but_no_leader() -> None:
    obj = load("volcano-job-plugin.yaml")
    group = crdgroups.volcano_job_group(obj)
    assert group is not None
    assert (group.size, group.gang) == (3, 3)
    assert group.rank_source.startswith("VC_TASK_INDEX")
    assert group.leader is None
    assert group.leader_source == ""
    assert "VC_<TASK>_HOSTS" in groups.declared_warning(group)


def test_volcano_gang_defaults_like_volcano_webhook() -> None:
    obj = {
        "metadata": {"name": "j"},
        "spec": {"tasks": [
            {"name": "a", "replicas": 4, "minAvailable": 2, "template": {"spec": {}}},
            {"name": "b", "replicas": 3, "template": {"spec": {}}},
        ]},
    }  # fmt: skip
    group = crdgroups.volcano_job_group(obj)
    assert group is not None
    assert (group.size, group.gang) == (7, 5)
    assert "each pod's rank" in groups.declared_warning(group)


def test_volcano_tasks_forming_a_ray_cluster_are_one_group() -> None:
    head = {
        "containers": [
            {"name": "h", "command": ["sh", "-c", "ray start --head && vllm serve m -tp 4"]}
        ]
    }
    worker = {
        "containers": [
            {"name": "w", "command": ["ray", "start", "--address=j-head-0.j:6379", "--block"]}
        ]
    }
    obj = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"tasks": [
            {"name": "head", "replicas": 1, "template": {"spec": head}},
            {"name": "worker", "replicas": 3, "template": {"spec": worker}},
        ]},
    }  # fmt: skip
    found = pod_templates(obj, "ns")
    assert found[0].group is not None
    assert found[0].group.family == RAY
    assert found[0].group.size == 4
    assert found[0].group.size_path == "spec.tasks[*].replicas"


def test_a_pod_of_a_volcano_group_does_not_carry_its_size() -> None:
    pod = {"metadata": {"annotations": {groups.VOLCANO_GROUP: "test-pg"}}}
    declared = groups.pod_group(pod)
    assert declared is not None
    assert declared.size is None
    assert "spec.minMember" in groups.declared_warning(declared)


def test_rbg_leader_worker_pattern_is_an_lws_like_group_with_rbg_env() -> None:
    obj = load("rbg-agg-leader-worker.yaml")
    found = pod_templates(obj, "ns")
    assert [t.role for t in found] == ["backend-leader", "backend-worker"]
    group = found[0].group
    assert group is not None
    assert (group.family, group.size) == (LWS, 2)
    assert group.size_path == "spec.roles[0].leaderWorkerPattern.size"
    assert found[0].injected_env["RBG_LWP_WORKER_INDEX"] == "0"
    assert found[1].injected_env["RBG_LWP_WORKER_INDEX"] == "1"
    assert found[0].injected_env["RBG_LWP_GROUP_SIZE"] == "2"


def test_rbg_v1alpha1_roles_forming_a_ray_cluster_are_one_group() -> None:
    """The corpus's RoleBasedGroup (sgl-project/rbg examples/distributed-inference/vllm.yaml):
    the leader role alone has TP 2 on 1 GPU; read generically it was a false failure
    (gpu-count-too-low). Its worker role joins the leader's Ray cluster: 2 pods, 2 GPUs."""
    obj = load("rbg/rbg-v1alpha1-distributed-vllm.yaml", "realworld")
    found = pod_templates(obj, None)
    assert [t.role for t in found] == ["leader", "worker"]
    assert found[0].group is not None
    assert (found[0].group.family, found[0].group.size) == (RAY, 2)


def test_rbg_template_ref_is_patched_per_role() -> None:
    obj = load("rbg/rbg-vllm-pd-mooncake-te.yaml", "realworld")
    found = {t.role: t for t in pod_templates(obj, None)}
    assert set(found) >= {"prefill", "decode"}
    container = found["prefill"].spec["containers"][0]
    assert container["image"].startswith("vllm/vllm-openai")  # from the roleTemplate
    assert "command" in container or "args" in container  # from the role's patch


def test_merge_patch_merges_named_lists_and_replaces_others() -> None:
    base = {"containers": [{"name": "a", "image": "x", "args": ["1"]}], "volumes": [{"name": "v"}]}
    patch = {
        "containers": [{"name": "a", "args": ["2"]}, {"name": "b"}],
        "nodeSelector": {"k": "v"},
    }
    merged = crdgroups.merge_patch(base, patch)
    assert merged["containers"] == [{"name": "a", "image": "x", "args": ["2"]}, {"name": "b"}]
    assert merged["volumes"] == [{"name": "v"}]
    assert merged["nodeSelector"] == {"k": "v"}


def test_rbg_pod_reads_size_index_and_leader_from_what_rbg_puts_on_it() -> None:
    pod = {
        "metadata": {"labels": {
            groups.RBG_GROUP: "agg-lwd", groups.RBG_ROLE: "backend",
            groups.RBG_COMPONENT_SIZE: "2", groups.RBG_COMPONENT_INDEX: "1",
        }},
        "spec": {"containers": [{"name": "c", "env": [
            {"name": groups.RBG_LEADER_ENV, "value": "agg-lwd-backend-0-0.s.ns"},
        ]}]},
    }  # fmt: skip
    found = groups.pod_group(pod)
    assert found is not None
    assert (found.system, found.name, found.size, found.index, found.leader) == (
        "rbg", "agg-lwd/backend", 2, 1, "agg-lwd-backend-0-0.s.ns",
    )  # fmt: skip
    assert found.complete
    standalone = groups.pod_group({"metadata": {"labels": {groups.RBG_GROUP: "g"}}})
    assert standalone is not None
    assert not standalone.complete
    assert "component-size" in groups.declared_warning(standalone)


HOSTILE: list[Any] = [
    {},
    {"spec": None},
    {"spec": {"podSets": "x", "tasks": [1, None, "x"], "roles": {"a": 1}}},
    {"spec": {"podSets": [{"count": -1, "template": {"spec": {}}}]}},
    {"spec": {"podSets": [{"count": True, "template": {"spec": {}}}]}},
    {"spec": {"tasks": [{"replicas": "9" * 50, "template": {"spec": {}}}]}},
    {"spec": {"plugins": {"pytorch": "x"}, "tasks": [{"template": {"spec": {}}}]}},
    {"spec": {"plugins": {"pytorch": ["--master=nope"]}, "tasks": [{"template": {"spec": {}}}]}},
    {"spec": {"roles": [{"leaderWorkerPattern": {"size": "x", "templateRef": {"name": "nope"}}}]}},
    {"spec": {"roles": [{"leaderWorkerPattern": {"template": {"spec": "x"}}}]}},
    {"spec": {"roles": [{"leaderWorkerSet": {"size": 2}, "template": {"spec": {}}}]}},
    {"spec": {"minMember": "x"}},
]


@pytest.mark.parametrize("spec", HOSTILE)
@pytest.mark.parametrize(
    ("api", "kind"),
    [("kueue.x-k8s.io/v1beta2", "Workload"), ("batch.volcano.sh/v1alpha1", "Job"),
     ("workloads.x-k8s.io/v1alpha2", "RoleBasedGroup")],
)  # fmt: skip
def test_hostile_shapes_are_read_without_error(spec: dict[str, Any], api: str, kind: str) -> None:
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "x"}, **spec}
    pod_templates(obj, "ns")
    found = crdgroups.volcano_job_group(obj)
    if found is not None:
        assert found.size is None or 0 <= found.size <= groups.MAX_SIZE


def test_a_self_nested_patch_does_not_recurse_forever() -> None:
    deep: dict[str, Any] = {}
    cursor = deep
    for _ in range(100):
        cursor["a"] = {}
        cursor = cursor["a"]
    assert crdgroups.merge_patch(deep, deep) is not None


def test_jobset_and_kueue_pods_say_where_rank_and_leader_come_from() -> None:
    labels = {
        groups.JOBSET_NAME: "pytorch",
        groups.JOBSET_GLOBAL_REPLICAS: "1",
        groups.COMPLETION_INDEX: "2",
        groups.JOBSET_COORDINATOR: "pytorch-workers-0-0.pytorch",
    }
    found = groups.pod_group({"metadata": {"labels": labels}})
    assert found is not None
    assert found.rank_source == groups.COMPLETION_INDEX
    assert found.leader_source == groups.JOBSET_COORDINATOR
    kueue = {
        "metadata": {
            "labels": {groups.KUEUE_GROUP: "g", groups.KUEUE_INDEX: "0"},
            "annotations": {groups.KUEUE_TOTAL: "2"},
        }
    }
    k = groups.pod_group(kueue)
    assert k is not None
    assert k.rank_source == groups.KUEUE_INDEX
    assert k.leader_source == ""
