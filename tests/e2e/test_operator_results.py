"""The operator on the local control plane, the test playing the kubelet: results reach the
GPUValidation (status, conditions), the workload (annotations) and Events; pods without
vLLM are left alone; deleting the workload deletes its GPUValidation."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_contract.report import CheckResult, GPUEntry, Report
from preflight_dev import fakekubelet
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.workloads import get_json
from preflight_operator.core import constants

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
INJECT = {constants.LABEL_INJECT: "enabled"}


def manifest(name: str, namespace: str) -> dict[str, Any]:
    doc = next(
        d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d["kind"] == "Deployment"
    )
    doc["metadata"]["namespace"] = namespace
    return doc


PASSED = Report(
    checks=[CheckResult("gpu-count", "pass", "CUDA sees 2 GPUs")],
    gpus=[GPUEntry(0, "GPU-a", "0000:06:00.0"), GPUEntry(1, "GPU-b", "0000:07:00.0")],
).to_termination_message()
FAILED = Report(
    checks=[
        CheckResult("gpu-count", "fail", "CUDA sees 2 GPUs, the plan needs 4", "request 4 GPUs")
    ],
    action="Warn",
).to_termination_message()


@pytest.fixture
def namespace(cluster: Cluster, operator: OperatorProcess) -> Iterator[str]:
    name = cluster.create_namespace("results", labels=INJECT)
    yield name
    cluster.delete_namespace(name)


def gpuval(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    result = cluster.kubectl("get", "gpuval", name, "-n", namespace, "-o", "json", check=False)
    return json.loads(result.stdout) if result.returncode == 0 else None


def injected_pods(cluster: Cluster, namespace: str, app: str) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = get_json(
        cluster, "pods", "-n", namespace, "-l", f"app={app},{constants.INJECTED_POD_SELECTOR}"
    )["items"]
    return pods


play_kubelet = fakekubelet.play


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in obj["status"]["conditions"]}


def events_for(cluster: Cluster, namespace: str, name: str) -> list[tuple[str, str]]:
    items = get_json(
        cluster, "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}"
    )["items"]
    return [(e["reason"], e["message"]) for e in items]


def apply_once_the_warn_policy_admits(cluster: Cluster, namespace: str, name: str) -> None:
    """A new policy reaches the webhooks through a watch: retry until it admits."""
    wait_for(
        lambda: cluster.kubectl(
            "apply", "-f", "-", input=json.dumps(manifest(name, namespace)), check=False,
        ).returncode == 0,
        what=f"the Warn policy to admit {name}",
    )  # fmt: skip


def assert_good_status(good: dict[str, Any], good_pod: dict[str, Any]) -> None:
    """The good Deployment's GPUValidation: passed, with the pod's GPUs reported."""
    assert (good["status"]["staticVerdict"], good["status"]["gpus"]) == ("pass", "2/2")
    assert conditions(good)["Ready"] == ("True", "ChecksPassed")
    pods = good["status"]["runtime"]["pods"]
    assert pods[0]["pod"] == good_pod["metadata"]["name"]
    assert pods[0]["gpus"][1]["pciBusId"] == "0000:07:00.0"


def assert_bad_status(cluster: Cluster, namespace: str, bad: dict[str, Any]) -> None:
    """The bad Deployment's GPUValidation: failed under the Warn policy, conditions current."""
    assert (bad["status"]["staticVerdict"], bad["status"]["action"]) == ("fail", "Warn")
    assert bad["status"]["policy"] == "trial"
    assert bad["status"]["reason"] == "gpu-count"
    assert conditions(bad)["RuntimeChecksPassed"] == ("False", "CheckFailed")
    assert conditions(bad)["StaticChecksPassed"] == ("False", "RulesFailed")
    assert conditions(bad)["Ready"][0] == "False"
    observed = get_json(cluster, "deployment", "vllm-bad", "-n", namespace)["metadata"]
    assert all(
        c["observedGeneration"] == observed["generation"] for c in bad["status"]["conditions"]
    )


def test_good_and_bad_deployments_end_with_the_right_status(
    cluster: Cluster, namespace: str
) -> None:
    warn_policy = {
        "apiVersion": constants.API_VERSION,
        "kind": constants.POLICY_KIND,
        "metadata": {"name": "trial", "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": "vllm-bad"}}, "action": "Warn"},
    }
    cluster.apply(warn_policy)
    cluster.apply(manifest("good-tp2-deployment.yaml", namespace))
    # the policy reaches the webhooks through a watch: retry until the bad one is admitted
    apply_once_the_warn_policy_admits(cluster, namespace, "bad-tp4-deployment.yaml")

    good = wait_for(lambda: gpuval(cluster, namespace, "deployment-vllm-good"))
    assert good["spec"]["workloadRef"]["kind"] == "Deployment"
    owner = good["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Deployment", "vllm-good", False)

    good_pod = wait_for(lambda: injected_pods(cluster, namespace, "vllm-good"))[0]
    bad_pod = wait_for(lambda: injected_pods(cluster, namespace, "vllm-bad"))[0]
    assert good_pod["metadata"]["labels"][constants.LABEL_WORKLOAD] == "deployment.vllm-good"
    play_kubelet(cluster, good_pod, 0, PASSED)
    play_kubelet(cluster, bad_pod, 0, FAILED)  # Warn: the check reports and exits 0

    def runtime(name: str) -> str | None:
        obj = gpuval(cluster, namespace, name)
        verdict = (obj or {}).get("status", {}).get("runtimeVerdict")
        return verdict if verdict not in (None, "pending") else None

    assert wait_for(lambda: runtime("deployment-vllm-good")) == "pass"
    assert wait_for(lambda: runtime("deployment-vllm-bad")) == "fail"

    good = gpuval(cluster, namespace, "deployment-vllm-good")
    bad = gpuval(cluster, namespace, "deployment-vllm-bad")
    assert good is not None
    assert bad is not None
    assert_good_status(good, good_pod)
    assert_bad_status(cluster, namespace, bad)

    def annotations(name: str) -> dict[str, str]:
        meta = get_json(cluster, "deployment", name, "-n", namespace)["metadata"]
        return dict(meta.get("annotations") or {})

    bad_annotations = wait_for(
        lambda: (a := annotations("vllm-bad")).get(constants.ANNOTATION_STATUS) == "fail" and a
    )
    assert bad_annotations[constants.ANNOTATION_REASON] == "gpu-count"
    assert constants.ANNOTATION_CHECKED_AT in bad_annotations
    assert annotations("vllm-good")[constants.ANNOTATION_STATUS] == "pass"

    pod_events = wait_for(lambda: events_for(cluster, namespace, bad_pod["metadata"]["name"]))
    assert any(
        reason == "PreflightCheckFailed" and "Fix: request 4 GPUs" in message
        for reason, message in pod_events
    )
    # Events go out through the event sink's queue, after the status: wait for each
    workload_events = wait_for(
        lambda: (
            (e := dict(events_for(cluster, namespace, "vllm-bad")))
            and {"PreflightCheckFailed", "StaticCheckFailed"} <= set(e)
            and e
        ),
        what="the workload's Events",
    )
    assert "Fix: request 4 GPUs" in workload_events["PreflightCheckFailed"]
    assert "gpu-count-too-low" in workload_events["StaticCheckFailed"]
    assert wait_for(
        lambda: dict(events_for(cluster, namespace, good_pod["metadata"]["name"])).get(
            "PreflightCheckPassed"
        ),
        what="the good pod's Event",
    )

    table = cluster.kubectl("get", "gpuval", "-n", namespace).stdout
    header, *rows = table.splitlines()
    assert header.split() == [
        "NAME",
        "WORKLOAD",
        "TP",
        "GPUS",
        "STATIC",
        "RUNTIME",
        "REASON",
        "AGE",
    ]
    assert any(r.split()[:7] == ["deployment-vllm-bad", "Deployment/vllm-bad", "4", "2/4",
                                 "fail", "fail", "gpu-count"] for r in rows)  # fmt: skip


def test_the_stored_pod_gives_the_injected_containers_no_token_and_runtime_default_seccomp(
    cluster: Cluster, namespace: str
) -> None:
    """What the API server stored, after its ServiceAccount plugin ran again on our patch
    (admission reinvocation): the token reaches vLLM's container, never ours."""
    cluster.apply(manifest("good-tp2-deployment.yaml", namespace))
    name = wait_for(lambda: injected_pods(cluster, namespace, "vllm-good"))[0]["metadata"]["name"]
    stored = get_json(cluster, "pod", name, "-n", namespace)["spec"]
    token_path = "/var/run/secrets/kubernetes.io/serviceaccount"
    volumes = {v["name"]: v for v in stored["volumes"]}

    def token_mounts(container: dict[str, Any]) -> list[dict[str, Any]]:
        return [m for m in container.get("volumeMounts", []) if m["mountPath"] == token_path]

    vllm = next(c for c in stored["containers"] if c["name"] == "vllm")
    (api_access,) = token_mounts(vllm)  # the control plane does mount tokens
    assert "projected" in volumes[api_access["name"]]
    ours = {c["name"]: c for c in stored["initContainers"]}
    for name in (constants.INSTALL_CONTAINER, constants.CHECK_CONTAINER):
        (mount,) = token_mounts(ours[name])
        assert mount["name"] == "preflight-no-token"
        assert volumes[mount["name"]] == {
            "name": "preflight-no-token",
            "emptyDir": {"sizeLimit": "1Mi"},
        }
        assert ours[name]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


def test_a_pod_without_vllm_is_untouched(cluster: Cluster, namespace: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": namespace, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx"}]},
    }
    cluster.apply(pod)
    created = get_json(cluster, "pod", "web", "-n", namespace)
    assert "initContainers" not in created["spec"]
    assert constants.LABEL_INJECTED not in created["metadata"].get("labels", {})
    assert not any(v["name"] == constants.VOLUME_NAME for v in created["spec"].get("volumes", []))
    assert gpuval(cluster, namespace, "pod-web") is None


def test_a_namespace_that_did_not_opt_in_is_untouched(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    other = cluster.create_namespace("not-opted-in")
    try:
        cluster.apply(manifest("bad-tp4-deployment.yaml", other))  # not denied: not ours
        pods = wait_for(
            lambda: get_json(cluster, "pods", "-n", other, "-l", "app=vllm-bad")["items"]
        )
        assert "initContainers" not in pods[0]["spec"]
        assert get_json(cluster, "gpuval", "-n", other)["items"] == []
    finally:
        cluster.delete_namespace(other)


def test_deleting_the_workload_deletes_its_gpuvalidation(cluster: Cluster, namespace: str) -> None:
    cluster.apply(manifest("good-tp2-deployment.yaml", namespace))
    wait_for(lambda: gpuval(cluster, namespace, "deployment-vllm-good"))
    cluster.kubectl("delete", "deployment", "vllm-good", "-n", namespace)
    wait_for(
        lambda: gpuval(cluster, namespace, "deployment-vllm-good") is None,
        what="the garbage collector to delete the GPUValidation",
    )


def test_scale_to_zero_is_applied_recorded_and_undone(cluster: Cluster, namespace: str) -> None:
    policy = {
        "apiVersion": constants.API_VERSION,
        "kind": constants.POLICY_KIND,
        "metadata": {"name": "stop-broken", "namespace": namespace},
        "spec": {"action": "Enforce", "onRuntimeFailure": "ScaleToZero"},
    }
    cluster.apply(policy)
    good = manifest("good-tp2-deployment.yaml", namespace)
    good["spec"]["replicas"] = 2
    cluster.apply(good)
    pods = wait_for(lambda: len(p := injected_pods(cluster, namespace, "vllm-good")) == 2 and p)
    enforced_failure = Report(
        checks=[CheckResult("gpu-count", "fail", "CUDA sees 1 GPU", "fix the device plugin")]
    ).to_termination_message()
    play_kubelet(cluster, pods[0], 1, enforced_failure)

    def deployment() -> dict[str, Any]:
        obj: dict[str, Any] = get_json(cluster, "deployment", "vllm-good", "-n", namespace)
        return obj

    scaled = wait_for(lambda: (d := deployment())["spec"]["replicas"] == 0 and d)
    annotations = scaled["metadata"]["annotations"]
    assert annotations[constants.ANNOTATION_REMEDIATED] == "ScaleToZero"
    assert annotations["vllm-preflight.io/previous-replicas"] == "2"
    status = wait_for(
        lambda: (
            (gpuval(cluster, namespace, "deployment-vllm-good") or {})
            .get("status", {})
            .get("remediation")
        )
    )
    assert (status["type"], status["previousReplicas"]) == ("ScaleToZero", 2)
    wait_for(
        lambda: "ScaledToZero" in [r for r, _ in events_for(cluster, namespace, "vllm-good")],
        what="the ScaledToZero event",
    )

    # The user fixes the cause and removes the annotation: the operator restores the replicas.
    cluster.kubectl(
        "annotate", "deployment", "vllm-good", "-n", namespace,
        f"{constants.ANNOTATION_REMEDIATED}-",
    )  # fmt: skip
    restored = wait_for(lambda: (d := deployment())["spec"]["replicas"] == 2 and d)
    assert "vllm-preflight.io/previous-replicas" not in restored["metadata"].get("annotations", {})
    reverted = wait_for(
        lambda: (s := (gpuval(cluster, namespace, "deployment-vllm-good") or {})
                 .get("status", {}).get("remediation", {})).get("type") == "None" and s
    )  # fmt: skip
    assert "revertedAt" in reverted
    # The old failure is history: it does not scale the workload down again.
    time.sleep(3)
    assert deployment()["spec"]["replicas"] == 2


def test_workloads_of_a_namespace_that_opts_in_later_get_their_result(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    later = cluster.create_namespace("opts-in-later")
    try:
        cluster.apply(manifest("bad-tp4-deployment.yaml", later))  # not judged: not opted in
        assert gpuval(cluster, later, "deployment-vllm-bad") is None
        cluster.kubectl("label", "namespace", later, f"{constants.LABEL_INJECT}=enabled")
        found = wait_for(
            lambda: (gpuval(cluster, later, "deployment-vllm-bad") or {}).get("status", {})
            .get("staticVerdict") == "fail",
            what="the existing workload to be analysed",
        )  # fmt: skip
        assert found
    finally:
        cluster.delete_namespace(later)


def test_a_policy_change_is_recorded_on_existing_workloads(
    cluster: Cluster, namespace: str
) -> None:
    policy = {
        "apiVersion": constants.API_VERSION,
        "kind": constants.POLICY_KIND,
        "metadata": {"name": "team", "namespace": namespace},
        "spec": {"action": "Warn"},
    }
    cluster.apply(policy)
    apply_once_the_warn_policy_admits(cluster, namespace, "bad-tp4-deployment.yaml")

    def action() -> str | None:
        status = (gpuval(cluster, namespace, "deployment-vllm-bad") or {}).get("status", {})
        return status.get("action")

    assert wait_for(lambda: action() == "Warn" and action())
    cluster.apply({**policy, "spec": {"action": "Audit"}})
    assert wait_for(lambda: action() == "Audit" and action(), what="the new action recorded")


def test_the_api_server_refuses_thresholds_the_check_cannot_read(
    cluster: Cluster, namespace: str
) -> None:
    """The PreflightPolicy CRD's own schema: each of these blocked every pod of a
    namespace (the check exits 2 on them), or silently disabled injection (1E)."""
    for thresholds, field in [
        ({"shmMin": "abc"}, "spec.thresholds.shmMin"),
        ({"shmMin": "1Pi"}, "spec.thresholds.shmMin"),
        ({"shmMin": "1E"}, "spec.thresholds.shmMin"),
        ({"shmMin": 2**50}, "spec.thresholds.shmMin"),
        ({"gpuMemoryUtilization": 0}, "spec.thresholds.gpuMemoryUtilization"),
        ({"gpuMemoryUtilization": 1.5}, "spec.thresholds.gpuMemoryUtilization"),
        ({"extraGPUsAllowed": -1}, "spec.thresholds.extraGPUsAllowed"),
    ]:
        policy = {
            "apiVersion": constants.API_VERSION,
            "kind": constants.POLICY_KIND,
            "metadata": {"name": "bad", "namespace": namespace},
            "spec": {"thresholds": thresholds},
        }
        result = cluster.kubectl("apply", "-f", "-", input=json.dumps(policy), check=False)
        assert result.returncode != 0, thresholds
        assert field in result.stderr, result.stderr
    good = {
        "apiVersion": constants.API_VERSION,
        "kind": constants.POLICY_KIND,
        "metadata": {"name": "good", "namespace": namespace},
        "spec": {"thresholds": {"shmMin": "1.5Gi", "gpuMemoryUtilization": 1}},
    }
    cluster.apply(good)


def test_a_policy_value_the_schema_lets_through_gets_a_condition_and_never_reaches_a_pod(
    cluster: Cluster, namespace: str
) -> None:
    """5000Ti passes the CRD's pattern (a pattern cannot bound a number): the operator
    uses the default, writes Valid=False on the policy with the field and the fix, and
    posts an Event; the injected check gets 1Gi, and Warn still applies."""
    policy = {
        "apiVersion": constants.API_VERSION,
        "kind": constants.POLICY_KIND,
        "metadata": {"name": "huge", "namespace": namespace},
        "spec": {"action": "Warn", "thresholds": {"shmMin": "5000Ti"}},
    }
    cluster.apply(policy)

    def valid() -> dict[str, Any] | None:
        got = get_json(cluster, "preflightpolicy", "huge", "-n", namespace)
        conditions = got.get("status", {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "Valid"), None)

    condition = wait_for(valid, what="the policy's Valid condition")
    assert (condition["status"], condition["reason"]) == ("False", "InvalidFields")
    assert "spec.thresholds.shmMin" in condition["message"]
    assert "using '1Gi' instead" in condition["message"]
    stored = get_json(cluster, "preflightpolicy", "huge", "-n", namespace)
    assert stored["status"]["observedGeneration"] == stored["metadata"]["generation"]
    table = cluster.kubectl("get", "preflightpolicy", "huge", "-n", namespace).stdout
    assert table.splitlines()[0].split()[:5] == ["NAME", "ACTION", "TIER", "ON-FAILURE", "VALID"]
    assert table.splitlines()[1].split()[4] == "False"
    events = wait_for(lambda: dict(events_for(cluster, namespace, "huge")).get("PolicyInvalid"))
    assert "spec.thresholds.shmMin" in events

    apply_once_the_warn_policy_admits(cluster, namespace, "bad-tp4-deployment.yaml")
    pod = wait_for(lambda: injected_pods(cluster, namespace, "vllm-bad"))[0]
    check = next(c for c in pod["spec"]["initContainers"] if c["name"] == constants.CHECK_CONTAINER)
    env = {e["name"]: e.get("value") for e in check["env"]}
    assert (env["PREFLIGHT_SHM_MIN"], env["PREFLIGHT_ACTION"]) == ("1Gi", "Warn")


def test_a_1mb_manifest_admitted_under_warn_gets_a_written_status(
    cluster: Cluster, namespace: str
) -> None:
    """9 vLLM containers, each with a 100 KB --tensor-parallel-size value: every finding
    quoted it twice, a 1.8 MB status etcd refused ('request is too large'), so none was
    ever written."""
    cluster.apply(
        {
            "apiVersion": constants.API_VERSION,
            "kind": constants.POLICY_KIND,
            "metadata": {"name": "trial", "namespace": namespace},
            "spec": {"action": "Warn"},
        }
    )
    containers = [
        {
            "name": f"vllm-{i}",
            "image": "vllm/vllm-openai:v0.11.0",
            "command": ["vllm", "serve", "m", "--tensor-parallel-size", "4" + "x" * 100_000],
            "resources": {"limits": {"nvidia.com/gpu": 2}},
        }
        for i in range(9)
    ]
    huge = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "huge", "namespace": namespace, "labels": {"app": "huge"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "huge"}},
            "template": {
                "metadata": {"labels": {"app": "huge"}},
                "spec": {"containers": containers},
            },
        },
    }
    text = json.dumps(huge)
    assert len(text) > 900_000
    wait_for(
        lambda: cluster.kubectl("create", "-f", "-", input=text, check=False).returncode == 0,
        what="the Warn policy to admit the huge Deployment",
    )

    def static() -> dict[str, Any] | None:
        return (gpuval(cluster, namespace, "deployment-huge") or {}).get("status", {}).get("static")

    written = wait_for(static, what="the status of the huge Deployment")
    assert written["verdict"] == "fail"
    assert all(len(f["message"]) <= 1000 for f in written["findings"])
    assert len(json.dumps(gpuval(cluster, namespace, "deployment-huge"))) < 128 * 1024
