"""Operator restarts and replicas, with real processes: SIGKILL mid-way loses no result;
two replicas under kopf peering never both write; the survivor takes over."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_contract.report import CheckResult, Report
from preflight_dev import fakekubelet, localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator import constants

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
PASSED = Report(checks=[CheckResult("gpu-count", "pass", "ok")]).to_termination_message()
STATUS_WRITES = "vllm_preflight_status_writes_total"


@pytest.fixture(scope="module")
def cluster(k8s: Cluster) -> Iterator[Cluster]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s)
    yield k8s
    localoperator.remove_webhooks(k8s)


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    name = cluster.create_namespace("ha", labels={constants.LABEL_INJECT: "enabled"})
    yield name
    cluster.delete_namespace(name)


def deployment(namespace: str, replicas: int) -> dict[str, Any]:
    doc = next(
        d
        for d in yaml.safe_load_all((MANIFESTS / "good-tp2-deployment.yaml").read_text())
        if d["kind"] == "Deployment"
    )
    doc = copy.deepcopy(doc)
    doc["metadata"]["namespace"] = namespace
    doc["spec"]["replicas"] = replicas
    return doc


def injected_pods(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    out = cluster.kubectl(
        "get", "pods", "-n", namespace, "-l", constants.INJECTED_POD_SELECTOR, "-o", "json"
    ).stdout
    pods: list[dict[str, Any]] = json.loads(out)["items"]
    return sorted(pods, key=lambda p: p["metadata"]["name"])


def report_result(cluster: Cluster, pod: dict[str, Any]) -> None:
    status = fakekubelet.pod_status(pod, exit_code=0, message=PASSED)
    cluster.kubectl(
        "patch", "pod", pod["metadata"]["name"], "-n", pod["metadata"]["namespace"],
        "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def recorded_pods(cluster: Cluster, namespace: str) -> set[str]:
    result = cluster.kubectl(
        "get", "gpuval", "deployment-vllm-good", "-n", namespace, "-o", "json", check=False
    )
    if result.returncode != 0:
        return set()
    status = json.loads(result.stdout).get("status") or {}
    return {p["pod"] for p in (status.get("runtime") or {}).get("pods") or []}


def test_killing_the_operator_mid_way_and_restarting_loses_no_result(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    first = localoperator.start_with_webhooks(cluster, tmp_path, identity="first")
    try:
        cluster.apply(deployment(namespace, replicas=6))
        pods = wait_for(lambda: len(p := injected_pods(cluster, namespace)) == 6 and p)
        for pod in pods[:3]:
            report_result(cluster, pod)
        first.kill()  # SIGKILL while it works through those results
        for pod in pods[3:]:
            report_result(cluster, pod)  # results that arrive while no operator runs
        before_restart = recorded_pods(cluster, namespace)
        assert len(before_restart) < 6
    finally:
        first.kill()

    cert = cluster.issue_serving_cert()
    second = OperatorProcess(
        kubeconfig=cluster.kubeconfig, cert_path=cert.cert_path, key_path=cert.key_path,
        workdir=tmp_path, identity="second", webhook_port=first.webhook_port,
        env=cluster.env(),
    )  # fmt: skip
    with second:
        names = {p["metadata"]["name"] for p in pods}
        wait_for(lambda: recorded_pods(cluster, namespace) == names, what="all 6 results")
        status = json.loads(
            cluster.kubectl(
                "get", "gpuval", "deployment-vllm-good", "-n", namespace, "-o", "json"
            ).stdout
        )["status"]
        assert status["runtime"]["podsChecked"] == 6
        assert status["runtimeVerdict"] == "pass"


def is_paused(operator: OperatorProcess) -> bool:
    lines = operator.log_path.read_text(errors="replace").splitlines()
    pauses = [i for i, line in enumerate(lines) if "Pausing operations" in line]
    resumes = [i for i, line in enumerate(lines) if "Resuming operations" in line]
    return bool(pauses) and max(pauses) > max(resumes, default=-1)


def test_two_replicas_do_not_double_write_and_the_survivor_takes_over(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    peering = ["--peering-lifetime", "8"]
    low = localoperator.start_with_webhooks(
        cluster, tmp_path, identity="replica-low", standalone=False,
        extra_args=[*peering, "--priority", "100"],
    )  # fmt: skip
    high = localoperator.start_with_webhooks(
        cluster, tmp_path, identity="replica-high", standalone=False,
        extra_args=[*peering, "--priority", "200"], webhooks=False,
    )  # fmt: skip
    try:
        wait_for(lambda: is_paused(low), what="the lower-priority replica to pause")
        assert not is_paused(high)
        # Alone at first, the low replica was active and may have written (for objects left
        # by earlier tests): only what happens while both run counts.
        low_writes = low.metric(STATUS_WRITES)

        # Pods are injected by the paused replica: webhooks are served by every replica.
        cluster.apply(deployment(namespace, replicas=4))
        pods = wait_for(lambda: len(p := injected_pods(cluster, namespace)) == 4 and p)
        for pod in pods:
            report_result(cluster, pod)
        names = {p["metadata"]["name"] for p in pods}
        wait_for(lambda: recorded_pods(cluster, namespace) == names, what="4 results")
        assert high.metric(STATUS_WRITES) > 0
        assert low.metric(STATUS_WRITES) == low_writes

        high.kill()
        wait_for(lambda: not is_paused(low), timeout=40, what="the survivor to resume")
        cluster.kubectl("scale", "deployment", "vllm-good", "-n", namespace, "--replicas=5")
        pods = wait_for(lambda: len(p := injected_pods(cluster, namespace)) == 5 and p)
        new = [p for p in pods if p["metadata"]["name"] not in names]
        report_result(cluster, new[0])
        wait_for(
            lambda: new[0]["metadata"]["name"] in recorded_pods(cluster, namespace),
            what="the survivor to record the new result",
        )
        assert low.metric(STATUS_WRITES) > low_writes
    finally:
        high.kill()
        low.stop()


def test_pods_created_while_no_operator_ran_get_not_injected_after_a_restart(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    """failurePolicy Ignore (the chart's default): while no replica answers, the API
    server admits pods without the check. Once one runs again, the workload says so."""
    cert = cluster.issue_serving_cert()

    def operator(identity: str, port: int | None = None) -> OperatorProcess:
        return OperatorProcess(
            kubeconfig=cluster.kubeconfig, cert_path=cert.cert_path, key_path=cert.key_path,
            workdir=tmp_path, identity=identity, env=cluster.env(),
            **({"webhook_port": port} if port else {}),
        )  # fmt: skip

    first = operator("before-outage").start()
    cluster.apply(*localsetup.webhook_configurations(
        first.webhook_port, cert.ca_pem, failure_policy="Ignore"
    ))  # fmt: skip
    first.kill()
    cluster.apply(deployment(namespace, replicas=2))
    pods = wait_for(
        lambda: len(p := json.loads(cluster.kubectl(
            "get", "pods", "-n", namespace, "-l", "app=vllm-good", "-o", "json"
        ).stdout)["items"]) == 2 and p,
        what="2 pods admitted without the webhook",
    )  # fmt: skip
    assert all("initContainers" not in p["spec"] for p in pods)
    with operator("after-outage", first.webhook_port) as second:

        def runtime() -> dict[str, Any] | None:
            r = cluster.kubectl("get", "gpuval", "deployment-vllm-good", "-n", namespace,
                                "-o", "json", check=False)  # fmt: skip
            if r.returncode != 0:
                return None
            for c in json.loads(r.stdout).get("status", {}).get("conditions") or []:
                if c["type"] == "RuntimeChecksPassed" and c["reason"] == "NotInjected":
                    return dict(c)
            return None

        condition = wait_for(runtime, what="the NotInjected condition")
        assert "2 pod(s) run without the preflight check" in condition["message"]
        assert "kubectl rollout restart deployment/vllm-good" in condition["message"]

        def reasons() -> set[str] | None:
            # the Event is posted after the status write (the event sink's own queue)
            found = {e["reason"] for e in json.loads(cluster.kubectl(
                "get", "events", "-n", namespace, "-o", "json",
                "--field-selector", "involvedObject.name=vllm-good",
            ).stdout)["items"]}  # fmt: skip
            return found if "NotInjected" in found else None

        assert "NotInjected" in wait_for(reasons, what="the NotInjected Event")
        missed = 'vllm_preflight_injections_total{reason="not-injected",result="missed"}'
        assert second.metric(missed) == 2
