"""The Kubernetes Workload API for gang scheduling on a control plane that serves it (issue
26): the next control plane (KUBERNETES_NEXT_VERSION, hack/k8s/versions.env) started with
the API's feature gates and group version on (preflight_dev.testing.nextplane). A Workload,
a PodGroup and pods that name it are stored, read back as the API server keeps them, and
judged by ``rules.workloadapi``. Skips, saying why, where the next control plane is not
built (`hack/k8s/build.sh next`; `make test` builds it first).

With the operator's webhooks registered on that control plane, a multi-node vLLM pod that
names a gang is injected as any other (its own check, no group env from the gang) and its
admission carries a warning built from the PodGroup the webhook read there (webhooks.py).

The objects are those of Kubernetes 1.36+ (scheduling.k8s.io/v1alpha2 and later: a pod
names a PodGroup in ``spec.schedulingGroup``); the 1.35 shape (``spec.workloadRef`` and a
v1alpha1 Workload) is covered by tests/unit/test_workloadapi.py only, since no 1.35 control
plane is built here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from preflight_dev import localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import BinariesNotFound, Cluster, KubectlError, LocalCluster
from preflight_dev.testing.nextplane import workload_api_cluster
from preflight_operator.core import constants
from preflight_operator.core.rules import groups, workloadapi


@pytest.fixture(scope="module")
def next_plane() -> Iterator[tuple[LocalCluster, str]]:
    try:
        cluster, api_version = workload_api_cluster(start_timeout=180.0)
    except BinariesNotFound as err:
        pytest.skip(f"the Workload API needs the next control plane: {err}")
    if api_version == "scheduling.k8s.io/v1alpha1":
        pytest.skip("the next control plane is 1.35 (Workload API v1alpha1): no PodGroup object")
    with cluster:
        yield cluster, api_version


@pytest.fixture
def namespace(next_plane: tuple[LocalCluster, str]) -> Iterator[str]:
    cluster, _ = next_plane
    name = cluster.create_namespace(prefix="workload")
    yield name
    cluster.delete_namespace(name)


def stored(cluster: LocalCluster, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Applies `obj` (server-side) and reads it back as the API server keeps it."""
    obj = {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}
    cluster.kubectl(
        "apply", "--server-side", "--field-manager=vllm-preflight-tests", "-f", "-",
        input=json.dumps(obj),
    )  # fmt: skip
    group, _, version = obj["apiVersion"].rpartition("/")
    resource = f"{obj['kind'].lower()}s" + (f".{version}.{group}" if group else "")
    out = cluster.kubectl("get", resource, obj["metadata"]["name"], "-n", namespace, "-o", "json")
    read: dict[str, Any] = json.loads(out.stdout)
    return read


def gang_pod(name: str, group: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "vllm", "image": "vllm/vllm-openai:latest"}],
            "schedulingGroup": {"podGroupName": group},
        },
    }


def test_the_api_is_served_where_the_gates_are_on(next_plane: tuple[LocalCluster, str]) -> None:
    cluster, api_version = next_plane
    out = cluster.kubectl("api-resources", "--api-group=scheduling.k8s.io", "-o", "name").stdout
    assert {"workloads.scheduling.k8s.io", "podgroups.scheduling.k8s.io"} <= set(out.split())
    assert cluster.version.startswith("v1.3")
    assert api_version in workloadapi.PODGROUP_VERSIONS


def test_a_gang_pod_group_read_back_and_judged(
    next_plane: tuple[LocalCluster, str], namespace: str
) -> None:
    cluster, api_version = next_plane
    workload = stored(
        cluster,
        namespace,
        {
            "apiVersion": api_version,
            "kind": "Workload",
            "metadata": {"name": "vllm"},
            "spec": {
                "podGroupTemplates": [
                    {"name": "engine", "schedulingPolicy": {"gang": {"minCount": 2}}}
                ]
            },
        },
    )
    assert workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    group = stored(
        cluster,
        namespace,
        {
            "apiVersion": api_version,
            "kind": "PodGroup",
            "metadata": {"name": "vllm-0"},
            "spec": {
                "podGroupTemplateRef": {
                    "workload": {"workloadName": "vllm", "podGroupTemplateName": "engine"}
                },
                "schedulingPolicy": {"gang": {"minCount": 2}},
            },
        },
    )
    pods = [stored(cluster, namespace, gang_pod(f"vllm-{i}", "vllm-0")) for i in range(2)]
    for pod in pods:
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": "vllm-0"}  # kept, not pruned
        found = workloadapi.workload_group(pod, group)
        assert found is not None
        assert (found.policy, found.min_count) == ("gang", 2)
        assert found.declared.name == "vllm-0"
        assert found.declared.size is None  # minCount is a minimum, not the size
        assert groups.declared_warning(found.declared)  # unknown: a warning, never a failure


def test_a_basic_pod_group_and_a_missing_one(
    next_plane: tuple[LocalCluster, str], namespace: str
) -> None:
    cluster, api_version = next_plane
    basic = stored(
        cluster,
        namespace,
        {
            "apiVersion": api_version,
            "kind": "PodGroup",
            "metadata": {"name": "web"},
            "spec": {"schedulingPolicy": {"basic": {}}},
        },
    )
    pod = stored(cluster, namespace, gang_pod("web-0", "web"))
    found = workloadapi.workload_group(pod, basic)
    assert found is not None
    assert (found.policy, found.min_count) == ("basic", None)
    # A pod may name a PodGroup that does not exist (yet): the API server accepts it.
    orphan = stored(cluster, namespace, gang_pod("orphan-0", "not-there"))
    with pytest.raises(KubectlError, match=r"NotFound|not found"):
        cluster.kubectl("get", f"podgroups.{api_version.split('/')[1]}.scheduling.k8s.io",
                        "not-there", "-n", namespace)  # fmt: skip
    missing = workloadapi.workload_group(orphan, None, missing="not found")
    assert missing is not None
    assert missing.min_count is None
    assert missing.declared.unknown[0] == "the PodGroup 'not-there' (not found)"


def test_the_api_server_refuses_a_gang_of_zero(
    next_plane: tuple[LocalCluster, str], namespace: str
) -> None:
    """What the reader treats as unknown (minCount 0) never comes from this API server."""
    cluster, api_version = next_plane
    bad = {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": "zero", "namespace": namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 0}}},
    }
    with pytest.raises(KubectlError, match="minCount"):
        cluster.kubectl("create", "-f", "-", input=json.dumps(bad))


def test_without_the_api_a_pod_keeps_no_reference(k8s: Cluster, k8s_namespace: str) -> None:
    """On the default control plane (1.34: no such field; a newer one with the gates off:
    the field is dropped) a pod that names a PodGroup is stored without the name, so the
    reader finds no group there: no group is ever invented from a field the cluster drops."""
    pod = {**gang_pod("plain-0", "vllm-0")}
    pod["metadata"] = {"name": "plain-0", "namespace": k8s_namespace}
    out = k8s.kubectl(
        "create", "--dry-run=server", "--validate=false", "-o", "json", "-f", "-",
        input=json.dumps(pod),
    ).stdout  # fmt: skip
    served = json.loads(out)
    assert "schedulingGroup" not in served["spec"]
    assert workloadapi.workload_group(served, None) is None


@pytest.fixture(scope="module")
def webhooks_on_next(
    next_plane: tuple[LocalCluster, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    cluster, _ = next_plane
    localsetup.install_crds(cluster)
    op = localoperator.start_with_webhooks(cluster, tmp_path_factory.mktemp("workload-api"))
    yield op
    localoperator.remove_webhooks(cluster)
    op.stop()


def multi_node_pod(name: str, group: str) -> dict[str, Any]:
    """A pod of a two-node vLLM engine (vLLM's own --nnodes, no Ray) naming a PodGroup."""
    script = "vllm serve m -tp 8 -pp 2 --nnodes 2 --node-rank 0 --master-addr vllm-0.vllm"
    pod = gang_pod(name, group)
    pod["spec"]["containers"][0].update(
        command=["sh", "-c", script],
        resources={"limits": {"nvidia.com/gpu": 8}},
        volumeMounts=[{"name": "dshm", "mountPath": "/dev/shm"}],
    )
    pod["spec"]["volumes"] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}
    ]
    return pod


def test_the_webhook_reads_the_gang_and_warns_without_giving_a_group(
    next_plane: tuple[LocalCluster, str], webhooks_on_next: OperatorProcess
) -> None:
    cluster, api_version = next_plane
    namespace = cluster.create_namespace("wl-inject", labels={constants.LABEL_INJECT: "enabled"})
    try:
        stored(
            cluster,
            namespace,
            {
                "apiVersion": api_version,
                "kind": "PodGroup",
                "metadata": {"name": "vllm-0"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
            },
        )
        for name, group, said in (
            ("vllm-0", "vllm-0", "its gang's minCount 1"),
            ("lost-0", "not-there", "the PodGroup 'not-there' (not found)"),
        ):
            pod = {**multi_node_pod(name, group)}
            pod["metadata"] = {"name": name, "namespace": namespace}
            made = cluster.kubectl(
                "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(pod)
            )
            injected = json.loads(made.stdout)
            assert injected["spec"]["schedulingGroup"] == {"podGroupName": group}
            check = next(
                c for c in injected["spec"]["initContainers"] if c["name"] == "preflight-check"
            )
            names = {e["name"] for e in check["env"]}
            assert not {n for n in names if n.startswith("PREFLIGHT_GROUP_")}  # none guessed
            warnings = [line for line in made.stderr.splitlines() if "vllm-preflight:" in line]
            assert len(warnings) == 1, made.stderr
            assert "this pod's index and the leader's address" in warnings[0]
            assert said in warnings[0]
    finally:
        cluster.delete_namespace(namespace)
