"""Injection into Kthena ModelServing pods (issue 39 item 2: "the injector gives its pods
group env like the other kinds").

The pods are built as Kthena's controller builds them (volcano-sh/kthena at
3cc057284c34469fcb0ed22a12dac84b1d120719, pkg/model-serving-controller/utils/utils.go:
GeneratePodName ``<ms>-<group i>-<role>-<j>-<pod index>``, createBasePod's labels and
controller reference, createCommonEnvVars' GROUP_SIZE / ENTRY_ADDRESS / WORKER_INDEX
appended to every container by addPodEnvVars)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from preflight_check.group import group_config
from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.injection import Injection, Skip, literal_env, plan_injection
from preflight_operator.core.kthenaplace import KthenaPlace, kthena_place
from preflight_operator.core.operatorconfig import InjectionConfig, OperatorConfig, PolicySpec
from preflight_operator.core.policy import PolicyBook
from preflight_operator.core.static import Plan
from preflight_operator.webhook.webhooks import AdmissionService

PLAN = Plan(tp=8, pp=2, dp=1, dp_local=1, gpus_needed=8, container="vllm")
MS = "modelserving.volcano.sh/"
OWNER = {
    "apiVersion": "workload.serving.volcano.sh/v1alpha1",
    "kind": "ModelServing",
    "uid": "u-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def pod(index: int, *, workers: int = 1, ms: str = "ds", ns: str = "team") -> dict[str, Any]:
    """Pod ``index`` (0: the entry) of role ``prefill`` instance 0 of serving group 0."""
    group, role = f"{ms}-0", "prefill-0"
    entry = f"{group}-{role}-0"
    script = (
        "vllm serve m -tp 8 -pp 2 --nnodes $(GROUP_SIZE) --node-rank $(WORKER_INDEX) "
        "--master-addr $(ENTRY_ADDRESS)"
    )
    labels = {
        f"{MS}name": ms, f"{MS}group-name": group, f"{MS}role": "prefill",
        f"{MS}role-id": role, f"{MS}revision": "r1", f"{MS}role-template-hash": "h1",
    }  # fmt: skip
    if index == 0:
        labels[f"{MS}entry"] = "true"
    return {
        "metadata": {
            "name": f"{group}-{role}-{index}",
            "namespace": ns,
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "workload.serving.volcano.sh/v1alpha1",
                    "kind": "ModelServing",
                    "name": ms,
                    "uid": "u-1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                },
            ],
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.2",
                    "command": ["sh", "-c", script],
                    "resources": {"limits": {"nvidia.com/gpu": 8}},
                    "env": [
                        {"name": "HF_HOME", "value": "/cache"},
                        {"name": "GROUP_SIZE", "value": str(workers + 1)},
                        {"name": "ENTRY_ADDRESS", "value": f"{entry}.{ns}"},
                        {"name": "WORKER_INDEX", "value": str(index)},
                    ],
                }
            ],
        },
    }


def check_env(body: dict[str, Any]) -> dict[str, Any]:
    argv = RulesAnalyser().injection_target(body, PolicySpec()).argv
    got = plan_injection(
        body, container="vllm", plan=PLAN, policy=PolicySpec(), config=InjectionConfig(),
        workload_label=None, argv=argv,
    )  # fmt: skip
    assert isinstance(got, Injection)
    check = next(c for c in got.init_containers if c["name"] == "preflight-check")
    names = [e["name"] for e in check["env"]]
    assert len(names) == len(set(names)), names
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in check["env"]}


def test_entry_and_worker_meet_at_the_entry_pod() -> None:
    configs = []
    for index in (0, 1):
        env = check_env(pod(index))
        assert env["PREFLIGHT_GROUP_ADDRESS"] == "ds-0-prefill-0-0.team"
        assert env["PREFLIGHT_GROUP_SIZE"] == "2"
        assert env["PREFLIGHT_GROUP_INDEX"] == str(index)
        assert env["PREFLIGHT_POD_UID"] == {"fieldRef": {"fieldPath": "metadata.uid"}}
        literal = {k: v for k, v in env.items() if isinstance(v, str)}
        config = group_config({**literal, "PREFLIGHT_NODE_NAME": "node-x"})
        assert config is not None
        configs.append(config)
    assert [c.index for c in configs] == [0, 1]
    assert {c.group_id for c in configs} == {"team/ds-0/prefill-0"}
    assert {(c.address, c.size) for c in configs} == {("ds-0-prefill-0-0.team", 2)}


def test_three_workers_are_a_group_of_four() -> None:
    assert kthena_place(
        pod(3, workers=3), literal_env(pod(3, workers=3)["spec"]["containers"][0]), 1024
    ) == (KthenaPlace("team/ds-0/prefill-0", "ds-0-prefill-0-0.team", 4, 3))


def _no_controller(p: dict[str, Any]) -> None:
    p["metadata"]["ownerReferences"][0]["controller"] = False


def _other_kind(p: dict[str, Any]) -> None:
    p["metadata"]["ownerReferences"][0]["kind"] = "ReplicaSet"


def _other_group(p: dict[str, Any]) -> None:
    p["metadata"]["ownerReferences"][0]["apiVersion"] = "evil.example.com/v1"


def _no_role_label(p: dict[str, Any]) -> None:
    del p["metadata"]["labels"][f"{MS}role-id"]


def _env(name: str, value: Any) -> Any:
    def change(p: dict[str, Any]) -> None:
        env = p["spec"]["containers"][0]["env"]
        for e in env:
            if e["name"] == name:
                if value is None:
                    env.remove(e)
                else:
                    e["value"] = value
                return

    return change


def _from_field(p: dict[str, Any]) -> None:
    env = p["spec"]["containers"][0]["env"]
    env[-1] = {"name": "WORKER_INDEX", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (_no_controller, "controller is not a ModelServing"),
        (_other_kind, "controller is not a ModelServing"),
        (_other_group, "controller is not a ModelServing"),
        (_no_role_label, "role-id"),
        (_env("GROUP_SIZE", None), "GROUP_SIZE"),
        (_env("GROUP_SIZE", "1"), "a group is 2 to"),
        (_env("GROUP_SIZE", "2x"), "GROUP_SIZE"),
        (_env("WORKER_INDEX", "2"), "outside a group of 2"),
        (_from_field, "WORKER_INDEX"),
        (_env("ENTRY_ADDRESS", "attacker.example.com"), "entry pod"),
        (_env("ENTRY_ADDRESS", "ds-0-prefill-1-0.team"), "entry pod"),
        (_env("ENTRY_ADDRESS", "x" * 300), "ENTRY_ADDRESS"),
    ],
)
def test_a_pod_that_is_not_what_kthena_makes_meets_no_group(change: Any, why: str) -> None:
    body = copy.deepcopy(pod(1))
    change(body)
    place = kthena_place(body, literal_env(body["spec"]["containers"][0]), 1024)
    assert isinstance(place, str)
    assert why in place
    env = check_env(body)
    assert "PREFLIGHT_GROUP_ADDRESS" not in env
    assert "PREFLIGHT_GROUP_PORT" not in env


def test_a_role_of_one_pod_meets_no_group() -> None:
    body = pod(0, workers=0)
    assert isinstance(kthena_place(body, literal_env(body["spec"]["containers"][0]), 1024), str)
    assert "PREFLIGHT_GROUP_ADDRESS" not in check_env(body)


# The Ray pattern of Kthena's own multi-node example (volcano-sh/kthena at 3cc05728,
# examples/model-serving/multi-node.yaml): the entry pod starts the Ray head and runs vLLM's
# Ray executor over the role's pods; each worker pod runs only a Ray node.
RAY_ENTRY = (
    "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader "
    "--ray_cluster_size=$(GROUP_SIZE); python3 -m vllm.entrypoints.openai.api_server "
    "--model m --tensor-parallel-size 8 --pipeline_parallel_size 2"
)
RAY_WORKER = (
    "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker "
    "--ray_address=$(ENTRY_ADDRESS)"
)


def test_a_ray_pattern_role_meets_no_group_its_workers_get_no_check() -> None:
    """kthenaplace's docstring says why: the controller writes the same GROUP_SIZE,
    ENTRY_ADDRESS and WORKER_INDEX whatever the role runs, and a Ray worker (no vLLM) gets
    no check from the injector, so an entry told to wait for its group would wait for
    members that never come and fail a healthy role."""
    entry, member = pod(0), pod(1)
    entry["spec"]["containers"][0]["command"] = ["sh", "-c", RAY_ENTRY]
    member["spec"]["containers"][0]["command"] = ["sh", "-c", RAY_WORKER]
    assert isinstance(kthena_place(entry, literal_env(entry["spec"]["containers"][0]), 1024),
                      KthenaPlace)  # fmt: skip
    env = check_env(entry)
    assert "PREFLIGHT_GROUP_ADDRESS" not in env
    assert "PREFLIGHT_GROUP_PORT" not in env
    svc = AdmissionService(OperatorConfig(), RulesAnalyser(), PolicyBook(), events=None)
    skipped = asyncio.run(svc.mutate_pod(member))
    assert isinstance(skipped, Skip)
    assert skipped.reason == "no-vllm-container"
