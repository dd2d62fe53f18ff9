"""The group phase compares the engine arguments the rules read, and nothing else.

"vLLM's command line inside a container" has one definition: the rules' shell interpreter
(core/rules/command.py and the shell modules it drives, tested against real bash and dash).
The injector hands its reading to the check as PREFLIGHT_VLLM_ARGS; the group phase
compares that. The checker once had a small finder of its own over PREFLIGHT_GROUP_ARGS (a
raw copy of command + args) for when PREFLIGHT_VLLM_ARGS was absent, and it read shell
scripts differently: these tests go from LeaderWorkerSet pod manifests through the rules,
the injector and a stand-in for the kubelet to the checker's options and the leader's
verdict.
"""

from __future__ import annotations

import re
from typing import Any

from preflight_check.group import (
    ARGS_FROM_LEGACY,
    ARGS_FROM_NONE,
    ARGS_FROM_RAY_WORKER,
    ARGS_FROM_RULES,
    GroupConfig,
    clean_facts,
    group_config,
    judge,
)
from preflight_check.options import parse_options
from preflight_operator.core.analysis import injection_target
from preflight_operator.core.injection import Injection, plan_injection
from preflight_operator.core.operatorconfig import InjectionConfig, PolicySpec
from preflight_operator.core.rules import check_objects

LWS = "leaderworkerset.sigs.k8s.io"
RANK = "--nnodes 2 --node-rank {rank} --master-addr $LWS_LEADER_ADDRESS"
# The leader writes its options out; the worker keeps the same ones in a shell variable
# (a common way to share them). bash splits $OPTS into words; the finder the checker had
# did not, and compared the worker on none of them.
LEADER = "exec vllm serve m -tp 4 --dtype bfloat16 " + RANK.format(rank=0)
WORKER = 'OPTS="-tp 4 --dtype bfloat16"; exec vllm serve m $OPTS --headless ' + RANK.format(rank=1)
# A value known only at run time: the rules cannot hand this line over exactly (no
# PREFLIGHT_VLLM_ARGS)
AT_RUN_TIME = ' --download-dir "$(cat /etc/vllm/dir)"'


def lws_pod(script: str, index: int, command: list[str] | None = None) -> dict[str, Any]:
    labels = {f"{LWS}/name": "big", f"{LWS}/worker-index": str(index), f"{LWS}/group-index": "0"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"big-0-{index}" if index else "big-0",
            "namespace": "team",
            "labels": labels,
            "annotations": {f"{LWS}/size": "2"},
        },
        "spec": {
            "nodeName": f"node-{index}",
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.0",
                    "command": command or ["bash", "-c", script],
                    "resources": {"limits": {"nvidia.com/gpu": "2"}},
                    "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        },
    }


def injected_env(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The check container's env as the webhook writes it: the rules' reading first."""
    target = injection_target(check_objects([pod]))
    assert target.container == "vllm", target
    assert target.plan is not None, target
    got = plan_injection(
        pod,
        container="vllm",
        plan=target.plan,
        policy=PolicySpec(),
        config=InjectionConfig(),
        workload_label=None,
        argv=target.argv,
        model=target.model,
    )
    assert isinstance(got, Injection)
    check = next(c for c in got.init_containers if c["name"] == "preflight-check")
    return list(check["env"])


_REFERENCE = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


def kubelet(pod: dict[str, Any], env: list[dict[str, Any]]) -> dict[str, str]:
    """What the checker process gets: LeaderWorkerSet's own variables, the downward API
    fields, and every value with its $(NAME) expanded and $$ made $, as the kubelet does."""
    meta = pod["metadata"]
    index = meta["labels"][f"{LWS}/worker-index"]
    out = {"LWS_LEADER_ADDRESS": "big-0.big.team", "LWS_GROUP_SIZE": "2", "LWS_WORKER_INDEX": index}
    fields = {
        f"metadata.labels['{LWS}/worker-index']": index,
        f"metadata.labels['{LWS}/group-index']": "0",
        f"metadata.annotations['{LWS}/size']": "2",
        "spec.nodeName": pod["spec"]["nodeName"],
        "metadata.name": meta["name"],
        "metadata.uid": meta.get("uid", ""),
    }

    def expand(text: str) -> str:
        return _REFERENCE.sub(
            lambda m: "$" if m.group(0) == "$$" else out.get(m.group(1), m.group(0)), text
        )

    for item in env:
        if "value" in item:
            out[item["name"]] = expand(item["value"])
        else:
            out[item["name"]] = fields[item["valueFrom"]["fieldRef"]["fieldPath"]]
    return out


def member(environ: dict[str, str]) -> tuple[GroupConfig, dict[str, Any]]:
    group = parse_options([], environ).group
    assert group is not None
    return group, clean_facts(
        {"node": group.node, "args": dict(group.args), "args_from": group.args_from}
    )


def test_the_group_compares_what_the_rules_read_not_a_second_reading() -> None:
    """Before: the worker's arguments came from the checker's own finder over
    PREFLIGHT_GROUP_ARGS, which split no words: "tp 4 vs (default), ... dtype bfloat16 vs
    (default)", a healthy group failed."""
    pods = [lws_pod(LEADER, 0), lws_pod(WORKER, 1)]
    envs = [injected_env(p) for p in pods]
    assert all("PREFLIGHT_GROUP_ARGS" not in {e["name"] for e in env} for env in envs)
    (leader, leader_facts), (worker, worker_facts) = [
        member(kubelet(p, env)) for p, env in zip(pods, envs)
    ]
    assert (worker.args["tp"], worker.args["dtype"]) == ("4", "bfloat16")  # bash splits $OPTS
    assert worker.args == leader.args
    verdict = judge(leader, {0: leader_facts, 1: worker_facts}, waited_s=0.1)
    assert verdict.status == "pass", verdict.message


def test_a_member_the_rules_cannot_read_exactly_is_a_warning_naming_it() -> None:
    pods = [lws_pod(LEADER, 0), lws_pod(WORKER + AT_RUN_TIME, 1)]
    envs = [injected_env(p) for p in pods]
    assert "PREFLIGHT_VLLM_ARGS" in {e["name"] for e in envs[0]}
    assert "PREFLIGHT_VLLM_ARGS" not in {e["name"] for e in envs[1]}
    (leader, leader_facts), (worker, worker_facts) = [
        member(kubelet(p, env)) for p, env in zip(pods, envs)
    ]
    assert (leader.args["tp"], leader.args_from) == ("4", ARGS_FROM_RULES)
    assert (worker.args, worker.args_from) == ({}, ARGS_FROM_NONE)
    verdict = judge(leader, {0: leader_facts, 1: worker_facts}, waited_s=0.1)
    assert verdict.status == "warn", verdict.message
    assert "engine arguments not compared for worker 1 (node-1)" in verdict.message
    assert "PREFLIGHT_VLLM_ARGS" in verdict.message
    assert verdict.evidence["args_not_compared"] == [1]
    assert "write them on the vLLM command line" in verdict.remediation


def test_two_members_the_rules_read_are_compared() -> None:
    pods = [lws_pod(LEADER, 0), lws_pod(WORKER.replace("-tp 4", "-tp 2 -pp 2"), 1)]
    configs = [member(kubelet(p, injected_env(p))) for p in pods]
    verdict = judge(configs[0][0], {i: c[1] for i, c in enumerate(configs)}, waited_s=0.1)
    assert verdict.status == "fail", verdict.message
    assert "worker 1 (node-1) runs vLLM with other engine arguments" in verdict.message
    assert "tp 4 vs 2" in verdict.message
    assert "pp 1 vs 2" in verdict.message


def test_a_ray_worker_is_named_so_and_not_reported() -> None:
    head = lws_pod("ray start --head --port=6379 && vllm serve m -tp 4 --dtype bfloat16", 0)
    worker = lws_pod("", 1, ["ray", "start", "--address=$(LWS_LEADER_ADDRESS):6379", "--block"])
    got = plan_injection(
        worker,
        container="vllm",
        plan=injection_target(check_objects([head])).plan,
        policy=PolicySpec(),
        config=InjectionConfig(),
        workload_label=None,
        ray_group=True,
    )
    assert isinstance(got, Injection)
    env = next(c for c in got.init_containers if c["name"] == "preflight-check")["env"]
    environ = kubelet(worker, env)
    assert environ["PREFLIGHT_GROUP_ROLE"] == "ray-worker"
    config, facts = member(environ)
    assert (config.args, config.args_from) == ({}, ARGS_FROM_RAY_WORKER)
    lead = GroupConfig("lws", "g", "big-0.big.team", 29600, 0, 2, args_from=ARGS_FROM_RULES)
    leader_facts = clean_facts({"args": {"tp": "4"}, "args_from": ARGS_FROM_RULES})
    verdict = judge(lead, {0: leader_facts, 1: facts}, waited_s=0.1)
    assert verdict.status == "pass", verdict.message


def test_an_older_operators_pod_compares_less_and_says_so() -> None:
    """A pod injected before PREFLIGHT_GROUP_ARGS was dropped (with PREFLIGHT_VLLM_ARGS
    absent) runs the new checker: no crash, its arguments are not compared, the verdict
    says why and what to do."""
    environ = {
        "LWS_LEADER_ADDRESS": "big-0.big.team",
        "LWS_GROUP_SIZE": "2",
        "LWS_WORKER_INDEX": "1",
        "PREFLIGHT_GROUP_PORT": "29600",
        "PREFLIGHT_NODE_NAME": "node-1",
        "PREFLIGHT_GROUP_ARGS": "bash -c 'vllm serve m -tp 2 # -tp 4 on the big pool'",
    }
    config = group_config(environ)
    assert config is not None
    assert (config.args, config.args_from) == ({}, ARGS_FROM_LEGACY)
    lead = GroupConfig("lws", "g", "big-0.big.team", 29600, 0, 2, args_from=ARGS_FROM_RULES)
    members = {
        0: clean_facts({"args": {"tp": "2"}, "args_from": ARGS_FROM_RULES}),
        1: clean_facts({"node": "node-1", "args": {}, "args_from": config.args_from}),
    }
    verdict = judge(lead, members, waited_s=0.1)
    assert verdict.status == "warn", verdict.message
    assert "older vllm-preflight operator" in verdict.message
    assert "recreate the group's pods" in verdict.remediation


def test_an_older_checkers_facts_and_odd_values_are_safe() -> None:
    """A member running an older checker sends no args_from (no note: it said nothing);
    an unknown value is dropped, never trusted."""
    assert "args_from" not in clean_facts({"args": {}})
    assert "args_from" not in clean_facts({"args_from": "x" * 10_000})
    assert "args_from" not in clean_facts({"args_from": ["unknown"]})
    lead = GroupConfig("lws", "g", "a", 29600, 0, 2)
    verdict = judge(lead, {0: clean_facts({}), 1: clean_facts({"args": {}})}, waited_s=0.1)
    assert verdict.status == "pass", verdict.message


def test_a_ray_head_whose_line_is_withheld_is_not_reported() -> None:
    """A Ray head holds a share of the engine its command line does not state, so the
    injector withholds PREFLIGHT_VLLM_ARGS; its workers run no vLLM: one vLLM in the
    group, nothing to compare, nothing to report."""
    lead = GroupConfig("lws", "g", "a", 29600, 0, 3, args_from=ARGS_FROM_NONE)
    members = {0: clean_facts({"args": {}, "args_from": ARGS_FROM_NONE})}
    members.update({i: clean_facts({"args_from": ARGS_FROM_RAY_WORKER}) for i in (1, 2)})
    verdict = judge(lead, members, waited_s=0.1)
    assert verdict.status == "pass", verdict.message
    assert "args_not_compared" not in verdict.evidence


def test_an_nnodes_share_carries_the_rules_reading() -> None:
    """vLLM's --nnodes states the pod's share on the command line: the checker reads the
    same GPU count from it as the rules, so the injector passes it (the group compares it)."""
    pod = lws_pod(LEADER, 0)
    env = {e["name"]: e.get("value") for e in injected_env(pod)}
    assert env["PREFLIGHT_VLLM_ARGS"] == (
        "vllm serve m -tp 4 --dtype bfloat16 --nnodes 2 --node-rank 0 "
        "--master-addr '$$(LWS_LEADER_ADDRESS)'"
    )
    assert env["PREFLIGHT_VLLM_ARGS_DEFERRED"] == "LWS_LEADER_ADDRESS"
    options = parse_options([], kubelet(pod, injected_env(pod)))
    assert options.plan.gpus_needed == 2  # the pod's share, as the rules count it


def test_a_ray_heads_share_is_not_handed_over() -> None:
    """TP 2 x PP 3 spread by Ray over the group's two pods: the head's line says 6 GPUs, the
    pod's share is 3. The checker would count 6 from the line, so the injector withholds
    it (and the group says nothing of it: a Ray group runs one vLLM)."""
    head = "ray start --head && vllm serve m -tp 2 -pp 3 --distributed-executor-backend ray"
    result = check_objects([lws_pod(head, 0)])[0]
    assert result.plan is not None
    assert result.plan.gpus_needed == 6
    target = injection_target([result])
    assert target.plan is not None
    assert target.plan.gpus_needed == 3
    assert target.argv == ()
