"""Reading the preflight-check init container's status: the report, or why there is none."""

from __future__ import annotations

import json
from typing import Any

import pytest

from preflight_contract.report import CheckResult, GPUEntry, Report
from preflight_contract.verdicts import worst
from preflight_operator.core.podresults import pod_result


def pod_with(
    state: dict[str, Any], *, last: dict[str, Any] | None = None, restarts: int = 0
) -> Any:
    status: dict[str, Any] = {"name": "preflight-check", "restartCount": restarts, "state": state}
    if last is not None:
        status["lastState"] = last
    return {
        "metadata": {"name": "p", "uid": "u1", "namespace": "ns"},
        "spec": {"nodeName": "n1", "initContainers": [{"name": "preflight-check"}]},
        "status": {"initContainerStatuses": [{"name": "preflight-install", "state": {}}, status]},
    }


def terminated(code: int, message: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "terminated": {
            "exitCode": code,
            "message": message,
            "finishedAt": "2026-11-29T10:00:00Z",
            **extra,
        }
    }


def failing_report() -> Report:
    return Report(
        checks=[
            CheckResult("driver", "pass", "ok"),
            CheckResult(
                "gpu-count", "fail", "CUDA sees 2 GPUs, the plan needs 4", "request 4 GPUs"
            ),
            CheckResult("shm", "warn", "small", "mount an emptyDir"),
        ],
        gpus=[GPUEntry(0, "GPU-a", "0000:06:00.0"), GPUEntry(1, "GPU-b", "0000:07:00.0")],
    )


def test_no_result_while_the_check_has_not_finished() -> None:
    assert pod_result(pod_with({"running": {}})) is None
    assert pod_result({"metadata": {}, "status": {}}) is None


def test_a_failing_report_names_the_first_failure_and_its_fix() -> None:
    message = failing_report().to_termination_message()
    result = pod_result(pod_with(terminated(1, message)))
    assert result is not None
    assert (result.verdict, result.reason, result.exit_code, result.node) == (
        "fail",
        "gpu-count",
        1,
        "n1",
    )
    assert result.remediation == "request 4 GPUs"
    assert [f.id for f in result.failures] == ["gpu-count", "shm"]
    assert result.gpus[1] == (1, "GPU-b", "0000:07:00.0")
    entry = result.to_status()
    assert entry["gpus"][0] == {"ordinal": 0, "uuid": "GPU-a", "pciBusId": "0000:06:00.0"}
    assert entry["checkedAt"] == "2026-11-29T10:00:00Z"


def test_a_truncated_report_never_turns_a_failure_into_a_pass() -> None:
    compact = (
        '{"schema":1,"verdict":"fail","action":"Enforce","plan":{},"checks":[],"truncated":true}'
    )
    result = pod_result(pod_with(terminated(1, compact)))
    assert result is not None
    assert result.verdict == "fail"


def test_a_restarting_check_is_read_from_its_last_state() -> None:
    message = failing_report().to_termination_message()
    result = pod_result(
        pod_with(
            {"waiting": {"reason": "CrashLoopBackOff"}}, last=terminated(1, message), restarts=3
        )
    )
    assert result is not None
    assert (result.verdict, result.restarts) == ("fail", 3)


def test_a_crash_before_the_report_is_an_error_with_the_log_line() -> None:
    result = pod_result(pod_with(terminated(127, "\npython3: not found\nmore")))
    assert result is not None
    assert (result.verdict, result.reason) == ("error", "check-crashed")
    assert "python3: not found" in result.message
    assert "kubectl logs" in result.remediation


def test_oom_and_silent_exits_are_errors() -> None:
    oom = pod_result(pod_with(terminated(137, "", reason="OOMKilled")))
    assert oom is not None
    assert (oom.verdict, oom.reason) == ("error", "check-oom-killed")
    silent = pod_result(pod_with(terminated(0, "")))
    assert silent is not None
    assert (silent.verdict, silent.reason) == ("error", "no-report")


def test_an_unreadable_report_is_an_error() -> None:
    result = pod_result(pod_with(terminated(0, '{"schema": 99}')))
    assert result is not None
    assert (result.verdict, result.reason) == ("error", "report-unreadable")


def test_worst_orders_fail_over_error_over_warn() -> None:
    assert worst(["pass", "warn"]) == "warn"
    assert worst(["error", "warn"]) == "error"
    assert worst(["error", "fail", "pass"]) == "fail"
    assert worst([]) == "pass"


# -- issue 23: a report is hostile input ------------------------------------------------


def _pod_with_message(message: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "uid": "u", "namespace": "ns"},
        "spec": {"nodeName": "n"},
        "status": {
            "initContainerStatuses": [
                {
                    "name": "preflight-check",
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": 1,
                            "message": message,
                            "finishedAt": "2026-12-01T00:00:00Z",
                        }
                    },
                }
            ]
        },
    }


def _report(**extra: Any) -> dict[str, Any]:
    return {"schema": 1, "verdict": "fail", "action": "Enforce", "plan": {}, **extra}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(_report(group={"joined": 1e308})).replace("1e+308", "1e400"),
        json.dumps(_report()).replace('"plan": {}', '"plan": ' + "[" * 2000 + "]" * 2000),
        json.dumps(_report()).replace('"plan": {}', '"plan": {"tp": Infinity}'),
        json.dumps(_report(gpus=[{"ordinal": 1e300, "uuid": "GPU-a", "pci_bus_id": "x"}])),
    ],
    ids=["overflow", "deep", "infinity", "huge-ordinal"],
)
def test_a_hostile_report_is_unreadable_not_a_crash(text: str) -> None:
    result = pod_result(_pod_with_message(text))
    assert result is not None
    assert result.reason == "report-unreadable"
    assert result.verdict == "error"


def test_unknown_check_ids_never_become_a_reason_or_a_label() -> None:
    long_id = "x" * 3500
    text = json.dumps(
        _report(checks=[{"id": long_id, "status": "fail", "message": "m", "remediation": "r"}])
    )
    result = pod_result(_pod_with_message(text))
    assert result is not None
    assert result.reason == "report-unknown-checks"
    assert long_id not in json.dumps(result.to_status())
    assert result.dropped == 1


def test_group_numbers_are_kept_only_as_the_crd_types_them() -> None:
    text = json.dumps(
        _report(
            group={"joined": 1e308, "size": 2, "index": -1, "slowest_ms": 12.5, "missing": [1.5, 2]}
        )
    )
    result = pod_result(_pod_with_message(text))
    assert result is not None
    assert result.group == {"size": 2, "slowest_ms": 12.5, "missing": [2]}
