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

from preflight_contract.report import CheckResult, GPUEntry, Report
from preflight_dev import fakekubelet, localoperator, localsetup
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
INJECT = {constants.LABEL_INJECT: "enabled"}
LEVELS = 1000


@pytest.fixture(scope="module")
def cluster(k8s: Cluster) -> Cluster:
    if not k8s.is_local:
        pytest.skip("needs the local control plane")
    localsetup.install_crds(k8s, wrappers=True)  # LLMInferenceService: free-form fields
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
        # LLMInferenceService: served as stored (no conversion webhook needed), and
        # spec.model.lora.adapters keeps unknown fields.
        llmisvc = {
            "apiVersion": "serving.kserve.io/v1alpha2",
            "kind": "LLMInferenceService",
            "metadata": {"name": "deep-spec", "namespace": opted_in},
            "spec": {"model": {"uri": "hf://org/model", "lora": {"adapters": "__bomb__"}}},
        }
        deep_value = '{"a":' * LEVELS + "1" + "}" * LEVELS
        create_raw(
            cluster,
            f"/apis/serving.kserve.io/v1alpha2/namespaces/{opted_in}/llminferenceservices",
            json.dumps(llmisvc).replace('"__bomb__"', deep_value),
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


# -- item 2: a user who may only create pods cannot steer the operator -------------------

TENANT = "tenant@example.com"
PASSED = Report(
    checks=[CheckResult("gpu-count", "pass", "CUDA sees 2 GPUs")],
    gpus=[GPUEntry(0, "GPU-a", "0000:06:00.0"), GPUEntry(1, "GPU-b", "0000:07:00.0")],
).to_termination_message()
# The tester's report: a failure to scale the victim down, a 3,500-character check id (it
# became a REASON, an annotation and a metric label) and group.joined = 1e308 (a float in
# an integer field: every later status write of the workload was refused with 422).
FORGED = json.dumps(
    {
        "schema": 1,
        "verdict": "fail",
        "action": "Enforce",
        "plan": {},
        "checks": [
            {"id": "gpu-count", "status": "fail", "message": "made up", "remediation": "scale"},
            {"id": "x" * 3500, "status": "fail", "message": "m"},
        ],
        "group": {"id": "g", "joined": 1e308, "size": 2},
    }
)


def tenant_may_create_pods(cluster: Cluster, *namespaces: str) -> None:
    for namespace in namespaces:
        cluster.apply(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "pods-only", "namespace": namespace},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["pods"],
                        "verbs": ["create", "get", "list", "patch", "update"],
                    }
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "pods-only", "namespace": namespace},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "pods-only",
                },
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": TENANT}
                ],
            },
        )


def forged_pod(namespace: str, replicaset: dict[str, Any], **annotations: str) -> dict[str, Any]:
    """The tester's pod: the injected label, a (non-controller) ownerReference to the
    victim's ReplicaSet, and a preflight-check of its own that prints a made-up report."""
    meta = replicaset["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "forged",
            "namespace": namespace,
            # not the ReplicaSet's selector (app=...): it would adopt the pod and delete
            # one of its own to keep its replica count
            "labels": {
                constants.LABEL_INJECTED: "true",
                "pod-template-hash": meta["labels"]["pod-template-hash"],
            },
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": meta["name"],
                    "uid": meta["uid"],
                }
            ],
        },
        "spec": {
            "initContainers": [
                {"name": constants.CHECK_CONTAINER, "image": "busybox", "command": ["true"]}
            ],
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }


def as_tenant(cluster: Cluster, *args: str, input: str | None = None) -> Any:
    return cluster.kubectl(*args, f"--as={TENANT}", check=False, input=input)


def test_a_pod_only_user_cannot_steer_the_operator(
    cluster: Cluster, namespaces: tuple[str, str], tmp_path: Path
) -> None:
    opted_in, elsewhere = namespaces
    tenant_may_create_pods(cluster, opted_in, elsewhere)
    cluster.apply(
        {
            "apiVersion": constants.API_VERSION,
            "kind": constants.POLICY_KIND,
            "metadata": {"name": "scale", "namespace": opted_in},
            "spec": {"action": "Warn", "onRuntimeFailure": "ScaleToZero"},
        }
    )
    operator = localoperator.start_with_webhooks(cluster, tmp_path)
    try:
        victim = deployment("good-tp2-deployment.yaml", opted_in)
        cluster.apply(victim)
        real = wait_for(
            lambda: injected(cluster, opted_in, "app=vllm-good"), timeout=60, what="the real pod"
        )[0]
        assert real["metadata"]["annotations"][constants.ANNOTATION_CREATED_BY] == "controller"
        replicaset = json.loads(
            cluster.kubectl("get", "rs", "-n", opted_in, "-l", "app=vllm-good", "-o", "json").stdout
        )["items"][0]

        # Where the mutating webhook does not run, a pod marked as the controller's is refused.
        claim = {constants.ANNOTATION_CREATED_BY: "controller"}
        refused = as_tenant(
            cluster, "create", "-f", "-",
            input=json.dumps(forged_pod(elsewhere, replicaset, **claim)),
        )  # fmt: skip
        assert refused.returncode != 0
        assert constants.ANNOTATION_CREATED_BY in refused.stderr
        # Where it runs, whatever the tenant wrote is replaced by who the tenant is.
        made = as_tenant(
            cluster, "create", "-f", "-",
            input=json.dumps(forged_pod(opted_in, replicaset, **claim)),
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        forged = json.loads(
            cluster.kubectl("get", "pod", "forged", "-n", opted_in, "-o", "json").stdout
        )
        assert forged["metadata"]["annotations"][constants.ANNOTATION_CREATED_BY] == "other"
        # ... and never changed afterwards, by the tenant or anyone.
        changed = as_tenant(
            cluster, "annotate", "pod", "forged", "-n", opted_in, "--overwrite",
            f"{constants.ANNOTATION_CREATED_BY}=controller",
        )  # fmt: skip
        assert changed.returncode != 0
        assert "never added, changed or removed" in changed.stderr

        # The forged failure is shown, but the real pass decides, and nothing is scaled.
        play_kubelet(cluster, forged, exit_code=1, message=FORGED)
        play_kubelet(cluster, real, exit_code=0, message=PASSED)
        name = "deployment-vllm-good"

        def both_shown() -> dict[str, Any] | None:
            status = ((gpuval(cluster, opted_in, name) or {}).get("status")) or {}
            pods = {p["pod"]: p for p in (status.get("runtime") or {}).get("pods") or []}
            return status if "forged" in pods and real["metadata"]["name"] in pods else None

        status = wait_for(both_shown, timeout=60, what="both results on the GPUValidation")
        pods = {p["pod"]: p for p in status["runtime"]["pods"]}
        assert (pods["forged"]["verdict"], pods["forged"]["createdBy"]) == ("fail", "other")
        assert "x" * 100 not in json.dumps(status)  # the unknown id was left out
        assert "joined" not in pods["forged"].get("group", {})
        assert pods[real["metadata"]["name"]]["createdBy"] == "controller"
        assert status["runtimeVerdict"] == "pass"
        assert (status.get("remediation") or {}).get("type") in (None, "None")
        replicas = cluster.kubectl(
            "get", "deploy", "vllm-good", "-n", opted_in, "-o", "jsonpath={.spec.replicas}"
        ).stdout
        assert replicas == "1"
    finally:
        localoperator.remove_webhooks(cluster)
        operator.stop()


def injected(cluster: Cluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    out = cluster.kubectl(
        "get", "pods", "-n", namespace, "-l", f"{selector},{constants.INJECTED_POD_SELECTOR}",
        "-o", "json",
    ).stdout  # fmt: skip
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return items


play_kubelet = fakekubelet.play


def test_a_deep_managedfields_does_not_get_a_broken_object_past_admission(
    cluster: Cluster, namespaces: tuple[str, str], tmp_path: Path
) -> None:
    """The same bomb at admission: the review is judged as if the object had no
    managedFields, so Enforce denies a broken Deployment by the rules (a 400 from the
    webhook would make the API server fail open under the chart's failurePolicy Ignore)."""
    opted_in, _ = namespaces
    operator = localoperator.start_with_webhooks(cluster, tmp_path)
    try:
        broken = deployment("bad-tp4-deployment.yaml", opted_in)
        refused = cluster.kubectl(
            "create", "--raw", f"/apis/apps/v1/namespaces/{opted_in}/deployments", "-f", "-",
            input=with_deep_managed_fields(broken), check=False,
        )  # fmt: skip
        assert refused.returncode != 0
        assert "gpu-count-too-low" in refused.stderr, refused.stderr
    finally:
        localoperator.remove_webhooks(cluster)
        operator.stop()
