"""Issue 34, items 1, 2 and 5: no tenant's objects stop, fill or steer the operator (real
control plane, real API server, the operator as processes, restarted).

The tester's objects, all in a namespace that never opted in, made by a tenant who may
create pods (and ResourceClaimTemplates) there:

- 200 bare pods labelled ``vllm-preflight.io/injected=true``, each with 20 vLLM containers
  and a long ``CUDA_VISIBLE_DEVICES`` (large findings). The operator made a GPUValidation
  of up to 27 KB for each, and its GPUValidation list page went over 4 MiB;
- 4 pods of 1 MB, labelled the same: the injected-pods list page went over 4 MiB;
- 4 ResourceClaimTemplates of 1 MB: the DRA claims' list page went over 4 MiB.

Any page over 4 MiB was refused whole, so a replica that restarted failed its start-up every
60 s and never served (with the webhooks failing open, nothing was checked anywhere).

Two operator replicas with the chart's defaults: leader election on one Lease (not
``--standalone``), its timings (15 s lease, 10 s renew deadline, 2 s retry period: the
operator's defaults), the Lease in a namespace of its own (the release namespace). Both
start after the tenant's objects exist, one after the other as a rollout starts them, and
each must serve (/healthz 200) within 60 s of its start; whichever leads reads a result in
the opted-in namespace. Then both restart while the objects still exist: the leader is
killed (SIGKILL: an OOM, a lost node), the follower stopped (SIGTERM: a drain), and two new
replicas must each serve within 60 s again, and whichever of them leads reads a new result.
No GPUValidation appears outside opted-in namespaces. Then a deleted bare pod is forgotten
(its GPUValidation was made and collected in a loop), and an ownerReference named
``../../..`` is refused without a call.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.e2e.test_operator_ha import LEADER, STATUS_WRITES
from tests.e2e.test_operator_results import gpuval, injected_pods

from preflight_contract.report import CheckResult, GPUEntry, Report
from preflight_dev import fakekubelet, localoperator
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.workloads import get_json
from preflight_operator.core import constants

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
INJECT = {constants.LABEL_INJECT: "enabled"}
MB = 1024 * 1024
LABELLED = {constants.LABEL_INJECTED: "true"}
HOLD = "example.com/hold"  # a finalizer of the test's own
PASSED = Report(
    checks=[CheckResult("gpu-count", "pass", "CUDA sees 2 GPUs")],
    gpus=[GPUEntry(0, "GPU-a", "0000:06:00.0"), GPUEntry(1, "GPU-b", "0000:07:00.0")],
).to_termination_message()


def deployment(name: str, namespace: str) -> dict[str, Any]:
    doc = next(
        d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d["kind"] == "Deployment"
    )
    doc["metadata"]["namespace"] = namespace
    return dict(doc)


def bare_pod(name: str, namespace: str, *, containers: int = 1, pad: int = 0) -> dict[str, Any]:
    """A bare vLLM pod labelled injected; ``containers`` copies of the vLLM container, each
    with a long CUDA_VISIBLE_DEVICES (findings), ``pad`` bytes in an env value."""
    spec = copy.deepcopy(deployment("good-tp2-deployment.yaml", namespace)["spec"]["template"])
    vllm = spec["spec"]["containers"][0]
    devices = ",".join(str(i % 8) for i in range(400))
    copies = []
    for i in range(containers):
        container = copy.deepcopy(vllm)
        container["name"] = f"vllm-{i}"
        container["env"] = [{"name": "CUDA_VISIBLE_DEVICES", "value": devices}]
        if pad:
            container["env"].append({"name": "PAD", "value": "x" * pad})
        copies.append(container)
    spec["spec"]["containers"] = copies
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(LABELLED)},
        "spec": spec["spec"],
    }


def claim_template(name: str, namespace: str) -> str:
    """A ResourceClaimTemplate of about 1 MB: a flat managedFields entry (the one place of
    a built-in object a client may fill freely; the operator drops it, but it still
    counts in the list page)."""
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "managedFields": [
                {
                    "manager": "tenant",
                    "operation": "Update",
                    "apiVersion": "resource.k8s.io/v1",
                    "time": "2026-12-01T00:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:" + "a" * MB: {}},
                }
            ],
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
                }
            }
        },
    }
    return json.dumps(body)


def create_many(cluster: Cluster, docs: list[dict[str, Any]]) -> None:
    """One kubectl call per batch (``create``: the pods are new; 20 at a time keeps each
    request far under the API server's 3 MiB)."""
    for start in range(0, len(docs), 20):
        batch = {"apiVersion": "v1", "kind": "List", "items": docs[start : start + 20]}
        cluster.kubectl("create", "-f", "-", input=json.dumps(batch))


def gpuvals(cluster: Cluster, namespace: str) -> list[str]:
    items = get_json(cluster, "gpuval", "-n", namespace)["items"]
    return [str(i["metadata"]["name"]) for i in items]


def runtime(cluster: Cluster, namespace: str, pods: int) -> str | None:
    """The workload's runtime verdict once ``pods`` results are on its GPUValidation."""
    found = gpuval(cluster, namespace, "deployment-vllm-good")
    status = (found or {}).get("status") or {}
    checked = (status.get("runtime") or {}).get("podsChecked")
    verdict = status.get("runtimeVerdict")
    return verdict if verdict == "pass" and checked == pods else None


def two_replicas(
    cluster: Cluster, workdir: Path, lease_namespace: str, names: tuple[str, str]
) -> list[OperatorProcess]:
    """Two replicas on one Lease with the chart's timings (the operator's defaults), started
    one after the other; the first serves the webhooks (one port can be registered here; the
    chart's Service spreads them). ``start_with_webhooks`` returns once the replica's webhook
    port listens and its /healthz says 200, and raises after 60 s of its start (before: 503
    "starting" for good)."""
    args = ["--lease-namespace", lease_namespace, "--lease-name", constants.LEASE_NAME]
    started: list[OperatorProcess] = []
    try:
        for name in names:
            started.append(
                localoperator.start_with_webhooks(
                    cluster,
                    workdir,
                    identity=name,
                    standalone=False,
                    extra_args=args,
                    webhooks=not started,
                )
            )
    except BaseException:
        for replica in started:
            replica.kill()
        raise
    return started


def leading(replicas: list[OperatorProcess]) -> OperatorProcess:
    """The replica that holds the Lease (after a SIGKILL, once the dead leader's 15 s ran
    out)."""
    return wait_for(
        lambda: next((r for r in replicas if r.metric(LEADER) == 1), None),
        timeout=60,
        what="a replica to lead",
    )


@pytest.fixture(scope="module")
def cluster(own_cluster: Cluster) -> Cluster:
    """The module's own control plane (conftest.own_cluster): both tests compare counts of
    the whole cluster."""
    return own_cluster


@pytest.fixture
def namespaces(cluster: Cluster) -> Iterator[tuple[str, str, str]]:
    opted_in = cluster.create_namespace("bounds", labels=INJECT)
    tenant = cluster.create_namespace("tenant-big")  # never opted in
    release = cluster.create_namespace("bounds-release")  # the Lease's, never opted in
    yield opted_in, tenant, release
    localoperator.remove_webhooks(cluster)
    cluster.delete_namespace(opted_in)
    cluster.delete_namespace(release)
    cluster.delete_namespace(tenant, wait=True)  # the next test counts workloads
    cluster.delete_namespace(opted_in, wait=True)


def test_big_objects_of_a_namespace_that_never_opted_in_stop_nothing(
    cluster: Cluster, namespaces: tuple[str, str, str], tmp_path: Path
) -> None:
    opted_in, tenant, release = namespaces
    # The tenant's objects exist before the operator starts: its first lists meet them.
    create_many(cluster, [bare_pod(f"big-{i}", tenant, containers=20) for i in range(200)])
    for i in range(4):
        cluster.kubectl("create", "-f", "-", input=json.dumps(bare_pod(f"mb-{i}", tenant, pad=MB)))
        templates = f"/apis/resource.k8s.io/v1/namespaces/{tenant}/resourceclaimtemplates"
        cluster.kubectl(
            "create", "--raw", templates, "-f", "-", input=claim_template(f"rct-{i}", tenant)
        )
    pages = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{tenant}/pods?limit=500").stdout
    assert len(pages) > 4 * MB, "the tenant's pods fill more than one 4 MiB page (the attack)"

    replicas: list[OperatorProcess] = []
    try:
        replicas = two_replicas(cluster, tmp_path, release, ("replica-a", "replica-b"))
        leader = leading(replicas)
        cluster.apply(deployment("good-tp2-deployment.yaml", opted_in))
        first = wait_for(lambda: injected_pods(cluster, opted_in, "vllm-good"), timeout=60)[0]
        fakekubelet.play(cluster, first, 0, PASSED)
        read = wait_for(lambda: runtime(cluster, opted_in, 1), timeout=60, what="a result read")
        assert read == "pass"
        assert leader.metric(STATUS_WRITES) > 0, "the leader wrote it"

        # Both restart while the objects exist: the leader killed (an OOM, a lost node),
        # the follower stopped (a drain). The new replicas serve again, and read again.
        leader.kill()
        for replica in replicas:
            if replica is not leader:
                replica.stop()
        replicas = []  # the finally stops only the new ones
        replicas = two_replicas(cluster, tmp_path, release, ("replica-c", "replica-d"))
        leader = leading(replicas)
        cluster.kubectl("scale", "deployment", "vllm-good", "-n", opted_in, "--replicas=2")
        pods = wait_for(
            lambda: len(p := injected_pods(cluster, opted_in, "vllm-good")) == 2 and p,
            timeout=60,
            what="a second pod injected",
        )
        second = next(p for p in pods if p["metadata"]["name"] != first["metadata"]["name"])
        fakekubelet.play(cluster, second, 0, PASSED)
        read = wait_for(
            lambda: runtime(cluster, opted_in, 2),
            timeout=60,
            what="a result read after both restarted",
        )
        assert read == "pass"
        assert leader.metric(STATUS_WRITES) > 0, "the new leader wrote it"
        for replica in replicas:
            assert replica.running(), replica.log_tail()
            assert replica.healthy(), replica.log_tail()
    finally:
        for replica in replicas:
            replica.stop()
    assert gpuvals(cluster, tenant) == [], "no GPUValidation outside opted-in namespaces"


@pytest.fixture
def opted_in(cluster: Cluster) -> Iterator[str]:
    name = cluster.create_namespace("forget", labels=INJECT)
    yield name
    localoperator.remove_webhooks(cluster)
    cluster.delete_namespace(name)


def test_a_deleted_bare_pod_is_forgotten_and_a_malformed_owner_never_read(
    cluster: Cluster, opted_in: str, tmp_path: Path
) -> None:
    operator = localoperator.start_with_webhooks(cluster, tmp_path, webhooks=False)
    try:
        before = operator.metric("vllm_preflight_workloads")
        cluster.kubectl("create", "-f", "-", input=json.dumps(bare_pod("solo", opted_in)))
        wait_for(lambda: gpuval(cluster, opted_in, "pod-solo"), timeout=60, what="pod-solo")
        assert operator.metric("vllm_preflight_workloads") == before + 1
        cluster.kubectl("delete", "pod", "solo", "-n", opted_in, "--wait=false")
        # Forgotten: the key leaves the store and the garbage collector's deletion of the
        # GPUValidation makes nothing again (before: made and collected in a loop).
        wait_for(
            lambda: operator.metric("vllm_preflight_workloads") == before,
            timeout=60,
            what="the deleted bare pod forgotten",
        )
        wait_for(
            lambda: gpuval(cluster, opted_in, "pod-solo") is None,
            timeout=60,
            what="the garbage collector",
        )
        assert operator.metric("vllm_preflight_workloads") == before

        # An ownerReference whose name is a path: never in a path, no call made.
        forged = bare_pod("pathy", opted_in)
        forged["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "../../../../api/v1/nodes/gpu-1",
                "uid": "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
                "controller": True,
            }
        ]
        # The garbage collector deletes a pod whose owner does not exist, at a moment of
        # its own: a finalizer keeps the pod (deleting, but there) until the operator has
        # met it, so that the refusal never races the collector.
        forged["metadata"]["finalizers"] = [HOLD]
        cluster.kubectl("create", "-f", "-", input=json.dumps(forged))
        try:
            wait_for(
                lambda: "malformed reference" in operator.log_path.read_text(),
                timeout=60,
                what="the refusal logged",
            )
        finally:
            release = json.dumps({"metadata": {"finalizers": None}})
            cluster.kubectl("patch", "pod", "pathy", "-n", opted_in, "--type=merge", "-p", release)
        assert operator.running(), operator.log_tail()
        assert operator.healthy(), operator.log_tail()
    finally:
        operator.stop()
