"""The runtime model checks of an injected pod on the local control plane.

The webhook gives the injected preflight-check what the model checks need: the vLLM
command line as the rules read it (PREFLIGHT_VLLM_ARGS), the vLLM container's env
(HF_ENDPOINT, HF_TOKEN) and, read-only, its mounts that hold the model or the Hugging
Face cache. The test reads the STORED pod (what the API server kept after every
admission plugin), then plays the kubelet: the real checker runs with that container's
env over the fake GPU driver (as the demo does), the model comes from a local Hub
stand-in at the pod's HF_ENDPOINT, and its result reaches the GPUValidation under the
same rule id lint gives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev import fakekubelet, localoperator, localsetup
from preflight_dev.hubserver import HubServer
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, find_bin_dir, wait_for
from preflight_operator.cli import lint
from preflight_operator.core import constants

CORPUS = Path(__file__).resolve().parents[1] / "data" / "models"
CHART = Path(__file__).resolve().parents[2] / "charts" / "vllm-preflight"
QWEN = "Qwen/Qwen2.5-0.5B-Instruct"  # 14 attention heads: TP 4 cannot split them
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


def deployment(name: str, namespace: str, hub_url: str, tp: int) -> dict[str, Any]:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "command": ["vllm", "serve", QWEN, "--tensor-parallel-size", str(tp)],
        "env": [
            {"name": "HF_ENDPOINT", "value": hub_url},
            {"name": "HF_HOME", "value": "/data/hf"},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        ],
        "resources": {"limits": {"nvidia.com/gpu": tp}},
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "hf-cache", "mountPath": "/data/hf"},
            {"name": "logs", "mountPath": "/var/log/vllm"},
        ],
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
                    "containers": [container],
                    "volumes": [
                        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}},
                        {"name": "hf-cache", "emptyDir": {}},
                        {"name": "logs", "emptyDir": {}},
                    ],
                },
            },
        },
    }


@pytest.fixture(scope="module")
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        yield server


@pytest.fixture(scope="module")
def operator(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s)
    # No model configs: admission does not know the model (an info finding), so the pod
    # is admitted and only the runtime check can judge it.
    op = localoperator.start_with_webhooks(k8s, tmp_path_factory.mktemp("model-runtime"))
    yield op
    localoperator.remove_webhooks(k8s)
    op.stop()


@pytest.fixture(scope="module")
def namespace(k8s: Cluster, operator: OperatorProcess) -> Iterator[str]:
    name = k8s.create_namespace("model-runtime", labels={constants.LABEL_INJECT: "enabled"})
    yield name
    k8s.delete_namespace(name)


def injected_pod(k8s: Cluster, namespace: str, app: str) -> dict[str, Any]:
    def pods() -> list[dict[str, Any]]:
        out = k8s.kubectl(
            "get", "pods", "-n", namespace, "-l", f"app={app},{constants.INJECTED_POD_SELECTOR}",
            "-o", "json",
        ).stdout  # fmt: skip
        items: list[dict[str, Any]] = json.loads(out)["items"]
        return items

    found: list[dict[str, Any]] = wait_for(pods, what=f"the injected pod of {app}")
    return found[0]


def check_container(pod: dict[str, Any]) -> dict[str, Any]:
    (check,) = [c for c in pod["spec"]["initContainers"] if c["name"] == constants.CHECK_CONTAINER]
    return check


def run_checker(pod: dict[str, Any], workdir: Path) -> tuple[int, str, dict[str, Any]]:
    """What a kubelet would run: the checker with the stored container's literal env
    (valueFrom entries need a kubelet) over a fake view of the pod's GPUs."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir)}
    env.update(fakekubelet.check_env(pod))
    env.pop("TMPDIR", None)  # /preflight exists in the pod, not here
    log = workdir / "termination-log"
    report = workdir / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "preflight_dev.demo.fakecheck",
         "--gpus", str(fakekubelet.check_gpus(pod)),
         "--shm-bytes", str(fakekubelet.check_shm_bytes(pod)),
         "--", "--termination-log", str(log), "--json", str(report)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert log.exists(), result.stderr[-3000:]
    return result.returncode, log.read_text(), json.loads(report.read_text())


def test_the_injected_check_gets_the_command_line_env_and_model_mounts(
    k8s: Cluster,
    namespace: str,
    hub: HubServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    k8s.apply(deployment("qwen-tp4", namespace, hub.url, 4))
    pod = injected_pod(k8s, namespace, "qwen-tp4")
    check = check_container(pod)
    env = {e["name"]: e for e in check["env"]}
    assert env["PREFLIGHT_VLLM_ARGS"]["value"] == f"vllm serve {QWEN} --tensor-parallel-size 4"
    assert env["PREFLIGHT_TP"]["value"] == "4"
    assert env["HF_ENDPOINT"]["value"] == hub.url  # the vLLM container's, kept
    assert env["HF_TOKEN"]["valueFrom"] == {"secretKeyRef": {"name": "hf", "key": "token"}}
    mounts = {m["mountPath"]: m for m in check["volumeMounts"]}
    assert mounts["/data/hf"] == {"name": "hf-cache", "mountPath": "/data/hf", "readOnly": True}
    assert mounts["/dev/shm"]["name"] == "dshm"
    assert "/var/log/vllm" not in mounts  # only what holds the model or the cache
    assert mounts[TOKEN_PATH]["name"] == "preflight-no-token"  # never an API token
    vllm = next(c for c in pod["spec"]["containers"] if c["name"] == "vllm")
    (vllm_cache,) = [m for m in vllm["volumeMounts"] if m["name"] == "hf-cache"]
    assert "readOnly" not in vllm_cache  # vLLM's own mount is untouched

    # The kubelet's part: run the check, write its outcome to the pod's status.
    code, message, report = run_checker(pod, tmp_path)
    checks = {c["id"]: c for c in report["checks"]}
    assert checks["model-config-unknown"]["status"] == "pass"
    assert hub.url in checks["model-config-unknown"]["message"]
    assert checks["model-tp-heads"]["status"] == "fail"
    assert "must be divisible by tensor parallel size (4)" in checks["model-tp-heads"]["message"]
    assert code == 1  # the default policy enforces: the pod would stay in Init:Error
    status = fakekubelet.pod_status(pod, exit_code=code, message=message)
    k8s.kubectl(
        "patch", "pod", pod["metadata"]["name"], "-n", namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip

    def runtime() -> dict[str, Any] | None:
        got = k8s.kubectl(
            "get", "gpuval", "deployment-qwen-tp4", "-n", namespace, "-o", "json", check=False
        )
        if got.returncode != 0:
            return None
        status = json.loads(got.stdout).get("status") or {}
        return status if status.get("runtimeVerdict") not in (None, "pending") else None

    gpuval = wait_for(runtime, what="the runtime result in the GPUValidation")
    assert gpuval["runtimeVerdict"] == "fail"
    (entry,) = gpuval["runtime"]["pods"]
    assert entry["reason"] == "model-tp-heads"
    assert "model-tp-heads" in [f["id"] for f in entry.get("failures", [])]

    # lint, given the same config, names the same rule
    manifest = tmp_path / "qwen.json"
    manifest.write_text(json.dumps(deployment("qwen-tp4", namespace, hub.url, 4)))
    capsys.readouterr()
    assert lint.main(["--model-config", str(CORPUS), "--format", "json", str(manifest)]) == 1
    (linted,) = json.loads(capsys.readouterr().out)["results"]
    assert [(f["id"], f["severity"]) for f in linted["findings"]] == [("model-tp-heads", "fail")]


def test_a_pod_whose_model_fits_passes_the_model_checks(
    k8s: Cluster, namespace: str, hub: HubServer, tmp_path: Path
) -> None:
    k8s.apply(deployment("qwen-tp2", namespace, hub.url, 2))
    pod = injected_pod(k8s, namespace, "qwen-tp2")
    code, _, report = run_checker(pod, tmp_path)
    checks = {c["id"]: c for c in report["checks"]}
    model = {k: v["status"] for k, v in checks.items() if k.startswith("model-")}
    assert model["model-tp-heads"] == model["model-weights-fit"] == "pass"
    assert "fail" not in model.values()
    assert code == 0


def test_the_charts_role_lets_the_operator_read_its_model_config_map_and_no_other(
    k8s: Cluster,
) -> None:
    """The chart's models.configMap Role, as rendered, on the real API server: the list and
    watch the operator makes (field selector metadata.name=<name>, main.py) and a get are
    allowed; any other ConfigMap, or all of them, are not."""
    if not k8s.is_local:
        pytest.skip("needs the local control plane")
    ns = k8s.create_namespace("model-rbac")
    try:
        rendered = subprocess.run(
            [str(find_bin_dir() / "helm"), "template", "vllm-preflight", str(CHART),
             "--namespace", ns, "--set", "models.configMap=model-configs",
             "--show-only", "templates/models-rbac.yaml"],
            capture_output=True, text=True, timeout=120, check=True,
        ).stdout  # fmt: skip
        k8s.apply(
            {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": "vllm-preflight", "namespace": ns}},
            *(doc for doc in yaml.safe_load_all(rendered) if doc),
            *({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": ns},
               "data": {"k": "v"}} for n in ("model-configs", "other")),
        )  # fmt: skip
        who = f"system:serviceaccount:{ns}:vllm-preflight"
        base = f"/api/v1/namespaces/{ns}/configmaps"

        def allowed(path: str) -> bool:
            got = k8s.kubectl("get", "--raw", path, "--as", who, check=False)
            assert got.returncode == 0 or "forbidden" in got.stderr.lower(), got.stderr
            return got.returncode == 0

        selected = f"{base}?fieldSelector=metadata.name%3Dmodel-configs"
        assert wait_for(lambda: allowed(selected), what="the RoleBinding to take effect")
        listed = json.loads(k8s.kubectl("get", "--raw", selected, "--as", who).stdout)
        assert [i["metadata"]["name"] for i in listed["items"]] == ["model-configs"]
        assert allowed(f"{selected}&watch=true&timeoutSeconds=1")
        assert allowed(f"{base}/model-configs")
        assert not allowed(f"{base}/other")
        assert not allowed(base)
        assert not allowed(f"{base}?fieldSelector=metadata.name%3Dother")
        assert not allowed(f"/api/v1/namespaces/{ns}/secrets")
    finally:
        k8s.delete_namespace(ns)
