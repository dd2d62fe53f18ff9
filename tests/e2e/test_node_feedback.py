"""Node feedback (issue 16) on the local control plane: a check that fails for a reason of
the node's GPUs sets the Event, label, annotation and NoSchedule taint the pod's policy
asks for; a manifest fault leaves the node alone; a pass of a pod nobody's controller made
clears nothing (issue 23); a later pass of the controller's pod clears it all.

Issue 34: a tenant's report is only a claim. It makes the operator start its own probe pod
on the node (in the operator's namespace, "default" here: the operator runs outside a
release), and the node changes only on the probe's verdict. So every step that changed the
node before now plays the kubelet twice: for the tenant's pod, then for the probe.

The local control plane has no kubelet and no scheduler: the test creates the Node object
itself, binds the pod to it with spec.nodeName, and plays the kubelet (fakekubelet) by
writing the check's termination message into the pod's status.
"""

from __future__ import annotations

import datetime
import json
import secrets
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from preflight_contract.report import CheckResult, GPUEntry, Report
from preflight_dev import fakekubelet, localoperator
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.workloads import (
    apply_policy,
    example_deployment,
    get_json,
    injected_pods,
)
from preflight_operator.core import constants
from preflight_operator.core.nodefeedback import CONDITION, KEY
from preflight_operator.core.nodeprobepod import probe_name

PROBE_NAMESPACE = "default"  # the operator's own namespace: none given outside a release

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
GPU0 = "GPU-ea300b2e-0352-789c-6847-ce5195328e81"
GPU1 = "GPU-b1a04e3a-0045-8654-0766-3ed4389a1318"
GPUS = [GPUEntry(0, GPU0, "0000:06:00.0"), GPUEntry(1, GPU1, "0000:07:00.0")]
ROW_REMAP_FAILED = Report(
    checks=[
        CheckResult(
            "row-remap",
            "fail",
            "row remapping failed on GPU 1 (GPU-b1a04e3a, bus 0000:07:00.0): the memory has a "
            "bad row the GPU could not remap",
            "drain the node (kubectl drain <node>) and have the GPU serviced (an RMA)",
            {"gpus": [GPU1]},
        )
    ],
    gpus=GPUS,
    action="Warn",
).to_termination_message()
MANIFEST_FAILED = Report(
    checks=[CheckResult("gpu-count", "fail", "CUDA sees 2 GPUs, the plan needs 4", "request 4")],
    gpus=GPUS,
    action="Warn",
).to_termination_message()
PASSED = Report(
    checks=[CheckResult("row-remap", "pass", "no pending or failed row remapping on 2 GPUs")],
    gpus=GPUS,
).to_termination_message()


@pytest.fixture(scope="module")
def operator(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """The operator with node rights and a probe interval of 1 s (the chart's is 300 s), so
    that a step's probe need not wait for the one before it."""
    workdir = tmp_path_factory.mktemp("operator")
    config = workdir / "config.yaml"
    config.write_text(
        json.dumps(
            {"nodeFeedback": {"enabled": True, "condition": True, "probe": {"intervalSeconds": 1}}}
        )
    )
    op = localoperator.start_with_webhooks(cluster, workdir, extra_args=["--config", str(config)])
    yield op
    localoperator.remove_webhooks(cluster)
    op.stop()


def probe_pod(cluster: Cluster, node: str) -> dict[str, Any] | None:
    found = cluster.kubectl(
        "get", "pod", probe_name(node), "-n", PROBE_NAMESPACE, "-o", "json", "--ignore-not-found"
    ).stdout
    return json.loads(found) if found.strip() else None


def play_probe(cluster: Cluster, node: str, message: str, finished: str) -> None:
    """The kubelet of the operator's own probe on ``node``: waits for the probe pod (the
    operator's answer to a tenant's claim), writes its check's verdict, then waits until
    the operator has read it and deleted the pod."""
    pod = wait_for(lambda: probe_pod(cluster, node), what=f"the operator's probe of {node}")
    meta = pod["metadata"]
    assert pod["spec"]["nodeName"] == node
    terminated = {"exitCode": 0, "message": message, "startedAt": finished, "finishedAt": finished}
    status = {
        "phase": "Running",
        "initContainerStatuses": [
            {
                "name": constants.CHECK_CONTAINER, "image": "", "imageID": "", "ready": True,
                "restartCount": 0, "state": {"terminated": terminated},
            }
        ],
    }  # fmt: skip
    cluster.kubectl(
        "patch", "pod", meta["name"], "-n", meta["namespace"], "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip
    wait_for(
        lambda: (p := probe_pod(cluster, node)) is None or p["metadata"]["uid"] != meta["uid"],
        what="the probe read and deleted",
    )


def probes(operator: OperatorProcess, outcome: str) -> float:
    return operator.metric(f'vllm_preflight_node_probes_total{{outcome="{outcome}"}}')


@pytest.fixture
def node(cluster: Cluster) -> Iterator[str]:
    name = f"gpu-node-{secrets.token_hex(3)}"
    cluster.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    yield name
    cluster.kubectl("delete", "node", name, "--ignore-not-found", "--wait=false")


def at(seconds: int) -> str:
    base = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return fakekubelet.rfc3339(base + datetime.timedelta(seconds=seconds))


def play_kubelet(cluster: Cluster, pod: dict[str, Any], message: str, finished: str) -> None:
    fakekubelet.play(cluster, pod, 0, message, finished=finished)


def ours(cluster: Cluster, name: str) -> dict[str, Any]:
    obj = get_json(cluster, "node", name)
    meta, spec = obj["metadata"], obj.get("spec") or {}
    return {
        "label": (meta.get("labels") or {}).get(KEY),
        "annotation": (meta.get("annotations") or {}).get(KEY),
        "taints": [t for t in spec.get("taints") or [] if t["key"] == KEY],
    }


def node_events(cluster: Cluster, name: str) -> list[tuple[str, str]]:
    items = get_json(
        cluster, "events", "-n", "default", "--field-selector",
        f"involvedObject.kind=Node,involvedObject.name={name}",
    )["items"]  # fmt: skip
    return [(e["reason"], e["message"]) for e in items]


def gauge(operator: OperatorProcess, name: str) -> float | None:
    url = f"http://127.0.0.1:{operator.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:  # the operator's own server
        text = response.read().decode()
    for line in text.splitlines():
        if line.startswith(f'vllm_preflight_node_unhealthy_gpus{{node="{name}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_a_gpu_fault_taints_the_node_and_a_later_pass_clears_it(
    cluster: Cluster, operator: OperatorProcess, node: str
) -> None:
    namespace = cluster.create_namespace("nodefb", labels={constants.LABEL_INJECT: "enabled"})
    apply_policy(
        cluster, namespace, "tell-the-node",
        {
            "selector": {"matchLabels": {"app": "vllm-node"}},
            "action": "Warn",
            "nodeFeedback": {"event": True, "label": True, "taint": True},
        },
    )  # fmt: skip
    # Made by its controller (the ReplicaSet controller): only such pods' results reach a
    # node (docs/OPERATOR.md, "Whose results count"). role=server: the bare pod below
    # (app=vllm-node too, for the policy) is not the ReplicaSet's to adopt.
    deployment = example_deployment("vllm-node", namespace, node=node)
    server = {"app": "vllm-node", "role": "server"}
    deployment["spec"]["selector"] = {"matchLabels": server}
    template = deployment["spec"]["template"]
    template["metadata"]["labels"] = dict(server)
    cluster.apply(deployment)

    def injected() -> list[dict[str, Any]]:
        return injected_pods(cluster, namespace, "vllm-node")

    pod = wait_for(injected, what="the Deployment's injected pod")[0]
    assert pod["metadata"]["annotations"][constants.ANNOTATION_CREATED_BY] == "controller"

    # 1. A manifest fault: nothing on the node.
    play_kubelet(cluster, pod, MANIFEST_FAILED, at(0))
    wait_for(
        lambda: "PreflightCheckFailed" in dict(pod_events(cluster, namespace)),
        what="the manifest failure to be processed",
    )
    assert ours(cluster, node) == {"label": None, "annotation": None, "taints": []}

    # 2. A GPU fault, confirmed by the operator's probe: Event, label, annotation naming
    # the GPU and check, taint, gauge.
    play_kubelet(cluster, pod, ROW_REMAP_FAILED, at(2))
    play_probe(cluster, node, ROW_REMAP_FAILED, at(2))
    state = wait_for(lambda: (s := ours(cluster, node))["taints"] and s, what="our taint")
    assert state["label"] == "unhealthy"
    assert json.loads(state["annotation"])["gpus"] == {GPU1: ["row-remap"]}
    assert state["taints"] == [{"key": KEY, "value": "unhealthy", "effect": "NoSchedule"}]
    events = wait_for(lambda: node_events(cluster, node), what="the Node's Event")
    reason, message = events[0]
    assert reason == "GPUUnhealthy"
    assert f"{GPU1}: row-remap" in message
    assert "Fix: drain the node" in message
    assert wait_for(lambda: gauge(operator, node)) == 1.0

    # 3. Anyone's pass (a bare pod: nobody's controller made it) clears nothing.
    bare = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "anyones", "namespace": namespace, "labels": {"app": "vllm-node"}},
        "spec": {**template["spec"], "nodeName": node},
    }
    cluster.apply(bare)
    bare = get_json(cluster, "pod", "anyones", "-n", namespace)
    assert bare["metadata"]["annotations"][constants.ANNOTATION_CREATED_BY] == "other"
    play_kubelet(cluster, bare, PASSED, at(3))

    def shown() -> bool:
        found = get_json(cluster, "gpuval", "-n", namespace)["items"]
        return any(
            p.get("pod") == "anyones"
            for g in found
            for p in ((g.get("status") or {}).get("runtime") or {}).get("pods") or []
        )

    wait_for(shown, what="the bare pod's pass on its GPUValidation")
    assert ours(cluster, node)["taints"], "another tenant's pass cleared the node"

    # 4. A later pass of the controller's pod, confirmed by the probe, clears it all.
    play_kubelet(cluster, pod, PASSED, at(4))
    play_probe(cluster, node, PASSED, at(4))
    wait_for(
        lambda: ours(cluster, node) == {"label": None, "annotation": None, "taints": []},
        what="the node to be cleared",
    )
    events = wait_for(
        lambda: (e := dict(node_events(cluster, node))).get("GPUHealthy") and e,
        what="the GPUHealthy Event",
    )
    assert f"cleared {GPU1}: row-remap" in events["GPUHealthy"]
    assert f"pod {PROBE_NAMESPACE}/{probe_name(node)} passed" in events["GPUHealthy"]
    assert gauge(operator, node) == 0.0
    cluster.delete_namespace(namespace)


def pod_events(cluster: Cluster, namespace: str) -> list[tuple[str, str]]:
    items = get_json(
        cluster, "events", "-n", namespace, "--field-selector", "involvedObject.name=vllm-node"
    )["items"]
    return [(e["reason"], e["message"]) for e in items]


def node_condition(cluster: Cluster, name: str) -> dict[str, Any] | None:
    obj = get_json(cluster, "node", name)
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == CONDITION:
            return dict(condition)
    return None


def test_the_node_condition_is_set_by_a_gpu_fault_and_cleared_by_a_later_pass(
    cluster: Cluster, operator: OperatorProcess, node: str
) -> None:
    """Issue 29 item 2: GPUPreflightReady, what node-repair systems read (docs/CHECKS.md)."""
    namespace = cluster.create_namespace("nodecond", labels={constants.LABEL_INJECT: "enabled"})
    apply_policy(
        cluster, namespace, "condition-only",
        {
            "selector": {"matchLabels": {"app": "vllm-cond"}},
            "action": "Warn",
            "nodeFeedback": {"condition": True},
        },
    )  # fmt: skip
    cluster.apply(example_deployment("vllm-cond", namespace, node=node))
    pod = wait_for(
        lambda: injected_pods(cluster, namespace, "vllm-cond"),
        what="the Deployment's injected pod",
    )[0]
    assert node_condition(cluster, node) is None  # nothing before a check said anything

    play_kubelet(cluster, pod, ROW_REMAP_FAILED, at(0))
    play_probe(cluster, node, ROW_REMAP_FAILED, at(0))
    failed = wait_for(lambda: node_condition(cluster, node), what="GPUPreflightReady")
    assert (failed["status"], failed["reason"]) == ("False", "GPUCheckFailed")
    assert f"{GPU1}: row-remap" in failed["message"]
    # condition only: the record (annotation) the clear works from, no label, no taint
    state = ours(cluster, node)
    assert state["label"] is None
    assert state["taints"] == []
    assert json.loads(state["annotation"])["gpus"] == {GPU1: ["row-remap"]}

    play_kubelet(cluster, pod, PASSED, at(2))
    play_probe(cluster, node, PASSED, at(2))
    cleared = wait_for(
        lambda: (c := node_condition(cluster, node)) and c["status"] == "True" and c,
        what="GPUPreflightReady to turn True",
    )
    assert cleared["reason"] == "GPUCheckPassed"
    assert f"pod {PROBE_NAMESPACE}/{probe_name(node)} passed" in cleared["message"]
    assert ours(cluster, node) == {"label": None, "annotation": None, "taints": []}
    cluster.delete_namespace(namespace)


ECC_FAILED = Report(
    checks=[
        CheckResult(
            "ecc", "fail",
            "uncorrectable ECC errors on GPU 0 (GPU-ea300b2e, bus 0000:06:00.0)",
            "drain the node and have the GPU serviced",
        )
    ],
    gpus=GPUS,
    action="Warn",
).to_termination_message()  # fmt: skip


def tenant(cluster: Cluster, name: str, node: str) -> tuple[str, dict[str, Any]]:
    """A tenant's namespace, its policy asking for every level, and its Deployment's
    injected pod on the shared ``node``."""
    namespace = cluster.create_namespace(name, labels={constants.LABEL_INJECT: "enabled"})
    apply_policy(
        cluster, namespace, "all-levels",
        {
            "selector": {"matchLabels": {"app": name}},
            "action": "Warn",
            "nodeFeedback": {"event": True, "label": True, "taint": True, "condition": True},
        },
    )  # fmt: skip
    cluster.apply(example_deployment(name, namespace, node=node))
    pod = wait_for(lambda: injected_pods(cluster, namespace, name), what=f"{name}'s pod")[0]
    return namespace, pod


def test_a_tenants_report_changes_a_node_only_when_the_operators_probe_agrees(
    cluster: Cluster, operator: OperatorProcess, node: str
) -> None:
    """Issue 34 item 4. Before: tenant A's image printing an ECC failure tainted the shared
    node at once (no probe pod was ever made: the first play_probe timed out), and tenant
    B's pass naming the quarantined GPU cleared it."""
    a_namespace, a_pod = tenant(cluster, "tenant-a", node)
    b_namespace, b_pod = tenant(cluster, "tenant-b", node)

    # 1. A's image prints an ECC failure; the operator's probe passes: the node is as it was.
    passes = probes(operator, "pass")
    play_kubelet(cluster, a_pod, ECC_FAILED, at(0))
    play_probe(cluster, node, PASSED, at(1))
    wait_for(lambda: probes(operator, "pass") > passes, what="the probe's pass counted")
    assert ours(cluster, node) == {"label": None, "annotation": None, "taints": []}
    assert node_condition(cluster, node) is None
    assert "GPUUnhealthy" not in dict(node_events(cluster, node))

    # 2. A's next run fails again and this time the probe agrees: the node is quarantined.
    play_kubelet(cluster, a_pod, ECC_FAILED, at(2))
    play_probe(cluster, node, ECC_FAILED, at(3))
    state = wait_for(lambda: (s := ours(cluster, node))["taints"] and s, what="the quarantine")
    assert json.loads(state["annotation"])["gpus"] == {GPU0: ["ecc"]}
    assert json.loads(state["annotation"])["pod"] == f"{PROBE_NAMESPACE}/{probe_name(node)}"
    condition = wait_for(lambda: node_condition(cluster, node), what="GPUPreflightReady")
    assert condition["status"] == "False"

    # 3. B's pass naming both GPUs (the quarantined one too) is a claim: the probe still
    # finds the ECC fault, and the quarantine stays.
    unhealthy = len([r for r, _ in node_events(cluster, node) if r == "GPUUnhealthy"])
    play_kubelet(cluster, b_pod, PASSED, at(4))
    play_probe(cluster, node, ECC_FAILED, at(5))
    wait_for(
        lambda: len([r for r, _ in node_events(cluster, node) if r == "GPUUnhealthy"]) > unhealthy,
        what="the probe's fault applied",
    )
    state = ours(cluster, node)
    assert state["taints"], "a tenant's pass cleared a quarantine the probe still finds"
    assert json.loads(state["annotation"])["gpus"] == {GPU0: ["ecc"]}
    assert node_condition(cluster, node)["status"] == "False"  # type: ignore[index]

    # 4. Only the probe's own pass clears it (B's next pass asks for it).
    play_kubelet(cluster, b_pod, PASSED, at(6))
    play_probe(cluster, node, PASSED, at(7))
    wait_for(
        lambda: ours(cluster, node) == {"label": None, "annotation": None, "taints": []},
        what="the quarantine cleared by the probe's pass",
    )
    assert (
        get_json(cluster, "pods", "-n", PROBE_NAMESPACE, "-l", "vllm-preflight.io/probe")["items"]
        == []
    )  # every probe pod deleted
    cluster.delete_namespace(a_namespace)
    cluster.delete_namespace(b_namespace)
