"""`kubectl vllm-preflight` against the local control plane, run the way users run it:
kubectl finds `kubectl-vllm_preflight` on PATH. The operator runs for real; the test plays
the kubelet (writes the check's outcome to pod status) and, for check-node, the node that
runs the canary Job's pod (the Job controller creates that pod).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_contract.report import CheckResult, GPUEntry, Report
from preflight_dev import fakekubelet, localoperator, localsetup
from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.workloads import get_json
from preflight_operator.core import constants

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "tests" / "data" / "manifests"
BIN = Path(sys.executable).parent  # kubectl-vllm_preflight and vllm-preflight live here
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


def manifest(name: str, namespace: str) -> dict[str, Any]:
    doc = next(
        d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d["kind"] == "Deployment"
    )
    doc["metadata"]["namespace"] = namespace
    return doc


def plugin_env(k8s: Cluster) -> dict[str, str]:
    env = k8s.env()
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    env.pop("NO_COLOR", None)
    return env


def kubectl_plugin(k8s: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    """`kubectl vllm-preflight ARGS`, through kubectl's own plugin lookup."""
    return subprocess.run(
        [str(k8s.bin_dir / "kubectl"), "vllm-preflight", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=plugin_env(k8s),
        check=False,
    )


play_kubelet = fakekubelet.play


@pytest.fixture(scope="module")
def workloads(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A namespace with a passing and a failing (Warn) vLLM Deployment, both checked."""
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s)
    op = localoperator.start_with_webhooks(k8s, tmp_path_factory.mktemp("plugin"))
    ns = k8s.create_namespace("plugin", labels={constants.LABEL_INJECT: "enabled"})
    try:
        k8s.apply(
            {
                "apiVersion": constants.API_VERSION,
                "kind": constants.POLICY_KIND,
                "metadata": {"name": "trial", "namespace": ns},
                "spec": {"selector": {"matchLabels": {"app": "vllm-bad"}}, "action": "Warn"},
            }
        )
        k8s.apply(manifest("good-tp2-deployment.yaml", ns))
        wait_for(
            lambda: k8s.kubectl(
                "apply", "-f", "-", input=json.dumps(manifest("bad-tp4-deployment.yaml", ns)),
                check=False,
            ).returncode == 0,
            what="the Warn policy to admit vllm-bad",
        )  # fmt: skip

        def injected(app: str) -> list[dict[str, Any]]:
            selector = f"app={app},{constants.INJECTED_POD_SELECTOR}"
            items: list[dict[str, Any]] = get_json(k8s, "pods", "-n", ns, "-l", selector)["items"]
            return items

        good_pod = wait_for(lambda: injected("vllm-good"))[0]
        bad_pod = wait_for(lambda: injected("vllm-bad"))[0]
        play_kubelet(k8s, good_pod, 0, PASSED)
        play_kubelet(k8s, bad_pod, 0, FAILED)

        def runtime(name: str) -> str | None:
            got = k8s.kubectl("get", "gpuval", name, "-n", ns, "-o", "json", check=False)
            status = json.loads(got.stdout).get("status", {}) if got.returncode == 0 else {}
            verdict = status.get("runtimeVerdict")
            return verdict if verdict not in (None, "pending") else None

        assert wait_for(lambda: runtime("deployment-vllm-good")) == "pass"
        assert wait_for(lambda: runtime("deployment-vllm-bad")) == "fail"
        yield {"namespace": ns, "bad_pod": bad_pod["metadata"]["name"]}
    finally:
        k8s.delete_namespace(ns)
        localoperator.remove_webhooks(k8s)
        op.stop()


def test_kubectl_finds_the_plugin(k8s: Cluster) -> None:
    result = subprocess.run(
        [str(k8s.bin_dir / "kubectl"), "plugin", "list"],
        capture_output=True,
        text=True,
        env=plugin_env(k8s),
        timeout=60,
        check=False,
    )
    assert str(BIN / "kubectl-vllm_preflight") in result.stdout


def test_status_table(k8s: Cluster, workloads: dict[str, Any]) -> None:
    ns = workloads["namespace"]
    result = kubectl_plugin(k8s, "status", "-n", ns)
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
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
    cells = {r.split()[0]: r.split() for r in rows}
    assert cells["deployment-vllm-good"][1:6] == [
        "Deployment/vllm-good",
        "2",
        "2/2",
        "pass",
        "pass",
    ]
    assert cells["deployment-vllm-bad"][4:7] == ["fail", "fail", "gpu-count"]
    assert "\x1b[" not in result.stdout  # not a terminal: no colour

    coloured = kubectl_plugin(k8s, "status", "-n", ns, "--color=always")
    assert "\x1b[31mfail\x1b[0m" in coloured.stdout
    assert "\x1b[32mpass\x1b[0m" in coloured.stdout

    everywhere = kubectl_plugin(k8s, "status", "-A")
    assert everywhere.stdout.splitlines()[0].split()[0] == "NAMESPACE"
    assert any(
        line.split()[:2] == [ns, "deployment-vllm-bad"] for line in everywhere.stdout.splitlines()
    )

    assert kubectl_plugin(k8s, "status", "-n", ns, "--exit-code").returncode == 1
    both = kubectl_plugin(k8s, "status", "-n", ns, "-A")
    assert both.returncode == 2
    assert "not both" in both.stderr
    assert "Traceback" not in both.stderr


def test_explain_a_failing_workload(k8s: Cluster, workloads: dict[str, Any]) -> None:
    ns = workloads["namespace"]
    result = kubectl_plugin(k8s, "explain", "deploy/vllm-bad", "-n", ns)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "Workload:   Deployment/vllm-bad" in text
    assert "Policy:     trial (action Warn)" in text
    static = text.split("Static findings")[1].split("Pods:")[0]
    assert "gpu-count-too-low" in static
    pods = text.split("Pods:")[1].split("Events:")[0]
    assert workloads["bad_pod"] in pods
    assert "preflight-check: fail" in pods
    assert "gpu-count: CUDA sees 2 GPUs, the plan needs 4" in pods
    events = text.split("Events:")[1].split("Fixes:")[0]
    assert "PreflightCheckFailed" in events
    assert "StaticCheckFailed" in events
    fixes = text.split("Fixes:")[1]
    assert "1. " in fixes
    assert "request 4 GPUs" in fixes


def test_explain_writes_no_control_byte(k8s: Cluster, workloads: dict[str, Any]) -> None:
    """Issue 34 item 7: anyone who may create Events in the namespace writes one on the
    pod with an OSC 52 clipboard write, an OSC 8 link, a screen clear, the 8-bit CSI and a
    BiDi override; `explain` (colours forced on) shows its text and no control byte but
    its own colours."""
    from preflight_contract.terminal import has_control

    ns = workloads["namespace"]
    hostile = (
        "osc52\x1b]52;c;cm0gLXJmIH4=\x07 link\x1b]8;;https://evil.example/\x1b\\click"
        "\x1b]8;;\x1b\\ clear\x1b[2J c1\x9b2J bidi\u202egnp.exe"
    )
    k8s.apply(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "hostile-note", "namespace": ns},
            "involvedObject": {"kind": "Pod", "name": workloads["bad_pod"], "namespace": ns},
            "reason": "Hostile\x1b[31mReason",
            "message": hostile,
            "type": "Warning",
            "lastTimestamp": "2026-12-01T00:00:00Z",
        }
    )
    result = kubectl_plugin(k8s, "explain", "deploy/vllm-bad", "-n", ns, "--color", "always")
    assert result.returncode == 0, result.stderr
    assert "HostileReason" in result.stdout
    assert "click" in result.stdout  # the text stays, the sequences go
    assert not has_control(result.stdout, allow_sgr=True), repr(result.stdout)
    assert "\x9b" not in result.stdout
    assert "\u202e" not in result.stdout


def test_explain_a_pod_names_its_workload(k8s: Cluster, workloads: dict[str, Any]) -> None:
    ns = workloads["namespace"]
    result = kubectl_plugin(k8s, "explain", f"pod/{workloads['bad_pod']}", "-n", ns)
    assert result.returncode == 0, result.stderr
    assert "GPUValidation: " + f"{ns}/deployment-vllm-bad" in result.stdout
    assert "request 4 GPUs" in result.stdout.split("Fixes:")[1]


def test_explain_by_bare_name_and_a_passing_workload(
    k8s: Cluster, workloads: dict[str, Any]
) -> None:
    ns = workloads["namespace"]
    result = kubectl_plugin(k8s, "explain", "vllm-good", "-n", ns, "--exit-code")
    assert result.returncode == 0, result.stderr
    assert "Verdict:    static pass, runtime pass" in result.stdout
    assert "preflight-check: pass" in result.stdout
    assert kubectl_plugin(k8s, "explain", "vllm-bad", "-n", ns, "--exit-code").returncode == 1


def test_explain_unknown_names_say_what_to_do(k8s: Cluster, workloads: dict[str, Any]) -> None:
    ns = workloads["namespace"]
    missing = kubectl_plugin(k8s, "explain", "nothing-here", "-n", ns)
    assert missing.returncode == 2
    assert "give the kind (deploy/nothing-here" in missing.stderr
    bad_kind = kubectl_plugin(k8s, "explain", "service/vllm", "-n", ns)
    assert bad_kind.returncode == 2
    assert "the kind must be one of" in bad_kind.stderr
    no_pod = kubectl_plugin(k8s, "explain", "pod/ghost", "-n", ns)
    assert no_pod.returncode == 2
    assert "pod 'ghost' not found" in no_pod.stderr
    for result in (missing, bad_kind, no_pod):
        assert "Traceback" not in result.stderr


def test_lint_is_vllm_preflight_lint(k8s: Cluster) -> None:
    path = str(MANIFESTS / "bad-tp4-deployment.yaml")
    ours = kubectl_plugin(k8s, "lint", path)
    theirs = subprocess.run(
        [str(BIN / "vllm-preflight"), "lint", path],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ours.returncode == theirs.returncode == 1
    assert ours.stdout == theirs.stdout
    assert "gpu-count-too-low" in ours.stdout
    good = kubectl_plugin(
        k8s, "lint", "--format", "json", str(MANIFESTS / "good-tp2-deployment.yaml")
    )
    assert good.returncode == 0, good.stdout + good.stderr
    json.loads(good.stdout)


def _canary_pod(k8s: Cluster, ns: str) -> dict[str, Any] | None:
    items = get_json(k8s, "pods", "-n", ns, "-l", "app.kubernetes.io/component=preflight-canary")
    pods: list[dict[str, Any]] = items["items"]
    return pods[0] if pods else None


def _finish_canary(k8s: Cluster, pod: dict[str, Any], exit_code: int, report: str) -> None:
    now = fakekubelet.rfc3339()
    status = {
        "phase": "Succeeded" if exit_code == 0 else "Failed",
        "containerStatuses": [
            {
                "name": "preflight-check",
                "image": pod["spec"]["containers"][0]["image"],
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": exit_code,
                        "reason": "Completed" if exit_code == 0 else "Error",
                        "message": report,
                        "startedAt": now,
                        "finishedAt": now,
                    }
                },
            }
        ],
    }
    meta = pod["metadata"]
    k8s.kubectl(
        "patch", "pod", meta["name"], "-n", meta["namespace"], "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("exit_code", "report", "verdict"), [(0, PASSED, "pass"), (1, FAILED, "fail")]
)
def test_check_node_runs_a_canary_job_and_prints_its_report(
    k8s: Cluster, k8s_namespace: str, exit_code: int, report: str, verdict: str
) -> None:
    ns = k8s_namespace
    proc = subprocess.Popen(
        [str(k8s.bin_dir / "kubectl"), "vllm-preflight", "check-node", "gpu-node-1",
         "--tp", "2", "-n", ns, "--timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=plugin_env(k8s),
    )  # fmt: skip
    try:
        pod = wait_for(lambda: _canary_pod(k8s, ns), timeout=30, what="the canary Job's pod")
        spec = pod["spec"]
        assert spec["nodeSelector"] == {"kubernetes.io/hostname": "gpu-node-1"}
        container = spec["containers"][0]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "2"
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["PREFLIGHT_TP"] == "2"
        assert pod["metadata"]["labels"][constants.LABEL_INJECT] == "disabled"
        time.sleep(0.5)
        _finish_canary(k8s, pod, exit_code, report)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == exit_code, out + err
    assert "job/vllm-preflight-canary-" in out
    assert f"verdict: {verdict}" in out
    if verdict == "fail":
        assert "fix: request 4 GPUs" in out
    else:
        assert "GPU 1: GPU-b 0000:07:00.0" in out
