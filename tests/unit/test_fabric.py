"""Transport truth (issue 26): the RDMA devices a container has, GPUDirect RDMA, NCCL's env,
the transport NCCL chose per peer (from its own INFO lines, verbatim from public threads:
tests/data/nccl/README.md) and the bandwidth floors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest

from preflight_check import fabric, floors, nccl_transport
from preflight_check.checks import group as group_checks
from preflight_check.group import GroupConfig
from preflight_check.group_allreduce import Layout, nccl_lines
from preflight_contract.check_ids import CHECKS, GROUP_PHASE
from preflight_contract.report import CheckResult, group_summary

DATA = Path(__file__).resolve().parents[1] / "data"
SYSFS = DATA / "sysfs"
NCCL = DATA / "nccl"


def tree(name: str, env: Dict[str, str] | None = None, kernel: str = "5.15.0-91-generic"):
    return fabric.read_fabric(str(SYSFS / name), env or {}, kernel=kernel)


def log(name: str) -> List[str]:
    return (NCCL / name).read_text().splitlines()


# -- the RDMA devices ---------------------------------------------------------------------


def test_ib_device_in_the_container_with_peermem_passes() -> None:
    facts = tree("ib-ndr-ok")
    assert [(d.name, d.kind, d.in_container) for d in facts.devices] == [
        ("mlx5_0", fabric.IB, True)
    ]
    port = facts.devices[0].ports[0]
    assert (port.state, port.phys_state, port.rate) == ("ACTIVE", "LinkUp", "400 Gb/sec (4X NDR)")
    verdict = fabric.judge_rdma(facts)
    assert verdict.status == "pass", verdict.message
    assert "nvidia_peermem loaded" in verdict.message


def test_device_on_the_node_but_not_in_the_container_warns_and_says_so() -> None:
    verdict = fabric.judge_rdma(tree("ib-not-in-container"))
    assert verdict.status == "warn"
    assert "present on the node but not in the container" in verdict.message
    assert "mlx5_0, mlx5_1" in verdict.message
    assert "device plugin" in verdict.remediation
    assert verdict.reasons


def test_port_down_warns_naming_the_port() -> None:
    facts = tree("roce-port-down")
    assert facts.devices[0].kind == fabric.ROCE
    verdict = fabric.judge_rdma(facts)
    assert verdict.status == "warn"
    assert "no RDMA port is ACTIVE (mlx5_0 port 1 DOWN)" in verdict.message


def test_no_gpudirect_rdma_warns() -> None:
    verdict = fabric.judge_rdma(tree("ib-hdr-no-gdr"))
    assert verdict.status == "warn"
    assert "GPUDirect RDMA unavailable" in verdict.message
    assert "proprietary" in verdict.message
    assert not verdict.reasons  # a slower path, not a fall-back to sockets


def test_dmabuf_counts_as_gpudirect_with_a_new_kernel_only() -> None:
    assert fabric.judge_rdma(tree("ib-dmabuf")).status == "pass"
    old = fabric.judge_rdma(tree("ib-dmabuf", kernel="5.4.0-150-generic"))
    assert old.status == "warn"
    assert "Linux 5.4.0-150-generic (dma-buf needs 5.12 or later)" in old.message


def test_efa_is_known_by_its_driver() -> None:
    facts = tree("efa")
    assert [(d.name, d.kind) for d in facts.devices] == [("efa_0", fabric.EFA)]
    assert fabric.device_kind("rdmap0s6", "efa", []) == fabric.EFA
    assert fabric.judge_rdma(facts).status == "pass"


def test_no_rdma_device_passes() -> None:
    verdict = fabric.judge_rdma(tree("none"))
    assert verdict.status == "pass"
    assert "no RDMA device" in verdict.message
    # a root that does not exist at all (no sysfs): the same, never an error
    assert fabric.judge_rdma(tree("no-such-tree")).status == "pass"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"NCCL_IB_DISABLE": "1"}, "NCCL_IB_DISABLE=1 set"),
        ({"NCCL_NET": "Socket"}, "NCCL_NET=Socket set"),
        ({"NCCL_IB_HCA": "mlx5_9"}, "NCCL_IB_HCA=mlx5_9 selects none"),
        ({"NCCL_IB_HCA": "^mlx5_0"}, "NCCL_IB_HCA=^mlx5_0 selects none"),
        ({"NCCL_SOCKET_IFNAME": "lo"}, "names the loopback"),
    ],
)
def test_env_that_forbids_rdma_warns_naming_the_variable(
    env: Dict[str, str], expected: str
) -> None:
    verdict = fabric.judge_rdma(tree("ib-ndr-ok", env))
    assert verdict.status == "warn"
    assert expected in verdict.message
    assert any(expected in r for r in verdict.reasons)


@pytest.mark.parametrize(
    "env",
    [
        {"NCCL_IB_DISABLE": "0"},
        {"NCCL_NET": "IB"},
        {"NCCL_IB_HCA": "mlx5"},
        {"NCCL_IB_HCA": "=mlx5_0:1"},
        {"NCCL_SOCKET_IFNAME": "eth0"},
        {"NCCL_SOCKET_IFNAME": "^docker,lo"},
    ],
)
def test_env_that_allows_rdma_passes(env: Dict[str, str]) -> None:
    assert fabric.judge_rdma(tree("ib-ndr-ok", env)).status == "pass"


def test_fi_provider_other_than_efa_forbids_efa() -> None:
    verdict = fabric.judge_rdma(tree("efa", {"FI_PROVIDER": "tcp"}))
    assert verdict.status == "warn"
    assert "FI_PROVIDER=tcp set: libfabric will not use the EFA devices" in verdict.message
    assert fabric.judge_rdma(tree("efa", {"FI_PROVIDER": "efa"})).status == "pass"


def test_hostile_sysfs_values_are_bounded(tmp_path: Path) -> None:
    port = tmp_path / "sys/class/infiniband/x/ports/1"
    port.mkdir(parents=True)
    (port / "state").write_bytes(b"\xff" * 100_000)
    (port / "rate").write_text("9" * 100_000)
    facts = fabric.read_fabric(str(tmp_path), {}, kernel="")
    assert len(facts.devices[0].ports[0].rate) <= 256
    assert fabric.judge_rdma(facts).status == "warn"  # not ACTIVE: said, never a crash


# -- NCCL's own INFO lines ----------------------------------------------------------------


def test_roce_through_the_ibext_plugin_is_ib() -> None:
    found = nccl_transport.parse(log("roce-ibext.log"), [2])
    assert found.peers == {1: {"NET/IB"}, 0: {"NET/IB"}}
    assert found.network == "IBext_v8"


def test_socket_fallback_is_seen_and_local_p2p_ignored() -> None:
    found = nccl_transport.parse(log("socket-fallback.log"), range(8, 16))
    assert found.peers == {6: {"NET/Socket"}}


def test_ib_disabled_log_has_no_connection_but_names_the_network() -> None:
    found = nccl_transport.parse(log("ib-disabled.log"), [0])
    assert found.peers == {}
    assert found.network == "Socket"


def test_old_channel_format_and_gdrdma() -> None:
    old = nccl_transport.parse(log("ib-old-format.log"), [0])
    assert old.peers == {1: {"NET/IB"}}
    assert not old.gdr
    gdr = nccl_transport.parse(log("ib-gdrdma.log"), range(0, 8))
    assert set(gdr.peers) == {8, 9, 10, 11, 15}
    assert gdr.gdr == {8, 9, 10, 11, 15}


def test_ring_lines_shm_and_p2p() -> None:
    found = nccl_transport.parse(log("ring-shm-p2p.log"), range(0, 7))
    assert found.peers == {15: {"NET/IB"}, 7: {"SHM"}}


def test_efa_through_the_ofi_plugin() -> None:
    assert nccl_transport.parse(log("efa-ofi.log"), [1]).peers == {0: {"NET/OFI"}}
    assert nccl_transport.parse(log("efa-old-ring.log"), range(8, 16)).peers == {7: {"NET/OFI"}}


def test_parse_is_bounded() -> None:
    line = "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0"
    found = nccl_transport.parse([line] * 100_000 + ["x" * 10_000_000], [0])
    assert found.lines == nccl_transport.MAX_LINES


def test_by_member_maps_ranks_through_the_layout() -> None:
    found = nccl_transport.parse(log("ib-gdrdma.log"), range(0, 8))
    per = nccl_transport.by_member(found, {0: (0, 8), 1: (8, 8)})
    assert per == {1: ["NET/IB"]}
    assert nccl_transport.summary(per, gdr=True) == "NET/IB+GDR"


def test_socket_with_rdma_devices_is_the_policy_action_with_the_reason() -> None:
    per = {1: ["NET/Socket"]}
    warn = nccl_transport.judge(
        per, rdma_devices=2, reasons=["NCCL_IB_DISABLE=1 set: NCCL will not use InfiniBand or RoCE"]
    )
    assert warn.status == "warn"
    assert "fell back to TCP sockets" in warn.message
    assert "NCCL_IB_DISABLE=1 set" in warn.message
    strict = nccl_transport.judge(per, rdma_devices=2, reasons=[], socket_action="fail")
    assert strict.status == "fail"
    assert "NET/IB :" in strict.message  # no reason found: where to look
    # sockets on a node without RDMA devices: nothing better exists
    assert nccl_transport.judge(per, rdma_devices=0, reasons=[]).status == "pass"
    # no connection line at all: unknown, a warning
    assert nccl_transport.judge({}, rdma_devices=2, reasons=[]).status == "warn"


# -- floors -------------------------------------------------------------------------------


def test_floor_table() -> None:
    assert floors.from_ib_rate("400 Gb/sec (4X NDR)") == floors.infiniband("NDR")
    assert floors.from_ib_rate("200 Gb/sec (4X HDR)").per_direction_gbps == 25.0  # type: ignore[union-attr]
    assert floors.from_ib_rate("100 Gb/sec (2X NDR)") is None  # no row: no floor
    assert floors.from_ib_rate("garbage") is None
    assert floors.nvlink(4, 18).per_direction_gbps == 450.0  # type: ignore[union-attr]
    assert floors.nvlink(5, 18).per_direction_gbps == 900.0  # type: ignore[union-attr]
    assert floors.pcie(4, 16).per_direction_gbps == 31.5  # type: ignore[union-attr]
    assert floors.nvlink(9, 1) is None
    assert floors.pcie(4, 0) is None
    assert floors.efa(2).per_direction_gbps == 50.0  # type: ignore[union-attr]


def test_floor_judgement() -> None:
    ndr = floors.infiniband("NDR")
    assert floors.judge(2.1, ndr)[0] == "warn"  # sockets-like speed on an NDR port
    assert "below the floor of 25.00 GB/s for InfiniBand NDR 4X" in floors.judge(2.1, ndr)[1]
    assert floors.judge(40.0, ndr)[0] == "pass"
    assert floors.judge(0.5, None) == ("pass", "")  # unknown link: no floor


# -- the group phase's transport check ----------------------------------------------------


def _config(index: int = 0) -> GroupConfig:
    return GroupConfig("lws", "g", "leader", 29600, index, 2)


def _rdma(name: str, env: Dict[str, str] | None = None) -> Any:
    return fabric.judge_rdma(tree(name, env))


def _allreduce(busbw: float) -> CheckResult:
    return CheckResult("group-allreduce", "pass", "ok", "", {"bus_bandwidth_gbps": busbw})


LAYOUT = Layout({0: (0, 8), 1: (8, 8)}, 16, "nccl", 64 << 20)


def _ranks(lines: List[str]) -> List[Dict[str, Any]]:
    return [{"rank": 0, "ok": True, "seconds": 0.01, "nccl_log": nccl_lines("\n".join(lines))}]


def test_transport_check_reports_ib_and_the_floor() -> None:
    result = group_checks._transport(
        _config(), _allreduce(180.0), _ranks(log("ib-gdrdma.log")), LAYOUT, _rdma("ib-ndr-ok")
    )
    assert result.status == "pass", result.message
    assert result.evidence["transport"] == "NET/IB+GDR"
    assert result.evidence["floor_gbps"] == 25.0
    assert "worker 1: NET/IB" in result.message


def test_transport_check_warns_on_ib_below_its_floor() -> None:
    result = group_checks._transport(
        _config(), _allreduce(3.0), _ranks(log("ib-gdrdma.log")), LAYOUT, _rdma("ib-ndr-ok")
    )
    assert result.status == "warn"
    assert "below the floor" in result.message


def test_transport_check_socket_fallback_names_why(monkeypatch: pytest.MonkeyPatch) -> None:
    socket_log = [
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0",
    ]
    rdma = _rdma("ib-not-in-container")
    result = group_checks._transport(_config(), _allreduce(2.0), _ranks(socket_log), LAYOUT, rdma)
    assert result.status == "warn"
    assert "not in the container" in result.message
    assert result.evidence["transport"] == "NET/Socket"
    monkeypatch.setenv("PREFLIGHT_SOCKET_FALLBACK", "fail")
    strict = group_checks._transport(_config(), _allreduce(2.0), _ranks(socket_log), LAYOUT, rdma)
    assert strict.status == "fail"


def test_transport_check_skips_without_nccl() -> None:
    gloo = Layout({0: (0, 1), 1: (1, 1)}, 2, "gloo", 4 << 20)
    result = group_checks._transport(_config(), _allreduce(1.0), [], gloo, None)
    assert result.status == "skip"
    skipped = CheckResult("group-allreduce", "skip", "not run")
    assert group_checks._transport(_config(), skipped, [], None, None).status == "skip"


def test_summary_carries_the_transport_to_the_report() -> None:
    results = [
        CheckResult("group", "pass", "ok", "", {"joined": [0, 1]}),
        CheckResult("group-allreduce", "pass", "ok", "", {"bus_bandwidth_gbps": 180.5}),
        CheckResult("group-transport", "pass", "ok", "", {"transport": "NET/IB+GDR"}),
    ]
    out = group_checks.summary(_config(), results)
    assert out["transport"] == "NET/IB+GDR"
    assert out["busbw_gbps"] == 180.5
    assert group_summary({"transport": "x" * 500})["transport"].endswith("\u2026")


def test_check_ids_are_group_phase() -> None:
    for check_id in ("rdma", "group-transport"):
        assert check_id in CHECKS
        assert check_id in GROUP_PHASE


def test_a_one_pod_group_has_no_transport_to_judge() -> None:
    # GPU run 17: a one-pod group's deep tier warned "NCCL printed no connection to another
    # pod"; with no other pod there is no transport between pods to know
    from types import SimpleNamespace

    from preflight_check.checks.group import _transport
    from preflight_check.group import GroupConfig
    from preflight_contract.report import CheckResult

    config = GroupConfig("explicit", "g", "leader", 29600, 0, 1)
    lay = SimpleNamespace(backend="nccl", ranks={0: (0, 1)})
    allreduce = CheckResult("group-allreduce", "pass", "sum verified")
    result = _transport(config, allreduce, [{"nccl_log": []}], lay, None)
    assert result.status == "skip", result
    assert "one pod" in result.message
    two = GroupConfig("explicit", "g", "leader", 29600, 0, 2)
    lay2 = SimpleNamespace(backend="nccl", ranks={0: (0, 1), 1: (1, 1)})
    assert _transport(two, allreduce, [{"nccl_log": []}], lay2, None).status == "warn"
