"""The fake driver and fake NVML against docs/GPU_FACTS.md, row by row.

Each table row is copied from docs/GPU_FACTS.md (2 GPUs: 0 = bus 06.0, 1 = bus
07.0), then come the rows measured later with hack/gpu/cvd_table.py (docs/GPU_RUNS.md).
The same rows also hold the CUDA_VISIBLE_DEVICES explainer (preflight_check.cvd) to the
facts, so fake and explainer are two independent readings of one table.
"""

from __future__ import annotations

import threading
from typing import List, Optional, Tuple

import pytest

from preflight_check.cvd import BaseGpu, explain
from preflight_check.driver.api import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_NO_DEVICE,
    CUDA_SUCCESS,
)
from preflight_dev.fakedriver.fake import FakeCudaDriver, FakeNvml, h200_machine

MACHINE = h200_machine(2)
GPU0, GPU1 = (g.uuid for g in MACHINE.gpus)
BUS = {0: "06", 1: "07"}


def _bus_of(driver: FakeCudaDriver, ordinal: int) -> str:
    code, bus = driver.device_pci_bus_id(driver.device_get(ordinal)[1])
    assert code == CUDA_SUCCESS
    return bus.split(":")[1]


# (CUDA_VISIBLE_DEVICES, cuInit result, buses CUDA sees in order) - docs/GPU_FACTS.md table.
ROWS: List[Tuple[Optional[str], int, List[str]]] = [
    (None, CUDA_SUCCESS, ["06", "07"]),
    ("", CUDA_ERROR_NO_DEVICE, []),
    ("-1", CUDA_ERROR_NO_DEVICE, []),
    ("0", CUDA_SUCCESS, ["06"]),
    ("1,0", CUDA_SUCCESS, ["07", "06"]),
    ("0,0", CUDA_ERROR_INVALID_DEVICE, []),
    ("0,1,0", CUDA_ERROR_INVALID_DEVICE, []),
    ("5", CUDA_ERROR_NO_DEVICE, []),
    ("0,5,1", CUDA_SUCCESS, ["06"]),
    ("abc", CUDA_ERROR_NO_DEVICE, []),
    ("0,abc,1", CUDA_SUCCESS, ["06"]),
    (" 0, 1", CUDA_SUCCESS, ["06", "07"]),
    ("0 ,1", CUDA_SUCCESS, ["06", "07"]),
    (GPU1, CUDA_SUCCESS, ["07"]),
    ("GPU-" + GPU1[4:].replace("-", ""), CUDA_SUCCESS, ["07"]),
    (GPU0[:12], CUDA_SUCCESS, ["06"]),
    (f"{GPU1},{GPU0}", CUDA_SUCCESS, ["07", "06"]),
    ("GPU-", CUDA_ERROR_NO_DEVICE, []),
    ("GPU-00000000-1111-2222-3333-444444444444", CUDA_ERROR_NO_DEVICE, []),
    # Measured 2026-11-29 on nvidia-h200-x2 (docs/GPU_RUNS.md), rows docs/GPU_FACTS.md leaves open.
    ("0,5,0", CUDA_SUCCESS, ["06"]),
    ("0,-1", CUDA_SUCCESS, ["06"]),
    ("1,abc", CUDA_SUCCESS, ["07"]),
    ("0,,1", CUDA_SUCCESS, ["06"]),
    ("01", CUDA_SUCCESS, ["07"]),
    ("+1", CUDA_SUCCESS, ["07"]),
    (f"0,{GPU0}", CUDA_SUCCESS, ["06"]),
    (GPU0[4:12], CUDA_ERROR_NO_DEVICE, []),
    ("gpu-" + GPU0[4:12], CUDA_ERROR_NO_DEVICE, []),
    ("GPU-" + GPU0[4:12].upper(), CUDA_SUCCESS, ["06"]),
    ("GPU-" + GPU0[4:8] + "-" + GPU0[8:12], CUDA_SUCCESS, ["06"]),
    # Measured 2026-11-29 on nvidia-h200-x4.
    (f"0,{GPU0},1", CUDA_SUCCESS, ["06"]),
    (f"{GPU0},0,1", CUDA_SUCCESS, ["06"]),
    (f"{GPU1},{GPU1}", CUDA_ERROR_INVALID_DEVICE, []),
    (f"{GPU0[:12]},{GPU0}", CUDA_ERROR_INVALID_DEVICE, []),
    (f"0,1,{GPU0[:12]}", CUDA_SUCCESS, ["06", "07"]),
    ("+0,1", CUDA_SUCCESS, ["06", "07"]),
    ("-0", CUDA_SUCCESS, ["06"]),
    ("1abc", CUDA_SUCCESS, ["07"]),
    ("0x1", CUDA_SUCCESS, ["06"]),
    ("1.0", CUDA_SUCCESS, ["07"]),
]


@pytest.mark.parametrize(("value", "code", "buses"), ROWS)
def test_fake_driver_reads_cuda_visible_devices_as_measured(
    value: Optional[str], code: int, buses: List[str]
) -> None:
    environ = {} if value is None else {"CUDA_VISIBLE_DEVICES": value}
    driver = FakeCudaDriver(MACHINE, environ)
    assert driver.init() == code
    if code != CUDA_SUCCESS:
        return
    count_code, count = driver.device_count()
    assert count_code == CUDA_SUCCESS
    assert [_bus_of(driver, i) for i in range(count)] == buses


@pytest.mark.parametrize(("value", "code", "buses"), ROWS)
def test_explainer_predicts_the_same_rows(
    value: Optional[str], code: int, buses: List[str]
) -> None:
    base = [BaseGpu(g.uuid, g.pci_bus_id) for g in MACHINE.gpus]
    explanation = explain(value, base)
    assert explanation.predicted_code == code
    assert [base[i].pci_bus_id.split(":")[1] for i in explanation.predicted_visible] == buses


def test_a_new_thread_has_no_context_and_binding_is_per_thread() -> None:
    driver = FakeCudaDriver(MACHINE, {})
    assert driver.init() == CUDA_SUCCESS
    code, context = driver.primary_ctx_retain(driver.device_get(1)[1])
    assert code == CUDA_SUCCESS
    assert driver.ctx_set_current(context) == CUDA_SUCCESS
    assert driver.ctx_get_device() == (CUDA_SUCCESS, 1)
    seen = []
    thread = threading.Thread(target=lambda: seen.append(driver.ctx_get_device()))
    thread.start()
    thread.join()
    assert seen[0][0] == CUDA_ERROR_INVALID_CONTEXT


def test_nvml_ignores_cuda_visible_devices_and_numbers_in_pci_order() -> None:
    machine = h200_machine(2, fastest_first=[1, 0])
    nvml = FakeNvml(machine)
    nvml.init()
    assert [nvml.device(i).pci_bus_id() for i in range(nvml.device_count())] == [
        "00000000:06:00.0",
        "00000000:07:00.0",
    ]
    driver = FakeCudaDriver(machine, {"CUDA_VISIBLE_DEVICES": "0"})
    driver.init()
    # CUDA's own order (fastest first) applies to CUDA_VISIBLE_DEVICES indices...
    assert _bus_of(driver, 0) == "07"
    # ...unless CUDA_DEVICE_ORDER=PCI_BUS_ID.
    pci = FakeCudaDriver(machine, {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    pci.init()
    assert _bus_of(pci, 0) == "06"


def test_uuid_forms_differ_between_driver_and_nvml() -> None:
    driver = FakeCudaDriver(MACHINE, {})
    driver.init()
    code, raw = driver.device_uuid(0)
    assert code == CUDA_SUCCESS
    assert len(raw) == 16
    nvml = FakeNvml(MACHINE)
    nvml.init()
    assert nvml.device(0).uuid() == GPU0
