"""Issue 16, also-fix 1: GPU UUIDs that contain a zero byte.

About one GPU in sixteen has a 00 byte somewhere in its 16-byte UUID. The real H200 of
the issue, GPU-b1a04e3a-0045-8654-0766-3ed4389a1318, came out as GPU-b1a04e3a---- because
ctypes read a ``c_char * 16`` field as a C string; the CUDA<->NVML join then failed. The
first test drives the real ctypes binding (driver/libcuda.py) through a ctypes callback
that writes the 16 bytes as cuDeviceGetUuid does, so it fails on the old field type; the
others hold every join (inventory, device order, UUID entries in CUDA_VISIBLE_DEVICES and
NVIDIA_VISIBLE_DEVICES) to the fake machine's zero-byte UUIDs.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import pytest

from preflight_check.cudaview import read_view
from preflight_check.driver import libcuda
from preflight_check.driver.api import CUDA_SUCCESS, format_uuid, uuid_key
from preflight_contract.verdicts import PASS
from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check

pytestmark = pytest.mark.timeout(60)

ISSUE_UUID = "GPU-b1a04e3a-0045-8654-0766-3ed4389a1318"


def _libcuda_answering(raw: bytes) -> Any:
    """A LibCuda whose cuDeviceGetUuid is a C callback writing ``raw`` (nothing else used)."""
    prototype = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(libcuda._CUuuid), ctypes.c_int)

    def get_uuid(out: Any, device: int) -> int:
        ctypes.memmove(out, raw, 16)
        return CUDA_SUCCESS

    binding = object.__new__(libcuda.LibCuda)
    callback = prototype(get_uuid)
    binding._uuid = callback
    binding._keep = callback  # type: ignore[attr-defined]  # the callback must outlive calls
    return binding


@pytest.mark.parametrize(
    "uuid",
    [
        ISSUE_UUID,
        "GPU-009e7d6c-aaaa-4bbb-8ccc-ddddeeeeff00",  # first and last byte 00
        "GPU-00000000-0000-0000-0000-000000000000",
        "GPU-ea300b2e-0352-789c-6847-ce5195328e81",  # no zero byte
    ],
)
def test_the_ctypes_binding_reads_all_16_bytes(uuid: str) -> None:
    raw = bytes.fromhex(uuid_key(uuid))
    code, got = _libcuda_answering(raw).device_uuid(0)
    assert code == CUDA_SUCCESS
    assert got == raw
    assert format_uuid(got) == uuid


def test_a_short_uuid_is_an_error_not_another_gpu() -> None:
    class Short:
        def device_count(self) -> tuple[int, int]:
            return CUDA_SUCCESS, 1

        def device_get(self, ordinal: int) -> tuple[int, int]:
            return CUDA_SUCCESS, ordinal

        def device_uuid(self, device: int) -> tuple[int, bytes]:
            return CUDA_SUCCESS, bytes.fromhex("b1a04e3a")

        def device_pci_bus_id(self, device: int) -> tuple[int, str]:
            return CUDA_SUCCESS, "0000:06:00.0"

        def device_name(self, device: int) -> tuple[int, str]:
            return CUDA_SUCCESS, "NVIDIA H200"

        def device_total_mem(self, device: int) -> tuple[int, int]:
            return CUDA_SUCCESS, 1

    view = read_view(Short(), [[0]])  # type: ignore[arg-type]
    assert view["gpus"][0]["uuid"] == ""
    assert view["errors"] == ["cuDeviceGetUuid(0): 4 bytes instead of 16"]


def test_the_fake_machine_has_zero_byte_uuids() -> None:
    machine = h200_machine(4)
    assert [b"\x00" in bytes.fromhex(uuid_key(g.uuid)) for g in machine.gpus] == [
        False,
        True,
        True,
        True,
    ]
    assert machine.gpus[2].uuid == ISSUE_UUID


def test_inventory_joins_every_gpu_to_nvidia_smi(tmp_path: Path) -> None:
    machine = h200_machine(4)
    run = run_check(fake_host(machine), ["--tp", "4"], tmp_path)
    assert run.code == 0, run.stdout
    assert [g.uuid for g in run.report.gpus] == [g.uuid for g in machine.gpus]
    assert [g.nvml_index for g in run.report.gpus] == [0, 1, 2, 3]
    assert run.check("device-order").status == PASS


def test_device_order_maps_a_zero_byte_gpu_by_uuid(tmp_path: Path) -> None:
    # CUDA numbers "fastest first": GPU 2 (the issue's UUID) becomes CUDA ordinal 0.
    machine = h200_machine(4, fastest_first=[2, 3, 0, 1])
    run = run_check(fake_host(machine), ["--tp", "4"], tmp_path)
    assert [g.nvml_index for g in run.report.gpus] == [2, 3, 0, 1]
    assert "CUDA 0 = nvidia-smi 2" in run.check("device-order").message


@pytest.mark.parametrize(
    ("value", "as_indices"),
    [
        (f"{ISSUE_UUID},GPU-009e7d6c", "CUDA_VISIBLE_DEVICES=2,3"),  # full UUID, then a prefix
        ("GPU-b1a04e3a-00", "CUDA_VISIBLE_DEVICES=2"),  # a prefix that ends in the 00 byte
    ],
)
def test_uuid_entries_in_cuda_visible_devices(tmp_path: Path, value: str, as_indices: str) -> None:
    host = fake_host(h200_machine(4), {"CUDA_VISIBLE_DEVICES": value})
    run = run_check(host, ["--tp", "1"], tmp_path)
    assert run.check("cuda-visible-devices").status == PASS, run.check("cuda-visible-devices")
    assert run.report.gpus[0].uuid == ISSUE_UUID
    assert run.report.gpus[0].nvml_index == 2
    # vLLM's int() still refuses them; the fix names the same GPUs as indices.
    assert as_indices in run.check("vllm-device-ids").remediation


def test_uuid_entries_in_nvidia_visible_devices(tmp_path: Path) -> None:
    machine = h200_machine(4)
    given = ",".join(g.uuid for g in machine.gpus[1:3])
    host = fake_host(machine, {"NVIDIA_VISIBLE_DEVICES": given, "CUDA_VISIBLE_DEVICES": "1,2"})
    run = run_check(host, ["--tp", "2"], tmp_path)
    check = run.check("nvidia-visible-devices")
    assert check.status == PASS, check
    assert "not seen" not in check.message
