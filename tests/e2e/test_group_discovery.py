"""Group discovery on the local control plane with the upstream JobSet CRD (issue 26 item 1).

JobSet's own examples (tests/data/groups, verbatim) go through the API server with the
upstream CRD (tests/data/crds/jobset, verbatim): validated, defaulted and pruned as a
cluster with JobSet installed would, then read back and judged by ``rules.groups``. Pods
that declare Kueue and Volcano groups go through the API server too (server-side dry run:
no scheduler or controller is needed for what they carry). No webhook of ours here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev import localsetup
from preflight_dev.testing import Cluster
from preflight_operator.core.rules import groups

DATA = Path(__file__).resolve().parents[1] / "data"
CRD = DATA / "crds" / "jobset" / "jobset.x-k8s.io_jobsets.yaml"


@pytest.fixture(scope="module")
def cluster(k8s: Cluster) -> Cluster:
    if not k8s.is_local:
        pytest.skip("needs the local control plane")
    applied = k8s.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=vllm-preflight-tests",
        "-o", "name", "-f", str(CRD), timeout=300,
    )  # fmt: skip
    localsetup.wait_established(k8s, applied.stdout.split())
    return k8s


def server_side(cluster: Cluster, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    """What the API server makes of ``obj`` (defaults, pruning), without storing it."""
    obj = {**obj, "metadata": {**obj.get("metadata", {}), "namespace": namespace}}
    out = cluster.kubectl(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(obj)
    ).stdout
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.mark.parametrize(
    ("name", "size", "roles"),
    [("jobset-coordinator.yaml", 5, ["driver", "workers"]), ("jobset-mnist.yaml", 4, ["workers"])],
)
def test_jobset_examples_are_groups(
    cluster: Cluster, k8s_namespace: str, name: str, size: int, roles: list[str]
) -> None:
    obj = yaml.safe_load((DATA / "groups" / name).read_text())
    served = server_side(cluster, k8s_namespace, obj)
    assert served["kind"] == "JobSet"
    found = groups.jobset(served, served["metadata"]["name"], k8s_namespace)
    assert [t.role for t in found] == roles
    group = groups.jobset_group(served)
    assert group is not None
    assert group.size == size


def test_pods_of_kueue_and_volcano_groups(cluster: Cluster, k8s_namespace: str) -> None:
    base = {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    kueue = {
        **base,
        "metadata": {
            "name": "kueue-member",
            "labels": {groups.KUEUE_GROUP: "sample-group"},
            "annotations": {groups.KUEUE_TOTAL: "2"},
        },
    }
    volcano = {
        **base,
        "metadata": {"name": "volcano-member", "annotations": {groups.VOLCANO_GROUP: "vllm-pg"}},
    }
    k = groups.pod_group(server_side(cluster, k8s_namespace, kueue))
    assert k is not None
    assert (k.system, k.size, k.leader) == ("kueue", 2, None)
    v = groups.pod_group(server_side(cluster, k8s_namespace, volcano))
    assert v is not None
    assert v.system == "volcano"
    assert groups.declared_warning(v)
