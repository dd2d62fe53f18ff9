"""Issue 25 on the local control plane: a probe window too short for vLLM's start is
warned at admission (rule probe-window), and a pod whose Hub repo is gated, asked without
a token, reports the failure and its fix on the GPUValidation (check model-source), the
checker run as the kubelet would run it against a local Hub that answers as the real one
(preflight_dev.fakehub)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_model_runtime import check_container, injected_pod, run_checker

from preflight_dev import fakekubelet, localoperator, localsetup
from preflight_dev.fakehub import FakeHub, FakeRepo
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

GATED = "acme/gated-llm"


def deployment(name: str, namespace: str, **container: Any) -> dict[str, Any]:
    vllm = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "resources": {"limits": {"nvidia.com/gpu": 1}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
        **container,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [vllm],
                    "volumes": [
                        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}},
                        {"name": "hf-cache", "emptyDir": {}},
                    ],
                },
            },
        },
    }


@pytest.fixture(scope="module")
def operator(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s)
    op = localoperator.start_with_webhooks(k8s, tmp_path_factory.mktemp("will-it-load"))
    yield op
    localoperator.remove_webhooks(k8s)
    op.stop()


@pytest.fixture(scope="module")
def namespace(k8s: Cluster, operator: OperatorProcess) -> Iterator[str]:
    name = k8s.create_namespace("will-it-load", labels={constants.LABEL_INJECT: "enabled"})
    yield name
    k8s.delete_namespace(name)


def apply(k8s: Cluster, obj: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return k8s.kubectl("apply", "-f", "-", input=json.dumps(obj), check=False)


def test_a_probe_window_too_short_for_the_start_is_warned_at_admission(
    k8s: Cluster, namespace: str
) -> None:
    # Kubernetes' probe defaults: killed after 3 x 10 s, before vLLM's engine is even up
    liveness = {"httpGet": {"path": "/health", "port": 8000}}
    doc = deployment("short-probe", namespace, command=["vllm", "serve", "acme/llm"],
                     livenessProbe=liveness)  # fmt: skip
    result = apply(k8s, doc)
    assert result.returncode == 0, result.stderr  # a warning admits
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert warnings, result.stderr
    assert warnings[0].startswith(
        "Warning: vllm-preflight warn: probe-window: the livenessProbe kills the container "
        "after 30 s"
    )

    def static() -> dict[str, Any] | None:
        got = k8s.kubectl("get", "gpuval", "deployment-short-probe", "-n", namespace,
                          "-o", "json", check=False)  # fmt: skip
        if got.returncode != 0:
            return None
        status: dict[str, Any] = json.loads(got.stdout).get("status") or {}
        return status if status.get("staticVerdict") not in (None, "unknown") else None

    status = wait_for(static, what="the static result of the short-probe Deployment")
    assert status["staticVerdict"] == "warn"
    (finding,) = [f for f in status["static"]["findings"] if f["id"] == "probe-window"]
    assert "startupProbe" in finding["fix"]

    # the fix the finding gives, applied: a startupProbe long enough says nothing more
    startup = {**liveness, "periodSeconds": 10, "failureThreshold": 30}
    fixed = deployment("long-probe", namespace, command=["vllm", "serve", "acme/llm"],
                       livenessProbe=liveness, startupProbe=startup)  # fmt: skip
    result = apply(k8s, fixed)
    assert result.returncode == 0, result.stderr
    assert "probe-window" not in result.stderr


def test_a_gated_repo_without_a_token_reports_the_failure_and_fix_on_the_gpuvalidation(
    k8s: Cluster, namespace: str, tmp_path: Path
) -> None:
    repo = FakeRepo(
        {"config.json": b'{"model_type": "llama"}', "model.safetensors": 1_000_000,
         "tokenizer.json": b"{}"},
        gated="manual",
        tokens=frozenset({"hf_has_access"}),
    )  # fmt: skip
    with FakeHub({GATED: repo}) as hub:
        env = [{"name": "HF_ENDPOINT", "value": hub.url}, {"name": "HF_HOME", "value": "/data/hf"}]
        mounts = [{"name": "dshm", "mountPath": "/dev/shm"},
                  {"name": "hf-cache", "mountPath": "/data/hf"}]  # fmt: skip
        doc = deployment("gated", namespace, command=["vllm", "serve", GATED], env=env,
                         volumeMounts=mounts)  # fmt: skip
        k8s.apply(doc)
        pod = injected_pod(k8s, namespace, "gated")
        assert {e["name"] for e in check_container(pod)["env"]} >= {"HF_ENDPOINT", "HF_HOME"}
        code, message, report = run_checker(pod, tmp_path)
        assert any(method == "HEAD" and "/resolve/" in path for method, path in hub.requests)
    checks = {c["id"]: c for c in report["checks"]}
    source = checks["model-source"]
    assert source["status"] == "fail"
    assert "gated repo and HF_TOKEN is not set" in source["message"]
    assert code == 1  # the default policy enforces: the pod would stay in Init:Error
    status = fakekubelet.pod_status(pod, exit_code=code, message=message)
    k8s.kubectl(
        "patch", "pod", pod["metadata"]["name"], "-n", namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip

    def runtime() -> dict[str, Any] | None:
        got = k8s.kubectl("get", "gpuval", "deployment-gated", "-n", namespace, "-o", "json",
                          check=False)  # fmt: skip
        if got.returncode != 0:
            return None
        found: dict[str, Any] = json.loads(got.stdout).get("status") or {}
        return found if found.get("runtimeVerdict") not in (None, "pending") else None

    gpuval = wait_for(runtime, what="the runtime result in the GPUValidation")
    assert gpuval["runtimeVerdict"] == "fail"
    (entry,) = gpuval["runtime"]["pods"]
    assert entry["reason"] == "model-source"
    (failure,) = [f for f in entry["failures"] if f["id"] == "model-source"]
    assert "HF_TOKEN" in failure["message"]
    assert "secretKeyRef" in failure["remediation"]
