"""The validating webhook through kubectl on the local control plane: good and bad
Deployments and LeaderWorkerSets under Enforce, Warn and Audit — the denial message, the
`Warning:` lines kubectl prints, and the static result recorded on the GPUValidation."""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev import localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"


def deployment(name: str) -> dict[str, Any]:
    return next(
        d
        for d in yaml.safe_load_all((MANIFESTS / f"{name}.yaml").read_text())
        if d["kind"] == "Deployment"
    )


def lws(name: str, gpus_per_pod: int) -> dict[str, Any]:
    """TP=4 x PP=2 spread by Ray over a group of 2 pods: 4 GPUs per pod are needed."""

    def template(container: str, command: str) -> dict[str, Any]:
        return {
            "spec": {
                "containers": [
                    {
                        "name": container,
                        "image": "vllm/vllm-openai:v0.11.0",
                        "command": ["sh", "-c", command],
                        "resources": {"limits": {"nvidia.com/gpu": gpus_per_pod}},
                        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                    }
                ],
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "4Gi"}}],
            }
        }

    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": 2,
                "leaderTemplate": template(
                    "vllm-leader",
                    "ray start --head && vllm serve m --tensor-parallel-size 4"
                    " --pipeline-parallel-size 2 --distributed-executor-backend ray",
                ),
                "workerTemplate": template(
                    "vllm-worker", "ray start --block --address=$(LWS_LEADER_ADDRESS):6379"
                ),
            },
        },
    }


WORKLOADS = {
    "Deployment": (deployment("good-tp2-deployment"), deployment("bad-tp4-deployment")),
    "LeaderWorkerSet": (lws("lws-good", 4), lws("lws-bad", 2)),
}
BAD_RULE = {"Deployment": "gpu-count-too-low", "LeaderWorkerSet": "lws-gpu-total"}


@pytest.fixture(scope="module")
def operator(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s)  # with a minimal LeaderWorkerSet CRD
    workdir = tmp_path_factory.mktemp("webhook")
    # AdmissionDenied Events are off by default; on here, so that what they say is tested
    config = workdir / "config.yaml"
    config.write_text(yaml.safe_dump({"webhook": {"admissionEvents": {"enabled": True}}}))
    op = localoperator.start_with_webhooks(k8s, workdir, extra_args=["--config", str(config)])
    yield op
    localoperator.remove_webhooks(k8s)
    op.stop()


def apply(cluster: Cluster, obj: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", *extra, "-f", "-", input=json.dumps(obj), check=False)


def in_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["namespace"] = namespace
    return out


def static_result(cluster: Cluster, namespace: str, kind: str, name: str) -> dict[str, Any]:
    def read() -> dict[str, Any] | None:
        result = cluster.kubectl(
            "get", "gpuval", f"{kind.lower()}-{name}", "-n", namespace, "-o", "json", check=False
        )
        if result.returncode != 0:
            return None
        status: dict[str, Any] = json.loads(result.stdout).get("status") or {}
        return status if status.get("staticVerdict") not in (None, "unknown") else None

    found: dict[str, Any] = wait_for(read, what=f"the static result of {kind}/{name}")
    return found


@pytest.mark.parametrize("kind", ["Deployment", "LeaderWorkerSet"])
@pytest.mark.parametrize("action", ["Enforce", "Warn", "Audit"])
def test_policy_actions(k8s: Cluster, operator: OperatorProcess, action: str, kind: str) -> None:
    namespace = k8s.create_namespace(
        f"adm-{action.lower()}", labels={constants.LABEL_INJECT: "enabled"}
    )
    try:
        good, bad = (in_namespace(o, namespace) for o in WORKLOADS[kind])
        policy = {
            "apiVersion": constants.API_VERSION,
            "kind": constants.POLICY_KIND,
            "metadata": {"name": "team-policy", "namespace": namespace},
            "spec": {"action": action},
        }
        k8s.apply(policy)
        # The webhooks learn policies from a watch; dry-run until this one is in force.
        if action != "Enforce":
            wait_for(lambda: apply(k8s, bad, "--dry-run=server").returncode == 0,
                     what=f"the {action} policy to reach the webhook")  # fmt: skip

        admitted = apply(k8s, good)
        assert admitted.returncode == 0, admitted.stderr
        assert "Warning:" not in admitted.stderr
        good_status = static_result(k8s, namespace, kind, good["metadata"]["name"])
        assert (good_status["staticVerdict"], good_status["action"]) == ("pass", action)
        assert good_status["policy"] == "team-policy"

        bad_name = bad["metadata"]["name"]
        result = apply(k8s, bad)
        rule = BAD_RULE[kind]
        if action == "Enforce":
            assert result.returncode != 0
            assert "denied the request" in result.stderr
            assert f"{kind}/{bad_name} cannot run on the GPUs it requests" in result.stderr
            assert f"1. {rule}:" in result.stderr
            assert "Fix:" in result.stderr
            assert "resources.limits" in result.stderr  # the field at fault

            def denied_events() -> list[str] | None:
                """The Events on the denied object; denied again until the operator's
                namespace watch knows the new namespace opted in (only then an Event)."""
                items = json.loads(
                    k8s.kubectl(
                        "get", "events", "-n", namespace, "-o", "json",
                        "--field-selector", f"involvedObject.name={bad_name}",
                    ).stdout
                )["items"]  # fmt: skip
                if not items:
                    apply(k8s, bad)
                    return None
                return [e["reason"] for e in items]

            reasons = wait_for(denied_events, what=f"an AdmissionDenied Event in {namespace}")
            assert set(reasons) == {"AdmissionDenied"}
            gpuvals = k8s.kubectl("get", "gpuval", "-n", namespace, "-o", "name").stdout
            assert bad_name not in gpuvals  # a denied object has nothing to own it
        else:
            assert result.returncode == 0, result.stderr
            warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
            if action == "Warn":
                assert warnings
                assert warnings[0].startswith(f"Warning: vllm-preflight fail: {rule}:")
            else:
                assert warnings == []
            bad_status = static_result(k8s, namespace, kind, bad_name)
            assert (bad_status["staticVerdict"], bad_status["action"]) == ("fail", action)
            assert bad_status["reason"] == rule
            assert bad_status["static"]["findings"][0]["id"] == rule
    finally:
        k8s.delete_namespace(namespace)


def test_a_selector_kubernetes_refuses_makes_the_policy_invalid_and_selects_nothing(
    k8s: Cluster, operator: OperatorProcess
) -> None:
    """`Exists` with values passes the CRD's schema; Kubernetes refuses it as a selector.
    The policy is Valid=False naming the field and selects no workload (the default,
    Enforce, judges the bad Deployment), until the selector is fixed."""
    namespace = k8s.create_namespace("adm-selector", labels={constants.LABEL_INJECT: "enabled"})
    try:
        bad = in_namespace(WORKLOADS["Deployment"][1], namespace)
        expression = {"key": "app", "operator": "Exists", "values": [bad["metadata"]["name"]]}
        policy = {
            "apiVersion": constants.API_VERSION,
            "kind": constants.POLICY_KIND,
            "metadata": {"name": "loose", "namespace": namespace},
            "spec": {"action": "Audit", "selector": {"matchExpressions": [expression]}},
        }
        k8s.apply(policy)

        def valid() -> dict[str, Any] | None:
            got = json.loads(
                k8s.kubectl("get", "preflightpolicy", "loose", "-n", namespace, "-o", "json").stdout
            )
            conditions = (got.get("status") or {}).get("conditions") or []
            return next((c for c in conditions if c["type"] == "Valid"), None)

        condition = wait_for(valid, what="the policy's Valid condition")
        assert condition["status"] == "False", condition
        assert "spec.selector.matchExpressions[0].values" in condition["message"]
        assert "selects no workload" in condition["message"]
        denied = apply(k8s, bad)
        assert denied.returncode != 0, "the invalid Audit policy selected the Deployment"
        assert "gpu-count-too-low" in denied.stderr

        del expression["values"]  # fixed: now it selects the Deployment, under Audit
        k8s.apply(policy)
        wait_for(lambda: apply(k8s, bad, "--dry-run=server").returncode == 0,
                 what="the fixed policy to reach the webhook")  # fmt: skip
    finally:
        k8s.delete_namespace(namespace)


def test_dry_run_is_judged_but_leaves_no_trace(k8s: Cluster, operator: OperatorProcess) -> None:
    namespace = k8s.create_namespace("adm-dry", labels={constants.LABEL_INJECT: "enabled"})
    try:
        bad = in_namespace(WORKLOADS["Deployment"][1], namespace)
        result = apply(k8s, bad, "--dry-run=server")
        assert result.returncode != 0
        assert "gpu-count-too-low" in result.stderr
        events = k8s.kubectl("get", "events", "-n", namespace, "-o", "name").stdout
        assert events.strip() == ""
    finally:
        k8s.delete_namespace(namespace)


def test_a_bare_pod_is_judged_and_a_system_namespace_never(
    k8s: Cluster, operator: OperatorProcess
) -> None:
    namespace = k8s.create_namespace("adm-pod", labels={constants.LABEL_INJECT: "enabled"})
    try:
        template = WORKLOADS["Deployment"][1]["spec"]["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "bare-vllm", "namespace": namespace},
            "spec": template["spec"],
        }
        result = apply(k8s, pod)
        assert result.returncode != 0
        assert "Pod/bare-vllm cannot run" in result.stderr
        system = {**pod, "metadata": {"name": "bare-vllm", "namespace": "kube-public"}}
        dry = apply(k8s, system, "--dry-run=server")
        assert dry.returncode == 0, dry.stderr
    finally:
        k8s.delete_namespace(namespace)


def test_a_service_named_vllm_is_seen_by_the_rules(k8s: Cluster, operator: OperatorProcess) -> None:
    namespace = k8s.create_namespace("adm-svc", labels={constants.LABEL_INJECT: "enabled"})
    try:
        good = in_namespace(WORKLOADS["Deployment"][0], namespace)
        assert apply(k8s, good, "--dry-run=server").returncode == 0
        k8s.apply({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "vllm", "namespace": namespace},
            "spec": {"selector": {"app": "vllm-good"}, "ports": [{"port": 8000}]},
        })  # fmt: skip
        denied = wait_for(
            lambda: (r := apply(k8s, good, "--dry-run=server")).returncode != 0 and r,
            what="the Service to reach the webhook",
        )
        assert "vllm-port-service" in denied.stderr
        assert "enableServiceLinks" in denied.stderr
    finally:
        k8s.delete_namespace(namespace)


def hostile_deployment(namespace: str, name: str = "vllm-hostile") -> dict[str, Any]:
    """1.7 KB: 24 env vars each referencing the previous one twice ($(V23) is 2^23
    copies of V0). It once drove the operator to 4.2 GB and past the API server's 10 s
    timeout, and a bad Deployment sent right after was admitted under Enforce."""
    doc = in_namespace(WORKLOADS["Deployment"][0], namespace)
    doc["metadata"]["name"] = name
    doc["metadata"]["labels"] = {"app": name}
    doc["spec"]["selector"] = {"matchLabels": {"app": name}}
    doc["spec"]["template"]["metadata"]["labels"] = {"app": name}
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "V0", "value": "--tensor-parallel-size 4 "}] + [
        {"name": f"V{i}", "value": f"$(V{i - 1})$(V{i - 1})"} for i in range(1, 24)
    ]
    container["args"] = ["m", "$(V23)"]
    return doc


def peak_rss_mib(pid: int) -> float:
    """VmHWM of a process plus that of its children (the rules worker), in MiB."""
    total = 0
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        pids += [int(c) for c in (task / "children").read_text().split()]
    for one in pids:
        for line in Path(f"/proc/{one}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1])
    return total / 1024


def test_a_hostile_manifest_is_answered_in_time_and_the_next_one_judged(
    k8s: Cluster, operator: OperatorProcess
) -> None:
    """Whatever the rules make of it (their own expansion caps, or the worker's budget),
    the answer comes well within the 10 s timeout, the bad Deployment right after is
    denied, and the operator's memory stays far under the chart's 512Mi limit, with the
    hostile Deployment both under admission and stored (reconciled)."""
    namespace = k8s.create_namespace("adm-hostile", labels={constants.LABEL_INJECT: "enabled"})
    stored_ns = k8s.create_namespace("adm-hostile-stored")
    try:
        # Our webhook's own answer (its warning), so it came within the API server's 10 s
        # timeout: past it the failure policy would have answered, without our words.
        hostile = apply(k8s, hostile_deployment(namespace))
        assert "Warning: vllm-preflight" in hostile.stderr, hostile.stderr[-2000:]
        denied = apply(k8s, in_namespace(WORKLOADS["Deployment"][1], namespace))
        assert denied.returncode != 0
        assert "cannot run on the GPUs it requests" in denied.stderr
        # Stored objects too: one created before its namespace opted in.
        assert apply(k8s, hostile_deployment(stored_ns)).returncode == 0
        k8s.kubectl("label", "namespace", stored_ns, f"{constants.LABEL_INJECT}=enabled")
        static_result(k8s, stored_ns, "Deployment", "vllm-hostile")
        peak = peak_rss_mib(operator.pid)
        print(f"operator peak RSS (operator + rules worker), hostile Deployment: {peak:.0f} MiB")
        assert peak < 400  # the chart's limit is 512Mi
    finally:
        k8s.delete_namespace(namespace)
        k8s.delete_namespace(stored_ns)


def test_a_review_posted_to_the_port_writes_no_event_outside_opted_in_namespaces(
    k8s: Cluster, operator: OperatorProcess
) -> None:
    """Issue 23: an unauthenticated POST to the webhook port, naming `default`, made the
    operator write a Warning AdmissionDenied Event there, with text from the body. With
    Events on (this module's operator), `default` has not opted in: no Event, and the
    request gets its answer only."""
    import ssl
    import urllib.request

    bad = in_namespace(WORKLOADS["Deployment"][1], "default")
    bad["metadata"]["name"] = "spoofed-by-a-pod"
    bad["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "NOTE", "value": "kubectl delete ns prod to fix"}
    ]
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "spoof", "operation": "CREATE", "object": bad},
    }
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # an attacker does not check who answers
    request = urllib.request.Request(
        f"https://127.0.0.1:{operator.webhook_port}/validate",
        data=json.dumps(review).encode(), headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, context=context, timeout=30) as rsp:
        answer = json.loads(rsp.read())
    assert answer["response"]["allowed"] is False  # judged: the answer is the sender's
    # A denial in an opted-in namespace after it: once its Event is there, the Events queued
    # before it (the spoofed one's, were there one) have been taken by the sink.
    namespace = k8s.create_namespace("adm-after", labels={constants.LABEL_INJECT: "enabled"})
    try:
        later = in_namespace(WORKLOADS["Deployment"][1], namespace)

        def later_event() -> bool:
            found = k8s.kubectl("get", "events", "-n", namespace, "-o", "name").stdout.strip()
            if not found:
                apply(k8s, later)
            return bool(found)

        wait_for(later_event, what=f"an AdmissionDenied Event in {namespace}")
    finally:
        k8s.delete_namespace(namespace)
    events = k8s.kubectl(
        "get", "events", "-n", "default", "-o", "name",
        "--field-selector", "involvedObject.name=spoofed-by-a-pod",
    ).stdout  # fmt: skip
    assert events.strip() == ""
