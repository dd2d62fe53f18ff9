"""The GPUValidation of a vLLM workload whose plan the rules could not read (issue 35/36,
item 3): it says "plan unknown: <why>", shows neither a blank TP nor a made-up count, and
carries the check's result, which ran without the plan (or recovered it at runtime)."""

from __future__ import annotations

import datetime
import json
from typing import Any

from test_builders_status import REF, conditions, inputs, result
from test_loadtime import crd_schema, undeclared

from preflight_contract.report import CheckResult, Report
from preflight_operator.cli import plugin_explain, plugin_status
from preflight_operator.core import constants
from preflight_operator.core.gpuvalidation import build_status, plan_unknown
from preflight_operator.core.podresults import pod_result, report_plan_note
from preflight_operator.core.rules.vocabulary import Finding
from preflight_operator.core.static import StaticResult

UNPARSED = Finding(
    "vllm-command-unparsed",
    "warn",
    "spec.containers[0].command[6]: `strace` is not a program vllm-preflight models",
    "spec.containers[0].command",
    "write the command as a list",
)
PLANLESS = StaticResult("warn", findings=(UNPARSED,), plan=None, gpus_requested=None)
CHECK_WARN = "plan unknown: GPU count not compared (vllm-command-unparsed: `strace` ...)"


def checked_pod(report: Report) -> dict[str, Any]:
    """A pod whose preflight-check finished with ``report`` as its termination message."""
    return {
        "metadata": {"name": "vllm-0", "uid": "u-0", "namespace": REF.namespace},
        "spec": {"nodeName": "gpu-1"},
        "status": {
            "initContainerStatuses": [
                {
                    "name": constants.CHECK_CONTAINER,
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": 0,
                            "finishedAt": "2026-01-01T00:00:02Z",
                            "message": report.to_termination_message(),
                        }
                    },
                }
            ]
        },
    }


def test_the_status_says_plan_unknown_and_why() -> None:
    status = build_status(inputs(static=PLANLESS, pending_pods=1))
    assert status["planUnknown"].startswith("plan unknown: vllm-command-unparsed: ")
    assert "strace" in status["planUnknown"]
    assert (status["tp"], status["gpus"]) == ("unknown", "?/unknown")
    assert "plan" not in status  # no sizes that were never read
    assert status["reason"] == "plan-unknown"
    assert not undeclared(
        status, crd_schema("gpuvalidations.vllm-preflight.io.yaml")["properties"]["status"]
    )


def test_the_checks_result_is_carried_and_said_to_rest_on_no_plan() -> None:
    report = Report(
        checks=[
            CheckResult("plan", "warn", CHECK_WARN),
            CheckResult("gpu-count", "skip", "plan unknown: GPU count not compared"),
            CheckResult("context-ranks", "pass", "2 ranks bound"),
        ],
        action="Enforce",
        plan={"unknown": "vllm-command-unparsed: `strace` ...", "gpus_seen": 2},
    )
    found = pod_result(checked_pod(report))
    assert found is not None
    assert (found.verdict, found.reason) == ("warn", "plan")
    assert found.plan == "plan unknown: GPU count not compared: vllm-command-unparsed: `strace` ..."
    status = build_status(inputs(static=PLANLESS, live_results=[found]))
    assert status["runtimeVerdict"] == "warn"
    assert status["reason"] == "plan-unknown"
    entry = status["runtime"]["pods"][0]
    assert entry["plan"] == found.plan
    assert entry["message"] == CHECK_WARN
    state, reason = conditions(status)["RuntimeChecksPassed"]
    assert (state, reason) == ("True", "PassedWithWarnings")
    message = next(c["message"] for c in status["conditions"] if c["type"] == "RuntimeChecksPassed")
    assert message.startswith("plan unknown: vllm-command-unparsed: ")
    assert CHECK_WARN in message
    schema = crd_schema("gpuvalidations.vllm-preflight.io.yaml")["properties"]["status"]
    assert not undeclared(status, schema)


def test_a_hardware_failure_stays_the_reason() -> None:
    failed = result("a", "fail", reason="ecc", message="3 uncorrectable ECC errors")
    status = build_status(inputs(static=PLANLESS, live_results=[failed]))
    assert (status["runtimeVerdict"], status["reason"]) == ("fail", "ecc")
    assert conditions(status)["Ready"] == ("False", "ChecksFailed")


def test_a_plan_recovered_at_runtime_is_named() -> None:
    plan = {
        "tp": 4,
        "pp": 1,
        "dp_local": 1,
        "gpus_needed": 4,
        "recovered": "plan-unresolved: $(TP)",
    }
    assert report_plan_note(plan) == (
        "TP 4 x PP 1 x DP-local 1 = 4 GPU(s), recovered at runtime (the rules could not read "
        "it: plan-unresolved: $(TP))"
    )
    hostile = {"recovered": "x" * 5000, "tp": True, "pp": -1, "gpus_needed": "4"}
    assert report_plan_note(hostile).startswith("the plan, recovered at runtime")
    assert len(report_plan_note(hostile)) <= 300
    assert report_plan_note({"tp": 2, "source": "PREFLIGHT_TP"}) == ""
    assert report_plan_note(["not", "a", "mapping"]) == ""
    assert report_plan_note({"unknown": 7}) == ""


def test_a_read_plan_shows_as_before() -> None:
    status = build_status(inputs())
    assert (status["tp"], status["gpus"], "planUnknown" in status) == ("2", "2/2", False)
    assert plan_unknown(None) == ""
    assert plan_unknown(StaticResult("unknown", has_vllm=False)) == ""
    assert json.dumps(build_status(inputs(static=None)))  # not analysed: "?"
    assert build_status(inputs(static=None))["tp"] == "?"


def test_the_kubectl_plugin_shows_it() -> None:
    status = build_status(inputs(static=PLANLESS, pending_pods=1))
    item = {
        "metadata": {"name": "pod-unread", "namespace": "ns", "creationTimestamp": ""},
        "status": status,
    }
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    (row,) = plugin_status.status_rows([item], all_namespaces=False, now=now)
    assert row[2:4] == ["unknown", "?/unknown"]  # TP and GPUS, never blank
    text = plugin_explain.explain_view(item, [], [], workload="Pod/unread", colour=False)
    assert "Plan:       plan unknown: vllm-command-unparsed: " in text
    older = {"metadata": item["metadata"], "status": {"plan": {"tp": 4}}}  # before status.tp
    assert plugin_status.status_rows([older], all_namespaces=False, now=now)[0][2] == "4"
