"""Issue 16's fast-tier hardware checks, end to end over the fake driver, and the pynvml
binding's rule that a refused read is "not available", never an error.

Every fault set on a FakeGpu is one NVIDIA documents for the NVML call behind it (NVML API
Reference Guide; docs/CHECKS.md cites each). A healthy fake H200 answers what the real
one answered in docs/GPU_RUNS.md.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from preflight_check.driver.api import NvmlGpuNeedsReset
from preflight_check.driver.nvml import PynvmlDevice, _Binding
from preflight_contract.verdicts import FAIL, PASS, SKIP, WARN
from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check

pytestmark = pytest.mark.timeout(60)
HARDWARE = ("row-remap", "gpu-reset", "nvlink", "pcie-link", "clock-throttle", "fabric", "xid")


def _run(tmp_path: Path, tp: int = 2, count: int = 2, **gpu1: Any) -> Any:
    machine = h200_machine(count)
    for name, value in gpu1.items():
        setattr(machine.gpus[1], name, value)
    return run_check(fake_host(machine), ["--tp", str(tp)], tmp_path)


def test_a_healthy_h200_passes_every_hardware_check(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.code == 0, run.stdout
    for check_id in HARDWARE:
        expected = SKIP if check_id == "fabric" else PASS  # no NVSwitch fabric measured
        assert run.check(check_id).status == expected, run.check(check_id)
    assert "18 of 18 links up" in run.check("nvlink").message
    assert "not available" in run.check("fabric").message


def test_row_remapping_failure_fails_naming_the_gpu(tmp_path: Path) -> None:
    run = _run(tmp_path, remapped_rows=(0, 3, False, True))
    check = run.check("row-remap")
    assert check.status == FAIL
    assert "row remapping failed on GPU 1 (GPU-7b01fc6f" in check.message
    assert "uncorrectable ECC error encountered" in check.message
    assert check.evidence["gpus"] == [h200_machine(2).gpus[1].uuid]
    assert run.code == 1


def test_pending_remap_and_retired_pages_warn(tmp_path: Path) -> None:
    run = _run(tmp_path, remapped_rows=(0, 1, True, False), retired_pages_pending=True)
    check = run.check("row-remap")
    assert check.status == WARN
    assert "waits for the next GPU reset" in check.message
    assert "retired memory pages wait" in check.message
    assert run.code == 0


@pytest.mark.parametrize(
    ("gpu1", "words"),
    [
        ({"reset_required": True}, "GPU requires reset"),
        ({"recovery_action": 1}, "GPU 1 (GPU-7b01fc6f, bus 0000:07:00.0): GPU reset"),
        ({"recovery_action": 2}, "node reboot"),
    ],
)
def test_a_gpu_that_needs_a_reset_fails(tmp_path: Path, gpu1: Any, words: str) -> None:
    run = _run(tmp_path, **gpu1)
    check = run.check("gpu-reset")
    assert check.status == FAIL
    assert words in check.message
    assert "drain the node" in check.remediation


def test_a_lost_gpu_fails_and_the_others_are_still_read(tmp_path: Path) -> None:
    run = _run(tmp_path, tp=1, lost=True)
    check = run.check("gpu-reset")
    assert check.status == FAIL
    assert "nvidia-smi GPU 1 ('GPU is lost')" in check.message
    assert run.check("nvml").status in (PASS, WARN)
    assert run.check("ecc").status == PASS  # GPU 0 was still read


def test_nvlink_down_against_peers_fails_under_tp(tmp_path: Path) -> None:
    links = [True] * 18
    links[3] = links[7] = False
    run = _run(tmp_path, nvlink_active=links)
    check = run.check("nvlink")
    assert check.status == FAIL
    assert "GPU 1 (GPU-7b01fc6f, bus 0000:07:00.0) has 16 links up where its peers have 18" in (
        check.message
    )
    assert "(down: 3, 7)" in check.message
    warned = _run(tmp_path, tp=1, count=2, nvlink_active=links)
    # At TP = 1 the plan uses GPU 0 only, whose links are all up.
    assert warned.check("nvlink").status == PASS


def test_links_down_everywhere_are_not_a_fault(tmp_path: Path) -> None:
    machine = h200_machine(2)
    for gpu in machine.gpus:
        gpu.nvlink_active = [False] * 18  # a PCIe-only host: nothing up, nothing expected
    run = run_check(fake_host(machine), ["--tp", "2"], tmp_path)
    assert run.check("nvlink").status == PASS


def test_pcie_width_below_maximum_warns(tmp_path: Path) -> None:
    run = _run(tmp_path, pcie=(5, 5, 8, 16))
    check = run.check("pcie-link")
    assert check.status == WARN
    assert "GPU 1 (GPU-7b01fc6f, bus 0000:07:00.0) at x8 of x16" in check.message


def test_pcie_speed_below_maximum_counts_only_when_busy(tmp_path: Path) -> None:
    idle = _run(tmp_path, pcie=(1, 5, 16, 16), clock_events=0x1)
    assert idle.check("pcie-link").status == PASS
    assert "idle and below the maximum speed" in idle.check("pcie-link").message
    busy = _run(tmp_path, pcie=(3, 5, 16, 16), clock_events=0x0)
    assert busy.check("pcie-link").status == WARN


def test_hardware_slowdown_held_fails(tmp_path: Path) -> None:
    run = _run(tmp_path, clock_events=0x80 | 0x1)
    check = run.check("clock-throttle")
    assert check.status == FAIL
    assert "HW power brake" in check.message
    assert "factor of 2 or more" in check.message


def test_fabric_not_registered_fails(tmp_path: Path) -> None:
    machine = h200_machine(2)
    for gpu in machine.gpus:
        gpu.fabric = (3, 0, 1)  # completed, success, healthy
    machine.gpus[1].fabric = (2, 0, None)  # in progress
    run = run_check(fake_host(machine), ["--tp", "2"], tmp_path)
    check = run.check("fabric")
    assert check.status == FAIL
    assert "registration in progress" in check.message
    assert "nvidia-fabricmanager" in check.remediation
    assert check.evidence["gpus"] == [machine.gpus[1].uuid]


def test_xid_during_the_check_fails_and_application_xids_warn(tmp_path: Path) -> None:
    run = _run(tmp_path, xids=[79])
    assert run.check("xid").status == FAIL
    assert "XID 79" in run.check("xid").message
    app = _run(tmp_path, xids=[13])
    assert app.check("xid").status == WARN
    assert "graphics engine exception" in app.check("xid").message


# as NVIDIA's driver writes it (docs.nvidia.com/deploy/xid-errors, "Xid Messages")
KERNEL_LOG = (
    "6,1234,5678,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04\n"
    "4,1300,9999,-;NVRM: Xid (PCI:0000:07:00): 79, pid=4242, name=python3, GPU has fallen "
    "off the bus.\n"
    "4,1301,9999,-;NVRM: Xid (PCI:0000:06:00): 13, pid=4243, Graphics Exception\n"
    "4,1302,9999,-;NVRM: Xid (PCI:0000:0a:00): 48, pid=1, a GPU this pod does not have\n"
)


def test_xid_history_in_a_readable_kernel_log_warns(tmp_path: Path) -> None:
    machine = h200_machine(2)
    run = run_check(fake_host(machine, kernel_log=KERNEL_LOG), ["--tp", "2"], tmp_path)
    found = run.check("xid")
    assert found.status == WARN  # history, not a failure: it may predate the pod
    assert "XID 79" in found.message
    assert "bus 0000:07:00.0" in found.message
    assert "XID 13" not in found.message  # an application's XID is not the GPU's history
    assert run.code == 0
    quiet = run_check(fake_host(machine, kernel_log=""), ["--tp", "2"], tmp_path)
    assert quiet.check("xid").status == PASS
    assert "no XID in the kernel log" in quiet.check("xid").message
    unreadable = run_check(fake_host(machine), ["--tp", "2"], tmp_path)
    assert unreadable.check("xid").status == PASS
    assert "not readable here" in unreadable.check("xid").message


def test_a_kernel_log_that_cannot_be_opened_is_none(tmp_path: Path) -> None:
    from preflight_check.environment import read_kernel_log

    assert read_kernel_log(str(tmp_path / "no-such-kmsg")) is None
    log = tmp_path / "kmsg"
    log.write_text(KERNEL_LOG)
    assert "Xid (PCI:0000:07:00): 79" in (read_kernel_log(str(log)) or "")


def test_refused_reads_are_not_available_never_a_failure(tmp_path: Path) -> None:
    machine = h200_machine(2)
    for gpu in machine.gpus:
        gpu.remapped_rows = gpu.retired_pages_pending = gpu.recovery_action = None
        gpu.nvlink_active = gpu.pcie = gpu.clock_events = gpu.fabric = None
        gpu.xid_events = False
    run = run_check(fake_host(machine), ["--tp", "2"], tmp_path)
    assert run.code == 0, run.stdout
    for check_id in HARDWARE:
        assert run.check(check_id).status == SKIP, run.check(check_id)
        assert run.check(check_id).message.startswith("not available"), run.check(check_id)


class _Refused(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


def _pynvml(**calls: Any) -> Any:
    module = types.SimpleNamespace(
        NVMLError=_Refused, NVMLError_NotSupported=type("NS", (_Refused,), {})
    )
    for name, behaviour in calls.items():
        setattr(module, name, behaviour)
    return module


def _raises(value: int) -> Any:
    def call(*_: Any) -> Any:
        raise _Refused(value)

    return call


@pytest.mark.parametrize("code", [2, 3, 4, 13, 25, 999])  # argument, unsupported, permission,
def test_the_binding_turns_refusals_into_none(code: int) -> None:  # missing, version, unknown
    module = _pynvml(nvmlDeviceGetRemappedRows=_raises(code))
    device = PynvmlDevice(_Binding(module), handle=object())
    assert device.remapped_rows() is None


@pytest.mark.parametrize("code", [15, 16])  # NVML_ERROR_GPU_IS_LOST, NVML_ERROR_RESET_REQUIRED
def test_the_binding_raises_a_gpu_that_needs_a_reset(code: int) -> None:
    module = _pynvml(nvmlDeviceGetRemappedRows=_raises(code))
    device = PynvmlDevice(_Binding(module), handle=object())
    with pytest.raises(NvmlGpuNeedsReset):
        device.remapped_rows()


def test_the_binding_reads_nvlink_until_the_first_refused_link() -> None:
    def state(_: Any, link: int) -> int:
        if link >= 4:
            raise _Refused(2)  # NVML_ERROR_INVALID_ARGUMENT: no such link
        return 0 if link == 2 else 1

    device = PynvmlDevice(_Binding(_pynvml(nvmlDeviceGetNvLinkState=state)), handle=object())
    assert device.nvlink_states() == [True, True, False, True]


def test_the_fake_hands_out_each_xid_event_once_like_nvml_event_set_wait() -> None:
    from preflight_dev.fakedriver.fake import FakeNvml

    machine = h200_machine(2)
    machine.gpus[1].xids = [79]
    nvml = FakeNvml(machine)
    nvml.init()
    assert nvml.xid_events() == []  # nothing watched yet
    assert nvml.watch_xids([0, 1]) == [0, 1]
    assert nvml.xid_events() == [(1, 79)]
    assert nvml.xid_events() == []  # drained, as nvmlEventSetWait drains its set
    machine.gpus[1].xids.append(48)
    assert nvml.xid_events() == [(1, 48)]
