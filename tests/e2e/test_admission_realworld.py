"""Admission behaves as `lint` does on what users really write (issue: real-world vLLM
manifests): under the default Enforce policy a TPU Deployment, a Deployment whose GPUs
come through DRA and a LeaderWorkerSet whose sizes are shell arithmetic are admitted, and
`args: [serve, MODEL]` on the vLLM image (`vllm serve serve MODEL`) is denied."""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev import localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

CORPUS = Path(__file__).resolve().parents[1] / "data" / "realworld"


@pytest.fixture(scope="module")
def operator(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s)
    op = localoperator.start_with_webhooks(k8s, tmp_path_factory.mktemp("webhook-rw"))
    yield op
    localoperator.remove_webhooks(k8s)
    op.stop()


@pytest.fixture
def namespace(k8s: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    name = k8s.create_namespace(
        f"rw-{request.node.name[5:20].replace('_', '-')}",
        labels={constants.LABEL_INJECT: "enabled"},
    )
    yield name
    k8s.delete_namespace(name)


def corpus_object(rel: str, kind: str) -> dict[str, Any]:
    docs = yaml.safe_load_all((CORPUS / rel).read_text())
    found: dict[str, Any] = next(d for d in docs if isinstance(d, dict) and d.get("kind") == kind)
    return copy.deepcopy(found)


def apply(
    cluster: Cluster, obj: dict[str, Any], namespace: str
) -> subprocess.CompletedProcess[str]:
    body = copy.deepcopy(obj)
    body["metadata"]["namespace"] = namespace
    return cluster.kubectl("apply", "-f", "-", input=json.dumps(body), check=False)


def test_a_tpu_deployment_is_admitted_under_enforce(
    k8s: Cluster, operator: OperatorProcess, namespace: str
) -> None:
    tpu = corpus_object("gke/vllm-tpu-llama3-70b.yaml", "Deployment")
    # the sample's placeholder, which the API server rejects (as its README says to fill)
    tpu["spec"]["template"]["spec"].pop("serviceAccountName", None)
    result = apply(k8s, tpu, namespace)
    assert result.returncode == 0, result.stderr
    assert "nvidia.com/gpu" not in result.stderr


def dra_deployment(name: str, tp: int, template: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": template}],
                    "containers": [
                        {
                            "name": "vllm",
                            # the first release whose ENTRYPOINT is `vllm serve` (before,
                            # the api_server module refuses the positional model)
                            "image": "vllm/vllm-openai:v0.11.1",
                            "args": ["m", "--tensor-parallel-size", str(tp)],
                            "resources": {"claims": [{"name": "gpus"}]},
                            "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                        }
                    ],
                    "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
                },
            },
        },
    }


def test_dra_devices_are_counted_at_admission(
    k8s: Cluster, operator: OperatorProcess, namespace: str
) -> None:
    # unknown template: the count is unknown, which admits (with a warning), never denies
    early = apply(k8s, dra_deployment("dra-early", 2, "two-gpus"), namespace)
    assert early.returncode == 0, early.stderr
    assert "plan-unresolved" in early.stderr
    k8s.apply({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "two-gpus", "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}
        ]}}},
    })  # fmt: skip
    too_many = dra_deployment("dra-tp4", 4, "two-gpus")

    def denied() -> subprocess.CompletedProcess[str] | None:
        body = copy.deepcopy(too_many)
        body["metadata"]["namespace"] = namespace
        r = k8s.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(body), check=False)
        return r if r.returncode != 0 else None

    result = wait_for(denied, what="the ResourceClaimTemplate to reach the webhook's cache")
    assert "gpu-count-too-low" in result.stderr
    assert "resources.claims[0]" in result.stderr
    good = apply(k8s, dra_deployment("dra-tp2", 2, "two-gpus"), namespace)
    assert good.returncode == 0, good.stderr
    assert "Warning:" not in good.stderr


def test_a_leaderworkerset_with_shell_arithmetic_is_admitted(
    k8s: Cluster, operator: OperatorProcess, namespace: str
) -> None:
    lws = corpus_object("llm-d/wide-ep-lws-decode.yaml", "LeaderWorkerSet")
    result = apply(k8s, lws, namespace)
    assert result.returncode == 0, result.stderr


def test_a_secret_sized_dp_is_admitted_with_a_warning(
    k8s: Cluster, operator: OperatorProcess, namespace: str
) -> None:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.1",
        "args": ["m", "-dp", "$(DP)", "-dpl", "8"],
        "env": [{"name": "DP", "valueFrom": {"secretKeyRef": {"name": "sizes", "key": "dp"}}}],
        "resources": {"limits": {"nvidia.com/gpu": 8}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    deployment = dra_deployment("secret-dp", 1, "unused")
    spec = deployment["spec"]["template"]["spec"]
    spec["containers"] = [container]
    del spec["resourceClaims"]
    result = apply(k8s, deployment, namespace)
    assert result.returncode == 0, result.stderr
    assert "plan-unresolved" in result.stderr


def test_serve_twice_is_denied_with_the_fix(
    k8s: Cluster, operator: OperatorProcess, namespace: str
) -> None:
    deployment = dra_deployment("serve-serve", 1, "unused")
    spec = deployment["spec"]["template"]["spec"]
    del spec["resourceClaims"]
    spec["containers"][0]["args"] = ["serve", "meta-llama/Llama-3.1-8B-Instruct"]
    spec["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    result = apply(k8s, deployment, namespace)
    assert result.returncode != 0
    assert "vllm-args-invalid" in result.stderr
    assert "unrecognized arguments: meta-llama/Llama-3.1-8B-Instruct" in result.stderr
    assert "drop `serve` from args" in result.stderr
