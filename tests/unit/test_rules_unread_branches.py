"""Every "cannot read" branch of the readers ends in a finding (issue 35 item 3): where
rules.command.find_invocation returns nothing or an Unparsed, where a kind's field is not
read (engine._unread), where a kind's pod template cannot be read, where the rules crash,
a container that launches vLLM is named as not judged, with a finding that says why.
Silence is a bypass: a CI gate and admission read an absent result as clean."""

from __future__ import annotations

from typing import Any

import pytest
from test_rules_support import check, deployment, pod_spec, vllm
from test_rules_yaml_aliases import BOMB, ray_service

from preflight_operator.core.rules import UNJUDGED, WARN, ContainerResult
from preflight_operator.core.rules import engine as engine_module
from preflight_operator.core.rules.command import Unparsed, find_invocation
from preflight_operator.core.rules.kubeenv import build_env, no_config_map

GRPC = ["python3", "-m", "vllm.entrypoints.grpc_server"]


def _reader(container: dict[str, Any]) -> object:
    env = build_env(container, "c", namespace=None, config_map=no_config_map)
    return find_invocation(container, "c", env)


# (branch, container): each reaches the named branch of find_invocation
BRANCHES: list[tuple[str, dict[str, Any]]] = [
    ("command not a list", vllm(command=None, image="vllm/vllm-openai:v0.11.0")
     | {"command": "vllm serve m --tensor-parallel-size 2"}),
    ("args not a list", vllm(command=["vllm"]) | {"args": "serve m"}),
    ("args only, no hint", vllm("--port", "8000", command=None, image="vllm/vllm-tpu:nightly")),
    ("no command found", vllm("--model", "m", command=GRPC)),
    ("script does not parse", vllm(command=["sh", "-c", "vllm serve 'm --tensor-parallel-size 2"])),
    ("suspected", vllm("--model", "m", "--tensor-parallel-size", "2", command=None,
                       image="ghcr.io/acme/vllm-custom:1")),
]  # fmt: skip


def _assert_named(results: list[ContainerResult]) -> None:
    assert results, "a recognised vLLM container produced no result"
    for result in results:
        assert result.verdict == UNJUDGED, result
        assert result.unjudged
        assert result.findings
        for finding in result.findings:
            assert finding.severity == WARN  # never a denial: nothing was read to deny on
            assert finding.message
            assert finding.field


@pytest.mark.parametrize(("branch", "container"), BRANCHES, ids=[b for b, _ in BRANCHES])
def test_each_branch_of_find_invocation_ends_in_a_finding(
    branch: str, container: dict[str, Any]
) -> None:
    found = _reader(container)
    assert found is None or isinstance(found, Unparsed), (branch, found)  # the branch is hit
    _assert_named(check(deployment(pod_spec(container))))


def test_a_field_not_read_ends_in_a_finding() -> None:
    config = BOMB + "applications:\n- args: {llm_configs: [{engine_kwargs: {x: *i}}]}\n"
    results = [r for r in check(ray_service(config)) if r.container == "serve"]
    _assert_named(results)


def test_a_template_not_read_ends_in_a_finding() -> None:
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "llama", "namespace": "ns"},
        "spec": {"predictor": {"model": {"modelFormat": {"name": "vllm"}, "runtime": "rt"}}},
    }
    _assert_named(check(isvc))


def test_a_crash_ends_in_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(engine_module, "pod_templates", crash)
    (result,) = check(deployment(pod_spec(vllm("m", gpus=1))))
    assert result.verdict == UNJUDGED
    assert result.findings[0].id == "rules-internal-error"
