"""Issue 23, item 1: no object stops the operator (real control plane, real API server).

The tester's object: a Deployment whose ``metadata.managedFields[].fieldsV1`` is nested
1,000 deep, which the API server accepts from anyone who may create a Deployment, in any
namespace. kopf's watch stream decoded it with ``json.loads``, raised ``RecursionError``
and stopped the operator, and a restarted operator met it again at its first listing.
Here the operator starts *after* the poison exists (the crash-loop case), meets more of it
on its watches while it runs, and must stay alive and keep judging: the poisoned Deployment
itself is judged as if it had no managedFields (the operator never reads them), and a
custom object nested too deep in its own spec is skipped, counted and named in an Event.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev import localoperator, localsetup
from preflight_dev.testing import Cluster, wait_for
from preflight_operator import constants

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
INJECT = {constants.LABEL_INJECT: "enabled"}
LEVELS = 1000


@pytest.fixture(scope="module")
def cluster(k8s: Cluster) -> Cluster:
    if not k8s.is_local:
        pytest.skip("needs the local control plane")
    localsetup.install_crds(k8s, wrappers=True)  # DynamoGraphDeployment: free-form fields
    return k8s


def deployment(name: str, namespace: str) -> dict[str, Any]:
    doc = next(
        d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d["kind"] == "Deployment"
    )
    doc["metadata"]["namespace"] = namespace
    return dict(doc)


def with_deep_managed_fields(body: dict[str, Any], levels: int = LEVELS) -> str:
    """The object as JSON text with the bomb in managedFields (json.dumps itself recurses,
    so the deep part is written as text)."""
    marker = '"__bomb__"'
    body = json.loads(json.dumps(body))
    body["metadata"]["managedFields"] = [
        {
            "manager": "tenant",
            "operation": "Update",
            "apiVersion": body["apiVersion"],
            "time": "2026-12-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": "__bomb__",
        }
    ]
    bomb = '{"f:x":' * levels + "{}" + "}" * levels
    return json.dumps(body).replace(marker, bomb)


def create_raw(cluster: Cluster, path: str, text: str) -> None:
    cluster.kubectl("create", "--raw", path, "-f", "-", input=text)


def gpuval(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    result = cluster.kubectl("get", "gpuval", name, "-n", namespace, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def static_verdict(cluster: Cluster, namespace: str, name: str) -> str | None:
    found = gpuval(cluster, namespace, name)
    return ((found or {}).get("status") or {}).get("staticVerdict") or None


def events(cluster: Cluster, namespace: str, reason: str) -> list[str]:
    out = cluster.kubectl(
        "get", "events", "-n", namespace, "--field-selector", f"reason={reason}", "-o", "json"
    ).stdout
    return [e.get("message", "") for e in json.loads(out)["items"]]


@pytest.fixture
def namespaces(cluster: Cluster) -> Iterator[tuple[str, str]]:
    opted_in = cluster.create_namespace("integrity", labels=INJECT)
    elsewhere = cluster.create_namespace("tenant")  # never opted in
    yield opted_in, elsewhere
    cluster.delete_namespace(opted_in)
    cluster.delete_namespace(elsewhere)


def test_deep_objects_stop_nothing(
    cluster: Cluster, namespaces: tuple[str, str], tmp_path: Path
) -> None:
    opted_in, elsewhere = namespaces
    apps = "/apis/apps/v1/namespaces/{}/deployments"
    # Before the operator starts: its first listing meets the poison (the crash-loop case).
    create_raw(
        cluster,
        apps.format(elsewhere),
        with_deep_managed_fields(deployment("good-tp2-deployment.yaml", elsewhere)),
    )
    broken = deployment("bad-tp4-deployment.yaml", opted_in)
    create_raw(cluster, apps.format(opted_in), with_deep_managed_fields(broken))
    stored = cluster.kubectl(
        "get",
        "deploy",
        broken["metadata"]["name"],
        "-n",
        opted_in,
        "-o",
        "json",
        "--show-managed-fields",
    ).stdout
    assert '"f:x"' in stored, "the API server kept the deep managedFields (the attack is real)"

    operator = localoperator.start_with_webhooks(cluster, tmp_path, webhooks=False)
    try:
        # The poisoned Deployment is judged as if it had no managedFields.
        name = f"deployment-{broken['metadata']['name']}"
        assert (
            wait_for(lambda: static_verdict(cluster, opted_in, name), timeout=60, what=name)
            == "fail"
        )
        # More poison through the running watch, then a healthy workload still judged.
        second = deployment("good-tp2-deployment.yaml", opted_in)
        second["metadata"]["name"] = "poison-2"
        create_raw(cluster, apps.format(opted_in), with_deep_managed_fields(second))
        good = deployment("good-tp2-deployment.yaml", opted_in)
        cluster.apply(good)
        assert (
            wait_for(
                lambda: static_verdict(cluster, opted_in, f"deployment-{good['metadata']['name']}"),
                timeout=60,
            )
            == "pass"
        )
        assert (
            wait_for(lambda: static_verdict(cluster, opted_in, "deployment-poison-2"), timeout=60)
            == "pass"
        )
        # A custom object nested too deep in its own (free-form) spec: skipped and named.
        dgd = {
            "apiVersion": "nvidia.com/v1alpha1",
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": "deep-spec", "namespace": opted_in},
            "spec": {"providerOverride": {"value": "__bomb__"}},
        }
        deep_value = '{"a":' * LEVELS + "1" + "}" * LEVELS
        create_raw(
            cluster,
            f"/apis/nvidia.com/v1alpha1/namespaces/{opted_in}/dynamographdeployments",
            json.dumps(dgd).replace('"__bomb__"', deep_value),
        )
        messages = wait_for(
            lambda: events(cluster, opted_in, "PreflightObjectRejected"), timeout=60
        )
        assert any("deep-spec" in m or "poisoned" in m for m in messages), messages
        assert operator.metric('vllm_preflight_objects_rejected_total{reason="poisoned"}') >= 1
        assert operator.running(), operator.log_tail()
        assert operator.healthy(), operator.log_tail()
    finally:
        operator.stop()

    # A restart meets all of it at its first listing and starts anyway.
    again = localoperator.start_with_webhooks(cluster, tmp_path / "again", webhooks=False)
    try:
        # its lists are read once the poisoned workloads are known again
        wait_for(lambda: again.metric("vllm_preflight_workloads") >= 3, timeout=60)
        assert again.running(), again.log_tail()
        assert again.healthy(), again.log_tail()
    finally:
        again.stop()
