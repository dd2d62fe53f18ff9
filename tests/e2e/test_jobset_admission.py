"""JobSet on the local control plane (issue 26): the upstream JobSet CRD
(tests/data/crds/jobset, verbatim), our webhooks registered as the chart does (their
rules come from the kind registry, JobSet included), and:

- a JobSet whose vLLM asks for more GPUs than it requests is denied under Enforce, naming
  the rule and the field; a good one is admitted and gets its own GPUValidation;
- a pod shaped as JobSet's and the Job controller make it (created with a server-side dry
  run: no JobSet controller runs here) gets the group env from the stored JobSet;
- the PreflightPolicy CRD takes `groups.socketFallback` Warn or Fail, nothing else.
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
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

CRD = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "crds"
    / "jobset"
    / "jobset.x-k8s.io_jobsets.yaml"
)
JS = "jobset.sigs.k8s.io/"
INDEX = "batch.kubernetes.io/job-completion-index"


@pytest.fixture(scope="module")
def operator(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    with localoperator.with_upstream_crds(k8s, tmp_path_factory.mktemp("jobset"), CRD) as op:
        yield op


def apply(cluster: Cluster, obj: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", *extra, "-f", "-", input=json.dumps(obj), check=False)


def container(tp: int, gpus: int) -> dict[str, Any]:
    script = (
        f"vllm serve m -tp {tp} --nnodes 2 --node-rank $(JOB_COMPLETION_INDEX) "
        "--master-addr serve-vllm-0-0.serve"
    )
    return {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.2",
        "command": ["sh", "-c", script],
        "resources": {"limits": {"nvidia.com/gpu": gpus}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }


def jobset(name: str, namespace: str, tp: int, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "coordinator": {"replicatedJob": "vllm", "jobIndex": 0, "podIndex": 0},
            # what JobSet's own webhook defaults (pkg/webhooks/jobset_webhook.go Default);
            # it does not run here, so written out
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "replicatedJobs": [
                {
                    "name": "vllm",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": 2,
                            "completions": 2,
                            "completionMode": "Indexed",
                            "template": {
                                "spec": {
                                    "restartPolicy": "OnFailure",
                                    "containers": [container(tp, gpus)],
                                    "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


def test_jobset_admission_and_its_pods_group(k8s: Cluster, operator: OperatorProcess) -> None:
    namespace = k8s.create_namespace("adm-jobset", labels={constants.LABEL_INJECT: "enabled"})
    try:
        bad = apply(k8s, jobset("bad", namespace, tp=8, gpus=2))  # 4 a pod over 2 nodes
        assert bad.returncode != 0
        assert "JobSet/bad cannot run on the GPUs it requests" in bad.stderr
        assert "gpu-count-too-low" in bad.stderr
        assert "spec.replicatedJobs[0].template.spec.template.spec" in bad.stderr

        good = apply(k8s, jobset("serve", namespace, tp=4, gpus=2))
        assert good.returncode == 0, good.stderr

        def static() -> dict[str, Any] | None:
            got = k8s.kubectl(
                "get", "gpuval", "jobset-serve", "-n", namespace, "-o", "json", check=False
            )
            if got.returncode != 0:
                return None
            status: dict[str, Any] = json.loads(got.stdout).get("status") or {}
            return status if status.get("staticVerdict") not in (None, "unknown") else None

        assert wait_for(static, what="the JobSet's GPUValidation")["staticVerdict"] == "pass"

        stored = json.loads(
            k8s.kubectl("get", "jobset", "serve", "-n", namespace, "-o", "json").stdout
        )
        pod = pod_of(stored, index=1)
        made = k8s.kubectl(
            "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(pod)
        )
        injected = json.loads(made.stdout)
        check = next(
            c for c in injected["spec"]["initContainers"] if c["name"] == "preflight-check"
        )
        env = {e["name"]: e.get("value") for e in check["env"]}
        assert env["PREFLIGHT_GROUP_ADDRESS"] == "serve-vllm-0-0.serve"
        assert (env["PREFLIGHT_GROUP_SIZE"], env["PREFLIGHT_GROUP_INDEX"]) == ("2", "1")
        assert env["PREFLIGHT_GROUP_ID"] == f"{namespace}/serve#0"
        assert env["PREFLIGHT_SOCKET_FALLBACK"] == "warn"
    finally:
        k8s.delete_namespace(namespace)


def pod_of(stored: dict[str, Any], index: int) -> dict[str, Any]:
    """Pod `index` of the JobSet's one Job, as JobSet's controller (constructJob,
    labelAndAnnotateObject) and the Job controller (Indexed: the completion index
    annotation and label, hostname, JOB_COMPLETION_INDEX) make it."""
    name, namespace = stored["metadata"]["name"], stored["metadata"]["namespace"]
    job = f"{name}-vllm-0"
    keys = {
        JS + "jobset-name": name,
        JS + "jobset-uid": stored["metadata"]["uid"],
        JS + "replicatedjob-name": "vllm",
        JS + "restart-attempt": "0",
        JS + "replicatedjob-replicas": "1",
        JS + "global-replicas": "1",
        JS + "job-index": "0",
        JS + "job-global-index": "0",
        JS + "coordinator": f"{name}-vllm-0-0.{name}",
    }
    template = stored["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    spec = copy.deepcopy(template["spec"])
    spec.update(subdomain=name, hostname=f"{job}-{index}")
    for c in spec["containers"]:
        c.setdefault("env", []).append(
            {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{INDEX}']"}},
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-{index}-x",
            "namespace": namespace,
            "labels": {**keys, INDEX: str(index), "batch.kubernetes.io/job-name": job},
            "annotations": {**keys, INDEX: str(index)},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": job,
                    "uid": "00000000-0000-0000-0000-000000000001",
                    "controller": True,
                }
            ],
        },
        "spec": spec,
    }


def test_the_policy_crd_takes_warn_or_fail(k8s: Cluster, operator: OperatorProcess) -> None:
    namespace = k8s.create_namespace("pol-socket")
    try:
        policy = {
            "apiVersion": constants.API_VERSION,
            "kind": constants.POLICY_KIND,
            "metadata": {"name": "p", "namespace": namespace},
            "spec": {"groups": {"socketFallback": "Sometimes"}},
        }
        refused = apply(k8s, policy)
        assert refused.returncode != 0
        assert "socketFallback" in refused.stderr
        assert '"Warn", "Fail"' in refused.stderr or "supported values" in refused.stderr
        policy["spec"] = {"groups": {"socketFallback": "Fail"}}
        assert apply(k8s, policy).returncode == 0
        stored = json.loads(
            k8s.kubectl("get", "pfpolicy", "p", "-n", namespace, "-o", "json").stdout
        )
        assert stored["spec"]["groups"] == {"socketFallback": "Fail"}
        policy["spec"] = {"groups": {}}
        assert apply(k8s, policy).returncode == 0
        stored = json.loads(
            k8s.kubectl("get", "pfpolicy", "p", "-n", namespace, "-o", "json").stdout
        )
        assert stored["spec"]["groups"] == {"socketFallback": "Warn"}  # the CRD's default
    finally:
        k8s.delete_namespace(namespace)
