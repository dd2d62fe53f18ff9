"""Issue 39: every declarer of a gang reaches the group rules through one path
(``rules.crdgroups.leader_worker_gang``): a Volcano Job's tasks, a Kueue Workload's pod sets,
a JobSet's replicated Jobs, and (through their own leader-worker readers) RoleBasedGroup and
Kthena roles. For each, ``lint``'s engine (``check_objects``) gives a group finding for a
broken gang (the leader's TP differs from the workers', ``--nnodes`` differs from the pods)
and none for a good one; the mutation test disconnects the shared path and watches every
declarer's finding go."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_operator.core.rules import crdgroups, kinds, namedgangs
from preflight_operator.core.rules.engine import check_objects

MODEL = "Qwen/Qwen2.5-7B-Instruct"
SHM = {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}


def pod(
    command: list[str], gpus: int = 4, image: str = "vllm/vllm-openai:v0.11.2"
) -> dict[str, Any]:
    return {
        "containers": [
            {
                "name": "vllm",
                "image": image,
                "command": command,
                "resources": {"limits": {"nvidia.com/gpu": gpus}},
                "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
            }
        ],
        "volumes": [SHM],
    }


def leader(tp: int = 8, nnodes: int = 2, addr: str = "leader-0") -> dict[str, Any]:
    return pod(["vllm", "serve", MODEL, "--tensor-parallel-size", str(tp), "--nnodes",
                str(nnodes), "--node-rank", "0", "--master-addr", addr])  # fmt: skip


def worker(rank: str, tp: int = 8, nnodes: int = 2, addr: str = "leader-0") -> dict[str, Any]:
    line = (f"vllm serve {MODEL} --tensor-parallel-size {tp} --nnodes {nnodes} "
            f"--node-rank {rank} --master-addr {addr} --headless")  # fmt: skip
    return pod(["sh", "-c", line])


def volcano(lead: dict[str, Any], work: dict[str, Any], workers: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "vllm-mn", "namespace": "ml"},
        "spec": {
            "minAvailable": 1 + workers,
            "schedulerName": "volcano",
            "plugins": {"env": [], "svc": []},
            "tasks": [
                {"name": "leader", "replicas": 1, "template": {"spec": lead}},
                {"name": "worker", "replicas": workers, "template": {"spec": work}},
            ],
        },
    }


def kueue(lead: dict[str, Any], work: dict[str, Any], workers: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "vllm-mn", "namespace": "ml"},
        "spec": {
            "queueName": "user-queue",
            "podSets": [
                {"name": "leader", "count": 1, "template": {"spec": lead}},
                {"name": "worker", "count": workers, "template": {"spec": work}},
            ],
        },
    }


def jobset(lead: dict[str, Any], work: dict[str, Any], workers: int = 1) -> dict[str, Any]:
    def rjob(name: str, spec: dict[str, Any], parallelism: int) -> dict[str, Any]:
        job = {"parallelism": parallelism, "completions": parallelism,
               "completionMode": "Indexed", "template": {"spec": spec}}  # fmt: skip
        return {"name": name, "replicas": 1, "template": {"spec": job}}

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "vllm-mn", "namespace": "ml"},
        "spec": {"replicatedJobs": [rjob("leader", lead, 1), rjob("worker", work, workers)]},
    }


def rbg(lead: dict[str, Any], work: dict[str, Any], workers: int = 1) -> dict[str, Any]:
    # one template, the worker's command as the worker patch (RBG's leader-worker pattern)
    return {
        "apiVersion": "workloads.x-k8s.io/v1alpha2",
        "kind": "RoleBasedGroup",
        "metadata": {"name": "vllm-mn", "namespace": "ml"},
        "spec": {
            "roles": [
                {
                    "name": "engine",
                    "replicas": 1,
                    "leaderWorkerPattern": {
                        "size": 1 + workers,
                        "template": {"spec": lead},
                        "workerTemplatePatch": {"spec": work},
                    },
                }
            ]
        },
    }


# Each declarer with the rank expression its own controller makes right for worker 1.
DECLARERS: dict[str, tuple[Callable[..., dict[str, Any]], str]] = {
    # the env plugin's VC_TASK_INDEX counts within the worker task: worker 1 is index 0
    "volcano-job": (volcano, "$((VC_TASK_INDEX+1))"),
    # Kueue names no index: a literal rank, right for the one worker
    "kueue-workload": (kueue, "1"),
    # a worker Job's completion index counts from 0 after the one-pod leader Job
    "jobset": (jobset, "$((JOB_COMPLETION_INDEX+1))"),
    "rolebasedgroup": (rbg, "$(RBG_LWP_WORKER_INDEX)"),
}
GROUP_RULES = frozenset(
    ("lws-args-mismatch", "lws-nnodes-mismatch", "lws-rank-mismatch", "lws-image-mismatch",
     "lws-gpu-total", "lws-dp-mismatch", "lws-args-default", "lws-worker-not-headless",
     "lws-master-addr-mismatch", "lws-nccl-env-mismatch")
)  # fmt: skip


def findings(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f.id, f.severity) for r in check_objects([obj]) for f in r.findings]


def group_findings(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(rule, sev) for rule, sev in findings(obj) if rule in GROUP_RULES]


@pytest.mark.parametrize("declarer", sorted(DECLARERS))
def test_a_good_gang_has_no_group_finding(declarer: str) -> None:
    make, rank = DECLARERS[declarer]
    obj = make(leader(), worker(rank))
    assert findings(obj) == []


@pytest.mark.parametrize("declarer", sorted(DECLARERS))
def test_members_whose_tp_differs_fail_the_gang(declarer: str) -> None:
    make, rank = DECLARERS[declarer]
    obj = make(leader(tp=8), worker(rank, tp=4))
    assert ("lws-args-mismatch", "fail") in group_findings(obj)


@pytest.mark.parametrize("declarer", sorted(DECLARERS))
def test_nnodes_other_than_the_gang_fails(declarer: str) -> None:
    make, rank = DECLARERS[declarer]
    # three pods (1 + 2 workers) told --nnodes 2
    obj = make(leader(nnodes=2), worker(rank, nnodes=2), workers=2)
    assert ("lws-nnodes-mismatch", "fail") in group_findings(obj)


@pytest.mark.parametrize("declarer", sorted(DECLARERS))
def test_an_image_other_than_the_leaders_warns(declarer: str) -> None:
    make, rank = DECLARERS[declarer]
    work = worker(rank)
    work["containers"][0]["image"] = "vllm/vllm-openai:v0.10.2"
    assert ("lws-image-mismatch", "warn") in group_findings(make(leader(), work))


def test_a_volcano_worker_ranked_by_its_task_index_alone_claims_the_leaders_rank() -> None:
    """VC_TASK_INDEX counts within the task (Volcano's env plugin): the worker task's first
    pod is 0, the leader's rank, which is a certain failure."""
    obj = volcano(leader(), worker("$(VC_TASK_INDEX)"))
    assert ("lws-rank-mismatch", "fail") in group_findings(obj)


def test_a_gang_of_independent_engines_is_not_grouped() -> None:
    """No --nnodes: a Volcano task's replicas are as often independent engines (batch
    inference); they stay judged one by one, with no group finding."""
    single = pod(["vllm", "serve", MODEL, "--tensor-parallel-size", "4"])
    obj = volcano(single, copy.deepcopy(single), workers=3)
    assert group_findings(obj) == []
    assert all(t.group is None for t in kinds.pod_templates(obj, None))


def test_two_leaders_are_not_guessed_into_one_gang() -> None:
    """Neither template is --headless: which pod leads is not known, so no group (and no
    group verdict) rests on a guess."""
    obj = volcano(leader(), leader())
    assert all(t.group is None for t in kinds.pod_templates(obj, None))


# -- the corpus: upstream examples with a vLLM container written for these tests ---------------

GROUPS = Path(__file__).resolve().parents[1] / "data" / "groups" / "vllm"


def corpus(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((GROUPS / name).read_text())
    return loaded


def test_volcanos_pytorch_example_running_vllm_is_one_engine_and_passes() -> None:
    obj = corpus("volcano-pytorch-vllm.yaml")
    found = kinds.pod_templates(obj, None)
    assert [(t.role, t.is_leader) for t in found] == [("master", True), ("worker", False)]
    group = found[0].group
    assert group is not None
    assert group.size == 3
    # the pytorch plugin's env, master 0, workers from 1
    assert found[0].injected_env["RANK"] == "0"
    assert found[0].injected_env["MASTER_ADDR"] == "pytorch-job-master-0.pytorch-job"
    assert findings(obj) == []


def test_volcanos_pytorch_example_with_a_task_short_of_nnodes_fails() -> None:
    obj = corpus("volcano-pytorch-vllm.yaml")
    obj["spec"]["tasks"][1]["replicas"] = 1
    assert ("lws-nnodes-mismatch", "fail") in group_findings(obj)


def test_volcanos_pytorch_example_led_by_rank_0_warns_of_a_worker_not_headless() -> None:
    """With --headless dropped, both templates could lead; the master task's first pod
    runs --node-rank $(RANK) = 0 under the pytorch plugin, so it does, and the worker that
    is not --headless is the LeaderWorkerSet rules' warning."""
    obj = corpus("volcano-pytorch-vllm.yaml")
    obj["spec"]["tasks"][1]["template"]["spec"]["containers"][0]["command"].remove("--headless")
    assert group_findings(obj) == [("lws-worker-not-headless", "warn")]


def test_kueues_workload_example_running_vllm_is_grouped_and_its_rank_unknown() -> None:
    """One pod set of 3 pods whose vLLM says --nnodes 3: one engine over the pod set. Kueue
    names no index, so $(JOB_COMPLETION_INDEX) is unknown here: a warning that says so,
    never a group verdict resting on it."""
    obj = corpus("kueue-workload-vllm.yaml")
    (found,) = kinds.pod_templates(obj, None)
    assert found.group is not None
    assert found.group.size == 3
    assert findings(obj) == [("plan-unresolved", "warn")]


def test_the_fix_names_the_declarers_own_variables() -> None:
    """A Volcano worker is told to rank itself by VC_TASK_INDEX + 1 (the env plugin's
    index within its task), not by a LeaderWorkerSet variable its pods never get; the
    --nnodes fix names no size variable where Volcano sets none."""
    obj = volcano(leader(tp=6, nnodes=3), worker("$(VC_TASK_INDEX)", tp=6, nnodes=3), workers=1)
    fixes = {f.id: f.fix for r in check_objects([obj]) for f in r.findings}
    assert "$((VC_TASK_INDEX+1))" in fixes["lws-rank-mismatch"]
    assert "LWS_" not in fixes["lws-nnodes-mismatch"]
    assert "LWS_" not in fixes["lws-rank-mismatch"]


# -- pods naming one Volcano PodGroup in the checked manifests --------------------------------


def podgroup_pods(lead: dict[str, Any], work: dict[str, Any]) -> list[dict[str, Any]]:
    """A PodGroup (Volcano's own example's shape, minMember 2) and two bare Pods naming it
    in ``scheduling.k8s.io/group-name`` (volcano-sh/apis labels.go
    KubeGroupNameAnnotationKey)."""
    notes = {"scheduling.k8s.io/group-name": "vllm-pg"}

    def bare(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "ml", "annotations": notes},
                "spec": {**spec, "schedulerName": "volcano"}}  # fmt: skip

    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "vllm-pg", "namespace": "ml"},
        "spec": {"minMember": 2},
    }
    return [podgroup, bare("leader", lead), bare("worker", work)]


def set_findings(objs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(f.id, f.severity) for r in check_objects(objs) for f in r.findings]


def test_pods_naming_one_podgroup_are_one_engine_and_a_good_one_passes() -> None:
    assert set_findings(podgroup_pods(leader(), worker("1"))) == []


def test_pods_naming_one_podgroup_with_different_tp_fail() -> None:
    """Two pods of one engine with different TP: certain whatever else names the group."""
    found = set_findings(podgroup_pods(leader(tp=8), worker("1", tp=4)))
    assert ("lws-args-mismatch", "fail") in found


def test_a_podgroups_pod_count_is_an_estimate_so_nnodes_warns() -> None:
    """--nnodes 3 over the 2 pods found naming the PodGroup: a third may be elsewhere, so
    the LeaderWorkerSet rule's failure is a warning that says the count was estimated."""
    objs = podgroup_pods(leader(tp=6, nnodes=3), worker("1", tp=6, nnodes=3))
    results = check_objects(objs)
    nnodes = [f for r in results for f in r.findings if f.id == "lws-nnodes-mismatch"]
    assert nnodes
    assert all(f.severity == "warn" for f in nnodes)
    assert "pods elsewhere may name it too" in nnodes[0].message


def test_a_pod_alone_in_its_podgroup_is_judged_alone() -> None:
    """One pod found naming the PodGroup: no gang to judge, no group finding."""
    objs = podgroup_pods(leader(), worker("1"))[:2]
    assert [rule for rule, _ in set_findings(objs) if rule in GROUP_RULES] == []


@pytest.mark.parametrize("declarer", ["volcano-job", "kueue-workload", "jobset", "podgroup"])
def test_mutation_cutting_the_gang_path_in_crdgroups_loses_the_finding(
    declarer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every declarer but RoleBasedGroup (its own leader-worker reader) goes through
    crdgroups.leader_worker_gang (kinds imports it for JobSet, namedgangs for pods naming a
    gang)."""
    if declarer == "podgroup":
        objs = podgroup_pods(leader(tp=8), worker("1", tp=4))
    else:
        make, rank = DECLARERS[declarer]
        objs = [make(leader(tp=8), worker(rank, tp=4))]
    assert ("lws-args-mismatch", "fail") in set_findings(objs)
    monkeypatch.setattr(crdgroups, "leader_worker_gang", lambda *a, **k: None)
    monkeypatch.setattr(kinds, "leader_worker_gang", lambda *a, **k: None)
    monkeypatch.setattr(namedgangs, "leader_worker_gang", lambda *a, **k: None)
    assert [rule for rule, _ in set_findings(objs) if rule in GROUP_RULES] == []


# -- upstream examples of gangs named from bare pods, running vLLM (NOT UPSTREAM: groups/vllm)


def corpus_all(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((GROUPS / name).read_text()) if d]


@pytest.mark.parametrize("name", ["kueue-pod-group-vllm.yaml", "volcano-podgroup-vllm.yaml"])
def test_bare_pods_of_an_upstream_gang_example_are_one_engine_and_pass(name: str) -> None:
    """Kueue's pod group example (two pods created with one generateName) and Volcano's
    PodGroup with two pods naming it, each pod running vLLM: one engine of TP 8 over
    --nnodes 2, 4 GPUs a pod. Expected before running: both pods judged, no finding."""
    objs = corpus_all(name)
    results = check_objects(objs)
    assert len(results) == 2
    assert [(f.id, f.severity) for r in results for f in r.findings] == []
    # grouped (not two engines judged alone): the worker at TP 4 is the group rule's failure
    pods = [o for o in objs if o["kind"] == "Pod"]
    worker = next(o for o in pods if "--headless" in o["spec"]["containers"][0]["command"])
    command = worker["spec"]["containers"][0]["command"]
    command[command.index("--tensor-parallel-size") + 1] = "4"
    found = [(f.id, f.severity) for r in check_objects(objs) for f in r.findings]
    assert ("lws-args-mismatch", "fail") in found


def test_pods_of_one_generate_name_are_two_members() -> None:
    """Unnamed pods (generateName) are told apart by their place in the manifests; the
    webhook meets them unnamed too (the API server names them after admission)."""
    objs = corpus_all("kueue-pod-group-vllm.yaml")
    results = check_objects(objs)
    for obj in objs:
        (template,) = kinds.pod_templates(obj, None)
        assert template.name == "<unnamed>"
    assert {r.name for r in results} == {"<unnamed>"}


def test_the_derived_examples_keep_the_upstream_objects() -> None:
    """NOT UPSTREAM means only the containers (and, for Volcano, the pods) were written
    here: Kueue's pods keep their metadata, Volcano's PodGroup is the upstream one."""

    def upstream(name: str) -> list[dict[str, Any]]:
        return [d for d in yaml.safe_load_all((GROUPS.parent / name).read_text()) if d]

    derived = corpus_all("kueue-pod-group-vllm.yaml")
    assert [d["metadata"] for d in derived] == [
        d["metadata"] for d in upstream("kueue-pod-group.yaml")
    ]
    (podgroup,) = upstream("volcano-podgroup.yaml")
    assert corpus_all("volcano-podgroup-vllm.yaml")[0] == podgroup
