"""Kthena ModelServing on the local control plane (issue 39 item 2 and its e2e): the
upstream ModelServing CRD (tests/data/crds/kthena, verbatim), our webhooks registered as
the chart does, and:

- a ModelServing whose role runs one multiprocessing vLLM over its entry pod and worker
  (`--nnodes $(GROUP_SIZE) --node-rank $(WORKER_INDEX) --master-addr $(ENTRY_ADDRESS)`)
  is admitted under Enforce; the same with the worker at another tensor-parallel size is
  denied, naming both values;
- its entry and worker pods, shaped as Kthena's controller makes them (created with a
  server-side dry run: no Kthena controller runs here), get the group env: the entry pod's
  address, the group's size and each pod's index.
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from preflight_dev import localoperator
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster
from preflight_operator.core import constants

CRD = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "crds"
    / "kthena"
    / "workload.serving.volcano.sh_modelservings.yaml"
)
MS = "modelserving.volcano.sh/"


@pytest.fixture(scope="module")
def operator(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    with localoperator.with_upstream_crds(k8s, tmp_path_factory.mktemp("kthena"), CRD) as op:
        yield op


def apply(cluster: Cluster, obj: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", "-f", "-", input=json.dumps(obj), check=False)


def template(tp: int, *, worker: bool) -> dict[str, Any]:
    script = (
        f"vllm serve m -tp {tp} -pp 2 --nnodes $(GROUP_SIZE) --node-rank $(WORKER_INDEX) "
        "--master-addr $(ENTRY_ADDRESS)" + (" --headless" if worker else "")
    )
    return {
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.2",
                    "command": ["sh", "-c", script],
                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                    "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        }
    }


def model_serving(name: str, namespace: str, worker_tp: int) -> dict[str, Any]:
    role = {
        "name": "prefill",
        "replicas": 1,
        "entryTemplate": template(8, worker=False),
        "workerReplicas": 1,
        "workerTemplate": template(worker_tp, worker=True),
    }
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulerName": "volcano", "replicas": 1, "template": {"roles": [role]}},
    }


def pod_of(stored: dict[str, Any], index: int) -> dict[str, Any]:
    """Pod ``index`` (0: the entry) of role instance prefill-0 of serving group 0, as
    Kthena's controller makes it (volcano-sh/kthena 3cc057284c34469fcb0ed22a12dac84b1d120719
    pkg/model-serving-controller/utils/utils.go: createBasePod, GenerateEntryPod,
    GenerateWorkerPod, createCommonEnvVars, addPodEnvVars)."""
    name, namespace = stored["metadata"]["name"], stored["metadata"]["namespace"]
    group, role_id = f"{name}-0", "prefill-0"
    role = stored["spec"]["template"]["roles"][0]
    spec = copy.deepcopy(role["entryTemplate" if index == 0 else "workerTemplate"]["spec"])
    spec["schedulerName"] = "volcano"
    for c in spec["containers"]:
        c.setdefault("env", []).extend(
            [
                {"name": "GROUP_SIZE", "value": str(role["workerReplicas"] + 1)},
                {"name": "ENTRY_ADDRESS", "value": f"{group}-{role_id}-0.{namespace}"},
                {"name": "WORKER_INDEX", "value": str(index)},
            ]
        )
    labels = {
        MS + "name": name,
        MS + "group-name": group,
        MS + "role": "prefill",
        MS + "role-id": role_id,
        MS + "revision": "r1",
        MS + "role-template-hash": "h1",
    }
    if index == 0:
        labels[MS + "entry"] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{group}-{role_id}-{index}",
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "workload.serving.volcano.sh/v1alpha1",
                    "kind": "ModelServing",
                    "name": name,
                    "uid": stored["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def test_a_modelservings_pods_get_group_env(k8s: Cluster, operator: OperatorProcess) -> None:
    namespace = k8s.create_namespace("kthena-inject", labels={constants.LABEL_INJECT: "enabled"})
    try:
        bad = apply(k8s, model_serving("broken", namespace, worker_tp=4))
        assert bad.returncode != 0, bad.stdout
        assert "ModelServing/broken cannot run" in bad.stderr, bad.stderr
        # both values and both places named (the "with both values named")
        assert "lws-args-mismatch: -tp is 8 on the leader" in bad.stderr, bad.stderr
        assert "but 4 on the workers" in bad.stderr, bad.stderr
        assert "roles[0].workerTemplate.spec.containers[0]" in bad.stderr, bad.stderr

        good = apply(k8s, model_serving("serve", namespace, worker_tp=8))
        assert good.returncode == 0, good.stderr
        stored = json.loads(
            k8s.kubectl("get", "modelserving", "serve", "-n", namespace, "-o", "json").stdout
        )
        for index in (0, 1):
            made = k8s.kubectl(
                "create", "--dry-run=server", "-o", "json", "-f", "-",
                input=json.dumps(pod_of(stored, index)),
            )  # fmt: skip
            injected = json.loads(made.stdout)
            check = next(
                c for c in injected["spec"]["initContainers"] if c["name"] == "preflight-check"
            )
            env = {e["name"]: e.get("value") for e in check["env"]}
            assert env["PREFLIGHT_GROUP_ADDRESS"] == f"serve-0-prefill-0-0.{namespace}"
            assert (env["PREFLIGHT_GROUP_SIZE"], env["PREFLIGHT_GROUP_INDEX"]) == ("2", str(index))
            assert env["PREFLIGHT_GROUP_ID"] == f"{namespace}/serve-0/prefill-0"
    finally:
        k8s.delete_namespace(namespace)
