"""The transport NCCL chose (issue 26) reaches the pod's entry and the group's entry of the
GPUValidation, bounded, beside the bus bandwidth."""

from __future__ import annotations

from test_operator_groups import pod, report

from preflight_contract.report import Report
from preflight_operator.core.gpuvalidation import group_results
from preflight_operator.core.podresults import pod_result


def test_transport_reaches_the_pod_and_the_group() -> None:
    rep = report(0, "pass", joined=3, busbw_gbps=180.5, transport="NET/IB+GDR")
    message = rep.to_termination_message()
    assert Report.from_json(message).group["transport"] == "NET/IB+GDR"
    result = pod_result(pod("big-0", message))
    assert result is not None
    entry = result.to_status()
    assert entry["group"]["transport"] == "NET/IB+GDR"
    assert entry["group"]["busBandwidthGBps"] == 180.5
    groups = group_results([entry])
    assert groups[0]["transport"] == "NET/IB+GDR"
    assert groups[0]["busBandwidthGBps"] == 180.5


def test_the_leaders_transport_is_the_groups() -> None:
    worker = pod_result(pod("big-1", report(1, "warn", transport="NET/Socket").to_json()))
    leader = pod_result(pod("big-0", report(0, "pass", transport="NET/IB").to_json()))
    assert worker is not None
    assert leader is not None
    groups = group_results([worker.to_status(), leader.to_status()])
    assert groups[0]["transport"] == "NET/IB"


def test_a_hostile_transport_is_cut_and_typed() -> None:
    rep = report(0, "pass", transport="X" * 10_000)
    result = pod_result(pod("big-0", rep.to_termination_message()))
    assert result is not None
    shown = result.to_status()["group"]["transport"]
    assert len(shown) <= 80
    bad = report(0, "pass", transport=["NET/IB"])
    assert "transport" not in bad.group
