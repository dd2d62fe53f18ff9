"""The operator's own node probe (issue 34) on two replicas sharing one Lease: only the
leader probes, one probe per claim, and after the leader dies the survivor probes and
applies the verdict (a tenant's pass still clears nothing on its own).

Timings are the HA tests' short Lease (test_operator_ha.lease_args) and a 1 s probe
interval (the chart's is 300 s), so that the test does not wait minutes between probes.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.test_node_feedback import (
    ECC_FAILED,
    GPU0,
    PASSED,
    PROBE_NAMESPACE,
    at,
    ours,
    play_kubelet,
    play_probe,
    probe_pod,
    tenant,
)
from tests.e2e.test_operator_ha import LEADER, lease_args

from preflight_dev import localoperator
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.workloads import get_json


@pytest.fixture
def node(cluster: Cluster) -> Iterator[str]:
    name = f"gpu-node-{secrets.token_hex(3)}"
    cluster.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    yield name
    cluster.kubectl("delete", "node", name, "--ignore-not-found", "--wait=false")


def replicas(cluster: Cluster, tmp_path: Path) -> list[OperatorProcess]:
    config = tmp_path / "config.yaml"
    config.write_text(
        json.dumps(
            {"nodeFeedback": {"enabled": True, "condition": True, "probe": {"intervalSeconds": 1}}}
        )
    )
    lease = cluster.create_namespace("probe-lease")
    args = ["--config", str(config), *lease_args(lease, "vllm-preflight")]
    first = localoperator.start_with_webhooks(
        cluster, tmp_path, identity="replica-a", standalone=False, extra_args=args
    )
    second = localoperator.start_with_webhooks(
        cluster, tmp_path, identity="replica-b", standalone=False, extra_args=args,
        webhooks=False,
    )  # fmt: skip
    return [first, second]


def test_only_the_leader_probes_and_the_survivor_takes_over(
    cluster: Cluster, node: str, tmp_path: Path
) -> None:
    ops = replicas(cluster, tmp_path)
    try:
        leader = wait_for(
            lambda: next((o for o in ops if o.metric(LEADER) == 1.0), None), what="a leader"
        )
        follower = next(o for o in ops if o is not leader)
        namespace, pod = tenant(cluster, "probe-ha", node)

        # 1. A claim: one probe (the leader's), its fault applied once.
        play_kubelet(cluster, pod, ECC_FAILED, at(0))
        play_probe(cluster, node, ECC_FAILED, at(1))
        state = wait_for(lambda: (s := ours(cluster, node))["taints"] and s, what="quarantine")
        assert json.loads(state["annotation"])["gpus"] == {GPU0: ["ecc"]}
        assert follower.metric("vllm_preflight_node_probes_total") == 0.0
        assert leader.metric("vllm_preflight_node_probes_total") == 1.0

        # 2. The leader dies; the survivor leads, and a pass is still only a claim: its
        # probe (the new leader's) decides.
        leader.kill()
        wait_for(lambda: follower.metric(LEADER) == 1.0, what="the survivor to lead")
        play_kubelet(cluster, pod, PASSED, at(2))
        play_probe(cluster, node, PASSED, at(3))
        wait_for(
            lambda: ours(cluster, node) == {"label": None, "annotation": None, "taints": []},
            what="the quarantine cleared by the new leader's probe",
        )
        assert follower.metric("vllm_preflight_node_probes_total") == 1.0
        assert probe_pod(cluster, node) is None
        left = get_json(cluster, "pods", "-n", PROBE_NAMESPACE, "-l", "vllm-preflight.io/probe")
        assert left["items"] == []
        cluster.delete_namespace(namespace)
    finally:
        localoperator.remove_webhooks(cluster)
        for op in ops:
            op.stop()
