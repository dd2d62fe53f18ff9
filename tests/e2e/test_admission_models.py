"""The model rules at admission on the local control plane: the operator reads model
configs from a modelConfigs ConfigMap (air-gapped clusters), and the webhook denies a
Deployment whose model cannot split over its TP, with vLLM's own words and the fix."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from preflight_dev import localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

CORPUS = Path(__file__).resolve().parents[1] / "data" / "models"
QWEN = "Qwen/Qwen2.5-0.5B-Instruct"  # 14 attention heads, 2 KV heads
CONFIG_MAP = "vllm-preflight-model-configs"


def deployment(name: str, namespace: str, model: str, tp: int) -> dict[str, Any]:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "command": ["vllm", "serve", model, "--tensor-parallel-size", str(tp)],
        "resources": {"limits": {"nvidia.com/gpu": tp}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [container],
                    "volumes": [
                        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}
                    ],
                },
            },
        },
    }


@pytest.fixture(scope="module")
def namespace(k8s: Cluster) -> str:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s)  # the PreflightPolicy kind
    name = k8s.create_namespace("adm-models", labels={constants.LABEL_INJECT: "enabled"})
    data = {QWEN.replace("/", "--") + ".json": (CORPUS / QWEN / "config.json").read_text()}
    k8s.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIG_MAP, "namespace": name},
            "data": data,
        },
        {
            "apiVersion": constants.API_VERSION,
            "kind": constants.POLICY_KIND,
            "metadata": {"name": "team-policy", "namespace": name},
            "spec": {"action": "Enforce"},
        },
    )
    return name


@pytest.fixture(scope="module")
def operator(
    k8s: Cluster, namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    workdir = tmp_path_factory.mktemp("models")
    config = workdir / "config.yaml"
    config.write_text(
        json.dumps({"models": {"configMap": CONFIG_MAP, "configMapNamespace": namespace}})
    )
    op = localoperator.start_with_webhooks(k8s, workdir, extra_args=["--config", str(config)])
    yield op
    localoperator.remove_webhooks(k8s)
    op.stop()


def apply(k8s: Cluster, obj: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    return k8s.kubectl("apply", *extra, "-f", "-", input=json.dumps(obj), check=False)


def test_model_that_cannot_split_over_tp_is_denied(
    k8s: Cluster, operator: OperatorProcess, namespace: str
) -> None:
    bad = deployment("qwen-tp4", namespace, QWEN, 4)
    # the reflector learns the ConfigMap from a watch: dry-run until the rule sees it
    wait_for(
        lambda: "model-tp-heads" in apply(k8s, bad, "--dry-run=server").stderr,
        what="the modelConfigs ConfigMap to reach the webhook",
    )
    denied = apply(k8s, bad)
    assert denied.returncode != 0
    assert "1. model-tp-heads:" in denied.stderr
    assert "Total number of attention heads (14) must be divisible by tensor parallel" in (
        denied.stderr
    )
    assert "--tensor-parallel-size" in denied.stderr  # the field at fault
    good = apply(k8s, deployment("qwen-tp2", namespace, QWEN, 2))
    assert good.returncode == 0, good.stderr
    assert "Warning:" not in good.stderr


def test_model_missing_from_the_config_map_is_admitted_quietly(
    k8s: Cluster, operator: OperatorProcess, namespace: str
) -> None:
    other = deployment("llama-tp3", namespace, "meta-llama/Meta-Llama-3.1-8B", 3)
    admitted = apply(k8s, other)
    # TP 3 does not divide Llama's 32 heads, but the model is unknown here: not judged
    assert admitted.returncode == 0, admitted.stderr
    assert "Warning:" not in admitted.stderr
