"""Injection into JobSet pods (issue 26 item 1): the group phase's env from what JobSet and
the Job controller write on each pod, with the JobSet's own spec for what the pod lacks.

The pods here are built as the controllers build them (kubernetes-sigs/jobset
pkg/controllers/jobset_controller.go constructJob and labelAndAnnotateObject, at
08dfbdfd682714a9ab929633eca8dc95315187e7; the Job controller's Indexed pods: KEP-2214
"Pod detail", the completion index annotation and label, hostname <job>-<index>, the
JOB_COMPLETION_INDEX env), and the JobSets as JobSet's webhook stores them (its Default:
completionMode Indexed, network.enableDNSHostnames and publishNotReadyAddresses true)."""

from __future__ import annotations

import asyncio
import copy
import hashlib
from typing import Any

import pytest

from preflight_check.group import group_config
from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.injection import (
    Injection,
    JobSetPlace,
    jobset_place,
    plan_injection,
)
from preflight_operator.core.operatorconfig import InjectionConfig, OperatorConfig, PolicySpec
from preflight_operator.core.policy import PolicyBook
from preflight_operator.core.static import Plan
from preflight_operator.core.workloads import WorkloadRef
from preflight_operator.webhook.webhooks import AdmissionService

PLAN = Plan(tp=8, pp=1, dp=1, dp_local=1, gpus_needed=8, container="vllm")
JS = "jobset.sigs.k8s.io/"
INDEX = "batch.kubernetes.io/job-completion-index"


def vllm_container(extra: str = "", image: str = "vllm/vllm-openai:v0.11.0") -> dict[str, Any]:
    script = (
        "vllm serve m -tp 8 -pp 2 --nnodes 2 --node-rank $(JOB_COMPLETION_INDEX) "
        "--master-addr serve-vllm-0-0.serve " + extra
    )
    return {
        "name": "vllm",
        "image": image,
        "command": ["sh", "-c", script.strip()],
        "resources": {"limits": {"nvidia.com/gpu": 8}},
    }


def rjob(name: str, replicas: int, parallelism: int, container: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {
                "parallelism": parallelism,
                "completions": parallelism,
                "completionMode": "Indexed",  # JobSet's webhook default
                "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "OnFailure", "containers": [container]}},
            }
        },
    }


def jobset(
    *rjobs: dict[str, Any], coordinator: dict[str, Any] | None = None, name: str = "serve"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicatedJobs": list(rjobs) or [rjob("vllm", 1, 2, vllm_container())],
        # as JobSet's webhook defaults them (pkg/webhooks/jobset_webhook.go Default)
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "startupPolicy": {"startupPolicyOrder": "AnyOrder"},
        "successPolicy": {"operator": "All"},
    }
    if coordinator is not None:
        spec["coordinator"] = coordinator
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "team", "uid": "js-uid-1"},
        "spec": spec,
    }


def pods_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pod the JobSet's Jobs make, as the two controllers make them."""
    name = body["metadata"]["name"]
    spec = body["spec"]
    rjobs = spec["replicatedJobs"]
    total = sum(r["replicas"] for r in rjobs)
    network = spec.get("network") or {}
    subdomain = network.get("subdomain") or name
    out = []
    global_index = 0
    for r in rjobs:
        for job_index in range(r["replicas"]):
            job_name = f"{name}-{r['name']}-{job_index}"  # placement.GenJobName
            # labelAndAnnotateObject: the same keys as labels and as annotations
            keys = {
                JS + "jobset-name": name,
                JS + "jobset-uid": body["metadata"]["uid"],
                JS + "replicatedjob-name": r["name"],
                JS + "restart-attempt": "0",
                JS + "replicatedjob-replicas": str(r["replicas"]),
                JS + "global-replicas": str(total),
                JS + "job-index": str(job_index),
                JS + "job-key": hashlib.sha256(f"team/{job_name}".encode()).hexdigest(),
                JS + "job-global-index": str(global_index),
                JS + "group-name": "default",
                JS + "group-replicas": str(total),
                JS + "job-group-index": str(global_index),
            }
            if "coordinator" in spec:
                c = spec["coordinator"]
                keys[JS + "coordinator"] = (
                    f"{name}-{c['replicatedJob']}-{c.get('jobIndex', 0)}-"
                    f"{c.get('podIndex', 0)}.{subdomain}"
                )
            template = r["template"]["spec"]["template"]
            for index in range(r["template"]["spec"]["parallelism"]):
                pod_spec = copy.deepcopy(template["spec"])
                if network.get("enableDNSHostnames"):
                    pod_spec["subdomain"] = subdomain
                pod_spec["hostname"] = f"{job_name}-{index}"
                for c in pod_spec["containers"]:
                    c.setdefault("env", []).append(
                        {
                            "name": "JOB_COMPLETION_INDEX",
                            "valueFrom": {
                                "fieldRef": {"fieldPath": f"metadata.annotations['{INDEX}']"}
                            },
                        }
                    )
                labels = {**keys, INDEX: str(index), "batch.kubernetes.io/job-name": job_name}
                out.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {
                            "generateName": f"{job_name}-{index}-",
                            "namespace": "team",
                            "labels": labels,
                            "annotations": {**keys, INDEX: str(index)},
                            "ownerReferences": [
                                {
                                    "apiVersion": "batch/v1",
                                    "kind": "Job",
                                    "name": job_name,
                                    "uid": f"job-{global_index}",
                                    "controller": True,
                                    "blockOwnerDeletion": True,
                                }
                            ],
                        },
                        "spec": pod_spec,
                    }
                )
            global_index += 1
    return out


def group_env(pod: dict[str, Any], body: dict[str, Any] | None) -> dict[str, str]:
    # the rules' reading of the command line, as the webhook passes it
    argv = RulesAnalyser().injection_target(pod, PolicySpec()).argv
    got = plan_injection(
        pod, container="vllm", plan=PLAN, policy=PolicySpec(), config=InjectionConfig(),
        workload_label=None, jobset=body, argv=argv,
    )  # fmt: skip
    assert isinstance(got, Injection)
    check = next(c for c in got.init_containers if c["name"] == "preflight-check")
    names = [e["name"] for e in check["env"]]
    assert len(names) == len(set(names)), names  # no name twice
    return {
        e["name"]: e.get("value", e.get("valueFrom"))
        for e in check["env"]
        if e["name"].startswith("PREFLIGHT_GROUP")
        or e["name"] in ("PREFLIGHT_NODE_NAME", "PREFLIGHT_VLLM_ARGS")
    }


def runtime(env: dict[str, Any]) -> dict[str, str]:
    """What the kubelet hands the check: literal values, the node from the downward API."""
    out = {k: v for k, v in env.items() if isinstance(v, str)}
    out["PREFLIGHT_NODE_NAME"] = "node-x"
    # the kubelet expands the vLLM command line's $(JOB_COMPLETION_INDEX) (the rules'
    # reading, which the group phase compares)
    index = out["PREFLIGHT_GROUP_INDEX"]
    out["PREFLIGHT_VLLM_ARGS"] = out["PREFLIGHT_VLLM_ARGS"].replace(
        "$(JOB_COMPLETION_INDEX)", index
    )
    return out


COORDINATED = {"replicatedJob": "vllm", "jobIndex": 0, "podIndex": 0}


def test_one_job_of_two_pods_meets_at_the_coordinator() -> None:
    body = jobset(coordinator=COORDINATED)
    pods = pods_of(body)
    assert len(pods) == 2
    configs = []
    for pod in pods:
        env = group_env(pod, body)
        assert env["PREFLIGHT_GROUP_ADDRESS"] == "serve-vllm-0-0.serve"
        assert env["PREFLIGHT_GROUP_SIZE"] == "2"
        assert env["PREFLIGHT_GROUP_PORT"] == "29600"
        assert env["PREFLIGHT_NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
        config = group_config(runtime(env))
        assert config is not None
        configs.append(config)
    assert [c.index for c in configs] == [0, 1]  # the completion index
    assert {c.group_id for c in configs} == {"team/serve#0"}
    assert {(c.address, c.size) for c in configs} == {("serve-vllm-0-0.serve", 2)}
    # the engine arguments the members compare: the rules' reading, this pod's rank in it
    assert "--nnodes 2 --node-rank 1 " in runtime(group_env(pods[1], body))["PREFLIGHT_VLLM_ARGS"]


def test_the_coordinator_leads_wherever_it_is_declared() -> None:
    """JobSet's own coordinator example shape: the coordinator's replicated Job is second
    in the spec (workers: 1 Job x 4 pods, then driver: 1 x 1): it must be member 0, the one
    that listens at the address every other member dials."""
    workers = rjob("workers", 1, 4, vllm_container("--headless"))
    driver = rjob("driver", 1, 1, vllm_container())
    body = jobset(workers, driver, coordinator={"replicatedJob": "driver"})
    pods = pods_of(body)
    places = [jobset_place(p, body) for p in pods]
    assert all(isinstance(p, JobSetPlace) for p in places), places
    indices = [p.index for p in places if isinstance(p, JobSetPlace)]
    assert sorted(indices) == [0, 1, 2, 3, 4]
    assert indices[-1] == 0  # the driver's pod (the coordinator)
    assert {p.address for p in places if isinstance(p, JobSetPlace)} == {"serve-driver-0-0.serve"}
    assert {p.size for p in places if isinstance(p, JobSetPlace)} == {5}


def test_replicated_jobs_times_parallelism_count_and_ranks_are_unique() -> None:
    body = jobset(
        rjob("vllm", 2, 2, vllm_container()),
        coordinator={"replicatedJob": "vllm", "jobIndex": 1, "podIndex": 1},
    )
    pods = pods_of(body)
    places = [jobset_place(p, body) for p in pods]
    indices = [p.index for p in places if isinstance(p, JobSetPlace)]
    # natural order (replicated Job, job index, completion index) 0 1 2 3, the
    # coordinator (job 1, pod 1: natural 3) swapped with 0
    assert indices == [3, 1, 2, 0]
    assert {p.size for p in places if isinstance(p, JobSetPlace)} == {4}


def test_a_subdomain_of_its_own_is_in_the_address() -> None:
    body = jobset(coordinator=COORDINATED)
    body["spec"]["network"]["subdomain"] = "net"
    place = jobset_place(pods_of(body)[1], body)
    assert isinstance(place, JobSetPlace)
    assert place.address == "serve-vllm-0-0.net"


def _without(body: dict[str, Any], change: Any) -> str:
    changed = copy.deepcopy(body)
    change(changed)
    pods = [p for p in pods_of(changed) if p["spec"]["containers"][0]["image"] != "busybox"]
    for pod in pods:
        env = group_env(pod, changed)
        assert not env.get("PREFLIGHT_GROUP_PORT"), env
    place = jobset_place(pods[0], changed)
    assert isinstance(place, str)
    return place


def _coordinator_off(b: dict[str, Any]) -> None:
    b["spec"].pop("coordinator")


def _in_order(b: dict[str, Any]) -> None:
    b["spec"]["replicatedJobs"].append(rjob("more", 1, 1, vllm_container()))
    b["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}


def _depends(b: dict[str, Any]) -> None:
    more = rjob("more", 1, 1, vllm_container())
    more["dependsOn"] = [{"name": "vllm", "status": "Ready"}]
    b["spec"]["replicatedJobs"].append(more)


def _sleeper(b: dict[str, Any]) -> None:
    busy = {"name": "vllm", "image": "busybox", "command": ["sleep", "100s"]}
    b["spec"]["replicatedJobs"].append(rjob("driver", 1, 1, busy))


def _no_dns(b: dict[str, Any]) -> None:
    b["spec"]["network"]["enableDNSHostnames"] = False


def _not_published(b: dict[str, Any]) -> None:
    b["spec"]["network"]["publishNotReadyAddresses"] = False


def _fewer_at_once(b: dict[str, Any]) -> None:
    b["spec"]["replicatedJobs"][0]["template"]["spec"]["completions"] = 4


def _opted_out(b: dict[str, Any]) -> None:
    more = rjob("more", 1, 1, vllm_container())
    template = more["template"]["spec"]["template"]
    template["metadata"] = {"labels": {"vllm-preflight.io/inject": "disabled"}}
    b["spec"]["replicatedJobs"].append(more)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (_coordinator_off, "spec.coordinator"),
        (_in_order, "InOrder"),
        (_depends, "dependsOn"),
        (_sleeper, "spec.replicatedJobs[1] (driver)"),
        (_no_dns, "enableDNSHostnames"),
        (_not_published, "publishNotReadyAddresses"),
        (_fewer_at_once, "completions"),
        (_opted_out, "opted out"),
    ],
)
def test_no_group_where_jobset_does_not_say_every_member_meets(change: Any, said: str) -> None:
    """What JobSet does not give (a leader), or a member that would not come (no check, or
    not started before the others are Ready): no group env, and the reason says which."""
    reason = _without(jobset(coordinator=COORDINATED), change)
    assert said in reason


def test_a_pod_that_does_not_match_the_jobset_read_gets_no_group() -> None:
    body = jobset(coordinator=COORDINATED)
    pod = pods_of(body)[1]
    other = copy.deepcopy(body)
    other["metadata"]["uid"] = "js-uid-2"  # recreated under the same name
    assert "uid" in str(jobset_place(pod, other))
    moved = copy.deepcopy(body)
    moved["spec"]["coordinator"] = {"replicatedJob": "vllm", "podIndex": 1}
    assert "coordinator" in str(jobset_place(pod, moved))
    stranger = copy.deepcopy(pod)
    stranger["metadata"]["ownerReferences"] = []
    assert "Job" in str(jobset_place(stranger, body))
    bad = copy.deepcopy(pod)
    bad["metadata"]["labels"][INDEX] = "7"
    bad["metadata"]["annotations"][INDEX] = "7"
    assert "completion index" in str(jobset_place(bad, body))
    assert "env" not in str(group_env(pod, None))  # the JobSet not read: no group either
    alone = {k: v for k, v in group_env(pod, None).items() if k != "PREFLIGHT_VLLM_ARGS"}
    assert alone == {"PREFLIGHT_NODE_NAME": {"fieldRef": {"fieldPath": "spec.nodeName"}}}


def test_the_webhook_reads_the_jobset_once_for_its_pods() -> None:
    body = jobset(coordinator=COORDINATED)
    reads: list[WorkloadRef] = []

    async def owner_body(ref: WorkloadRef) -> dict[str, Any] | None:
        reads.append(ref)
        return body if ref.kind == "JobSet" else None

    service = AdmissionService(
        OperatorConfig(), RulesAnalyser(), PolicyBook(), events=None, owner_body=owner_body
    )
    envs = []
    for pod in pods_of(body):
        result = asyncio.run(service.mutate_pod(pod))
        assert isinstance(result, Injection), result
        check = next(c for c in result.init_containers if c["name"] == "preflight-check")
        envs.append({e["name"]: e.get("value") for e in check["env"]})
    assert [e["PREFLIGHT_GROUP_INDEX"] for e in envs] == ["0", "1"]
    assert {e["PREFLIGHT_GROUP_ADDRESS"] for e in envs} == {"serve-vllm-0-0.serve"}
    jobsets = [r for r in reads if r.kind == "JobSet"]
    assert jobsets
    assert {(r.namespace, r.name) for r in jobsets} == {("team", "serve")}
    assert len(jobsets) == 1  # cached for the burst of its pods
    assert jobsets[0].api_version == "jobset.x-k8s.io/v1alpha2"


def test_the_largest_group_is_the_checkers() -> None:
    from preflight_check.group import MAX_GROUP_SIZE
    from preflight_operator.core.injection import MAX_GROUP_MEMBERS

    assert MAX_GROUP_MEMBERS == MAX_GROUP_SIZE
    big = jobset(rjob("vllm", 1, MAX_GROUP_SIZE + 1, vllm_container()), coordinator=COORDINATED)
    assert "a group is 2 to 1024" in str(jobset_place(pods_of(big)[0], big))


def test_an_indexed_pods_own_completion_index_resolves_its_plan() -> None:
    """`--node-rank $(JOB_COMPLETION_INDEX)`: the env the Job controller adds reads the
    pod's own annotation, which the pod at admission carries; unknown, the plan was
    unresolved and the pod got no check at all."""
    body = jobset(coordinator=COORDINATED)
    pod = pods_of(body)[1]
    target = RulesAnalyser().injection_target(pod, PolicySpec())
    assert target.plan is not None, target
    assert target.plan.gpus_needed == 8  # its share: TP 8 x PP 2 over --nnodes 2


def test_a_jobsets_pods_take_the_policy_that_selects_the_jobset() -> None:
    """The policy selected the JobSet by its labels at admission, and its GPUValidation is
    the JobSet's: its pods' checks run under the same policy, not under whatever selects
    the Job's labels (JobSet does not copy its own labels to its Jobs)."""
    from preflight_operator.core.policy import parse_policy

    body = jobset(coordinator=COORDINATED)
    body["metadata"]["labels"] = {"app": "serve"}
    job = {"metadata": {"name": "serve-vllm-0", "namespace": "team", "labels": {}}}

    async def owner_body(ref: WorkloadRef) -> dict[str, Any] | None:
        return body if ref.kind == "JobSet" else job if ref.kind == "Job" else None

    book = PolicyBook()
    book.put(
        parse_policy(
            {
                "metadata": {"namespace": "team", "name": "serving"},
                "spec": {"action": "Warn", "selector": {"matchLabels": {"app": "serve"}}},
            }
        )
    )
    service = AdmissionService(
        OperatorConfig(), RulesAnalyser(), book, events=None, owner_body=owner_body
    )
    result = asyncio.run(service.mutate_pod(pods_of(body)[0]))
    assert isinstance(result, Injection), result
    check = next(c for c in result.init_containers if c["name"] == "preflight-check")
    env = {e["name"]: e.get("value") for e in check["env"]}
    assert env["PREFLIGHT_ACTION"] == "Warn"


def test_an_unreadable_jobset_is_read_once_per_burst_and_gives_no_group() -> None:
    body = jobset(coordinator=COORDINATED)
    reads: list[str] = []

    async def owner_body(ref: WorkloadRef) -> dict[str, Any] | None:
        reads.append(ref.kind)
        if ref.kind == "JobSet":
            raise PermissionError("403: jobsets is forbidden")
        return None

    service = AdmissionService(
        OperatorConfig(), RulesAnalyser(), PolicyBook(), events=None, owner_body=owner_body
    )
    for pod in pods_of(body):
        result = asyncio.run(service.mutate_pod(pod))
        assert isinstance(result, Injection), result  # the pod's own check still runs
        check = next(c for c in result.init_containers if c["name"] == "preflight-check")
        assert "PREFLIGHT_GROUP_ADDRESS" not in {e["name"] for e in check["env"]}
    assert reads.count("JobSet") == 1
