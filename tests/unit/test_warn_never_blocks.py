"""Warn and Audit never block (issue 34 item 7): 9 shell-special values x 4 placements of the
variable that holds them x Warn and Audit, from the pod manifest through admission, the
rules, the injector and a stand-in for the kubelet to the checker's option reader and its
exit code: 0 denied, 0 blocked.

Before: a ``$(MODEL_NAME)`` whose value held an apostrophe (a Secret, a ConfigMap: a value
the rules cannot know, so the injector hands ``$(MODEL_NAME)`` to the kubelet inside a
quoted command line) made the option reader raise (``shlex.split``: No closing quotation)
and the check exit 2, blocking 8 of 72 working pods under Warn and Audit.
"""

from __future__ import annotations

import io
from typing import Any

import pytest

from preflight_check import cli
from preflight_check.options import parse_options
from preflight_contract import actions
from preflight_contract.report import CheckResult, Report
from preflight_dev.fakekubelet import container_env
from preflight_dev.testing.shellvalues import PLACEMENTS, VALUES, pod_with
from preflight_operator.core.admissiondecision import decide
from preflight_operator.core.analysis import injection_target, rules_policy, to_static
from preflight_operator.core.injection import Injection, plan_injection
from preflight_operator.core.operatorconfig import InjectionConfig, PolicySpec
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.rules import NO_LOOKUP, check_objects
from preflight_operator.core.workloads import POD, ref_of


def kubelet(check: dict[str, Any], value: str) -> dict[str, str]:
    """The checker's environment as the kubelet builds it: the Secret's or the ConfigMap's
    value of MODEL_NAME, every env value expanded in order (fakekubelet.container_env)."""
    return container_env(
        check,
        secrets={"model": {"name": value}},
        config_maps={"model": {"MODEL_NAME": value}},
        fields={"spec.nodeName": "node-1"},
    )


# Enforce too: the line is read exactly, so a working pod is not refused there either.
@pytest.mark.parametrize("action", [actions.WARN, actions.AUDIT, actions.ENFORCE])
@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("name", sorted(VALUES))
def test_no_value_blocks_a_working_pod(name: str, placement: str, action: str) -> None:
    pod = pod_with(placement)
    policy = PolicySpec(action=action)
    results = check_objects([pod], rules_policy(policy), NO_LOOKUP)
    decision = decide(to_static(results), ResolvedPolicy("", policy), ref_of(pod, POD))
    assert decision.allowed, decision.message

    target = injection_target(results)
    assert target.container == "vllm", target
    assert target.plan is not None, target
    injected = plan_injection(
        pod,
        container="vllm",
        plan=target.plan,
        policy=policy,
        config=InjectionConfig(),
        workload_label=None,
        argv=target.argv,
        model=target.model,
    )
    assert isinstance(injected, Injection)
    check = next(c for c in injected.init_containers if c["name"] == "preflight-check")
    environ = kubelet(check, VALUES[name])
    assert environ["PREFLIGHT_ACTION"] == action

    options = parse_options([], environ)  # raised before: the check exited 2
    assert options.action == action
    assert options.plan.tp == 2  # the plan is still read
    assert options.setting_problems == []
    assert options.model_args["model"] == VALUES[name]  # read exactly as vLLM gets it


@pytest.mark.parametrize("action", [actions.WARN, actions.AUDIT])
def test_a_value_the_checker_cannot_read_is_a_warning_and_exit_0(action: str) -> None:
    """The unreadable command line reaches the 'settings' check as a warning; an error that
    escapes every reader still exits 0 under Warn and Audit (the report says error)."""
    environ = {"PREFLIGHT_ACTION": action, "PREFLIGHT_VLLM_ARGS": "vllm serve 'unclosed -tp 2"}
    options = parse_options([], environ)
    assert [n for n, _ in options.setting_problems] == ["PREFLIGHT_VLLM_ARGS"]
    environ["PREFLIGHT_TP"] = "4"
    assert parse_options([], environ).plan.tp == 4  # the rest is read

    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["--tp", "x"], host=_NoHost(environ), out=out, err=err) == 0
    assert "usage error" in err.getvalue()
    report = Report(checks=[CheckResult("usage", "error", "m", "f")], action=action)
    assert report.verdict == "error"
    assert report.exit_code() == 0
    assert Report(checks=[CheckResult("usage", "error", "m", "f")]).exit_code() == 2  # Enforce


class _NoHost:
    """A host the option reader's failure never reaches beyond its environ."""

    def __init__(self, environ: dict[str, str]) -> None:
        self.environ = environ
