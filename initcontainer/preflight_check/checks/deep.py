"""The deep tier: torch workers per rank, NCCL all-reduce and peer copies."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from preflight_check.checks.base import check, plural, result, skipped
from preflight_check.checks.contexts import signal_name
from preflight_check.deep_worker import (
    STEP_ALL_REDUCE,
    STEP_ALLOCATE,
    STEP_IMPORT,
    STEP_INIT,
    STEP_PEER_COPY,
    STEP_SET_DEVICE,
)
from preflight_check.facts import CallRecord, ChildOutcome, Facts
from preflight_check.options import Options
from preflight_contract import envnames
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, PASS

WORKER_STEPS = (STEP_IMPORT, STEP_SET_DEVICE, STEP_ALLOCATE)
ALLREDUCE_STEPS = (STEP_INIT, STEP_ALL_REDUCE)
PEER_STEPS = (STEP_PEER_COPY,)


def _step_problem(outcome: ChildOutcome, steps: Sequence[str], bound: str) -> Optional[str]:
    """Why a worker did not complete ``steps`` (None when it did), naming rank and step."""
    records: Dict[str, CallRecord] = {r.call: r for r in outcome.calls}
    for step in steps:
        record = records.get(step)
        if record is None:
            if outcome.notes.get("stopped"):
                return None
            reached = outcome.calls[-1].call if outcome.calls else "start-up"
            if outcome.signal is not None:
                return (
                    f"rank {outcome.rank} died with {signal_name(outcome.signal)} after {reached}"
                )
            if outcome.timed_out:
                return f"rank {outcome.rank} did not reach {step} {bound}"
            if outcome.fatal:
                return f"rank {outcome.rank}: {outcome.fatal}"
            return None  # an earlier step failed; another check names it
        if not record.finished:
            if outcome.signal is not None:
                return f"rank {outcome.rank} died with {signal_name(outcome.signal)} in {step}"
            return f"rank {outcome.rank} hung in {step} (no answer {bound})"
        if record.code not in (0, None):
            return f"rank {outcome.rank}: {step} failed: {record.name}"
    return None


def _deep_check(
    check_id: str,
    facts: Facts,
    options: Options,
    *,
    steps: Sequence[str],
    passed: str,
    fix: str,
) -> List[CheckResult]:
    if facts.deep_reused:
        return skipped(check_id, facts.deep_reused)
    if facts.deep_skipped:
        return skipped(check_id, f"deep tier not run: {facts.deep_skipped}")
    if not facts.deep:
        return skipped(check_id, "no deep worker ran")
    bound = facts.deep_bound or f"within {options.deep_timeout_s:g} s"
    problems = [p for o in facts.deep if (p := _step_problem(o, steps, bound))]
    timings = {
        str(o.rank): {r.call: round(r.ms, 1) for r in o.calls if r.call in steps and r.finished}
        for o in facts.deep
    }
    if problems:
        return result(check_id, FAIL, "; ".join(problems), fix, step_ms=timings)
    return result(check_id, PASS, passed, step_ms=timings)


@check("deep-reuse")
def deep_reuse(facts: Facts, options: Options) -> List[CheckResult]:
    """Verdict reuse (preflight_check/reuse.py): says whose deep pass this pod reused; says
    nothing when no offer was made, and why an offer was not taken when one was."""
    if facts.deep_reused:
        return result("deep-reuse", PASS, facts.deep_reused)
    if options.reuse_problem:
        return skipped(
            "deep-reuse", f"{envnames.DEEP_REUSE}: {options.reuse_problem}; the deep tier ran"
        )
    if options.reuse_offers:
        return skipped(
            "deep-reuse",
            "no offered deep pass matches this node, its GPUs and driver (or it expired); "
            "the deep tier ran",
        )
    return []


@check("deep-workers")
def deep_workers(facts: Facts, options: Options) -> List[CheckResult]:
    torch_versions = sorted({str(o.notes.get("torch", "?")) for o in facts.deep})
    return _deep_check(
        "deep-workers",
        facts,
        options,
        steps=WORKER_STEPS,
        passed=f"{plural(len(facts.deep), 'torch worker')} (torch {', '.join(torch_versions)}) "
        "set their device and allocated",
        fix="the rank named cannot use its GPU from torch: see 'context-ranks' and 'cuda-compat'",
    )


@check("deep-allreduce")
def deep_allreduce(facts: Facts, options: Options) -> List[CheckResult]:
    if facts.plan.unknown:
        return skipped("deep-allreduce", "plan unknown: the tensor-parallel groups are not known")
    groups = facts.plan.tp_groups()
    return _deep_check(
        "deep-allreduce",
        facts,
        options,
        steps=ALLREDUCE_STEPS,
        passed=f"NCCL all-reduce over {plural(len(groups), 'TP group')} of {facts.plan.tp} gave "
        "the right sum on every rank",
        fix="NCCL cannot run between these GPUs: check 'shm' and 'p2p', and run with "
        "NCCL_DEBUG=INFO to see the transport that fails (NCCL_P2P_DISABLE=1 or "
        "NCCL_SHM_DISABLE=1 narrow it)",
    )


@check("deep-peer-copy")
def deep_peer_copy(facts: Facts, options: Options) -> List[CheckResult]:
    if facts.plan.unknown:
        return skipped("deep-peer-copy", "plan unknown: the tensor-parallel groups are not known")
    if facts.plan.tp < 2:
        return skipped("deep-peer-copy", "TP = 1: no neighbours to copy between")
    return _deep_check(
        "deep-peer-copy",
        facts,
        options,
        steps=PEER_STEPS,
        passed="every rank received its neighbour's buffer intact (NCCL send/recv around each "
        "TP group)",
        fix="peer transfers between these GPUs fail: check 'p2p'; NCCL_P2P_DISABLE=1 tells "
        "whether the direct path is at fault",
    )
