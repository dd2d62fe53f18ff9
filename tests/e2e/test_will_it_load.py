"""Issue 25 on the local control plane: a probe window too short for vLLM's start is
warned at admission (rule probe-window), and a pod whose Hub repo is gated, asked without
a token, reports the failure and its fix on the GPUValidation (check model-source), the
checker run as the kubelet would run it against a local Hub that answers as the real one
(preflight_dev.fakehub)."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_model_runtime import check_container, injected_pod, run_checker

from preflight_dev import fakekubelet, localoperator, localsetup
from preflight_dev.fakehub import FakeHub, FakeRepo
from preflight_dev.hubserver import CORPUS
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


def test_a_partial_copy_an_init_container_finishes_is_a_warning_not_a_denial(
    k8s: Cluster, namespace: str, tmp_path: Path
) -> None:
    """The pod of tests/data/realworld/tutorials/k8s-ai-gpt-oss-120b-a100.yaml: a `gsutil
    rsync` init container fills the model's volume, after the check. The API server keeps
    the injected PREFLIGHT_MODEL_WRITERS; the partial copy a preempted sync left fails the
    check without it and warns with it (the pod goes on, and the rsync finishes)."""
    models = tmp_path / "models"
    path = models / "Meta-Llama-3.1-8B"
    shutil.copytree(CORPUS / "meta-llama" / "Meta-Llama-3.1-8B", path)
    (path / "tokenizer.json").write_text("{}")
    index = {"metadata": {"total_size": 32},
             "weight_map": {"a": "model-00001-of-00002.safetensors",
                            "b": "model-00002-of-00002.safetensors"}}  # fmt: skip
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    header = b'{"w":{"dtype":"U8","shape":[16],"data_offsets":[0,16]}}'
    (path / "model-00001-of-00002.safetensors").write_bytes(
        len(header).to_bytes(8, "little") + header + bytes(16)
    )  # the second shard is not there yet
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"},
              {"name": "models", "mountPath": str(models)}]  # fmt: skip
    doc = deployment("rsync", namespace, command=["vllm", "serve", str(path)],
                     volumeMounts=mounts)  # fmt: skip
    spec = doc["spec"]["template"]["spec"]
    spec["volumes"].append({"name": "models", "emptyDir": {}})
    spec["initContainers"] = [
        {"name": "model-downloader", "image": "google/cloud-sdk:slim",
         "command": ["gsutil", "-m", "rsync", "-r", "gs://models/llama", "/dest/llama"],
         "volumeMounts": [{"name": "models", "mountPath": "/dest"}]},
    ]  # fmt: skip
    k8s.apply(doc)
    pod = injected_pod(k8s, namespace, "rsync")
    env = {e["name"]: e.get("value") for e in check_container(pod)["env"]}
    assert env["PREFLIGHT_MODEL_WRITERS"] == "model-downloader"

    alone = copy.deepcopy(pod)
    check = check_container(alone)
    check["env"] = [e for e in check["env"] if e["name"] != "PREFLIGHT_MODEL_WRITERS"]
    (tmp_path / "alone").mkdir()
    code, _, report = run_checker(alone, tmp_path / "alone")
    source = {c["id"]: c for c in report["checks"]}["model-source"]
    assert source["status"] == "fail", source["message"]
    assert code == 1

    (tmp_path / "written").mkdir()
    code, _, report = run_checker(pod, tmp_path / "written")
    source = {c["id"]: c for c in report["checks"]}["model-source"]
    assert source["status"] == "warn", source["message"]
    assert "init container model-downloader" in source["message"]
    assert "model-00002-of-00002.safetensors" in source["message"]
    assert code == 0, report
