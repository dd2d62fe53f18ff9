"""Ray-pattern LeaderWorkerSets (the LWS vLLM example: the leader `ray start --head && vllm
serve`, the workers `ray start --address=$(LWS_LEADER_ADDRESS):6379 --block`): the workers
get the check on their own GPUs, and the group meets only when the LeaderWorkerSet says
every pod gets a check - a leader waiting for a worker without one would fail a healthy
group."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import yaml

from preflight_operator.core.analysis import RulesAnalyser, ray_worker_target
from preflight_operator.core.injection import Injection, ray_group_ready, ray_role
from preflight_operator.core.operatorconfig import OperatorConfig
from preflight_operator.core.policy import PolicyBook
from preflight_operator.core.workloads import WorkloadRef
from preflight_operator.webhook.webhooks import AdmissionService

CORPUS = Path(__file__).parents[1] / "data" / "realworld"
LWS_LABEL = "leaderworkerset.sigs.k8s.io/name"


def lws() -> dict[str, Any]:
    docs = yaml.safe_load_all((CORPUS / "lws" / "vllm-gpu-lws.yaml").read_text())
    found: dict[str, Any] = next(d for d in docs if d and d.get("kind") == "LeaderWorkerSet")
    found = copy.deepcopy(found)
    found["metadata"]["namespace"] = "team"
    return found


def pod_of(body: dict[str, Any], role: str, index: int) -> dict[str, Any]:
    """The pod LWS makes from a template (labels and annotation as LWS sets them)."""
    lwt = body["spec"]["leaderWorkerTemplate"]
    template = lwt["leaderTemplate" if role == "leader" else "workerTemplate"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"vllm-0-{index}" if index else "vllm-0",
            "namespace": "team",
            "labels": {
                LWS_LABEL: body["metadata"]["name"],
                "leaderworkerset.sigs.k8s.io/worker-index": str(index),
                "leaderworkerset.sigs.k8s.io/group-index": "0",
            },
            "annotations": {"leaderworkerset.sigs.k8s.io/size": str(lwt["size"])},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "vllm", "controller": True}
            ],
        },
        "spec": copy.deepcopy(template["spec"]),
    }


def service(body: dict[str, Any] | None) -> AdmissionService:
    async def owner_body(ref: WorkloadRef) -> dict[str, Any] | None:
        assert ref.kind == "LeaderWorkerSet"
        return body

    return AdmissionService(
        OperatorConfig(), RulesAnalyser(), PolicyBook(), events=None,
        owner_body=owner_body if body is not None else None,
    )  # fmt: skip


def check_env(result: Any) -> dict[str, Any]:
    assert isinstance(result, Injection), result
    check = next(c for c in result.init_containers if c["name"] == "preflight-check")
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in check["env"]}


def test_the_upstream_ray_example_is_group_ready() -> None:
    body = lws()
    assert ray_group_ready(body)
    worker = body["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert ray_role(worker) == "worker"
    del worker["resources"]  # a worker without GPUs gets no check: the group must not meet
    assert not ray_group_ready(body)


def test_a_ray_worker_gets_the_check_on_its_own_gpus_and_meets_the_group() -> None:
    body = lws()
    worker = pod_of(body, "worker", 1)
    target = ray_worker_target(worker)
    assert target is not None
    assert target.plan is not None
    assert target.plan.gpus_needed == 8  # nvidia.com/gpu of the example's worker
    env = check_env(asyncio.run(service(body).mutate_pod(worker)))
    assert env["PREFLIGHT_TP"] == "8"
    assert "PREFLIGHT_GROUP_PORT" in env
    leader = check_env(asyncio.run(service(body).mutate_pod(pod_of(body, "leader", 0))))
    assert "PREFLIGHT_GROUP_PORT" in leader


def test_without_the_leaderworkerset_there_is_no_group_phase() -> None:
    body = lws()
    worker = check_env(asyncio.run(service(None).mutate_pod(pod_of(body, "worker", 1))))
    assert "PREFLIGHT_GROUP_PORT" not in worker  # its own GPUs are still checked
    assert worker["PREFLIGHT_TP"] == "8"
    leader = check_env(asyncio.run(service(None).mutate_pod(pod_of(body, "leader", 0))))
    assert "PREFLIGHT_GROUP_PORT" not in leader


def test_one_read_of_the_leaderworkerset_serves_the_policy_and_the_group() -> None:
    """The pod's policy labels and the Ray group's readiness come from one cached read of
    the LeaderWorkerSet (the operator wired two readers of it before: two GETs a burst)."""
    from preflight_operator.core.policy import parse_policy

    body = lws()
    body["metadata"].setdefault("labels", {})["team"] = "ray"  # on the LWS, not its pods
    reads: list[str] = []

    async def owner_body(ref: WorkloadRef) -> dict[str, Any] | None:
        reads.append(ref.name)
        return body

    book = PolicyBook()
    book.put(parse_policy({
        "metadata": {"namespace": body["metadata"].get("namespace", "default"), "name": "ray"},
        "spec": {"selector": {"matchLabels": {"team": "ray"}}, "action": "Audit"},
    }))  # fmt: skip
    svc = AdmissionService(
        OperatorConfig(), RulesAnalyser(), book, events=None, owner_body=owner_body
    )
    for index in (1, 2):
        pod = pod_of(body, "worker", index)
        assert "team" not in pod["metadata"].get("labels", {})
        env = check_env(asyncio.run(svc.mutate_pod(pod)))
        assert "PREFLIGHT_GROUP_PORT" in env
        assert env["PREFLIGHT_ACTION"] == "Audit"  # chosen by the LeaderWorkerSet's labels
    assert reads == [body["metadata"]["name"]]


def test_one_reader_of_a_ray_node_for_the_rules_and_the_injector() -> None:
    """injection.ray_role is rules.spread.ray_start in the injector's words. It once read
    the words itself, by substring: `xray start --head` was a Ray head to it (old
    ray_role: "head"), not to the rules. A RAY_ADDRESS env makes a container a member for
    the rules only: it starts no Ray node, so no group waits for its check."""
    from preflight_operator.core.rules.spread import HEAD, MEMBER, ray_node, ray_start

    def c(*command: str, env: list[dict[str, str]] | None = None) -> dict[str, Any]:
        return {"name": "x", "command": list(command), "env": env or []}

    cases = [
        c("sh", "-c", "ray start --head --port=6379 && vllm serve m -tp 8"),
        c("ray", "start", "--address=$(LWS_LEADER_ADDRESS):6379", "--block"),
        c("/usr/local/bin/ray", "start", "--address", "head:6379"),
        c("bash", "/vllm-workspace/examples/online_serving/multi-node-serving.sh", "leader"),
        c("bash", "multi-node-serving.sh", "worker", "--ray_address=head"),
        c("sh", "-c", "xray start --head --port 9 && vllm serve m"),
        c("vllm", "serve", "m", env=[{"name": "RAY_ADDRESS", "value": "auto"}]),
    ]
    names = {HEAD: "head", MEMBER: "worker", None: None}
    for container in cases:
        assert ray_role(container) == names[ray_start(container)], container["command"]
    roles = [ray_role(x) for x in cases]
    assert roles == ["head", "worker", "worker", "head", "worker", None, None]
    assert ray_node(cases[-1]) == MEMBER
