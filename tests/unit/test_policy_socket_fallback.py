"""PreflightPolicy spec.groups.socketFallback (issue 26 item 3): what a multi-node group's
fall-back to TCP sockets is worth, Warn (default) or Fail, from the policy to the check's
PREFLIGHT_SOCKET_FALLBACK, with a bad value named in the Valid condition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_check.checks.group import socket_action
from preflight_operator.core.injection import Injection, plan_injection
from preflight_operator.core.operatorconfig import InjectionConfig, PolicySpec
from preflight_operator.core.policy import parse_policy
from preflight_operator.core.static import Plan

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "charts/vllm-preflight/crds/preflightpolicies.vllm-preflight.io.yaml"
PLAN = Plan(tp=8, pp=1, dp=1, dp_local=1, gpus_needed=8, container="vllm")


def parsed(spec: dict[str, Any]) -> Any:
    return parse_policy({"metadata": {"namespace": "ns", "name": "p"}, "spec": spec})


@pytest.mark.parametrize(
    ("spec", "action", "fields"),
    [
        ({}, "Warn", []),
        ({"groups": {}}, "Warn", []),
        ({"groups": {"socketFallback": "Warn"}}, "Warn", []),
        ({"groups": {"socketFallback": "Fail"}}, "Fail", []),
        ({"groups": {"socketFallback": "fail"}}, "Warn", ["spec.groups.socketFallback"]),
        ({"groups": {"socketFallback": "Enforce"}}, "Warn", ["spec.groups.socketFallback"]),
        ({"groups": {"socketFallback": True}}, "Warn", ["spec.groups.socketFallback"]),
        ({"groups": "Fail"}, "Warn", ["spec.groups"]),
    ],
)
def test_the_policy_field_is_parsed_and_a_bad_value_named(
    spec: dict[str, Any], action: str, fields: list[str]
) -> None:
    policy = parsed(spec)
    assert policy.spec.socket_fallback == action
    assert [p.field for p in policy.problems] == fields
    for problem in policy.problems:
        assert "Warn" in problem.message
        assert "Fail" in problem.message
    assert PolicySpec().socket_fallback == "Warn"


def socket_env(spec: PolicySpec, vllm_env: list[dict[str, str]] | None = None) -> str:
    pod = {
        "metadata": {"namespace": "team", "labels": {"leaderworkerset.sigs.k8s.io/name": "big"}},
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.0",
                    "command": ["vllm", "serve", "m", "-tp", "8", "--nnodes", "2"],
                    "env": vllm_env or [],
                    "resources": {"limits": {"nvidia.com/gpu": 8}},
                }
            ]
        },
    }
    got = plan_injection(
        pod, container="vllm", plan=PLAN, policy=spec, config=InjectionConfig(),
        workload_label=None,
    )  # fmt: skip
    assert isinstance(got, Injection)
    check = next(c for c in got.init_containers if c["name"] == "preflight-check")
    values = [e.get("value") for e in check["env"] if e["name"] == "PREFLIGHT_SOCKET_FALLBACK"]
    assert len(values) == 1, values  # one entry: the policy's, never a copied one beside it
    return str(values[0])


def test_the_injector_carries_the_policy_into_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    assert socket_env(PolicySpec()) == "warn"
    assert socket_env(PolicySpec(socket_fallback="Fail")) == "fail"
    # a value in the vLLM container's env (copied to the check) never overrides the policy
    tenant = [{"name": "PREFLIGHT_SOCKET_FALLBACK", "value": "warn"}]
    assert socket_env(PolicySpec(socket_fallback="Fail"), tenant) == "fail"
    # and the checker reads what the injector writes
    for spec, expected in ((PolicySpec(socket_fallback="Fail"), "fail"), (PolicySpec(), "warn")):
        monkeypatch.setenv("PREFLIGHT_SOCKET_FALLBACK", socket_env(spec))
        assert socket_action() == expected


def test_the_crd_takes_only_warn_or_fail() -> None:
    crd = yaml.safe_load(CRD.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    groups = spec["properties"]["groups"]
    fallback = groups["properties"]["socketFallback"]
    assert fallback["enum"] == ["Warn", "Fail"]
    assert fallback["default"] == "Warn"
    # unknown fields under spec.groups are pruned by the API server (a structural schema
    # may not set additionalProperties beside properties) and refused by strict kubectl
    assert set(groups["properties"]) == {"socketFallback"}
    assert "additionalProperties" not in groups
