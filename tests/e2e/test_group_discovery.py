"""Group discovery on the local control plane with the upstream CRDs (issue 26 item 1):
JobSet, Kueue Workload, Volcano Job and PodGroup, RoleBasedGroup.

JobSet's own examples (tests/data/groups, verbatim) go through the API server with the
upstream CRD (tests/data/crds/jobset, verbatim): validated, defaulted and pruned as a
cluster with JobSet installed would, then read back and judged by ``rules.groups``. The
other systems' examples (same directory, each with its source) go the same way with their
own CRDs (tests/data/crds/{kueue,volcano,rbg}) and are judged by ``rules.crdgroups``:
size, where the rank comes from and where the leader's address comes from. Pods
that declare Kueue and Volcano groups go through the API server too (server-side dry run:
no scheduler or controller is needed for what they carry). No webhook of ours here, but in
the last test (issue 39): a Volcano Job and a RoleBasedGroup through our validating
webhook, with these same CRDs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev import localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants
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


# -- issue 39: a Volcano Job and a RoleBasedGroup judged whole at their own admission --------


@pytest.fixture(scope="module")
def webhook(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    localsetup.install_crds(cluster, lws=False)  # the chart's: GPUValidation, PreflightPolicy
    op = localoperator.start_with_webhooks(cluster, tmp_path_factory.mktemp("gangs"))
    yield op
    localoperator.remove_webhooks(cluster)
    op.stop()


def _gang_specs(tp_worker: int, rank: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A leader and one --headless worker of TP 8 over --nnodes 2 (the worker at
    ``tp_worker``, ranked by ``rank`` as its controller sets it)."""

    def spec(line: str) -> dict[str, Any]:
        container = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.2",
                     "command": ["sh", "-c", line],
                     "resources": {"limits": {"nvidia.com/gpu": 4}},
                     "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}  # fmt: skip
        shm = {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}
        return {"containers": [container], "volumes": [shm]}

    serve = "vllm serve Qwen/Qwen2.5-7B-Instruct --nnodes 2 --master-addr leader-0"
    lead = spec(f"{serve} --tensor-parallel-size 8 --node-rank 0")
    work = spec(f"{serve} --tensor-parallel-size {tp_worker} --node-rank {rank} --headless")
    return lead, work


def _volcano_job(tp_worker: int) -> dict[str, Any]:
    lead, work = _gang_specs(tp_worker, "$((VC_TASK_INDEX+1))")
    tasks = [{"name": "leader", "replicas": 1, "template": {"spec": lead}},
             {"name": "worker", "replicas": 1, "template": {"spec": work}}]  # fmt: skip
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": "vllm-mn"},
            "spec": {"minAvailable": 2, "schedulerName": "volcano",
                     "plugins": {"env": [], "svc": []}, "tasks": tasks}}  # fmt: skip


def _rolebasedgroup(tp_worker: int) -> dict[str, Any]:
    lead, work = _gang_specs(tp_worker, "$(RBG_LWP_WORKER_INDEX)")
    role = {"name": "engine", "replicas": 1,
            "leaderWorkerPattern": {"size": 2, "template": {"spec": lead},
                                    "workerTemplatePatch": {"spec": work}}}  # fmt: skip
    return {"apiVersion": "workloads.x-k8s.io/v1alpha2", "kind": "RoleBasedGroup",
            "metadata": {"name": "vllm-mn"}, "spec": {"roles": [role]}}  # fmt: skip


@pytest.mark.parametrize(
    ("make", "shown"),
    [(_volcano_job, "Job.batch.volcano.sh/vllm-mn"), (_rolebasedgroup, "RoleBasedGroup/vllm-mn")],
)
def test_a_volcano_job_and_a_rolebasedgroup_are_judged_at_their_own_admission(
    cluster: Cluster,
    webhook: OperatorProcess,
    make: Callable[[int], dict[str, Any]],
    shown: str,
) -> None:
    """Under Enforce (the operator's default), with the upstream CRDs: a gang whose worker
    runs another TP than its leader is denied naming the group rule (a Volcano Job under
    its own kind, never batch/v1 Job's); the same gang made right is admitted."""
    namespace = cluster.create_namespace(labels={constants.LABEL_INJECT: "enabled"})
    try:
        for tp, allowed in ((4, False), (8, True)):
            body = {**make(tp), "metadata": {"name": "vllm-mn", "namespace": namespace}}
            done = cluster.kubectl("create", "--dry-run=server", "-f", "-",
                                   input=json.dumps(body), check=False)  # fmt: skip
            if allowed:
                assert done.returncode == 0, done.stderr
            else:
                assert done.returncode != 0
                assert f"{shown} cannot run" in done.stderr, done.stderr
                assert "lws-args-mismatch" in done.stderr, done.stderr
    finally:
        cluster.delete_namespace(namespace)


def test_two_bare_pods_naming_one_podgroup_are_grouped_by_what_the_operator_saw(
    cluster: Cluster, webhook: OperatorProcess
) -> None:
    """Issue 39: a leader pod and a worker pod naming one Volcano PodGroup (annotation
    only: no object of their own declares the gang) arrive one at a time. Once the operator
    has observed the leader, the worker's admission groups them (core/gangindex.py through
    the rules' lookup, as main.py wires it): a worker at another TP is admitted with the
    group rule's warning, naming the leader (members as last seen warn, never deny: a gang
    applied one object at a time is half old, half new), and the leader's GPUValidation,
    written before the worker existed, is recomputed with it."""
    namespace = cluster.create_namespace(labels={constants.LABEL_INJECT: "enabled"})
    notes = {"scheduling.k8s.io/group-name": "vllm-pg"}

    def bare(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "annotations": notes},
                "spec": spec}  # fmt: skip

    def findings(name: str) -> set[str]:
        got = cluster.kubectl("get", "gpuval", name, "-n", namespace, "-o", "json", check=False)
        if got.returncode != 0:
            return set()
        static = (json.loads(got.stdout).get("status") or {}).get("static") or {}
        return {f.get("id") for f in static.get("findings") or []} | {"(written)"}

    try:
        lead, work = _gang_specs(4, "1")
        cluster.kubectl("create", "-f", "-", input=json.dumps(bare("leader", lead)))
        first = wait_for(lambda: findings("pod-leader"), timeout=120,
                         what="the operator to observe the leader pod")  # fmt: skip
        assert "lws-args-mismatch" not in first  # alone: no gang yet
        made = cluster.kubectl("create", "-f", "-", input=json.dumps(bare("worker", work)))
        assert made.returncode == 0, made.stderr
        said = [line for line in made.stderr.splitlines() if "lws-args-mismatch" in line]
        assert said, made.stderr
        assert "Pod/leader, the leader of its gang" in said[0]
        wait_for(lambda: "lws-args-mismatch" in findings("pod-leader"), timeout=120,
                 what="the leader's GPUValidation to be recomputed with its worker")  # fmt: skip
    finally:
        cluster.delete_namespace(namespace)
