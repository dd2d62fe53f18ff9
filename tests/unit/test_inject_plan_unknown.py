"""A vLLM the rules recognise but whose plan they cannot read gets the check all the same
(issue 35 item 3, issue 36 item 3): where the static reading is uncertain (a launcher not
modelled, a size from a Secret) the runtime check is the safety net, told that the plan
is unknown (PREFLIGHT_PLAN_UNKNOWN) and why."""

from __future__ import annotations

import copy
import logging
from typing import Any

import jsonpatch
import pytest
from test_inject import env_of, mutate, service, vllm_pod

from preflight_check.options import parse_options
from preflight_contract import envnames
from preflight_operator.core import rules
from preflight_operator.core.analysis import PLAN_UNKNOWN, injection_target
from preflight_operator.core.injection import (
    Injection,
    Skip,
    plan_injection,
    plan_unknown_value,
)
from preflight_operator.core.operatorconfig import InjectionConfig, PolicySpec
from preflight_operator.core.rules.vocabulary import Finding
from preflight_operator.runtime import metrics

# a launcher the rules name as unread (its process count is in a config file): strace,
# the first example here, is read since the launchers of issue 36 item 3
STRACE = [
    "accelerate", "launch", "-m", "vllm.entrypoints.cli.main",
    "serve", "m", "--tensor-parallel-size", "$(TP)",
]  # fmt: skip


def pod_running(command: list[str], **container: Any) -> dict[str, Any]:
    pod = vllm_pod()
    vllm = pod["spec"]["containers"][0]
    vllm["command"] = command
    vllm.update(container)
    return pod


def check_env(pod: dict[str, Any]) -> dict[str, Any]:
    injected = jsonpatch.apply_patch(pod, mutate(copy.deepcopy(pod), service()))
    names = [c["name"] for c in injected["spec"]["initContainers"]]
    assert names[:2] == ["preflight-install", "preflight-check"], names
    return env_of(injected["spec"]["initContainers"][1])


def test_a_launcher_the_rules_do_not_model_gets_the_check() -> None:
    pod = pod_running(STRACE, env=[{"name": "TP", "value": "2"}])
    target = injection_target(rules.check_object(pod))
    assert (target.container, target.plan, target.reason) == ("vllm", None, PLAN_UNKNOWN)
    assert target.why.startswith("vllm-command-unparsed: ")
    env = check_env(pod)
    assert "accelerate" in env[envnames.PLAN_UNKNOWN]
    # no sizes: the checker must not take a plan the rules did not read, nor one copied
    # from the vLLM container's env (its PREFLIGHT_TP=99)
    assert not {envnames.TP, envnames.PP, envnames.DP_LOCAL} & set(env)
    assert envnames.VLLM_ARGS not in env  # no command line read
    assert env[envnames.ACTION] == "Enforce"


def test_a_size_from_a_secret_goes_along_for_the_kubelet_to_fill_in() -> None:
    secret = {"name": "TP", "valueFrom": {"secretKeyRef": {"name": "s", "key": "tp"}}}
    pod = pod_running(["vllm", "serve", "m", "--tensor-parallel-size", "$(TP)"], env=[secret])
    env = check_env(pod)
    assert env[envnames.PLAN_UNKNOWN].startswith("plan-unresolved: ")
    assert env[envnames.VLLM_ARGS_DEFERRED] == "TP"
    # the checker reads the plan from it once the kubelet has filled TP in
    kubelet = {
        **{k: str(v) for k, v in env.items() if isinstance(v, str)},
        envnames.VLLM_ARGS: env[envnames.VLLM_ARGS].replace("$$", "$"),
        "TP": "2",
    }
    options = parse_options([], kubelet)
    assert (options.plan.tp, options.plan.unknown, options.plan.recovered[:16]) == (
        2,
        "",
        "plan-unresolved:",
    )


def test_the_reason_cannot_name_a_variable_for_the_kubelet() -> None:
    assert plan_unknown_value("uses $(HF_TOKEN) and $X") == "uses $$(HF_TOKEN) and $$X"
    assert len(plan_unknown_value("y" * 5000)) == 300
    assert plan_unknown_value("a\n\tb") == "a b"
    assert plan_unknown_value("") == "the parallel plan of the vLLM command line is unknown"


def test_still_skipped_without_gpus_or_when_not_vllm() -> None:
    no_gpu = pod_running(STRACE)
    del no_gpu["spec"]["containers"][0]["resources"]
    assert mutate(no_gpu, service()) == []
    outcome = plan_injection(
        no_gpu,
        container="vllm",
        plan=None,
        policy=PolicySpec(),
        config=InjectionConfig(),
        workload_label=None,
        plan_unknown="why",
    )
    assert isinstance(outcome, Skip)
    assert outcome.reason == "no-gpu-request"
    web = pod_running(["strace", "-f", "nginx"], image="nginx:1.27")
    assert injection_target(rules.check_object(web)).reason == "no-vllm-container"
    assert mutate(web, service()) == []


def test_a_dra_claim_counts_only_when_the_rules_counted_nvidia_gpus_in_it() -> None:
    pod = pod_running(STRACE)
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    pod["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "two-gpus"}]
    # an unread command line counts no GPU: a claim of a class not read may be any
    # vendor's, and an NVIDIA check there would fail a healthy pod
    assert mutate(copy.deepcopy(pod), service()) == []
    counted = plan_injection(
        pod,
        container="vllm",
        plan=None,
        policy=PolicySpec(),
        config=InjectionConfig(),
        workload_label=None,
        plan_unknown="why",
        plan_gpus_counted=True,
    )
    assert isinstance(counted, Injection)
    assert counted.init_containers[1]["resources"]["claims"] == [{"name": "gpus"}]


def test_a_plan_unknown_pod_meets_no_group_and_reuses_no_pass() -> None:
    pod = pod_running([*STRACE, "--nnodes", "2"])
    pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/name"] = "lws"
    outcome = plan_injection(
        pod,
        container="vllm",
        plan=None,
        policy=PolicySpec(tier="deep"),
        config=InjectionConfig(),
        workload_label=None,
        plan_unknown="why",
        reuse=lambda image, shape: (_ for _ in ()).throw(AssertionError("no plan, no shape")),
    )
    assert isinstance(outcome, Injection)
    env = env_of(outcome.init_containers[1])
    assert envnames.GROUP_INDEX not in env
    assert envnames.GROUP_ID not in env
    assert env[envnames.DEEP_REUSE] == "[]"
    assert env[envnames.PLAN_UNKNOWN] == "why"


def test_a_container_the_rules_crashed_on_is_not_taken_for_vllm() -> None:
    crashed = rules.ContainerResult(
        "Pod", "p", "team", "vllm", None, None, None,
        (Finding("rules-internal-error", "warn", "the rules crashed", "", ""),),
    )  # fmt: skip
    assert injection_target([crashed]).reason == "no-gpu-request"


def test_the_injection_is_counted_and_logged_as_plan_unknown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def count() -> float:
        value = metrics.REGISTRY.get_sample_value(
            "vllm_preflight_injections_total", {"result": "injected", "reason": "plan-unknown"}
        )
        return value or 0.0

    before = count()
    with caplog.at_level(logging.INFO, logger="preflight_operator.webhook.admissionreview"):
        check_env(pod_running(STRACE, env=[{"name": "TP", "value": "2"}]))
    assert count() == before + 1
    assert any(
        "injected with the plan unknown: vllm-command-unparsed" in r.message for r in caplog.records
    )
