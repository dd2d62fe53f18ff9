"""Real scheduling on the local control plane: kube-scheduler (built from the same
Kubernetes module) places the pods of vLLM Deployments on fake GPU Nodes
(testing/nodes.py: 4 and 2 H200s, nvidia.com/gpu capacity, GPU feature discovery labels).

Deployment -> ReplicaSet -> Pod -> binding is Kubernetes' own; the test plays the kubelet
only for a pod the scheduler bound (fakekubelet.bound_node), as the demo does. A pod asking
for more GPUs than any Node has stays Pending, Unschedulable, and `kubectl vllm-preflight
explain` and the GPUValidation (REASON unschedulable) say why.
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

from preflight_contract.report import CheckResult, Report
from preflight_dev import fakekubelet, localoperator, localsetup
from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.nodes import DEFAULT_NODES, create_gpu_nodes, delete_gpu_nodes
from preflight_operator.core import constants

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
PASSED = Report(
    checks=[CheckResult("gpu-count", "pass", "CUDA sees 2 GPUs")]
).to_termination_message()


def deployment(file: str, namespace: str) -> dict[str, Any]:
    doc = next(
        d for d in yaml.safe_load_all((MANIFESTS / file).read_text()) if d["kind"] == "Deployment"
    )
    doc["metadata"]["namespace"] = namespace
    return doc


def pods_of(k8s: Cluster, ns: str, app: str) -> list[dict[str, Any]]:
    got = k8s.kubectl("get", "pods", "-n", ns, "-l", f"app={app}", "-o", "json")
    items: list[dict[str, Any]] = json.loads(got.stdout)["items"]
    return items


def scheduled_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return dict(cond)
    return None


@pytest.fixture(scope="module")
def namespace(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane (its kube-scheduler and fake GPU Nodes)")
    localsetup.install_crds(k8s, lws=False)
    operator = localoperator.start_with_webhooks(k8s, tmp_path_factory.mktemp("scheduling"))
    create_gpu_nodes(k8s)
    ns = k8s.create_namespace("sched", labels={constants.LABEL_INJECT: "enabled"})
    try:
        yield ns
    finally:
        k8s.delete_namespace(ns)
        delete_gpu_nodes(k8s)
        localoperator.remove_webhooks(k8s)
        operator.stop()


def test_the_scheduler_binds_a_pod_that_fits_to_a_gpu_node(k8s: Cluster, namespace: str) -> None:
    k8s.apply(deployment("good-tp2-deployment.yaml", namespace))
    pod = wait_for(
        lambda: next(
            (p for p in pods_of(k8s, namespace, "vllm-good") if fakekubelet.bound_node(p)), None
        ),
        what="the scheduler to bind the vllm-good pod",
    )
    node = fakekubelet.bound_node(pod)
    assert node in {n.name for n in DEFAULT_NODES}
    assert pod["metadata"]["labels"].get(constants.LABEL_INJECTED) == "true"
    # The binding is the scheduler's: its Scheduled event, from default-scheduler.
    events = json.loads(
        k8s.kubectl(
            "get", "events", "-n", namespace, "--field-selector",
            f"involvedObject.name={pod['metadata']['name']},reason=Scheduled", "-o", "json",
        ).stdout
    )["items"]  # fmt: skip
    assert events, "no Scheduled event"
    source = events[0].get("reportingComponent") or (events[0].get("source") or {}).get("component")
    assert source == "default-scheduler"
    assert node in events[0]["message"]

    # Now, and only now, the kubelet's part: the check ran on that node.
    status = fakekubelet.pod_status(pod, exit_code=0, message=PASSED)
    k8s.kubectl(
        "patch", "pod", pod["metadata"]["name"], "-n", namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip

    def runtime() -> dict[str, Any] | None:
        got = k8s.kubectl(
            "get", "gpuval", "deployment-vllm-good", "-n", namespace, "-o", "json", check=False
        )
        val = json.loads(got.stdout) if got.returncode == 0 else {}
        entry = ((val.get("status") or {}).get("runtime") or {}).get("pods") or []
        return entry[0] if entry else None

    entry = wait_for(runtime, what="the result on the GPUValidation")
    assert (entry["verdict"], entry["node"]) == ("pass", node)


def test_more_gpus_than_any_node_is_unschedulable(k8s: Cluster, namespace: str) -> None:
    k8s.apply(deployment("big-tp8-deployment.yaml", namespace))

    def unschedulable() -> dict[str, Any] | None:
        for pod in pods_of(k8s, namespace, "vllm-big"):
            cond = scheduled_condition(pod)
            if cond and cond.get("status") == "False":
                return pod
        return None

    pod = wait_for(unschedulable, what="the scheduler to give up on the vllm-big pod")
    assert fakekubelet.bound_node(pod) is None
    cond = scheduled_condition(pod)
    assert cond is not None
    assert cond["reason"] == "Unschedulable"
    assert "0/2 nodes are available: 2 Insufficient nvidia.com/gpu" in cond["message"]

    # The GPUValidation says so, instead of waiting for a result that cannot come.
    def gpuval_says_so() -> dict[str, Any] | None:
        got = k8s.kubectl(
            "get", "gpuval", "deployment-vllm-big", "-n", namespace, "-o", "json", check=False
        )
        status = (json.loads(got.stdout) if got.returncode == 0 else {}).get("status") or {}
        return status if status.get("reason") == "unschedulable" else None

    status = wait_for(gpuval_says_so, what="the GPUValidation to say the pod is unschedulable")
    assert status["runtimeVerdict"] == "pending"
    runtime = next(c for c in status["conditions"] if c["type"] == "RuntimeChecksPassed")
    assert (runtime["status"], runtime["reason"]) == ("Unknown", "Unschedulable")
    assert f"pod {pod['metadata']['name']} is not scheduled" in runtime["message"]
    assert "2 Insufficient nvidia.com/gpu" in runtime["message"]
    assert "Fix: no node has that many free GPUs" in runtime["message"]
    table = k8s.kubectl("get", "gpuval", "deployment-vllm-big", "-n", namespace).stdout
    assert "unschedulable" in table.splitlines()[1].split()

    env = {**k8s.env()}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    explained = subprocess.run(
        [str(k8s.bin_dir / "kubectl"), "vllm-preflight", "explain", "deploy/vllm-big",
         "-n", namespace],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert explained.returncode == 0, explained.stderr
    assert (
        "not scheduled: Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu"
        in (explained.stdout)
    )
    assert "FailedScheduling" in explained.stdout.split("Events:")[1]
