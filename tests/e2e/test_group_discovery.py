"""Group discovery on the local control plane with the upstream CRDs (issue 26 item 1):
JobSet, Kueue Workload, Volcano Job and PodGroup, RoleBasedGroup.

JobSet's own examples (tests/data/groups, verbatim) go through the API server with the
upstream CRD (tests/data/crds/jobset, verbatim): validated, defaulted and pruned as a
cluster with JobSet installed would, then read back and judged by ``rules.groups``. The
other systems' examples (same directory, each with its source) go the same way with their
own CRDs (tests/data/crds/{kueue,volcano,rbg}) and are judged by ``rules.crdgroups``:
size, where the rank comes from and where the leader's address comes from. Pods
that declare Kueue and Volcano groups go through the API server too (server-side dry run:
no scheduler or controller is needed for what they carry). No webhook of ours here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev import localsetup
from preflight_dev.testing import Cluster
from preflight_operator.core.rules import crdgroups, groups
from preflight_operator.core.rules.kinds import pod_templates
from preflight_operator.core.rules.spread import RAY
from preflight_operator.core.rules.template import LWS

DATA = Path(__file__).resolve().parents[1] / "data"
CRDS = DATA / "crds"
CRD_FILES = [
    CRDS / "jobset" / "jobset.x-k8s.io_jobsets.yaml",
    CRDS / "kueue" / "kueue.x-k8s.io_workloads.yaml",
    CRDS / "volcano" / "batch.volcano.sh_jobs.yaml",
    CRDS / "volcano" / "scheduling.volcano.sh_podgroups.yaml",
    CRDS / "rbg" / "workloads.x-k8s.io_rolebasedgroups.yaml",
]


@pytest.fixture(scope="module")
def cluster(k8s: Cluster) -> Cluster:
    if not k8s.is_local:
        pytest.skip("needs the local control plane")
    localsetup.apply_upstream_crds(k8s, *CRD_FILES)
    return k8s


def server_side(cluster: Cluster, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    """What the API server makes of ``obj`` (defaults, pruning), without storing it."""
    obj = {**obj, "metadata": {**obj.get("metadata", {}), "namespace": namespace}}
    out = cluster.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(obj)
    ).stdout
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.mark.parametrize(
    ("name", "size", "roles"),
    [("jobset-coordinator.yaml", 5, ["driver", "workers"]), ("jobset-mnist.yaml", 4, ["workers"])],
)
def test_jobset_examples_are_groups(
    cluster: Cluster, k8s_namespace: str, name: str, size: int, roles: list[str]
) -> None:
    obj = yaml.safe_load((DATA / "groups" / name).read_text())
    served = server_side(cluster, k8s_namespace, obj)
    assert served["kind"] == "JobSet"
    found = groups.jobset(served, served["metadata"]["name"], k8s_namespace)
    assert [t.role for t in found] == roles
    assert sum(m.replicas for _, m in groups.jobset_members(served)) == size


def test_pods_of_kueue_and_volcano_groups(cluster: Cluster, k8s_namespace: str) -> None:
    base = {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    kueue = {
        **base,
        "metadata": {
            "name": "kueue-member",
            "labels": {groups.KUEUE_GROUP: "sample-group"},
            "annotations": {groups.KUEUE_TOTAL: "2"},
        },
    }
    volcano = {
        **base,
        "metadata": {"name": "volcano-member", "annotations": {groups.VOLCANO_GROUP: "vllm-pg"}},
    }
    k = groups.pod_group(server_side(cluster, k8s_namespace, kueue))
    assert k is not None
    assert (k.system, k.size, k.leader) == ("kueue", 2, None)
    v = groups.pod_group(server_side(cluster, k8s_namespace, volcano))
    assert v is not None
    assert v.system == "volcano"
    assert groups.declared_warning(v)


def example(name: str, where: str = "groups") -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((DATA / where / name).read_text()) if d]
    result: dict[str, Any] = docs[0]
    return result


def test_kueue_workload_example(cluster: Cluster, k8s_namespace: str) -> None:
    served = server_side(cluster, k8s_namespace, example("kueue-workload.yaml"))
    assert served["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    found = pod_templates(served, k8s_namespace)
    assert [t.role for t in found] == ["main"]
    assert found[0].group is None  # one pod set, no --nnodes: judged pod by pod


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("volcano-pytorch.yaml", (3, 1, "RANK", "MASTER_ADDR")),
        ("volcano-job-plugin.yaml", (3, 3, "VC_TASK_INDEX", "")),
    ],
)
def test_volcano_job_examples(
    cluster: Cluster, k8s_namespace: str, name: str, want: tuple[int, int, str, str]
) -> None:
    size, gang, rank, leader = want
    served = server_side(cluster, k8s_namespace, example(name))
    assert served["kind"] == "Job"
    group = crdgroups.volcano_job_group(served)
    assert group is not None
    assert (group.size, group.gang) == (size, gang)
    assert group.rank_source.startswith(rank)
    assert group.leader_source.startswith(leader)
    if not leader:
        assert "the leader's address" in groups.declared_warning(group)
    assert all(t.group is None for t in pod_templates(served, k8s_namespace))


def test_volcano_pod_names_its_podgroup(cluster: Cluster, k8s_namespace: str) -> None:
    podgroup = server_side(cluster, k8s_namespace, example("volcano-podgroup.yaml"))
    assert podgroup["spec"]["minMember"] == 1
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "member", "annotations": {groups.VOLCANO_GROUP: "test-pg"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    declared = groups.pod_group(server_side(cluster, k8s_namespace, pod))
    assert declared is not None
    assert declared.name == podgroup["metadata"]["name"]
    assert declared.size is None  # the size is the PodGroup's, not read at admission


def test_rbg_leader_worker_example(cluster: Cluster, k8s_namespace: str) -> None:
    served = server_side(cluster, k8s_namespace, example("rbg-agg-leader-worker.yaml"))
    assert served["apiVersion"] == "workloads.x-k8s.io/v1alpha2"
    found = pod_templates(served, k8s_namespace)
    assert [t.role for t in found] == ["backend-leader", "backend-worker"]
    assert found[0].group is not None
    assert (found[0].group.family, found[0].group.size) == (LWS, 2)


def test_rbg_v1alpha1_vllm_from_the_corpus(cluster: Cluster, k8s_namespace: str) -> None:
    """The corpus's vLLM RoleBasedGroup (deprecated v1alpha1, still served): its two roles
    are one Ray cluster of 2 pods after the API server's defaulting and pruning."""
    obj = example("rbg/rbg-v1alpha1-distributed-vllm.yaml", "realworld")
    served = server_side(cluster, k8s_namespace, obj)
    assert served["apiVersion"] == "workloads.x-k8s.io/v1alpha1"
    found = pod_templates(served, k8s_namespace)
    assert [t.role for t in found] == ["leader", "worker"]
    assert found[0].group is not None
    assert (found[0].group.family, found[0].group.size) == (RAY, 2)
