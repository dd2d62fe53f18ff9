"""Verdict reuse (issue 29 item 3) on the local control plane, with the real checker on the
fake driver: a Deployment's pod passes the deep tier on a node; the operator records it on
the Node; the pod is deleted (a restart), the ReplicaSet makes a new one, the injector
offers the recorded pass in its env; the real checker, run with that env over the fake
driver (the same GPUs and driver), skips the deep tier; the GPUValidation says whose deep
pass the new pod reused.

The control plane has no kubelet: the test plays it (as test_node_feedback.py does) and
writes the check container's imageID, which the kubelet would, so the record has the
image digest that ran.
"""

from __future__ import annotations

import datetime
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from preflight_contract import envnames
from preflight_contract.report import CheckResult, GPUEntry, Report
from preflight_contract.reuse import ANNOTATION, DEEP_PASS_KEY, parse_offers
from preflight_contract.verdicts import PASS, SKIP
from preflight_dev import fakekubelet
from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.workloads import (
    apply_policy,
    example_deployment,
    get_json,
    injected_pods,
)
from preflight_operator.core import constants
from preflight_operator.core.verdictreuse import MAX_PER_NAMESPACE

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
DIGEST = "sha256:" + "5e" * 32
IMAGE = f"vllm/vllm-openai@{DIGEST}"


@pytest.fixture
def node(cluster: Cluster) -> Iterator[str]:
    name = f"gpu-node-{secrets.token_hex(3)}"
    cluster.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    yield name
    cluster.kubectl("delete", "node", name, "--ignore-not-found", "--wait=false")


def check_env(pod: dict[str, Any]) -> dict[str, str]:
    check = next(c for c in pod["spec"]["initContainers"] if c["name"] == constants.CHECK_CONTAINER)
    return {e["name"]: e["value"] for e in check["env"] if "value" in e}


def checker(env: dict[str, str], node: str, tmp_path: Path) -> Report:
    """The real checker over the fake driver, with the env the injector wrote (the kubelet
    would fill PREFLIGHT_NODE_NAME from spec.nodeName)."""
    wanted = {k: v for k, v in env.items() if k.startswith(envnames.PREFIX)}
    wanted[envnames.NODE_NAME] = node
    wanted.pop(envnames.DEADLINE, None)
    tmp_path.mkdir(exist_ok=True)
    host = fake_host(h200_machine(2), wanted, deep_plan={})
    run = run_check(host, ["--deep-timeout", "20"], tmp_path)
    assert run.code == 0, run.stdout
    return run.report


def kubelet(cluster: Cluster, pod: dict[str, Any], report: Report, finished: str) -> None:
    status = fakekubelet.pod_status(
        pod, exit_code=0, message=report.to_termination_message(), finished=finished
    )
    for entry in status["initContainerStatuses"]:
        if entry["name"] == constants.CHECK_CONTAINER:
            entry["imageID"] = f"docker.io/vllm/vllm-openai@{DIGEST}"
    meta = pod["metadata"]
    cluster.kubectl(
        "patch", "pod", meta["name"], "-n", meta["namespace"], "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def test_a_restart_skips_the_deep_tier_and_says_whose_pass_it_reused(
    cluster: Cluster, operator: OperatorProcess, node: str, tmp_path: Path
) -> None:
    namespace = cluster.create_namespace("reuse", labels={constants.LABEL_INJECT: "enabled"})
    apply_policy(
        cluster, namespace, "deep-once",
        {
            "selector": {"matchLabels": {"app": "vllm-reuse"}},
            "action": "Warn",
            "tier": "deep",
            "verdictReuse": {"ttlSeconds": 3600},
        },
    )  # fmt: skip
    # the image pinned by digest: a tag may move
    cluster.apply(example_deployment("vllm-reuse", namespace, node=node, image=IMAGE))

    def injected(but: str = "") -> list[dict[str, Any]]:
        return injected_pods(cluster, namespace, "vllm-reuse", but=but)

    first = wait_for(injected, what="the Deployment's injected pod")[0]
    env = check_env(first)
    assert env[envnames.DEEP_REUSE] == "[]"  # nothing recorded yet: the deep tier runs

    # 1. The first pod runs the deep tier (the real checker on the fake) and passes.
    ran = checker(env, node, tmp_path / "first")
    assert [c.status for c in ran.checks if c.id == "deep-allreduce"] == [PASS]
    kubelet(cluster, first, ran, fakekubelet.rfc3339())
    record = wait_for(
        lambda: (get_json(cluster, "node", node)["metadata"].get("annotations") or {}).get(
            ANNOTATION
        ),
        what="the deep pass recorded on the Node",
    )
    [recorded] = json.loads(record)
    assert recorded["namespace"] == namespace
    assert recorded["pod"] == f"{namespace}/{first['metadata']['name']}"
    assert recorded["digest"] == DIGEST

    # 2. A restart: the pod goes, the ReplicaSet makes another, offered the recorded pass.
    cluster.kubectl("delete", "pod", first["metadata"]["name"], "-n", namespace, "--wait=false")
    second = wait_for(lambda: injected(but=first["metadata"]["name"]), what="the new pod")[0]
    env = check_env(second)
    offers, problem = parse_offers(env[envnames.DEEP_REUSE])
    assert problem == ""
    # sealed (issue 34 item 6): the patch names no node, pod or key, but the recorded
    # pass's node and key open it, and nothing else does
    assert [(o.at, o.opens(node, recorded["key"])) for o in offers] == [(recorded["at"], True)]
    assert not offers[0].opens("another-node", recorded["key"])
    assert node not in env[envnames.DEEP_REUSE]
    assert recorded["pod"] not in env[envnames.DEEP_REUSE]

    # 3. The real checker with that env skips the deep tier and says so.
    reused = checker(env, node, tmp_path / "second")
    statuses = {c.id: (c.status, c.message) for c in reused.checks}
    assert statuses["deep-reuse"][0] == PASS
    said = f"deep tier reused from the deep pass of {recorded['at']} on this node"
    assert said in statuses["deep-reuse"][1]
    assert statuses["deep-allreduce"][0] == SKIP
    kubelet(cluster, second, reused, fakekubelet.rfc3339())

    # 4. The GPUValidation says it.
    def shown() -> str:
        for validation in get_json(cluster, "gpuval", "-n", namespace)["items"]:
            for entry in ((validation.get("status") or {}).get("runtime") or {}).get("pods") or []:
                if entry.get("pod") == second["metadata"]["name"]:
                    return str(entry.get("deepTier") or "")
        return ""

    assert said in wait_for(
        lambda: said in shown() and shown(), what="the reuse on the GPUValidation"
    )
    cluster.delete_namespace(namespace)


def deep_pass_report(key: str) -> Report:
    """A deep tier that ran and passed on hardware ``key`` (what the checker writes)."""
    return Report(
        checks=[CheckResult("deep-allreduce", "pass", "sum ok")],
        tier="deep",
        plan={"tp": 1, DEEP_PASS_KEY: key},
        gpus=[GPUEntry(0, "GPU-ea300b2e-0352-789c-6847-ce5195328e81", "0000:06:00.0")],
    )


def records(cluster: Cluster, node: str) -> list[dict[str, Any]]:
    annotations = get_json(cluster, "node", node)["metadata"].get("annotations") or {}
    return list(json.loads(annotations.get(ANNOTATION) or "[]"))


def reuse_tenant(cluster: Cluster, name: str, node: str) -> tuple[str, dict[str, Any]]:
    namespace = cluster.create_namespace(name, labels={constants.LABEL_INJECT: "enabled"})
    apply_policy(
        cluster, namespace, "deep-once",
        {
            "selector": {"matchLabels": {"app": name}},
            "action": "Warn",
            "tier": "deep",
            "verdictReuse": {"ttlSeconds": 3600},
        },
    )  # fmt: skip
    cluster.apply(example_deployment(name, namespace, node=node, image=IMAGE))
    pod = wait_for(lambda: injected_pods(cluster, namespace, name), what=f"{name}'s pod")[0]
    return namespace, pod


def test_one_tenants_passes_never_evict_anothers_record(
    cluster: Cluster, operator: OperatorProcess, node: str
) -> None:
    """Issue 34 item 4: tenant B's 16 deep passes (16 hardware keys) on a node evicted
    tenant A's record (one newest-16 list per node). Now each namespace keeps its own
    newest few, and B's passes push out only B's."""
    a_namespace, a_pod = reuse_tenant(cluster, "reuse-a", node)
    b_namespace, b_pod = reuse_tenant(cluster, "reuse-b", node)
    base = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)

    def at(seconds: int) -> str:
        return fakekubelet.rfc3339(base + datetime.timedelta(seconds=seconds))

    kubelet(cluster, a_pod, deep_pass_report("a" * 32), at(0))
    wait_for(
        lambda: any(r["namespace"] == a_namespace for r in records(cluster, node)),
        what="A's deep pass on the Node",
    )
    last = f"{15:032x}"
    for i in range(16):
        kubelet(cluster, b_pod, deep_pass_report(f"{i:032x}"), at(i + 1))
    wait_for(
        lambda: any(r["key"] == last for r in records(cluster, node)),
        what="B's last deep pass on the Node",
    )
    held = records(cluster, node)
    assert [r["key"] for r in held if r["namespace"] == a_namespace] == ["a" * 32]
    assert len([r for r in held if r["namespace"] == b_namespace]) == MAX_PER_NAMESPACE
    assert all(r["workload"] for r in held)  # offered to the workload that earned it only
    cluster.delete_namespace(a_namespace)
    cluster.delete_namespace(b_namespace)
