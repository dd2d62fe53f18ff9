"""Finding vLLM in a container: command forms, shells, $(VAR) expansion, env sources."""

from __future__ import annotations

from typing import Any

import pytest
from test_rules_support import (
    check,
    config_map,
    deployment,
    finding,
    ids,
    one,
    pod_spec,
    vllm,
)

from preflight_operator.core.rules.kubeenv import expand


def tp_of(container: dict[str, Any], *related: dict[str, Any]) -> int | None:
    results = check(deployment(pod_spec(container)), *related)
    assert len(results) == 1, [r.to_dict() for r in results]
    plan = results[0].plan
    return plan.tp if plan is not None else None


@pytest.mark.parametrize(
    ("command", "args"),
    [
        (["vllm", "serve", "m", "-tp", "4"], None),  # joined in command
        (["vllm"], ["serve", "m", "-tp", "4"]),  # split
        (["vllm", "serve"], ["m", "-tp", "4"]),
        (["/usr/local/bin/vllm", "serve", "m", "--tensor-parallel-size=4"], None),
        (["python3", "-m", "vllm.entrypoints.openai.api_server"], ["--model", "m", "-tp", "4"]),
        (["python", "-u", "-m", "vllm.entrypoints.openai.api_server", "--model=m", "-tp=4"], None),
        (
            ["/opt/venv/bin/python3.12", "-m", "vllm.entrypoints.cli.main", "serve", "m"],
            ["-tp", "4"],
        ),
        (["tini", "--", "vllm", "serve", "m", "-tp", "4"], None),
        (["env", "HF_HOME=/cache", "vllm", "serve", "m", "-tp", "4"], None),
        (["sh", "-c", "vllm serve m -tp 4"], None),
        (["/bin/bash", "-c"], ["exec vllm serve m -tp 4"]),
        (["bash", "-ec", "pip install x && exec vllm serve m \\\n  -tp 4"], None),
        (["bash", "-lc", "set -x; cd /app\n# start\nvllm serve m -tp 4 --port 8000 &\nwait"], None),
        (["sh", "-c", 'vllm serve "$@"', "--", "m", "-tp", "4"], None),  # $0 is --
        (["sh", "-c", "TP=4; vllm serve m -tp $TP"], None),
        (["sh", "-c", "export TP=4 && vllm serve m -tp ${TP}"], None),
        (["sh", "-c", "if true; then vllm serve m -tp 4; fi"], None),
        (
            ["bash", "-c", "nohup python3 -m vllm.entrypoints.openai.api_server --model m -tp 4"],
            None,
        ),
        (["sh", "-c", "bash -c 'vllm serve m -tp 4'"], None),  # nested shells
        (["sh", "-o", "pipefail", "-c", "vllm serve m -tp 4"], None),
    ],
)
def test_command_forms(command: list[str], args: list[str] | None) -> None:
    container = vllm(gpus=4, command=command)
    container["args"] = args if args is not None else []
    assert tp_of(container) == 4


def test_image_entrypoint_with_args_only() -> None:
    container = vllm("m", "-tp", "4", command=None, gpus=4)
    result = one(deployment(pod_spec(container)))
    assert result.plan is not None
    assert result.plan.tp == 4
    container = vllm("m", "-tp", "4", command=None, gpus=4, image="ghcr.io/acme/server:1")
    assert check(deployment(pod_spec(container))) == []  # unknown entrypoint: not vLLM


@pytest.mark.parametrize(
    "command",
    [
        ["ray", "start", "--head", "--block"],
        ["python3", "server.py", "--tensor-parallel-size", "4"],
        ["sh", "-c", "echo vllm serve is great"],
        ["bash", "/scripts/start.sh"],  # a file we cannot see
        ["vllm", "chat"],
        [],
    ],
)
def test_not_vllm(command: list[str]) -> None:
    container = vllm(command=command, image="busybox")
    assert check(deployment(pod_spec(container))) == []


def test_first_vllm_command_of_a_script_is_used() -> None:
    script = "vllm serve a -tp 2 --headless & vllm serve b -tp 4"
    assert tp_of(vllm(gpus=4, command=("sh", "-c", script))) == 2


# -- $(VAR) --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)", "1"),
        ("x$(A)y$(B)z", "x1y2z"),
        ("$$(A)", "$(A)"),  # escaped
        ("$$$(A)", "$1"),
        ("$(MISSING)", "$(MISSING)"),  # undefined: left as is
        ("$(A", "$(A"),  # incomplete
        ("$A", "$A"),  # not a reference for Kubernetes
        ("a$", "a$"),
        ("$", "$"),
        ("$()", "$()"),
        ("$(A)$(A)", "11"),
    ],
)
def test_kubelet_expansion(text: str, expected: str) -> None:
    values = {"A": "1", "B": "2"}
    assert expand(text, values.get) == expected


def test_env_values_expand_earlier_variables_only() -> None:
    env = [
        {"name": "LATER_REF", "value": "$(TP)"},  # TP is not defined yet: stays literal
        {"name": "TP", "value": "4"},
        {"name": "TP2", "value": "$(TP)"},
    ]
    assert tp_of(vllm("m", "-tp", "$(TP2)", gpus=4, env=env)) == 4
    result = one(deployment(pod_spec(vllm("m", "-tp", "$(LATER_REF)", gpus=4, env=env))))
    assert "vllm-args-invalid" in ids(result)


def test_env_from_configmap_key_and_envfrom_prefix() -> None:
    cm = config_map("par", {"tp": "4", "TP": "2"})
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "par", "key": "tp"}}}]
    assert tp_of(vllm("m", "-tp", "$(X)", gpus=4, env=env), cm) == 4
    container = vllm("m", "-tp", "$(P_TP)", gpus=2)
    container["envFrom"] = [{"configMapRef": {"name": "par"}, "prefix": "P_"}]
    assert tp_of(container, cm) == 2


def test_env_overrides_envfrom() -> None:
    cm = config_map("par", {"TP": "2"})
    container = vllm("m", "-tp", "$(TP)", gpus=4, env=[{"name": "TP", "value": "4"}])
    container["envFrom"] = [{"configMapRef": {"name": "par"}}]
    assert tp_of(container, cm) == 4


def test_configmap_outside_the_set_is_unresolved() -> None:
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "par", "key": "tp"}}}]
    result = one(deployment(pod_spec(vllm("m", "-tp", "$(X)", gpus=4, env=env))))
    assert ids(result) == ["plan-unresolved"]


def test_envfrom_secret_makes_every_name_possible() -> None:
    container = vllm("m", "-tp", "$(TP)", gpus=4)
    container["envFrom"] = [{"secretRef": {"name": "s"}}]
    assert ids(one(deployment(pod_spec(container)))) == ["plan-unresolved"]


def test_shell_variable_from_the_pod_env() -> None:
    env = [{"name": "TP", "value": "4"}]
    assert tp_of(vllm(gpus=4, env=env, command=("sh", "-c", "vllm serve m -tp $TP"))) == 4


def test_shell_variable_unknown_is_unresolved() -> None:
    result = one(deployment(pod_spec(vllm(gpus=4, command=("sh", "-c", "vllm serve m -tp $TP")))))
    assert ids(result) == ["plan-unresolved"]
    assert finding(result, "plan-unresolved").field.endswith("command[2]")


def test_shell_default_value() -> None:
    assert tp_of(vllm(gpus=4, command=("sh", "-c", "vllm serve m -tp ${TP:-4}"))) == 4


def test_downward_api_namespace() -> None:
    env = [{"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]
    result = one(deployment(pod_spec(vllm("m", "--served-model-name", "$(NS)", gpus=1, env=env))))
    assert result.findings == ()
