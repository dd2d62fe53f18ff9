"""Multi-node groups on the local control plane: a LeaderWorkerSet of size 3 whose pods
(made here as the LWS controller makes them: its labels, size annotation and LWS_* env)
get the injected check from the webhook; the test plays the kubelet, running the real
checker of each pod as a local process over the fake GPU driver with the pod's injected
env. The pods meet over 127.0.0.1 (no cluster DNS here: LWS_LEADER_ADDRESS, a DNS name in
a cluster, is pointed at 127.0.0.1). One group agrees; in the other, worker 1 runs other
vLLM arguments (a pod left from an older revision) and worker 2 never starts. The
GPUValidation then shows each group: members joined, verdict, slowest member."""

from __future__ import annotations

import copy
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from preflight_dev import fakekubelet
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

pytestmark = pytest.mark.e2e

INJECT = {constants.LABEL_INJECT: "enabled"}
LWS = "leaderworkerset.sigs.k8s.io"
SHM = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}


@pytest.fixture
def namespace(cluster: Cluster, operator: OperatorProcess) -> Iterator[str]:
    name = cluster.create_namespace("groups", labels=INJECT)
    yield name
    cluster.delete_namespace(name)


def vllm_container(worker: bool, *extra: str) -> dict[str, Any]:
    command = [
        "vllm",
        "serve",
        "m",
        "-tp",
        "2",
        "-pp",
        "3",
        *extra,
        "--nnodes",
        "$(LWS_GROUP_SIZE)",
    ]
    command += ["--node-rank", "$(LWS_WORKER_INDEX)", "--master-addr", "$(LWS_LEADER_ADDRESS)"]
    if worker:
        command.append("--headless")
    return {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.2",
        "command": command,
        "resources": {"limits": {"nvidia.com/gpu": 2}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }


def leaderworkerset(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": 3,
                "leaderTemplate": {
                    "spec": {"containers": [vllm_container(False)], "volumes": [SHM]}
                },
                "workerTemplate": {
                    "spec": {"containers": [vllm_container(True)], "volumes": [SHM]}
                },
            },
        },
    }


def group_pod(lws: dict[str, Any], namespace: str, index: int) -> dict[str, Any]:
    """Pod ``index`` of group 0, as the LWS controller and its pod webhook make it."""
    name = lws["metadata"]["name"]
    role = "leaderTemplate" if index == 0 else "workerTemplate"
    spec = copy.deepcopy(lws["spec"]["leaderWorkerTemplate"][role]["spec"])
    env = [
        {"name": "LWS_LEADER_ADDRESS", "value": f"{name}-0.{name}.{namespace}"},
        {"name": "LWS_GROUP_SIZE", "value": "3"},
        {"name": "LWS_WORKER_INDEX", "value": str(index)},
    ]
    for container in spec["containers"]:
        container["env"] = env + container.get("env", [])
    spec["nodeName"] = f"gpu-node-{index}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-0" if index == 0 else f"{name}-0-{index}",
            "namespace": namespace,
            "labels": {
                f"{LWS}/name": name,
                f"{LWS}/group-index": "0",
                f"{LWS}/worker-index": str(index),
                "app": name,
            },
            "annotations": {f"{LWS}/size": "3"},
        },
        "spec": spec,
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kubelet_env(pod: dict[str, Any], port: int) -> dict[str, str]:
    """The env the kubelet would give the injected check: literal values with $(VAR)
    expanded in order, the downward-API values resolved; the leader's address is
    127.0.0.1 here, and the deadline short."""
    check = next(c for c in pod["spec"]["initContainers"] if c["name"] == constants.CHECK_CONTAINER)
    meta = pod["metadata"]
    resolved = {
        "PREFLIGHT_GROUP_INDEX": meta["labels"][f"{LWS}/worker-index"],
        "PREFLIGHT_GROUP_SIZE": meta["annotations"][f"{LWS}/size"],
        "PREFLIGHT_GROUP_NUMBER": meta["labels"][f"{LWS}/group-index"],
        "PREFLIGHT_NODE_NAME": pod["spec"]["nodeName"],
        # who the member is (issue 36): the leader lists it, the operator matches it
        "PREFLIGHT_POD_NAME": meta["name"],
        "PREFLIGHT_POD_UID": meta["uid"],
    }
    env: dict[str, str] = {}
    for entry in check["env"]:
        name = entry["name"]
        if "valueFrom" in entry:
            if name in resolved:
                env[name] = resolved[name]
            continue
        env[name] = re.sub(
            r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
            lambda m: env.get(m.group(1), m.group(0)),
            str(entry.get("value", "")),
        )
    env.pop("TMPDIR", None)  # /preflight exists in the pod, not here
    env.update(
        LWS_LEADER_ADDRESS="127.0.0.1",
        PREFLIGHT_GROUP_BIND="127.0.0.1",
        PREFLIGHT_GROUP_PORT=str(port),  # the injected 29600 may be taken on this machine
        PREFLIGHT_DEADLINE="8",
        PATH=os.environ.get("PATH", ""),
    )
    if os.environ.get("PYTHONPATH"):  # a checkout's own code, not the one the venv installed
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def start_check(pod: dict[str, Any], port: int, workdir: Path, *fake: str) -> subprocess.Popen[str]:
    log = workdir / f"{pod['metadata']['name']}.termination-log"
    return subprocess.Popen(
        [sys.executable, "-m", "preflight_dev.demo.fakecheck", *fake,
         "--gpus", str(fakekubelet.check_gpus(pod)),
         "--shm-bytes", str(fakekubelet.check_shm_bytes(pod)),
         "--", "--termination-log", str(log)],
        env=kubelet_env(pod, port), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def play_kubelet(cluster: Cluster, pods: list[dict[str, Any]], workdir: Path) -> dict[str, Any]:
    """Run every pod's check at once (they must meet), then write each pod's status."""
    port = free_port()
    running = [(pod, start_check(pod, port, workdir)) for pod in pods]
    return finish_checks(cluster, running, workdir)


# Every pod's check runs here, so every member dials from 127.0.0.1: the podIP the kubelet
# would report for each (the address the leader sees; issue 36, core/groupproof.py).
POD_IP = "127.0.0.1"


def finish_checks(
    cluster: Cluster, running: list[tuple[dict[str, Any], subprocess.Popen[str]]], workdir: Path
) -> dict[str, Any]:
    """Wait for each check and write its pod's status, as the kubelet would."""
    reports: dict[str, Any] = {}
    for pod, proc in running:
        out, err = proc.communicate(timeout=60)
        code = proc.returncode
        name = pod["metadata"]["name"]
        log = workdir / f"{name}.termination-log"
        assert log.exists(), (name, code, out[-2000:], err[-2000:])
        message = log.read_text()
        reports[name] = (code, json.loads(message))
        status = fakekubelet.pod_status(pod, exit_code=code, message=message)
        status["podIP"] = POD_IP
        cluster.kubectl(
            "patch", "pod", name, "-n", pod["metadata"]["namespace"], "--subresource=status",
            "--type=merge", "-p", json.dumps({"status": status}),
        )  # fmt: skip
    return reports


def create_group(cluster: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    lws = leaderworkerset(name)
    cluster.apply({**lws, "metadata": {"name": name, "namespace": namespace}})
    return [group_pod(lws, namespace, i) for i in range(3)]


# The StatefulSet controller's identity (the bootstrap RBAC lets it create pods): a pod a
# controller creates is its workload's at admission (docs/OPERATOR.md, "Whose results
# count"); one the test's admin creates with an ownerReference is judged as a bare pod.
STATEFULSET_CONTROLLER = "system:serviceaccount:kube-system:statefulset-controller"


def injected(cluster: Cluster, pod: dict[str, Any], creator: str | None = None) -> dict[str, Any]:
    if creator is None:
        cluster.apply(pod)
    else:
        cluster.kubectl("create", "-f", "-", f"--as={creator}", input=json.dumps(pod))
    meta = pod["metadata"]
    stored: dict[str, Any] = json.loads(
        cluster.kubectl("get", "pod", meta["name"], "-n", meta["namespace"], "-o", "json").stdout
    )
    names = [c["name"] for c in stored["spec"].get("initContainers", [])]
    assert constants.CHECK_CONTAINER in names, names
    return stored


def groups_of(cluster: Cluster, namespace: str, workload: str) -> list[dict[str, Any]] | None:
    found = json.loads(cluster.kubectl("get", "gpuval", "-n", namespace, "-o", "json").stdout)
    for item in found["items"]:
        status = item.get("status") or {}
        if status.get("workload") == workload:
            groups = (status.get("runtime") or {}).get("groups")
            return groups if groups else None
    return None


def group_check(report: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["id"] == "group")


def test_a_group_that_agrees_passes_and_names_the_slowest_member(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    pods = [injected(cluster, p) for p in create_group(cluster, namespace, "agree")]
    check_env = {e["name"] for e in pods[1]["spec"]["initContainers"][1]["env"]}
    assert {"PREFLIGHT_GROUP_PORT", "PREFLIGHT_GROUP_INDEX", "PREFLIGHT_VLLM_ARGS"} <= check_env
    assert "PREFLIGHT_GROUP_ARGS" not in check_env  # one reading of the script: the rules'
    reports = play_kubelet(cluster, pods, tmp_path)
    for name, (code, report) in reports.items():
        assert code == 0, (name, report)
        assert report["group"]["status"] == "pass", (name, report["group"])
        assert report["group"]["joined"] == 3
    groups = wait_for(lambda: groups_of(cluster, namespace, "LeaderWorkerSet/agree"))
    assert len(groups) == 1
    group = groups[0]
    assert group["group"] == f"{namespace}/agree-0"
    assert (group["verdict"], group["membersJoined"], group["leaderReported"]) == ("pass", 3, True)
    # every member the leader counted is a pod of this group, as the API server says
    assert group["membersProven"] == 2
    assert "unmatched" not in group
    assert group["slowestMember"].startswith(("leader (gpu-node-", "worker "))


def test_mismatched_args_and_a_member_that_never_starts_fail_the_group(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    leader, stale, never = create_group(cluster, namespace, "split")
    stale["spec"]["containers"][0] = vllm_container(
        True, "--dtype", "float16"
    )  # an older revision's pod
    index_one = {"name": "LWS_WORKER_INDEX", "value": "1"}
    stale["spec"]["containers"][0]["env"] = [*leader["spec"]["containers"][0]["env"][:2], index_one]
    pods = [injected(cluster, p) for p in (leader, stale, never)]
    reports = play_kubelet(cluster, pods[:2], tmp_path)  # worker 2's check never runs
    code, report = reports["split-0"]
    assert code == 1  # Enforce: the leader's pod does not start vLLM
    message = group_check(report)["message"]
    assert "worker 2" in message
    assert "never joined" in message
    assert "NetworkPolicy" in message
    assert "worker 1 (gpu-node-1) runs vLLM with other engine arguments" in message
    assert "dtype (default) vs float16" in message
    code, report = reports["split-0-1"]
    assert code == 1
    assert "dtype (default) vs float16" in group_check(report)["message"]
    groups = wait_for(lambda: groups_of(cluster, namespace, "LeaderWorkerSet/split"))
    group = groups[0]
    assert (group["verdict"], group["membersJoined"], group["missing"]) == ("fail", 2, [2])
    assert group["podsReported"] == 2


def ray_leaderworkerset(name: str) -> dict[str, Any]:
    """The Ray pattern of the LWS vLLM example: the leader starts the Ray head and vLLM,
    the workers join with `ray start --address`; TP=2 x PP=3 over 3 pods of 2 GPUs."""

    def pod(command: str) -> dict[str, Any]:
        return {
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.2",
                    "command": ["sh", "-c", command],
                    "resources": {"limits": {"nvidia.com/gpu": 2}},
                    "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [SHM],
        }

    leader = (
        "ray start --head --port=6379 && vllm serve m -tp 2 -pp 3"
        " --distributed-executor-backend ray"
    )
    worker = "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": 3,
                "leaderTemplate": {"spec": pod(leader)},
                "workerTemplate": {"spec": pod(worker)},
            },
        },
    }


def test_a_ray_group_meets_with_its_workers_checked_on_their_own_gpus(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    lws = ray_leaderworkerset("ray")
    cluster.apply({**lws, "metadata": {"name": "ray", "namespace": namespace}})
    # LWS pods are owned by its StatefulSets (not bare pods, which admission judges
    # alone): a StatefulSet of 0 replicas stands in as their owner
    cluster.apply({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "ray", "namespace": namespace},
        "spec": {
            "replicas": 0, "serviceName": "ray", "selector": {"matchLabels": {"app": "owner"}},
            "template": {"metadata": {"labels": {"app": "owner"}},
                         "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
        },
    })  # fmt: skip
    owner = json.loads(
        cluster.kubectl("get", "statefulset", "ray", "-n", namespace, "-o", "json").stdout
    )
    reference = {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "ray",
        "uid": owner["metadata"]["uid"], "controller": True,
    }  # fmt: skip
    pods = []
    for i in range(3):
        pod = group_pod(lws, namespace, i)
        pod["metadata"]["ownerReferences"] = [reference]
        pods.append(injected(cluster, pod, creator=STATEFULSET_CONTROLLER))
    for pod in pods:
        env = {e["name"]: e.get("value") for e in pod["spec"]["initContainers"][1]["env"]}
        assert env["PREFLIGHT_TP"] == "2", pod["metadata"]["name"]  # the pod's own GPUs
        assert "PREFLIGHT_GROUP_PORT" in env, pod["metadata"]["name"]
    reports = play_kubelet(cluster, pods, tmp_path)
    for name, (code, report) in reports.items():
        failed = [c for c in report["checks"] if c["status"] == "fail"]
        assert code == 0, (name, failed)
        assert report["group"]["status"] == "pass", (name, report["group"])
        assert report["group"]["joined"] == 3
    groups = wait_for(lambda: groups_of(cluster, namespace, "LeaderWorkerSet/ray"))
    assert (groups[0]["verdict"], groups[0]["membersJoined"]) == ("pass", 3)
