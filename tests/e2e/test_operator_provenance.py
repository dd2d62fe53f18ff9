"""Issue 34, items 2-3: no tenant steers another's workload or the shared node through a
forged provenance (real control plane, two operator replicas on one Lease, the webhooks
failing open as the chart's defaults do).

Each forgery here, tried on the previous landing, scaled the victim to zero and tainted
the node its pod named:

* "label later": a pods-only user's pod with ``inject: disabled`` (no webhook runs),
  ``created-by: controller``, a controller reference to a "ReplicaSet" ``<victim>-<hash>``
  of a made-up API group and a check of its own, labelled ``injected=true`` afterwards;
* a tenant who may create ReplicaSets (StatefulSets) names one ``<victim>-<anything>``
  (gives it the victim LeaderWorkerSet's name label): the ReplicaSet controller makes the
  pods, the webhook injects them and records ``created-by: controller``, and the name
  pattern took them for the victim's;
* a ``pods/status`` write changing ``created-by`` (no webhook rule matched the
  subresource).

After: the UPDATE and the status write are refused, and a result counts only through
controller references whose uids the API server confirms (core/ownerchain.py), so the
tenants' results are shown as ``createdBy: other`` and change nothing.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from preflight_contract.report import CheckResult, GPUEntry, Report
from preflight_contract.reuse import ANNOTATION as REUSE
from preflight_dev import fakekubelet, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.workloads import apply_policy, example_deployment, get_json
from preflight_operator.core import constants
from preflight_operator.core.nodefeedback import CONDITION, KEY

TENANT = "mallory@example.com"
GPU0 = "GPU-ea300b2e-0352-789c-6847-ce5195328e81"
ECC_FAILED = Report(
    checks=[
        CheckResult(
            "ecc", "fail", "uncorrectable ECC errors on GPU 0", "drain the node", {"gpus": [GPU0]}
        )
    ],
    gpus=[GPUEntry(0, GPU0, "0000:06:00.0")],
    action="Warn",
).to_termination_message()
PASSED = Report(checks=[CheckResult("gpu-count", "pass", "ok")]).to_termination_message()
LWS_LABEL = "leaderworkerset.sigs.k8s.io/name"


@pytest.fixture(scope="module")
def cluster(k8s: Cluster) -> Cluster:
    if not k8s.is_local:
        pytest.skip("needs the local control plane")
    localsetup.install_crds(k8s)  # LeaderWorkerSet
    return k8s


@pytest.fixture(scope="module")
def replicas(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two replicas on one Lease; the webhooks point at the second and fail open (the
    chart's ``failurePolicy: Ignore``). Yields the namespace for the Lease."""
    lease_ns = cluster.create_namespace("prov-lease")
    args = [
        "--lease-namespace", lease_ns, "--lease-name", "prov",
        "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5",
    ]  # fmt: skip
    cert = cluster.issue_serving_cert()
    started: list[OperatorProcess] = []
    try:
        for identity in ("replica-a", "replica-b"):
            started.append(
                OperatorProcess(
                    kubeconfig=cluster.kubeconfig,
                    cert_path=cert.cert_path,
                    key_path=cert.key_path,
                    workdir=tmp_path_factory.mktemp(identity),
                    identity=identity,
                    standalone=False,
                    extra_args=args,
                    env=cluster.env(),
                ).start()
            )
        cluster.apply(
            *localsetup.webhook_configurations(
                started[1].webhook_port, cert.ca_pem, failure_policy="Ignore"
            )
        )
        yield lease_ns
    finally:
        cluster.kubectl(
            "delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration",
            localsetup.WEBHOOK_CONFIGURATION_NAME, "--ignore-not-found",
        )  # fmt: skip
        for operator in started:
            operator.stop()
        cluster.delete_namespace(lease_ns)


@pytest.fixture
def victim(cluster: Cluster, replicas: str) -> Iterator[tuple[str, str]]:
    """A namespace that opted in, a policy that scales on a failure and writes every kind
    of node feedback, a shared GPU node, and the victim Deployment (2 replicas) on it."""
    node = f"gpu-node-{secrets.token_hex(3)}"
    cluster.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    namespace = cluster.create_namespace("prov", labels={constants.LABEL_INJECT: "enabled"})
    tenant_may(cluster, namespace)
    apply_policy(
        cluster, namespace, "scale",
        {
            "action": "Warn",
            "onRuntimeFailure": "ScaleToZero",
            "nodeFeedback": {"event": True, "label": True, "taint": True, "condition": True},
        },
    )  # fmt: skip
    deployment = example_deployment("vllm-good", namespace, node=node)
    deployment["spec"]["replicas"] = 2
    cluster.apply(deployment)
    yield namespace, node
    cluster.delete_namespace(namespace)
    cluster.kubectl("delete", "node", node, "--ignore-not-found", "--wait=false")


def tenant_may(cluster: Cluster, namespace: str) -> None:
    """Pods (and their status), ReplicaSets and StatefulSets: never the victim itself."""
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "patch"]},
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get", "patch"]},
        {"apiGroups": ["apps"], "resources": ["replicasets", "statefulsets"], "verbs": ["create"]},
    ]
    cluster.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "tenant", "namespace": namespace},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "tenant", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": TENANT}],
        },
    )


def as_tenant(cluster: Cluster, *args: str, input: str | None = None) -> Any:
    return cluster.kubectl(*args, f"--as={TENANT}", check=False, input=input)


def injected(cluster: Cluster, namespace: str, selector: str) -> list[dict[str, Any]]:
    items = get_json(
        cluster, "pods", "-n", namespace, "-l", f"{selector},{constants.INJECTED_POD_SELECTOR}"
    )["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def shown(cluster: Cluster, namespace: str, gpuval: str, pod: str) -> dict[str, Any] | None:
    """The pod's entry on the GPUValidation, once there."""
    found = cluster.kubectl("get", "gpuval", gpuval, "-n", namespace, "-o", "json", check=False)
    if found.returncode != 0:
        return None
    status = json.loads(found.stdout).get("status") or {}
    pods = {p["pod"]: p for p in (status.get("runtime") or {}).get("pods") or []}
    return pods.get(pod)


def unchanged(cluster: Cluster, namespace: str, node: str, victim: tuple[str, str, int]) -> None:
    """The victim (kind, name, replicas) keeps its replicas; the node carries nothing of
    ours: no label, taint or condition, and no record (so no reuse is offered)."""
    kind, name, n = victim
    replicas = get_json(cluster, kind, name, "-n", namespace)["spec"]["replicas"]
    assert replicas == n, f"the victim {kind} was scaled to {replicas}"
    obj = get_json(cluster, "node", node)
    assert KEY not in (obj["metadata"].get("labels") or {})
    assert KEY not in (obj["metadata"].get("annotations") or {})
    assert REUSE not in (obj["metadata"].get("annotations") or {})
    assert not [t for t in obj.get("spec", {}).get("taints") or [] if t["key"] == KEY]
    conditions = (obj.get("status") or {}).get("conditions") or []
    assert not [c for c in conditions if c["type"] == CONDITION and c["status"] == "False"]


def victims_pods(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    return wait_for(
        lambda: len(p := injected(cluster, namespace, "app=vllm-good")) == 2 and p,
        timeout=60,
        what="the victim's two injected pods",
    )


def test_a_pod_labelled_injected_later_is_refused_and_never_trusted(
    cluster: Cluster, victim: tuple[str, str]
) -> None:
    namespace, node = victim
    real = victims_pods(cluster, namespace)[0]
    rs_name = real["metadata"]["ownerReferences"][0]["name"]
    template_hash = real["metadata"]["labels"]["pod-template-hash"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "later",
            "namespace": namespace,
            "labels": {constants.LABEL_INJECT: "disabled", "pod-template-hash": template_hash},
            "annotations": {constants.ANNOTATION_CREATED_BY: "controller"},
            "ownerReferences": [
                {
                    "apiVersion": "evil.example.com/v1",
                    "kind": "ReplicaSet",
                    "name": rs_name,
                    "uid": "6a1d3f51-0000-4000-8000-000000000001",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "initContainers": [
                {"name": constants.CHECK_CONTAINER, "image": "busybox", "command": ["true"]}
            ],
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }
    made = as_tenant(cluster, "create", "-f", "-", input=json.dumps(pod))
    assert made.returncode == 0, made.stderr  # no webhook sees it: it is not injected
    labelled = as_tenant(
        cluster, "label", "pod", "later", "-n", namespace, f"{constants.LABEL_INJECTED}=true"
    )
    assert labelled.returncode != 0, "the injected label was added after creation"
    assert constants.LABEL_INJECTED in labelled.stderr

    # While /validate-provenance cannot answer (it fails open), the label goes on: the
    # operator itself must still not trust the pod.
    cluster.kubectl(
        "delete", "validatingwebhookconfiguration", localsetup.WEBHOOK_CONFIGURATION_NAME
    )
    try:
        wait_for(
            lambda: as_tenant(
                cluster, "label", "pod", "later", "-n", namespace,
                f"{constants.LABEL_INJECTED}=true",
            ).returncode == 0,
            what="the label, with no validating webhook",
        )  # fmt: skip
    finally:
        restore_validating(cluster)
    forged = get_json(cluster, "pod", "later", "-n", namespace)
    fakekubelet.play(cluster, forged, 1, ECC_FAILED)
    # The real pods' results come after the forged one on the same pod watch: once they
    # are on the GPUValidation, the forged result has been read too.
    for real_pod in victims_pods(cluster, namespace):
        fakekubelet.play(cluster, real_pod, 0, PASSED)
    wait_for(
        lambda: (
            (s := shown(cluster, namespace, "deployment-vllm-good", real["metadata"]["name"]))
            and s["createdBy"] == "controller"
        ),
        timeout=60,
        what="the controller's own pod trusted",
    )
    # The pod opts out itself (inject: disabled): it gets no state at all (scope.py, issue
    # 34 item 2); were it shown, it would be as anyone's, never the controller's.
    entry = shown(cluster, namespace, "deployment-vllm-good", "later")
    assert entry is None or entry["createdBy"] == "other", entry
    unchanged(cluster, namespace, node, ("deployment", "vllm-good", 2))


def restore_validating(cluster: Cluster) -> None:
    """The validating configuration as the fixture applied it (same port and CA)."""
    mutating = get_json(
        cluster, "mutatingwebhookconfiguration", localsetup.WEBHOOK_CONFIGURATION_NAME
    )
    url = mutating["webhooks"][0]["clientConfig"]["url"]
    port = int(url.split(":")[2].split("/")[0])
    import base64

    ca = base64.b64decode(mutating["webhooks"][0]["clientConfig"]["caBundle"])
    configs = localsetup.webhook_configurations(port, ca, failure_policy="Ignore")
    cluster.apply(*[c for c in configs if c["kind"] == "ValidatingWebhookConfiguration"])


def test_a_tenants_own_replicaset_named_after_the_victim_acts_on_nothing(
    cluster: Cluster, victim: tuple[str, str]
) -> None:
    namespace, node = victim
    victims_pods(cluster, namespace)
    # The victim's own pod template (a vLLM server: the webhook injects the check and, the
    # ReplicaSet controller being the creator, records created-by: controller).
    template = example_deployment("x", namespace, node=node)["spec"]["template"]
    template["metadata"]["labels"] = {"forged": "rs", "pod-template-hash": "t3n4nt"}
    replicaset = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "vllm-good-t3n4nt", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"forged": "rs"}},
            "template": template,
        },
    }
    made = as_tenant(cluster, "create", "-f", "-", input=json.dumps(replicaset))
    assert made.returncode == 0, made.stderr
    pod = wait_for(lambda: injected(cluster, namespace, "forged=rs"), what="the tenant's pod")[0]
    assert pod["metadata"]["annotations"][constants.ANNOTATION_CREATED_BY] == "controller"
    fakekubelet.play(cluster, pod, 1, ECC_FAILED)
    entry = wait_for(
        lambda: shown(cluster, namespace, "deployment-vllm-good", pod["metadata"]["name"]),
        timeout=60,
        what="the tenant's result on the victim's GPUValidation",
    )
    assert entry["createdBy"] == "other"
    unchanged(cluster, namespace, node, ("deployment", "vllm-good", 2))


def test_a_tenants_statefulset_with_the_victim_leaderworkersets_label_acts_on_nothing(
    cluster: Cluster, victim: tuple[str, str]
) -> None:
    namespace, node = victim
    template = example_deployment("x", namespace, node=node)["spec"]["template"]
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "victim-lws", "namespace": namespace},
        "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 1, "workerTemplate": template}},
    }
    cluster.apply(lws)
    wait_for(
        lambda: cluster.kubectl(
            "get", "gpuval", "leaderworkerset-victim-lws", "-n", namespace, check=False
        ).returncode == 0,
        timeout=60,
        what="the victim LeaderWorkerSet's GPUValidation",
    )  # fmt: skip
    forged_template = example_deployment("x", namespace, node=node)["spec"]["template"]
    forged_template["metadata"]["labels"] = {"forged": "sts", LWS_LABEL: "victim-lws"}
    statefulset = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "victim-lws-9", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "serviceName": "victim-lws-9",
            "selector": {"matchLabels": {"forged": "sts"}},
            "template": forged_template,
        },
    }
    made = as_tenant(cluster, "create", "-f", "-", input=json.dumps(statefulset))
    assert made.returncode == 0, made.stderr
    pod = wait_for(lambda: injected(cluster, namespace, "forged=sts"), what="the tenant's pod")[0]
    assert pod["metadata"]["annotations"][constants.ANNOTATION_CREATED_BY] == "controller"
    fakekubelet.play(cluster, pod, 1, ECC_FAILED)
    entry = wait_for(
        lambda: shown(cluster, namespace, "leaderworkerset-victim-lws", pod["metadata"]["name"]),
        timeout=60,
        what="the tenant's result on the victim LeaderWorkerSet's GPUValidation",
    )
    assert entry["createdBy"] == "other"
    unchanged(cluster, namespace, node, ("leaderworkerset", "victim-lws", 2))


def test_a_status_write_changes_no_mark(cluster: Cluster, victim: tuple[str, str]) -> None:
    namespace, node = victim
    bare = example_deployment("mine", namespace, node=node)["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mine"}, **bare}
    pod["metadata"] = {"name": "mine", "namespace": namespace, "labels": {"app": "mine"}}
    made = as_tenant(cluster, "create", "-f", "-", input=json.dumps(pod))
    assert made.returncode == 0, made.stderr
    body = get_json(cluster, "pod", "mine", "-n", namespace)
    assert body["metadata"]["annotations"][constants.ANNOTATION_CREATED_BY] == "other"
    patch = {"metadata": {"annotations": {constants.ANNOTATION_CREATED_BY: "controller"}}}
    written = as_tenant(
        cluster, "patch", "pod", "mine", "-n", namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps(patch),
    )  # fmt: skip
    assert written.returncode != 0, "created-by was changed through pods/status"
    body = get_json(cluster, "pod", "mine", "-n", namespace)
    assert body["metadata"]["annotations"][constants.ANNOTATION_CREATED_BY] == "other"
    # the kubelet's own status writes still go through
    fakekubelet.play(cluster, body, 0, PASSED)
