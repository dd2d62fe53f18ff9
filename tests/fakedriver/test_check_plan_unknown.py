"""The check with the plan unknown (PREFLIGHT_PLAN_UNKNOWN; issue 35/36, item 3), over the
fake driver (docs/GPU_FACTS.md): the rules recognised vLLM but could not read its command
line, so the check validates every GPU CUDA sees and all it can without the plan, says
"plan unknown: GPU count not compared", never fails on the unknown plan, and still fails
on a hardware fact it observed exactly. When PREFLIGHT_VLLM_ARGS, as the kubelet filled it
in, gives the plan, the check uses it and says it was recovered at runtime."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from preflight_contract import envnames
from preflight_contract.verdicts import FAIL, PASS, SKIP, WARN
from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check

pytestmark = pytest.mark.timeout(60)

WHY = "vllm-command-unparsed: `strace` is not a program vllm-preflight models"
UNKNOWN = {envnames.PLAN_UNKNOWN: WHY, envnames.ACTION: "Enforce"}
GIB = 1 << 30


def host_with_nodes(machine, environ, nodes, **kw):  # type: ignore[no-untyped-def]
    """A fake host with ``nodes`` /dev/nvidiaN device nodes (the kubelet's view)."""
    return dataclasses.replace(fake_host(machine, environ, **kw), device_nodes=lambda: nodes)


def test_every_visible_gpu_is_checked_and_the_count_is_not_compared(tmp_path: Path) -> None:
    run = run_check(host_with_nodes(h200_machine(2), UNKNOWN, 2), [], tmp_path)
    assert run.code == 0, run.stdout  # Enforce: a warning, not a failure
    assert run.report.verdict == WARN
    plan = run.check("plan")
    assert plan.status == WARN
    assert plan.message.startswith("plan unknown: GPU count not compared (")
    assert WHY in plan.message
    assert "every GPU CUDA sees (2 GPUs)" in plan.message
    assert run.check("gpu-count").status == SKIP
    assert "plan unknown: GPU count not compared" in run.check("gpu-count").message
    # both GPUs bound, from fresh threads and from one fresh process each
    assert run.check("context-threads").status == PASS
    assert [r["rank"] for r in run.check("context-ranks").evidence["ranks"]] == [0, 1]
    assert run.check("driver").status == PASS
    assert run.check("shm").status == PASS
    assert run.check("p2p").status == SKIP
    assert len(run.report.gpus) == 2
    # the report's plan says unknown, with why, and no sizes that were never read
    assert run.report.plan["unknown"] == WHY
    assert "tp" not in run.report.plan
    assert run.report.plan["gpus_seen"] == 2
    assert run.compact is not None
    assert run.compact["plan"]["unknown"] == WHY
    assert "plan unknown, GPU count not compared" in run.stdout


def test_without_device_nodes_ranks_past_the_gpus_are_no_failure(tmp_path: Path) -> None:
    run = run_check(fake_host(h200_machine(2), UNKNOWN), [], tmp_path)
    assert run.code == 0, run.stdout
    assert run.check("context-ranks").status == PASS
    assert run.check("plan").status == WARN


def test_injected_sizes_copied_by_envfrom_are_not_a_plan(tmp_path: Path) -> None:
    env = {**UNKNOWN, envnames.TP: "8"}
    run = run_check(host_with_nodes(h200_machine(2), env, 2), [], tmp_path)
    assert run.code == 0, run.stdout
    assert run.check("plan").status == WARN
    assert "gpu-count" not in {c.id for c in run.report.failures()}


def test_small_shm_with_several_gpus_is_a_warning(tmp_path: Path) -> None:
    host = host_with_nodes(h200_machine(2), UNKNOWN, 2, shm_size=64 << 20)
    run = run_check(host, [], tmp_path)
    assert run.code == 0
    shm = run.check("shm")
    assert shm.status == WARN
    assert shm.message.startswith("plan unknown: /dev/shm is 64")


def test_ecc_errors_still_fail_under_enforce(tmp_path: Path) -> None:
    machine = h200_machine(2)
    machine.gpus[1].ecc_uncorrectable = 3
    run = run_check(host_with_nodes(machine, UNKNOWN, 2), [], tmp_path)
    assert run.code == 1
    assert run.check("ecc").status == FAIL
    assert run.check("plan").status == WARN


def test_no_gpu_visible_still_fails_under_enforce(tmp_path: Path) -> None:
    env = {**UNKNOWN, "CUDA_VISIBLE_DEVICES": ""}
    run = run_check(host_with_nodes(h200_machine(2), env, 2), [], tmp_path)
    assert run.code == 1
    assert run.check("cuda-visible-devices").status == FAIL


def test_the_plan_recovered_at_runtime_is_used_and_said(tmp_path: Path) -> None:
    # the rules read `--tensor-parallel-size $(TP)` with TP from a Secret: the injector
    # deferred it; the kubelet gave the check TP's value
    env = {
        **UNKNOWN,
        # as the kubelet hands it over: the injector's $$(TP) is $(TP) now
        envnames.VLLM_ARGS: "vllm serve m --tensor-parallel-size '$(TP)'",
        envnames.VLLM_ARGS_DEFERRED: "TP",
        "TP": "4",
    }
    run = run_check(host_with_nodes(h200_machine(2), env, 2), [], tmp_path)
    assert run.code == 1  # the recovered plan is exact: 4 GPUs needed, 2 seen
    plan = run.check("plan")
    assert plan.status == PASS
    assert "recovered at runtime" in plan.message
    assert WHY in plan.message
    assert run.check("gpu-count").status == FAIL
    assert run.report.plan["tp"] == 4
    assert run.report.plan["recovered"] == WHY


def test_a_line_that_still_does_not_read_leaves_the_plan_unknown(tmp_path: Path) -> None:
    env = {**UNKNOWN, envnames.VLLM_ARGS: "vllm serve m --tensor-parallel-size 'four"}
    run = run_check(host_with_nodes(h200_machine(2), env, 2), [], tmp_path)
    assert run.code == 0, run.stdout  # never exit 2 under Enforce for a plan nobody read
    plan = run.check("plan")
    assert plan.status == WARN
    assert "did not give it either" in plan.message


def test_a_flag_gives_the_plan_and_wins(tmp_path: Path) -> None:
    run = run_check(host_with_nodes(h200_machine(2), UNKNOWN, 2), ["--tp", "2"], tmp_path)
    assert run.code == 0
    assert run.report.verdict == PASS
    assert run.check("gpu-count").status == PASS


def test_hostile_reason_is_bounded_and_printable(tmp_path: Path) -> None:
    env = {**UNKNOWN, envnames.PLAN_UNKNOWN: "x\x1b[31m\n" * 500}
    run = run_check(host_with_nodes(h200_machine(1), env, 1), [], tmp_path)
    assert run.code == 0
    why = run.report.plan["unknown"]
    assert len(why) <= 300
    assert "\x1b" not in why
    assert "\n" not in why


def test_the_deep_tier_runs_a_worker_per_gpu_and_claims_no_tp_group(tmp_path: Path) -> None:
    env = {**UNKNOWN, envnames.TIER: "deep"}
    run = run_check(host_with_nodes(h200_machine(2), env, 2, deep_plan={}), [], tmp_path)
    assert run.code == 0, run.stdout
    statuses = {c.id: c.status for c in run.report.checks}
    assert statuses["deep-workers"] == PASS
    assert statuses["deep-allreduce"] == SKIP
    assert statuses["deep-peer-copy"] == SKIP
    assert "plan unknown" in run.check("deep-allreduce").message
    assert "deep_pass_key" not in run.report.plan  # no pass recorded for a plan nobody read


def test_memory_in_use_on_a_gpu_vllm_may_not_use_is_a_warning(tmp_path: Path) -> None:
    machine = h200_machine(2)
    machine.gpus[1].memory_used = 100 * GIB
    run = run_check(host_with_nodes(machine, UNKNOWN, 2), [], tmp_path)
    assert run.code == 0, run.stdout
    memory = run.check("gpu-memory")
    assert memory.status == WARN
    assert "plan unknown: whether vLLM uses these GPUs" in memory.message
    (tmp_path / "known").mkdir()
    known = run_check(host_with_nodes(machine, {}, 2), ["--tp", "2"], tmp_path / "known")
    assert known.check("gpu-memory").status == FAIL  # with the plan read: exact, a failure


def test_an_unparseable_entry_fails_only_where_vllm_surely_reads_it(tmp_path: Path) -> None:
    uuid = h200_machine(2).gpus[1].uuid
    late = {**UNKNOWN, "CUDA_VISIBLE_DEVICES": f"0,{uuid}"}
    run = run_check(host_with_nodes(h200_machine(2), late, 2), [], tmp_path)
    assert run.check("vllm-device-ids").status == WARN  # TP unknown: entry 2 may be unused
    assert "the plan is unknown: vLLM may not reach them" in run.check("vllm-device-ids").message
    (tmp_path / "first").mkdir()
    first = {**UNKNOWN, "CUDA_VISIBLE_DEVICES": f"{uuid},0"}
    run = run_check(host_with_nodes(h200_machine(2), first, 2), [], tmp_path / "first")
    assert run.check("vllm-device-ids").status == FAIL  # vLLM uses one GPU at least
    assert run.code == 1


def test_deep_workers_past_what_cuda_sees_are_stopped_and_said_so(tmp_path: Path) -> None:
    env = {**UNKNOWN, envnames.TIER: "deep", "CUDA_VISIBLE_DEVICES": "0"}
    run = run_check(host_with_nodes(h200_machine(2), env, 2, deep_plan={}), [], tmp_path)
    assert run.code == 0, run.stdout
    workers = run.check("deep-workers")
    assert workers.status == SKIP
    assert "CUDA sees 1 of the 2 GPU device nodes (plan unknown" in workers.message
