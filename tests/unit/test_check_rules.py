"""Checks as pure functions of hand-made facts: each rule's thresholds and messages."""

from __future__ import annotations

from typing import Any, List, Optional

import pytest

from preflight_check.checks import REGISTRY
from preflight_check.checks.contexts import judge_probe
from preflight_check.driver.api import LoadedLibrary
from preflight_check.facts import (
    CallRecord,
    ChildOutcome,
    CudaGpu,
    CudaView,
    Facts,
    NvmlGpu,
    NvmlView,
    RuntimeRequirement,
    ShmFacts,
)
from preflight_check.options import Options
from preflight_check.plan import Plan
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, PASS, SKIP, WARN

GIB = 1 << 30
UUIDS = [f"GPU-{i:08x}-0000-4000-8000-00000000000{i}" for i in range(4)]


def facts(count: int = 2, tp: int = 2, **nvml_overrides: Any) -> Facts:
    cuda = CudaView(
        loaded=True,
        library=LoadedLibrary("libcuda.so.1", "/usr/lib/libcuda.so.1"),
        init_code=0,
        init_name="CUDA_SUCCESS",
        driver_version=13000,
        gpus=[CudaGpu(i, UUIDS[i], f"0000:{6 + i:02x}:00.0", "NVIDIA H200") for i in range(count)],
    )
    nvml = NvmlView(
        available=True,
        driver_version="580.159.04",
        cuda_driver_version=13000,
        gpus=[
            NvmlGpu(
                i,
                UUIDS[i],
                f"00000000:{6 + i:02x}:00.0",
                "NVIDIA H200",
                141 * GIB,
                GIB // 2,
                0,
                False,
                0,
            )
            for i in range(count)
        ],
    )
    for key, value in nvml_overrides.items():
        for gpu in nvml.gpus:
            setattr(gpu, key, value)
    return Facts(plan=Plan(tp=tp), cuda=cuda, nvml=nvml)


def run(check_id: str, the_facts: Facts, options: Optional[Options] = None) -> CheckResult:
    [result] = REGISTRY[check_id](the_facts, options or Options())
    return result


class TestGpuCount:
    def test_fewer_than_needed_fails_with_vllm_s_own_words(self) -> None:
        found = run("gpu-count", facts(count=2, tp=4))
        assert found.status == FAIL
        assert "World size (4) is larger than the number of available GPUs (2)" in found.message
        assert "nvidia.com/gpu: 4" in found.remediation

    def test_more_than_needed_warns_naming_the_idle_gpus(self) -> None:
        found = run("gpu-count", facts(count=4, tp=2))
        assert found.status == WARN
        assert "GPU 2" in found.message
        assert "GPU 3" in found.message


class TestMemory:
    def test_memory_in_use_beyond_utilization_fails_with_the_fix(self) -> None:
        found = run("gpu-memory", facts(memory_used=40 * GIB))
        assert found.status == FAIL
        assert "on startup is less than desired GPU memory utilization" in found.message
        assert "lower --gpu-memory-utilization to 0.71" in found.remediation

    def test_lower_utilization_passes(self) -> None:
        options = Options(gpu_memory_utilization=0.5)
        assert run("gpu-memory", facts(memory_used=40 * GIB), options).status == PASS

    def test_within_a_gib_of_the_limit_warns(self) -> None:
        used = int(141 * GIB * 0.1 - 0.5 * GIB)
        assert run("gpu-memory", facts(memory_used=used)).status == WARN


class TestHealth:
    def test_mig_with_tensor_parallelism_fails(self) -> None:
        assert run("mig", facts(mig_enabled=True)).status == FAIL
        assert run("mig", facts(tp=1, mig_enabled=True)).status == PASS

    def test_ecc_errors_fail(self) -> None:
        found = run("ecc", facts(ecc_uncorrectable=3))
        assert found.status == FAIL
        assert ": 3" in found.message

    @pytest.mark.parametrize(("mode", "status"), [(0, PASS), (3, WARN), (2, FAIL)])
    def test_compute_modes(self, mode: int, status: str) -> None:
        assert run("compute-mode", facts(compute_mode=mode)).status == status

    def test_foreign_processes_warn(self) -> None:
        found = run("gpu-processes", facts(processes=[(4242, 10 * GIB)]))
        assert found.status == WARN
        assert "pid 4242" in found.message

    def test_health_checks_skip_without_nvml(self) -> None:
        the_facts = facts()
        the_facts.nvml = NvmlView(error="NVML: not found")
        assert run("ecc", the_facts).status == SKIP


class TestShm:
    def test_small_shm_fails_with_the_emptydir_fix(self) -> None:
        the_facts = facts()
        the_facts.shm = ShmFacts("/dev/shm", True, 64 << 20, 64 << 20)
        found = run("shm", the_facts)
        assert found.status == FAIL
        assert "64 MiB" in found.message
        assert "medium: Memory" in found.remediation

    def test_threshold_is_configurable(self) -> None:
        the_facts = facts()
        the_facts.shm = ShmFacts("/dev/shm", True, 512 << 20, 512 << 20)
        assert run("shm", the_facts, Options(shm_min=256 << 20)).status == PASS

    def test_single_gpu_plans_do_not_need_shm(self) -> None:
        the_facts = facts(tp=1)
        the_facts.shm = ShmFacts("/dev/shm", True, 64 << 20, 64 << 20)
        assert run("shm", the_facts).status == PASS


class TestCompat:
    def _with(self, needed: tuple[int, int], driver: int) -> Facts:
        the_facts = facts()
        the_facts.cuda.driver_version = driver
        the_facts.runtime = RuntimeRequirement(needed, "torch", "torch 2.9.0+cu130")
        return the_facts

    def test_newer_major_fails_in_the_issue_s_words(self) -> None:
        found = run("cuda-compat", self._with((13, 0), 12040))
        assert found.status == FAIL
        assert "supports CUDA <= 12.4; this image needs 13.0" in found.message
        assert "580.65.06" in found.remediation

    def test_newer_minor_warns(self) -> None:
        assert run("cuda-compat", self._with((12, 8), 12040)).status == WARN

    def test_older_runtime_passes(self) -> None:
        assert run("cuda-compat", self._with((12, 4), 13000)).status == PASS

    def test_cpu_only_torch_fails(self) -> None:
        the_facts = facts()
        the_facts.runtime = RuntimeRequirement(
            None, "torch", "torch 2.9.0+cpu is a CPU-only build", torch_cpu_only=True
        )
        assert run("cuda-compat", the_facts).status == FAIL


class TestP2p:
    def test_missing_peer_access_warns(self) -> None:
        the_facts = facts()
        the_facts.cuda.peer_access = {(0, 1): False, (1, 0): False}
        found = run("p2p", the_facts)
        assert found.status == WARN
        assert "0->1" in found.message


def probe(rank: int, records: List[CallRecord], signal: Optional[int] = None) -> ChildOutcome:
    outcome = ChildOutcome(rank=rank, signal=signal)
    outcome.calls = records
    return outcome


def rec(call: str, thread: str, code: int, value: Any = None, finished: bool = True) -> CallRecord:
    return CallRecord(call, thread, code=code, value=value, ms=0.1, finished=finished)


class TestThreadProbeJudgement:
    def test_nvidia_driver_answers_are_sane(self) -> None:
        records = [
            rec("cuCtxGetCurrent", "fresh-unbound", 0, 0),
            rec("cuCtxGetDevice", "fresh-unbound", 201, -1),
            rec("cuDeviceGetCount", "fresh-unbound", 0, 2),
            rec("cuMemGetInfo", "fresh-unbound", 201, [0, 0]),
            rec("cuCtxSetCurrent", "fresh-bound", 0),
            rec("cuCtxGetDevice", "fresh-bound", 0, 1),
            rec("cuMemGetInfo", "fresh-bound", 0, [100, 200]),
        ]
        assert judge_probe(probe(1, records), 2, 10.0) == []

    def test_garbage_device_id(self) -> None:
        records = [rec("cuCtxGetDevice", "fresh-unbound", 0, 850725928)]
        [problem] = judge_probe(probe(0, records), 2, 10.0)
        assert "850725928" in problem

    def test_crash_names_the_call_and_signal(self) -> None:
        records = [rec("cuCtxGetDevice", "fresh-unbound", 0, finished=False)]
        [problem] = judge_probe(probe(0, records, signal=6), 2, 10.0)
        assert "cuCtxGetDevice" in problem
        assert "SIGABRT" in problem

    def test_other_error_instead_of_invalid_context(self) -> None:
        records = [
            CallRecord(
                "cuCtxGetDevice", "fresh-unbound", code=999, name="CUDA_ERROR_UNKNOWN", value=-1
            )
        ]
        [problem] = judge_probe(probe(0, records), 2, 10.0)
        assert "CUDA_ERROR_UNKNOWN instead of CUDA_ERROR_INVALID_CONTEXT" in problem

    def test_bound_thread_must_see_its_rank(self) -> None:
        records = [rec("cuCtxGetDevice", "fresh-bound", 0, 0)]
        assert judge_probe(probe(1, records), 2, 10.0)
