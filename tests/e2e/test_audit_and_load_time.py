"""The operator's side of the audit (issue 29 item 1) and the measured load time fed back
(issue 25 item 3), against the control plane with the operator and its webhooks.

Audit: a bad Deployment that exists before any policy (seeded while its namespace was not
opted in, as before a rollout) is counted and named on a PreflightPolicy's status once the
policy is created, and its GPUValidation says admission would deny it under Enforce.

Load time: the fake kubelet reports the pod Ready 200 s after its containers started; the
GPUValidation records it, and an update that shortens the startupProbe to 60 s is warned at
admission with the measured figure (the estimate alone, no weights known, is 60 s)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from test_operator_results import (
    PASSED,
    gpuval,
    injected_pods,
    manifest,
    play_kubelet,
)

from preflight_dev import fakekubelet
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants


@pytest.fixture
def namespace(cluster: Cluster, operator: OperatorProcess) -> Iterator[str]:
    name = cluster.create_namespace("audit-op")  # opted in by each test when it wants
    yield name
    cluster.delete_namespace(name)


def policy_status(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    found = cluster.kubectl(
        "get", constants.POLICY_PLURAL, name, "-n", namespace, "-o", "json", check=False
    )
    return json.loads(found.stdout).get("status", {}) if found.returncode == 0 else {}


def test_a_policy_created_over_a_seeded_bad_workload_counts_and_names_it(
    cluster: Cluster, namespace: str
) -> None:
    cluster.apply(manifest("bad-tp4-deployment.yaml", namespace))  # not judged: not opted in
    cluster.apply(manifest("good-tp2-deployment.yaml", namespace))
    cluster.kubectl("label", "namespace", namespace, f"{constants.LABEL_INJECT}=enabled")
    wait_for(
        lambda: (gpuval(cluster, namespace, "deployment-vllm-bad") or {}).get("status", {})
        .get("staticVerdict") == "fail",
        what="the seeded workload to be analysed",
    )  # fmt: skip
    cluster.apply(
        {
            "apiVersion": constants.API_VERSION,
            "kind": constants.POLICY_KIND,
            "metadata": {"name": "rollout", "namespace": namespace},
            "spec": {"action": "Audit"},
        }
    )
    status = wait_for(
        lambda: (s := policy_status(cluster, namespace, "rollout")).get("wouldDeny") == 1 and s,
        what="the policy's audit counts",
    )
    assert status["wouldDenyWorkloads"] == ["Deployment/vllm-bad"]
    assert status["warned"] == 0
    assert status["lastAudit"]
    bad = wait_for(
        lambda: (s := (gpuval(cluster, namespace, "deployment-vllm-bad") or {}).get("status", {}))
        .get("policy") == "rollout" and s,
        what="the workload re-judged under the new policy",
    )  # fmt: skip
    assert bad["admission"]["answer"] == "admit"  # Audit records only
    assert bad["admission"]["underEnforce"] == "deny"
    table = cluster.kubectl("get", constants.POLICY_PLURAL, "-n", namespace).stdout
    header, row = table.splitlines()
    assert "WOULD-DENY" in header.split()
    assert row.split()[header.split().index("WOULD-DENY")] == "1"


def test_the_measured_start_is_recorded_and_warns_a_probe_window_shorter_than_it(
    cluster: Cluster, namespace: str
) -> None:
    cluster.kubectl("label", "namespace", namespace, f"{constants.LABEL_INJECT}=enabled")
    cluster.apply(manifest("good-tp2-deployment.yaml", namespace))
    pod = wait_for(lambda: injected_pods(cluster, namespace, "vllm-good"))[0]
    start = "2026-01-01T00:00:10Z"
    play_kubelet(cluster, pod, 0, PASSED, started="2026-01-01T00:00:00Z", finished=start)
    fakekubelet.play_ready(cluster, pod, started=start, ready="2026-01-01T00:03:30Z")
    section = wait_for(
        lambda: (gpuval(cluster, namespace, "deployment-vllm-good") or {})
        .get("status", {}).get("runtime", {}).get("loadTime"),
        what="the measured start on the GPUValidation",
    )  # fmt: skip
    assert (section["lastSeconds"], section["maxSeconds"], section["samples"]) == (200, 200, 1)
    assert section["recent"][0]["pod"] == pod["metadata"]["name"]

    shorter = manifest("good-tp2-deployment.yaml", namespace)
    container = shorter["spec"]["template"]["spec"]["containers"][0]
    container["startupProbe"] = {
        "httpGet": {"path": "/health", "port": 8000},
        "periodSeconds": 10,
        "failureThreshold": 6,
    }
    applied = cluster.kubectl("apply", "-f", "-", input=json.dumps(shorter))
    assert "probe-window" in applied.stderr, applied.stderr
    assert "took up to 200 s to become Ready" in applied.stderr
