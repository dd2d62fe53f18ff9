"""Injection into LeaderWorkerSet pods: the group phase's env (port, index, size, node,
the vLLM command line) and the chart's injection.groupPort."""

from __future__ import annotations

from typing import Any

import pytest

from preflight_check.group import engine_args, group_config
from preflight_operator.core.injection import Injection, plan_injection
from preflight_operator.core.operatorconfig import (
    ConfigError,
    InjectionConfig,
    PolicySpec,
    parse_config,
)
from preflight_operator.core.static import Plan

PLAN = Plan(tp=8, pp=1, dp=1, dp_local=1, gpus_needed=8, container="vllm")
SCRIPT = "vllm serve m -tp 8 -pp 2 --nnodes $(LWS_GROUP_SIZE) --node-rank $(LWS_WORKER_INDEX)"


def lws_pod(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "team",
            "labels": labels if labels is not None else {"leaderworkerset.sigs.k8s.io/name": "big"},
        },
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.0",
                    "command": ["sh", "-c", SCRIPT],
                    "resources": {"limits": {"nvidia.com/gpu": 8}},
                }
            ]
        },
    }


def check_env(pod: dict[str, Any], config: InjectionConfig | None = None) -> dict[str, Any]:
    got = plan_injection(
        pod,
        container="vllm",
        plan=PLAN,
        policy=PolicySpec(),
        config=config or InjectionConfig(),
        workload_label=None,
    )
    assert isinstance(got, Injection)
    check = next(c for c in got.init_containers if c["name"] == "preflight-check")
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in check["env"]}


def test_lws_pod_gets_the_group_env() -> None:
    env = check_env(lws_pod(), InjectionConfig(group_port=31000))
    assert env["PREFLIGHT_GROUP_PORT"] == "31000"
    assert env["PREFLIGHT_GROUP_INDEX"] == {
        "fieldRef": {"fieldPath": "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"}
    }
    assert env["PREFLIGHT_NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["PREFLIGHT_GROUP_ID"] == "team/big-$(PREFLIGHT_GROUP_NUMBER)"
    # the raw command line is no longer copied: the group compares PREFLIGHT_VLLM_ARGS, the
    # rules' reading (tests/unit/test_check_group_args.py goes from manifests to a verdict)
    assert "PREFLIGHT_GROUP_ARGS" not in env
    assert "PREFLIGHT_GROUP_ROLE" not in env  # vLLM runs here: not a Ray worker
    runtime = {
        "LWS_LEADER_ADDRESS": "big-0.big.team",
        "LWS_GROUP_SIZE": "2",
        "PREFLIGHT_GROUP_INDEX": "1",
        "PREFLIGHT_GROUP_SIZE": "",  # an annotation the pod lacks: empty, LWS_GROUP_SIZE wins
        "PREFLIGHT_GROUP_PORT": env["PREFLIGHT_GROUP_PORT"],
    }
    group = group_config(
        runtime, ["vllm", "serve", "m", "-tp", "8", "-pp", "2", "--nnodes", "2", "--node-rank", "1"]
    )
    assert group is not None
    assert (group.address, group.size, group.index, group.port) == ("big-0.big.team", 2, 1, 31000)
    assert (group.args["model"], group.args["tp"], group.args["nnodes"]) == ("m", "8", "2")


def test_unexpanded_variables_are_never_compared() -> None:
    args = engine_args(["vllm", "serve", "m", "-tp", "$TP", "--dtype", "$(DTYPE)"])
    assert "tp" not in args
    assert "dtype" not in args
    assert args["model"] == "m"


def test_other_pods_and_ray_leaders_get_no_group_env() -> None:
    env = check_env(lws_pod(labels={"app": "x"}))
    assert not [name for name in env if name.startswith("PREFLIGHT_GROUP")]
    ray = lws_pod()
    script = "ray start --head && vllm serve m -tp 8 -pp 2 --distributed-executor-backend ray"
    ray["spec"]["containers"][0]["command"] = ["sh", "-c", script]
    env = check_env(ray)  # its workers run `ray start`: no check there to meet
    assert not [name for name in env if name.startswith("PREFLIGHT_GROUP")]
    runtime = {"LWS_LEADER_ADDRESS": "big-0.big.team", "LWS_GROUP_SIZE": "2", **env}
    assert group_config(runtime) is None


def test_chart_group_port_is_validated() -> None:
    assert parse_config({"injection": {"groupPort": 30000}}).injection.group_port == 30000
    assert parse_config({}).injection.group_port == 29600
    for bad in (0, 65535, "29600", True):
        with pytest.raises(ConfigError, match=r"injection\.groupPort"):
            parse_config({"injection": {"groupPort": bad}})
