"""Admission never passes silently what it could not judge (issue 35): under the default
Enforce policy, a Deployment whose vLLM command line is built at run time (the issue's
measured case: `set --` ... `exec vllm "$@"`, env from a ConfigMap not in the cluster) is
admitted with a warning that names what was not read, on a real API server calling the
real webhook; a client of vLLM (`curl http://vllm:8000`) is admitted without one."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from preflight_dev import localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster
from preflight_operator.core import constants

SCRIPT = """\
set -- serve "$MODEL" --tensor-parallel-size 2
if [ -n "$MAX_LEN" ]; then set -- "$@" --max-model-len "$MAX_LEN"; fi
exec vllm "$@"
"""


@pytest.fixture(scope="module")
def operator(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s)
    op = localoperator.start_with_webhooks(k8s, tmp_path_factory.mktemp("webhook-unjudged"))
    yield op
    localoperator.remove_webhooks(k8s)
    op.stop()


@pytest.fixture
def namespace(k8s: Cluster) -> Iterator[str]:
    name = k8s.create_namespace("unjudged", labels={constants.LABEL_INJECT: "enabled"})
    yield name
    k8s.delete_namespace(name)


def deployment(name: str, container: dict[str, Any], namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container]},
            },
        },
    }


def apply(cluster: Cluster, obj: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", "-f", "-", input=json.dumps(obj), check=False)


def test_an_unreadable_vllm_is_admitted_with_a_warning_that_says_so(
    k8s: Cluster, operator: OperatorProcess, namespace: str
) -> None:
    # accelerate launch: its process count is in a config file, the launcher is named unread
    container = {
        "name": "vllm",
        "image": "python:3.12-slim",
        "envFrom": [{"configMapRef": {"name": "vllm-settings"}}],
        "command": ["accelerate", "launch", "-m", "vllm.entrypoints.cli.main", "serve", "m",
                    "--tensor-parallel-size", "2"],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }  # fmt: skip
    result = apply(k8s, deployment("unread", container, namespace))
    assert result.returncode == 0, result.stderr  # a warning, never a denial
    assert "Warning: vllm-preflight warn: vllm-command-unparsed" in result.stderr, result.stderr
    assert "accelerate" in result.stderr


def test_the_issues_built_argv_is_now_read_and_denied(
    k8s: Cluster, operator: OperatorProcess, namespace: str
) -> None:
    """The issue's measured case (`set --` ... an `if` appending to "$@" ... `exec vllm
    "$@"`, envFrom of a ConfigMap not in the cluster) was "no vLLM workloads found"; the
    shell reader now merges "$@" word by word, so TP 2 on one GPU is literal: denied."""
    container = {
        "name": "vllm",
        "image": "python:3.12-slim",
        "envFrom": [{"configMapRef": {"name": "vllm-settings"}}],
        "command": ["bash", "-c", SCRIPT],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    result = apply(k8s, deployment("built", container, namespace))
    assert result.returncode != 0, result.stdout
    assert "gpu-count-too-low" in result.stderr, result.stderr


def test_a_client_of_vllm_is_admitted_silently(
    k8s: Cluster, operator: OperatorProcess, namespace: str
) -> None:
    container = {
        "name": "client",
        "image": "curlimages/curl:8.10.1",
        "command": ["sh", "-c", "until curl -sf http://vllm:8000/health; do sleep 2; done"],
    }
    result = apply(k8s, deployment("client", container, namespace))
    assert result.returncode == 0, result.stderr
    assert "vllm-preflight" not in result.stderr, result.stderr
