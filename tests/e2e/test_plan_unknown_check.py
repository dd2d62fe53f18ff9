"""A vLLM pod whose command line the rules cannot read still gets the check (issue 35
item 3, issue 36 item 3), through the real API server and webhooks, under the default
policy (Enforce), in an opted-in namespace:

- `accelerate launch -m vllm.entrypoints.cli.main serve m --tensor-parallel-size $(TP)`:
  a launcher the rules name as unread. The pod is admitted with the rules' warning and
  injected with the plan unknown;
  the real checker, run on the env the kubelet would give its container over a fake GPU
  view, validates the GPUs without comparing their count and warns so (exit 0); its
  result reaches the GPUValidation, which says "plan unknown" and carries it.
- `vllm serve m --tensor-parallel-size $(TP)` with TP from a Secret: the rules read the
  words but not the size. The checker recovers the plan from the kubelet's value, uses
  it, and the GPUValidation names the plan recovered at runtime.

Before: both pods were admitted with no check at all (injection Skip "undecided").
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from test_operator_results import INJECT, conditions, gpuval, play_kubelet

from preflight_contract import envnames
from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check
from preflight_dev.fakekubelet import container_env
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.workloads import get_json
from preflight_operator.core import constants
from preflight_operator.core.workloads import gpuvalidation_name

SECRET_TP = {"name": "TP", "valueFrom": {"secretKeyRef": {"name": "sizes", "key": "tp"}}}


def vllm_pod(name: str, namespace: str, command: list[str], env: list[Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.0",
                    "command": command,
                    "env": env,
                    "resources": {"limits": {"nvidia.com/gpu": 2}},
                    "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
        },
    }


def check_container(pod: dict[str, Any]) -> dict[str, Any] | None:
    for container in pod["spec"].get("initContainers") or []:
        if container["name"] == constants.CHECK_CONTAINER:
            return dict(container)
    return None


def run_injected_check(pod: dict[str, Any], tmp_path: Path, secrets: Any) -> Any:
    """The real checker on the env the kubelet gives the injected container, over two
    fake H200s (two GPU device nodes, as the device plugin gives a 2-GPU pod)."""
    check = check_container(pod)
    assert check is not None, f"{pod['metadata']['name']} was not injected"
    environ = container_env(check, secrets=secrets, fields={"spec.nodeName": "gpu-node-1"})
    host = dataclasses.replace(fake_host(h200_machine(2), environ), device_nodes=lambda: 2)
    work = tmp_path / pod["metadata"]["name"]
    work.mkdir()
    return environ, run_check(host, [], work)


def injected(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    pod = wait_for(lambda: get_json(cluster, "pod", name, "-n", namespace), what=f"pod {name}")
    return dict(pod)


def reported(cluster: Cluster, namespace: str, pod: str) -> dict[str, Any]:
    """The status of the pod's GPUValidation once it carries the pod's result."""
    name = gpuvalidation_name("Pod", pod)

    def found() -> dict[str, Any] | None:
        obj = gpuval(cluster, namespace, name)
        pods = ((obj or {}).get("status") or {}).get("runtime", {}).get("pods")
        return obj if pods else None

    status: dict[str, Any] = wait_for(found, what=f"{pod}'s result in {name}")["status"]
    return status


def check_the_launcher(cluster: Cluster, namespace: str, tmp_path: Path) -> None:
    """`accelerate launch ... serve ...`: checked without the plan, a warning, not a failure."""
    pod = injected(cluster, namespace, "unread")
    environ, run = run_injected_check(pod, tmp_path, {})
    assert "accelerate" in environ[envnames.PLAN_UNKNOWN]
    assert envnames.TP not in environ
    assert run.code == 0, run.stdout
    plan_check = next(c for c in run.report.checks if c.id == "plan")
    assert plan_check.status == "warn"
    assert plan_check.message.startswith("plan unknown: GPU count not compared")
    assert {c.id: c.status for c in run.report.checks}["context-ranks"] == "pass"
    play_kubelet(cluster, pod, run.code, json.dumps(run.compact))

    status = reported(cluster, namespace, "unread")
    assert status["planUnknown"].startswith("plan unknown: vllm-command-unparsed: ")
    assert (status["tp"], status["gpus"]) == ("unknown", "?/unknown")
    assert (status["runtimeVerdict"], status["reason"]) == ("warn", "plan-unknown")
    entry = status["runtime"]["pods"][0]
    assert entry["plan"].startswith("plan unknown: GPU count not compared")
    assert entry["message"].startswith("plan unknown: GPU count not compared")
    runtime = conditions({"status": status})["RuntimeChecksPassed"]
    assert runtime == ("True", "PassedWithWarnings")
    # `kubectl get gpuval`: the TP column says unknown, never blank
    name = gpuvalidation_name("Pod", "unread")
    table = cluster.kubectl("get", "gpuval", name, "-n", namespace, "--no-headers").stdout
    assert table.split()[1:3] == ["Pod/unread", "unknown"], table


def check_the_secret_size(cluster: Cluster, namespace: str, tmp_path: Path) -> None:
    """`--tensor-parallel-size $(TP)` from a Secret: the plan recovered from the kubelet's
    value, compared as usual, and named so."""
    pod = injected(cluster, namespace, "sized")
    environ, run = run_injected_check(pod, tmp_path, {"sizes": {"tp": "2"}})
    assert environ[envnames.PLAN_UNKNOWN].startswith("plan-unresolved: ")
    assert run.code == 0, run.stdout
    assert run.report.plan["tp"] == 2
    assert run.report.plan["recovered"]
    assert {c.id: c.status for c in run.report.checks}["gpu-count"] == "pass"
    play_kubelet(cluster, pod, run.code, json.dumps(run.compact))
    status = reported(cluster, namespace, "sized")
    assert status["planUnknown"].startswith("plan unknown: plan-unresolved: ")
    assert status["runtimeVerdict"] == "pass"
    assert status["runtime"]["pods"][0]["plan"].startswith(
        "TP 2 x PP 1 x DP-local 1 = 2 GPU(s), recovered at runtime"
    )


def test_an_unread_vllm_gets_the_check_and_its_gpuvalidation_says_plan_unknown(
    cluster: Cluster, operator: OperatorProcess, tmp_path: Path
) -> None:
    namespace = cluster.create_namespace("planless", labels=INJECT)
    try:
        cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "sizes", "namespace": namespace},
                "stringData": {"tp": "2"},
            }
        )
        # a launcher named unread (accelerate keeps its process count in a config file);
        # strace, the first example, is read since issue 36 item 3
        strace = ["accelerate", "launch", "-m", "vllm.entrypoints.cli.main",
                  "serve", "m", "--tensor-parallel-size", "$(TP)"]  # fmt: skip
        unread = vllm_pod("unread", namespace, strace, [{"name": "TP", "value": "2"}])
        sized = vllm_pod(
            "sized", namespace, ["vllm", "serve", "m", "--tensor-parallel-size", "$(TP)"],
            [SECRET_TP],
        )  # fmt: skip
        for pod in (unread, sized):
            created = cluster.kubectl("create", "-f", "-", input=json.dumps(pod), check=False)
            assert created.returncode == 0, created.stderr  # Enforce admits a warning
            assert "vllm-preflight" in created.stderr  # ... and says what it did not read
        check_the_launcher(cluster, namespace, tmp_path)
        check_the_secret_size(cluster, namespace, tmp_path)
    finally:
        cluster.delete_namespace(namespace)
