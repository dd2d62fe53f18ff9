"""Enforce denies only what is certain (issue 24, item 1): every finding names the inputs it
rests on; the engine downgrades a fail resting on one that is not exact to a warn that
says which, and logs it. Every rule declares where its own knowledge comes from."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from test_rules_support import check, deployment, finding, ids, one, pod_spec, vllm

from preflight_contract.verdicts import FAIL, WARN
from preflight_operator.core.rules import RULE_INFO, engine
from preflight_operator.core.rules.certainty import (
    ARGV,
    ESTIMATED,
    EXACT,
    SOURCE_KINDS,
    Input,
)
from preflight_operator.core.rules.vocabulary import Finding, Policy, RuleInfo

SECRET = [{"name": "EXTRA", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]


def _tp4_on_2(*more: str, env: Any = SECRET) -> dict[str, Any]:
    return deployment(pod_spec(vllm("m", "-tp", "4", *more, gpus=2, env=env)))


def test_a_fail_on_an_exact_plan_still_fails() -> None:
    result = one(_tp4_on_2())
    assert finding(result, "gpu-count-too-low").severity == FAIL
    assert result.verdict == FAIL


def test_an_unknown_value_of_an_option_leaves_the_plan_exact() -> None:
    # --api-key $(EXTRA): a word unknown here, but the value of an option that sets no size
    result = one(_tp4_on_2("--api-key", "$(EXTRA)"))
    assert finding(result, "gpu-count-too-low").severity == FAIL


def test_a_fail_on_an_estimated_plan_is_downgraded_with_the_reason() -> None:
    # $(EXTRA) from a Secret stands where an option may: it may hold `-tp 2`
    result = one(_tp4_on_2("$(EXTRA)"))
    low = finding(result, "gpu-count-too-low")
    assert low.severity == WARN
    assert "(downgraded from fail: the parallel plan (TP x PP x DP) was read from" in low.message
    assert "'$(EXTRA)', unknown here" in low.message
    assert result.verdict == WARN
    assert FAIL not in {f.severity for f in result.findings}


def test_a_shell_script_with_unknown_arguments_is_estimated() -> None:
    script = "exec vllm serve m -tp 4 $EXTRA"
    container = vllm(gpus=2, command=("sh", "-c", script), env=SECRET)
    result = one(deployment(pod_spec(container)))
    low = finding(result, "gpu-count-too-low")
    assert low.severity == WARN
    assert "downgraded from fail" in low.message
    assert "shell script" in low.message


def test_a_time_sliced_gpu_count_is_estimated() -> None:
    container = vllm("m", "-tp", "4")
    container["resources"] = {"limits": {"nvidia.com/gpu.shared": 2}}
    result = one(deployment(pod_spec(container)))
    low = finding(result, "gpu-count-too-low")
    assert low.severity == WARN
    assert "the nvidia.com/gpu.shared count counts time-sliced replicas" in low.message


def _rule(inputs: tuple[Input, ...]) -> Any:
    info = RuleInfo("test-certainty", FAIL, "a test rule", RULE_INFO["gpu-count-too-low"].basis)

    def rule(ctx: Any, policy: Policy) -> Iterator[Finding]:
        yield info.finding("it would fail", ctx.path, "nothing", inputs)

    return info, rule


@pytest.mark.parametrize(
    ("certainty", "severity"), [(EXACT, FAIL), (ESTIMATED, WARN), ("unknown", WARN)]
)
def test_the_engine_not_the_rule_downgrades(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    certainty: str,
    severity: str,
) -> None:
    """Any rule, however careless: a fail resting on a non-exact input comes out a warn,
    and the downgrade is logged with the rule id."""
    why = "" if certainty == EXACT else "is a guess in this test"
    monkeypatch.setattr(engine, "REGISTRY", [_rule((Input(ARGV, "TP", certainty, why),))])
    with caplog.at_level(logging.INFO, logger=engine.__name__):
        result = one(deployment(pod_spec(vllm("m", gpus=1))))
    (got,) = result.findings
    assert got.severity == severity
    if severity == WARN:
        assert got.message == f"it would fail (downgraded from fail: TP {why})"
        assert "rule test-certainty: fail downgraded to warn" in caplog.text
    else:
        assert got.message == "it would fail"
        assert "downgraded" not in caplog.text


def test_every_rule_declares_its_certainty_source() -> None:
    missing = [i for i, info in RULE_INFO.items() if info.basis is None]
    assert missing == []
    assert {info.basis.kind for info in RULE_INFO.values() if info.basis} <= set(SOURCE_KINDS)
    assert all(info.basis.reference for info in RULE_INFO.values() if info.basis)


def test_the_realistic_case_of_a_secret_model_keeps_its_failures() -> None:
    # vllm serve $(MODEL) from a Secret is the common shape: the model is a value, the
    # plan stays exact and the missing GPUs still fail
    env = [{"name": "MODEL", "valueFrom": {"secretKeyRef": {"name": "s", "key": "m"}}}]
    result = one(deployment(pod_spec(vllm("$(MODEL)", "-tp", "4", gpus=2, env=env))))
    assert "gpu-count-too-low" in ids(result)
    assert finding(result, "gpu-count-too-low").severity == FAIL


def _dp_group(worker_dpl: str) -> dict[str, Any]:
    """Multi-node DP over 2 pods, -dp 32 -dpl 8 on the leader: 16 ranks start, not 32."""
    leader = ["m", "-dp", "32", "-dpl", "8", "--data-parallel-address", "x"]
    worker = ["m", "-dp", "32", "-dpl", worker_dpl, "--data-parallel-address", "x", "--headless"]
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "dp", "namespace": "ns"},
        "spec": {
            "leaderWorkerTemplate": {
                "size": 2,
                "leaderTemplate": {"spec": pod_spec(vllm(*leader, gpus=8))},
                "workerTemplate": {"spec": pod_spec(vllm(*worker, gpus=8))},
            }
        },
    }


def test_the_workers_dp_local_is_read_not_assumed() -> None:
    """lws-dp-mismatch counts every pod at the leader's -dpl: certain when the workers say
    the same, an estimate (a warning) when their template says another."""
    same = check(_dp_group("8"))[0]
    assert finding(same, "lws-dp-mismatch").severity == FAIL
    other = check(_dp_group("24"))[0]
    mismatch = finding(other, "lws-dp-mismatch")
    assert mismatch.severity == WARN
    assert "the workers' --data-parallel-size-local is assumed to be the leader's" in (
        mismatch.message
    )


def test_an_env_value_not_known_here_is_an_unknown_input() -> None:
    # issue 24 item 1: every value a rule reads carries its certainty, env values too
    from preflight_operator.core.rules.certainty import ENV, EXACT, UNKNOWN
    from preflight_operator.core.rules.inputs import env_input
    from preflight_operator.core.rules.kubeenv import unknown_marker

    assert env_input("VLLM_PORT", "8000", "spec.env[0]").certainty == EXACT
    unknown = env_input("VLLM_PORT", unknown_marker("PORT"), "spec.env[0]")
    assert (unknown.kind, unknown.certainty) == (ENV, UNKNOWN)
    assert env_input("VLLM_PORT", None, None).certainty == UNKNOWN
