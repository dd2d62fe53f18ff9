"""`vllm-preflight check` end to end over the fake driver: options, collectors, child
processes (real subprocesses running the real probe code over the fake), checks, report
files and exit codes. The scenarios are the real-GPU ones of issue 2, on the fake."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from preflight_contract.verdicts import ERROR, FAIL, PASS, SKIP, WARN
from preflight_dev.fakedriver.fake import FakeGpu, h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check

pytestmark = pytest.mark.timeout(60)


class TestIssueScenarios:
    def test_tp_equal_to_gpus_passes(self, tmp_path: Path) -> None:
        run = run_check(fake_host(h200_machine(4)), ["--tp", "4"], tmp_path)
        assert run.code == 0, run.stdout
        assert run.report.verdict == PASS
        assert len(run.report.gpus) == 4
        assert run.check("context-ranks").status == PASS
        ranks = run.check("context-ranks").evidence["ranks"]
        assert [r["rank"] for r in ranks] == [0, 1, 2, 3]

    def test_tp_larger_fails_naming_the_counts(self, tmp_path: Path) -> None:
        run = run_check(fake_host(h200_machine(2)), ["--tp", "4"], tmp_path)
        assert run.code == 1
        assert "CUDA sees 2 GPUs, the plan needs 4" in run.check("gpu-count").message
        # Ranks without a GPU are gpu-count's finding, not a context failure.
        assert run.check("context-ranks").status == PASS
        assert run.check("context-ranks").evidence["beyond_visible"] == [2, 3]

    def test_reversed_order_passes_and_shows_the_mapping(self, tmp_path: Path) -> None:
        host = fake_host(h200_machine(2), {"CUDA_VISIBLE_DEVICES": "1,0"})
        run = run_check(host, ["--tp", "2"], tmp_path)
        assert run.code == 0
        message = run.check("cuda-visible-devices").message
        assert "CUDA ordinal 0 = GPU-7b01fc6f (bus 0000:07:00.0, nvidia-smi GPU 1)" in message
        assert [g.nvml_index for g in run.report.gpus] == [1, 0]

    def test_duplicate_fails_and_is_explained(self, tmp_path: Path) -> None:
        host = fake_host(h200_machine(2), {"CUDA_VISIBLE_DEVICES": "0,0"})
        run = run_check(host, ["--tp", "2"], tmp_path)
        assert run.code == 1
        check = run.check("cuda-visible-devices")
        assert check.status == FAIL
        assert "entries 1 ('0') and 2 ('0') both name GPU 0" in check.message
        assert "CUDA_ERROR_INVALID_DEVICE (101)" in check.message

    def test_invalid_middle_entry_fails_and_explains_the_truncation(self, tmp_path: Path) -> None:
        host = fake_host(h200_machine(2), {"CUDA_VISIBLE_DEVICES": "0,abc,1"})
        run = run_check(host, ["--tp", "2"], tmp_path)
        assert run.code == 1
        message = run.check("cuda-visible-devices").message
        assert "entry 2 'abc' names no GPU" in message
        assert "every entry after it" in message
        assert "GPU 1 (GPU-7b01fc6f, bus 0000:07:00.0) is lost" in message

    def test_empty_fails(self, tmp_path: Path) -> None:
        host = fake_host(h200_machine(2), {"CUDA_VISIBLE_DEVICES": ""})
        run = run_check(host, ["--tp", "2"], tmp_path)
        assert run.code == 1
        assert "set but empty" in run.check("cuda-visible-devices").message
        assert run.check("gpu-count").status == SKIP
        # One cause, one failure: vLLM's parsing is moot when CUDA sees nothing.
        assert run.check("vllm-device-ids").status == SKIP

    def test_uuid_prefix_passes_cuda_and_flags_vllm(self, tmp_path: Path) -> None:
        host = fake_host(h200_machine(2), {"CUDA_VISIBLE_DEVICES": "GPU-7b01"})
        run = run_check(host, ["--tp", "1"], tmp_path)
        assert run.check("cuda-visible-devices").status == PASS
        vllm = run.check("vllm-device-ids")
        assert vllm.status == FAIL
        assert "invalid literal for int() with base 10: 'GPU-7b01'" in vllm.message
        assert "CUDA_VISIBLE_DEVICES=1" in vllm.remediation

    def test_invalid_middle_entry_with_enough_gpus_left_only_warns(self, tmp_path: Path) -> None:
        host = fake_host(h200_machine(2), {"CUDA_VISIBLE_DEVICES": "0,5,1"})
        run = run_check(host, ["--tp", "1"], tmp_path)
        assert run.check("cuda-visible-devices").status == WARN


class TestExitCodesAndOutputs:
    def test_no_driver_is_a_clear_verdict_with_exit_by_action(self, tmp_path: Path) -> None:
        host = fake_host(h200_machine(2), no_driver=True)
        enforced = run_check(host, ["--tp", "2"], tmp_path)
        assert enforced.code == 1
        assert enforced.check("driver").message.startswith(
            "no NVIDIA driver: libcuda.so.1 not found"
        )
        assert "Traceback" not in enforced.stdout + enforced.stderr
        assert run_check(host, ["--tp", "2", "--action", "Warn"], tmp_path).code == 0
        assert run_check(host, ["--tp", "2", "--action", "Audit"], tmp_path).code == 0

    @pytest.mark.parametrize("bad", [["--tp", "four"], ["--tp", "-1"], ["--tp", "100000"]])
    def test_malformed_input_exits_2_with_a_report_naming_it(
        self, tmp_path: Path, bad: list[str]
    ) -> None:
        run = run_check(fake_host(h200_machine(2)), bad, tmp_path)
        assert run.code == 2
        assert run.report.verdict == ERROR
        assert repr(bad[1]) in run.report.checks[0].message
        assert run.compact is not None
        assert run.compact["verdict"] == ERROR
        assert "usage error" in run.stderr

    def test_unwritable_termination_log_warns_and_keeps_the_exit_code(self, tmp_path: Path) -> None:
        import io

        from preflight_check.cli import main

        out, err = io.StringIO(), io.StringIO()
        code = main(
            ["--tp", "2", "--termination-log", str(tmp_path / "missing" / "log")],
            host=fake_host(h200_machine(2)),
            out=out,
            err=err,
        )
        assert code == 0
        assert "cannot write the termination message" in err.getvalue()

    def test_termination_message_is_compact_and_keeps_failures(self, tmp_path: Path) -> None:
        host = fake_host(h200_machine(8), {"CUDA_VISIBLE_DEVICES": "0,1,2,x,4,5,6,7"})
        run = run_check(host, ["--tp", "8"], tmp_path)
        text = (tmp_path / "termination-log").read_text()
        assert len(text.encode()) <= 2048
        assert run.compact is not None
        failing = {c["id"] for c in run.compact["checks"] if c["status"] == FAIL}
        assert {"cuda-visible-devices", "gpu-count"} <= failing

    def test_json_to_stdout(self, tmp_path: Path) -> None:
        import io

        from preflight_check.cli import main

        out = io.StringIO()
        main(["--json", "-", "--tp", "1"], host=fake_host(h200_machine(1)), out=out)
        assert json.loads(out.getvalue())["schema"] == 1

    def test_skipped_checks_are_reported_as_skipped(self, tmp_path: Path) -> None:
        run = run_check(
            fake_host(h200_machine(2)), ["--tp", "2", "--skip", "context-ranks"], tmp_path
        )
        assert run.check("context-ranks").status == SKIP
        assert run.check("context-ranks").message.startswith("turned off")


class TestHealthOnTheFake:
    def test_busy_gpu_fails_memory_and_warns_processes(self, tmp_path: Path) -> None:
        machine = h200_machine(2)
        machine.gpus[1].memory_used = 60 << 30
        machine.gpus[1].processes = [(31337, 60 << 30)]
        run = run_check(fake_host(machine), ["--tp", "2"], tmp_path)
        assert run.check("gpu-memory").status == FAIL
        assert run.check("gpu-processes").status == WARN

    def test_broken_gpu_fails_the_context_checks_naming_it(self, tmp_path: Path) -> None:
        machine = h200_machine(2)
        machine.gpus[1] = FakeGpu(
            uuid=machine.gpus[1].uuid,
            pci_bus_id=machine.gpus[1].pci_bus_id,
            fail_call=("cuDevicePrimaryCtxRetain", 46),
        )
        run = run_check(fake_host(machine), ["--tp", "2"], tmp_path)
        threads = run.check("context-threads")
        ranks = run.check("context-ranks")
        assert threads.status == FAIL
        assert "GPU 1" in threads.message
        assert "CUDA_ERROR_DEVICE_UNAVAILABLE" in threads.message
        assert ranks.status == FAIL
        assert (
            "rank 1: cuDevicePrimaryCtxRetain failed with CUDA_ERROR_DEVICE_UNAVAILABLE"
            in ranks.message
        )


class TestDeepTierOnTheFake:
    def test_all_steps_pass(self, tmp_path: Path) -> None:
        run = run_check(fake_host(h200_machine(2), deep_plan={}), ["--tp", "2", "--deep"], tmp_path)
        assert run.code == 0, run.stdout
        for check_id in ("deep-workers", "deep-allreduce", "deep-peer-copy"):
            assert run.check(check_id).status == PASS

    def test_a_hang_becomes_a_failure_naming_the_rank_and_step(self, tmp_path: Path) -> None:
        host = fake_host(h200_machine(2), deep_plan={"hang": [1, "all_reduce(tp group)"]})
        run = run_check(host, ["--tp", "2", "--deep", "--deep-timeout", "3"], tmp_path)
        assert run.code == 1
        message = run.check("deep-allreduce").message
        assert "rank 1 hung in all_reduce(tp group)" in message

    def test_the_deadline_bounds_the_whole_check(self, tmp_path: Path) -> None:
        # The injector sets PREFLIGHT_DEADLINE from injection.timeoutSeconds: a worker that
        # would hang for its whole --deep-timeout is stopped at the deadline instead.
        host = fake_host(
            h200_machine(2),
            {"PREFLIGHT_DEADLINE": "3"},
            deep_plan={"hang": [1, "all_reduce(tp group)"]},
        )
        run = run_check(host, ["--tp", "2", "--deep", "--deep-timeout", "120"], tmp_path)
        assert run.code == 1
        # the wait was the deadline's, not --deep-timeout's (said, not timed: no clock here)
        assert run.check("deep-allreduce").message.startswith(
            "rank 1 hung in all_reduce(tp group) (no answer before the check's deadline (3 s,"
        ), run.check("deep-allreduce").message

    def test_a_crash_names_the_rank_and_signal(self, tmp_path: Path) -> None:
        host = fake_host(h200_machine(2), deep_plan={"crash": [0, "torch.cuda.set_device"]})
        run = run_check(host, ["--tp", "2", "--deep", "--deep-timeout", "20"], tmp_path)
        assert (
            "rank 0 died with SIGABRT in torch.cuda.set_device" in run.check("deep-workers").message
        )

    def test_not_enough_gpus_stops_the_workers(self, tmp_path: Path) -> None:
        run = run_check(fake_host(h200_machine(2), deep_plan={}), ["--tp", "4", "--deep"], tmp_path)
        assert run.check("deep-allreduce").status == SKIP
        assert "needs 4" in run.check("deep-allreduce").message


def test_children_inherit_the_environment_like_vllm_workers(tmp_path: Path) -> None:
    # Each rank probe reads CUDA_VISIBLE_DEVICES itself, as a vLLM worker would.
    host = fake_host(h200_machine(2), {"CUDA_VISIBLE_DEVICES": "1"})
    run = run_check(host, ["--tp", "1"], tmp_path)
    [rank] = run.check("context-ranks").evidence["ranks"]
    assert rank["result"] == "CUDA_SUCCESS"
    assert os.environ.get("PREFLIGHT_FAKE_MACHINE") is None


def test_without_rank_probes_the_checker_binds_from_its_own_threads(tmp_path: Path) -> None:
    machine = h200_machine(2)
    argv = ["--tp", "2", "--skip", "context-ranks,thread-discipline"]
    run = run_check(fake_host(machine), argv, tmp_path)
    threads = run.check("context-threads")
    assert threads.status == PASS
    assert threads.evidence["source"] == "checker threads"
    assert [g["ordinal"] for g in threads.evidence["gpus"]] == [0, 1]


def test_by_default_threads_bind_inside_the_rank_processes(tmp_path: Path) -> None:
    run = run_check(fake_host(h200_machine(2)), ["--tp", "2"], tmp_path)
    threads = run.check("context-threads")
    assert threads.evidence["source"] == "rank processes"
    assert "from a fresh thread in each rank process" in threads.message


def test_exclusive_gpus_are_left_to_their_rank_probe(tmp_path: Path) -> None:
    machine = h200_machine(2)
    machine.gpus[1].compute_mode = 3  # Exclusive_Process
    argv = ["--tp", "2", "--skip", "context-ranks,thread-discipline"]
    run = run_check(fake_host(machine), argv, tmp_path)
    threads = run.check("context-threads")
    assert [g["ordinal"] for g in threads.evidence["gpus"]] == [0]
    assert "GPUs [1] not bound from a thread" in threads.message
    assert run.check("compute-mode").status == WARN
