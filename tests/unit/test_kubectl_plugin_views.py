"""The kubectl plugin's pure parts: the status table, target names, the explain view, the
canary Job and reading its outcome (tests/e2e/test_kubectl_plugin.py runs it for real)."""

from __future__ import annotations

import datetime
import io
from typing import Any

import pytest

from preflight_contract.report import CheckResult, Report
from preflight_operator.cli import (
    kubectl_plugin,
    plugin_check_node,
    plugin_common,
    plugin_explain,
    plugin_status,
)
from preflight_operator.cli.plugin_check_node import CanarySpec
from preflight_operator.cli.plugin_common import PluginError
from preflight_operator.cli.plugin_explain import Target
from preflight_operator.core import constants

NOW = datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def gpuval(name: str, ns: str, static: str, runtime: str, reason: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": "2026-12-01T11:55:00Z"},
        "status": {
            "workload": f"Deployment/{name}",
            "plan": {"tp": 4},
            "gpus": "4/4",
            "staticVerdict": static,
            "runtimeVerdict": runtime,
            "reason": reason,
        },
    }


def test_age_is_kubectls() -> None:
    assert plugin_status.age("2026-12-01T11:59:15Z", NOW) == "45s"
    assert plugin_status.age("2026-12-01T11:48:00Z", NOW) == "12m"
    assert plugin_status.age("2026-12-01T07:00:00Z", NOW) == "5h"
    assert plugin_status.age("2026-11-28T12:00:00Z", NOW) == "3d"
    assert plugin_status.age("", NOW) == "<unknown>"


def test_status_rows_sorted_with_namespace_for_all() -> None:
    items = [gpuval("b", "ns2", "pass", "pass"), gpuval("a", "ns1", "fail", "pending", "gpu-count")]
    rows = plugin_status.status_rows(items, all_namespaces=True, now=NOW)
    assert rows[0] == ["ns1", "a", "Deployment/a", "4", "4/4", "fail", "pending", "gpu-count", "5m"]
    assert [r[1] for r in rows] == ["a", "b"]
    assert plugin_status.status_rows(items, all_namespaces=False, now=NOW)[0][0] == "a"


def test_table_columns_line_up_with_and_without_colour() -> None:
    header = list(plugin_status.STATUS_COLUMNS)
    rows = plugin_status.status_rows(
        [gpuval("vllm", "n", "pass", "fail", "shm-too-small")], all_namespaces=False, now=NOW
    )
    plain = plugin_common.render_table(header, rows, colour=False)
    coloured = plugin_common.render_table(header, rows, colour=True)
    assert "\x1b[" not in plain
    assert "\x1b[32mpass\x1b[0m" in coloured
    assert "\x1b[31mfail\x1b[0m" in coloured
    assert "STATIC" in coloured.splitlines()[0]  # the header is never coloured
    assert "\x1b[" not in coloured.splitlines()[0]
    strip = coloured.replace("\x1b[32m", "").replace("\x1b[31m", "").replace("\x1b[0m", "")
    assert strip == plain
    first, second = plain.splitlines()
    assert first.index("RUNTIME") == second.index("fail")


def test_colour_auto_only_on_a_terminal_and_never_with_no_color() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert plugin_common.use_colour("auto", Tty(), {}) is True
    assert plugin_common.use_colour("auto", io.StringIO(), {}) is False
    assert plugin_common.use_colour("auto", Tty(), {"NO_COLOR": "1"}) is False
    assert plugin_common.use_colour("auto", Tty(), {"TERM": "dumb"}) is False
    assert plugin_common.use_colour("always", io.StringIO(), {"NO_COLOR": "1"}) is True
    assert plugin_common.use_colour("never", Tty(), {}) is False


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("deploy/vllm", Target("Deployment", "vllm")),
        ("deployments.apps/vllm", Target("Deployment", "vllm")),
        ("sts/vllm", Target("StatefulSet", "vllm")),
        ("lws/big", Target("LeaderWorkerSet", "big")),
        ("pod/vllm-0", Target("Pod", "vllm-0")),
        ("gpuval/deployment-vllm", Target("GPUValidation", "deployment-vllm")),
        ("vllm", Target("", "vllm")),
    ],
)
def test_parse_target(text: str, target: Target) -> None:
    assert plugin_explain.parse_target(text) == target


def test_parse_target_rejects_other_kinds_naming_the_valid_ones() -> None:
    with pytest.raises(PluginError, match=r"the kind must be one of .*Deployment"):
        plugin_explain.parse_target("service/vllm")
    with pytest.raises(PluginError):
        plugin_explain.parse_target("deploy/")


def test_explain_view_without_gpuvalidation_says_why_there_may_be_none() -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {},
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
                }
            ],
        },
    }
    text = plugin_explain.explain_view(None, [pod], [], workload="Pod/p", colour=False)
    assert "GPUValidation: none (the workload is not in an opted-in namespace" in text
    assert "not scheduled: Unschedulable: 0/2 nodes are available: 2 Insufficient" in text
    assert "preflight-check: not run" in text
    assert "Fixes:\n  none known" in text


def test_explain_view_keeps_results_of_deleted_pods_and_dedupes_fixes() -> None:
    val = gpuval("vllm", "n", "pass", "fail", "gpu-count")
    val["status"]["runtime"] = {
        "pods": [
            {
                "pod": "gone-1",
                "node": "n1",
                "verdict": "fail",
                "failures": [
                    {"id": "gpu-count", "status": "fail", "message": "m", "remediation": "r"}
                ],
                "remediation": "r",
            }
        ]
    }
    text = plugin_explain.explain_view(val, [], [], workload="Deployment/vllm", colour=False)
    assert "gone-1 (deleted): fail on n1" in text
    assert text.split("Fixes:")[1].strip() == "1. r"


def test_canary_job_on_a_node() -> None:
    job = plugin_check_node.canary_job(CanarySpec(tp=4, pp=2, node="gpu-7", namespace="ops"))
    assert job["metadata"]["generateName"] == "vllm-preflight-canary-"
    assert job["metadata"]["namespace"] == "ops"
    pod = job["spec"]["template"]
    assert pod["metadata"]["labels"][constants.LABEL_INJECT] == "disabled"
    spec = pod["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "gpu-7"}
    assert spec["restartPolicy"] == "Never"
    (container,) = spec["containers"]
    assert container["name"] == constants.CHECK_CONTAINER
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"  # TP x PP
    env = {e["name"]: e["value"] for e in container["env"]}
    assert (env["PREFLIGHT_TP"], env["PREFLIGHT_PP"], env["PREFLIGHT_ACTION"]) == (
        "4",
        "2",
        "Enforce",
    )
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    assert job["spec"]["backoffLimit"] == 0


def test_canary_job_on_a_pool_with_another_resource() -> None:
    spec = CanarySpec(tp=2, pool=("nodepool", "h100"), gpu_resource="amd.com/gpu")
    job = plugin_check_node.canary_job(spec)
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nodepool": "h100"}
    assert pod["containers"][0]["resources"]["limits"]["amd.com/gpu"] == "2"
    assert pod["tolerations"][0]["key"] == "amd.com/gpu"
    assert job["metadata"]["annotations"][f"{constants.PREFIX}canary-target"] == "nodepool=h100"
    assert "namespace" not in job["metadata"]


def _canary_pod(terminated: dict[str, Any] | None, scheduled: bool = True) -> dict[str, Any]:
    status: dict[str, Any] = {"containerStatuses": []}
    if terminated is not None:
        status["containerStatuses"] = [
            {"name": constants.CHECK_CONTAINER, "state": {"terminated": terminated}}
        ]
    if not scheduled:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no"}
        ]
    return {"metadata": {"name": "c"}, "status": status}


def test_canary_outcome() -> None:
    assert plugin_check_node.canary_outcome([]).done is False
    waiting = plugin_check_node.canary_outcome([_canary_pod(None, scheduled=False)])
    assert (waiting.done, waiting.text) == (False, "not scheduled: Unschedulable: no")
    failed = Report(checks=[CheckResult("shm-size", "fail", "64 MiB", "mount a memory emptyDir")])
    got = plugin_check_node.canary_outcome(
        [_canary_pod({"exitCode": 1, "message": failed.to_termination_message()})]
    )
    assert (got.done, got.exit_code) == (True, 1)
    assert "FAIL  shm-size: 64 MiB" in got.text
    assert "fix: mount a memory emptyDir" in got.text
    crashed = plugin_check_node.canary_outcome(
        [_canary_pod({"exitCode": 127, "reason": "Error", "message": "exec: python3: not found"})]
    )
    assert (crashed.done, crashed.exit_code) == (True, 2)
    assert "without a report" in crashed.text
    assert "python3: not found" in crashed.text


def test_check_node_dry_run_prints_the_job_and_needs_a_target() -> None:
    out = io.StringIO()
    code = kubectl_plugin.main(["check-node", "n1", "--tp", "2", "--dry-run"], out=out)
    assert code == 0
    assert '"kubernetes.io/hostname": "n1"' in out.getvalue()
    assert kubectl_plugin.main(["check-node", "--tp", "2", "--dry-run"], out=io.StringIO()) == 2
    assert kubectl_plugin.main(["check-node", "--pool", "x", "--tp", "2"], out=io.StringIO()) == 2


def test_lint_is_found_after_global_flags(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "d.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert kubectl_plugin._command_index(["--context", "lint", "status"]) == 2
    assert kubectl_plugin._command_index(["--kubeconfig=/k", "lint"]) == 1
    assert kubectl_plugin.main(["--context", "prod", "lint", str(manifest)]) == 0


def test_a_cluster_without_the_crd_says_to_install_the_chart(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "kubectl"
    fake.write_text(
        "#!/bin/sh\ncat >&2 <<'EOF'\n"
        'error: the server doesn\'t have a resource type "gpuvalidations"\nEOF\nexit 1\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("KUBECTL", str(fake))
    assert kubectl_plugin.main(["status", "-A"], out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert "install the vllm-preflight chart" in err
    assert "Traceback" not in err


# kubectl v1.34's own words with no cluster (KUBECONFIG=/nonexistent, nothing on
# localhost:8080): client-go's discovery error once per retry, then kubectl's summary.
NO_CLUSTER = (
    "".join(
        f'E1206 04:07:52.26{i}973   24499 memcache.go:265] "Unhandled Error" err="couldn\'t get '
        'current server API group list: Get \\"http://localhost:8080/api?timeout=32s\\": dial '
        'tcp 127.0.0.1:8080: connect: connection refused"\n'
        for i in range(7)
    )
    + "The connection to the server localhost:8080 was refused"
    + " - did you specify the right host or port?\n"
)


@pytest.mark.parametrize(
    "verb", [["status", "-A"], ["explain", "deploy/x", "-n", "a"], ["audit", "-A"]]
)
def test_no_cluster_is_one_clear_line_not_kubectls_retries(
    verb: list[str],
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 40, item 6: the plugin repeated kubectl's raw error 7 times with no cluster."""
    said = tmp_path / "stderr.txt"
    said.write_text(NO_CLUSTER)
    fake = tmp_path / "kubectl"
    fake.write_text(f"#!/bin/sh\ncat {said} >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KUBECTL", str(fake))
    assert kubectl_plugin.main(verb, out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "no Kubernetes API server answered" in err
    assert "--kubeconfig, --context, KUBECONFIG" in err
    assert err.count("was refused") == 1
    assert "memcache.go" not in err
    assert "Traceback" not in err


def test_a_kubectl_error_is_said_once() -> None:
    text = plugin_common.kubectl_failure(["get", "pods"], "error: forbidden\nerror: forbidden\n")
    assert text == "kubectl get pods: error: forbidden"
