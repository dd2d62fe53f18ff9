"""`vllm-preflight check` on real GPUs: the scenarios of issue 2.

Run on 1-, 2- and 4-GPU machines: `make gpu` (or `python -m pytest -m gpu tests/gpu`).
Every test is skipped without a driver. The GPU count is the machine's, so the same
tests cover every machine.
"""

from __future__ import annotations

import pytest
from tests.gpu.gpuhelp import GPU_COUNT, needs_gpus, needs_two, run_check

pytestmark = [pytest.mark.gpu, needs_gpus]
CVD = "CUDA_VISIBLE_DEVICES"


def test_tp_equal_to_the_gpus_passes() -> None:
    run = run_check(["--tp", str(GPU_COUNT)], unset=[CVD], label="tp=all")
    assert run.code == 0, run.stdout
    assert run.report["verdict"] in ("pass", "warn")
    for check_id in (
        "driver",
        "gpu-count",
        "context-threads",
        "context-ranks",
        "thread-discipline",
        "cuda-library",
    ):
        assert run.check(check_id)["status"] == "pass", run.check(check_id)
    assert len(run.report["gpus"]) == GPU_COUNT
    ranks = run.check("context-ranks")["evidence"]["ranks"]
    assert [r["rank"] for r in ranks] == list(range(GPU_COUNT))


def test_tp_larger_fails_naming_the_count() -> None:
    run = run_check(["--tp", str(GPU_COUNT * 2)], unset=[CVD], label="tp=2x")
    assert run.code == 1
    check = run.check("gpu-count")
    assert check["status"] == "fail"
    # "1 GPU", "2 GPUs": the checker counts in English (issue 16 saw this fail on 1 GPU).
    seen = f"{GPU_COUNT} GPU" + ("" if GPU_COUNT == 1 else "s")
    assert f"CUDA sees {seen}, the plan needs {GPU_COUNT * 2}" in check["message"]


@needs_two
def test_reversed_order_passes_and_shows_the_mapping() -> None:
    value = ",".join(str(i) for i in reversed(range(GPU_COUNT)))
    run = run_check(["--tp", str(GPU_COUNT)], env={CVD: value}, label="reversed")
    assert run.code == 0, run.stdout
    assert run.check("cuda-visible-devices")["status"] == "pass"
    assert "CUDA ordinal 0 = " in run.check("cuda-visible-devices")["message"]
    assert [g["nvml_index"] for g in run.report["gpus"]] == list(reversed(range(GPU_COUNT)))


def test_duplicate_fails_and_is_explained() -> None:
    run = run_check(["--tp", "2"], env={CVD: "0,0"}, label="duplicate")
    assert run.code == 1
    check = run.check("cuda-visible-devices")
    assert check["status"] == "fail"
    assert "both name GPU 0" in check["message"]
    assert "CUDA_ERROR_INVALID_DEVICE (101)" in check["message"]


@needs_two
def test_invalid_middle_entry_fails_and_explains_the_truncation() -> None:
    run = run_check(["--tp", "2"], env={CVD: "0,abc,1"}, label="invalid-middle")
    assert run.code == 1
    check = run.check("cuda-visible-devices")
    assert check["status"] == "fail"
    assert "entry 2 'abc' names no GPU" in check["message"]
    assert "every entry after it" in check["message"]
    assert "GPU 1 (" in check["message"]
    assert run.check("gpu-count")["status"] == "fail"


def test_empty_fails() -> None:
    run = run_check(["--tp", "1"], env={CVD: ""}, label="empty")
    assert run.code == 1
    assert "set but empty" in run.check("cuda-visible-devices")["message"]


def test_uuid_prefix_passes_cuda_and_flags_vllm() -> None:
    full = run_check(["--tp", "1"], unset=[CVD])
    uuid = full.report["gpus"][0]["uuid"]
    run = run_check(["--tp", "1"], env={CVD: uuid[:12]}, label="uuid-prefix")
    assert run.check("cuda-visible-devices")["status"] == "pass"
    assert run.report["gpus"][0]["uuid"] == uuid
    vllm = run.check("vllm-device-ids")
    assert vllm["status"] == "fail"
    assert "invalid literal for int()" in vllm["message"]


@needs_two
def test_rank_beyond_the_visible_gpus_gets_invalid_device() -> None:
    # What a vLLM worker meets when TP exceeds the GPUs CUDA shows: cuDeviceGet(rank) fails.
    run = run_check(["--tp", "2"], env={CVD: "0"}, label="rank-beyond")
    assert run.check("gpu-count")["status"] == "fail"
    ranks = run.check("context-ranks")["evidence"]["ranks"]
    assert ranks[1]["result"].startswith("CUDA_ERROR_INVALID_DEVICE")


def test_deep_tier_over_all_gpus_passes() -> None:
    torch = pytest.importorskip("torch")
    assert torch.cuda.device_count() >= 1
    run = run_check(["--tp", str(GPU_COUNT), "--deep"], unset=[CVD], label="deep")
    assert run.code == 0, run.stdout
    for check_id in ("deep-workers", "deep-allreduce"):
        assert run.check(check_id)["status"] == "pass", run.check(check_id)
    if GPU_COUNT > 1:
        assert run.check("deep-peer-copy")["status"] == "pass"


def test_small_shm_threshold_fails_tp_greater_than_one() -> None:
    run = run_check(["--tp", "2", "--shm-min", "100Ti"], unset=[CVD], label="shm-threshold")
    assert run.check("shm")["status"] == "fail"
    assert (
        "below 100.0 TiB" in run.check("shm")["message"] or "below" in run.check("shm")["message"]
    )


HARDWARE = ("row-remap", "gpu-reset", "nvlink", "pcie-link", "clock-throttle", "fabric", "xid")


def test_hardware_checks_pass_or_are_not_available() -> None:
    # Issue 16: a healthy GPU passes each NVML-only hardware check, and a read the driver
    # refuses is "not available" (skip), never a failure or an error.
    run = run_check(["--tp", str(GPU_COUNT)], unset=[CVD], label="hardware")
    for check_id in HARDWARE:
        check = run.check(check_id)
        assert check["status"] in ("pass", "skip"), check
        if check["status"] == "skip":
            assert check["message"].startswith("not available"), check
