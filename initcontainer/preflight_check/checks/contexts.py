"""Context creation on every GPU, and how the driver treats threads without one.

A vLLM worker is a fresh process per rank that binds GPU ``rank``; its background
threads (NCCL, AMP, custom all-reduce) start without a context. The failure this
project was born from happened exactly there.
"""

from __future__ import annotations

import signal as signals
from typing import Dict, List, Optional

from preflight_check.checks.base import (
    check,
    cuda_unavailable,
    plural,
    result,
    short_uuid,
    skipped,
)
from preflight_check.driver.api import (
    CUDA_ERROR_DEVICE_UNAVAILABLE,
    CUDA_ERROR_ECC_UNCORRECTABLE,
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_OUT_OF_MEMORY,
)
from preflight_check.facts import BindingOutcome, CallRecord, ChildOutcome, Facts
from preflight_check.options import Options
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, PASS, WARN

AMP_ERROR = (
    "[AMP ERROR] failed to call cuCtxGetDevice(device), error code: CUDA_ERROR_INVALID_CONTEXT"
)


def signal_name(number: int) -> str:
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"signal {number}"


def binding_fix(code: Optional[int], call: str) -> str:
    if code == CUDA_ERROR_DEVICE_UNAVAILABLE:
        return (
            "the GPU is busy or unavailable: another process holds it in Exclusive_Process "
            "compute mode, or it is in use by another container; see checks 'compute-mode' and "
            "'gpu-processes'"
        )
    if code == CUDA_ERROR_OUT_OF_MEMORY:
        return "the GPU's memory is full: stop the other processes on it (see 'gpu-memory')"
    if code == CUDA_ERROR_ECC_UNCORRECTABLE:
        return "the GPU has uncorrectable ECC errors: drain the node and have the GPU reset"
    if call == "cuCtxGetDevice":
        return (
            "the context did not stick to the thread that made it current: the CUDA library "
            "in this container is not behaving like NVIDIA's driver (see 'cuda-library')"
        )
    return "drain the node and check the GPU with nvidia-smi -q; a GPU reset may be needed"


def _binding_failure_text(label: str, outcome: BindingOutcome) -> str:
    record = next((r for r in outcome.calls if r.call == outcome.failed_call), None)
    if outcome.detail:
        return f"{label}: {outcome.detail}"
    name = record.name if record else "failed"
    return f"{label}: {outcome.failed_call} failed with {name}"


def fresh_thread_bindings(facts: Facts) -> List[BindingOutcome]:
    """Each rank process's fresh thread binding its GPU (after the probe's unbound calls).

    Ranks whose fresh thread never got to bind (the probe crashed or hung first) and
    ranks without a GPU (see 'gpu-count') are left out.
    """
    out: List[BindingOutcome] = []
    for outcome in facts.ranks:
        if outcome.rank >= facts.cuda.count:
            continue
        records = [r for r in outcome.calls if r.thread == "fresh-bound"]
        if not records:
            continue
        failed = next((r for r in records if not r.finished or r.code not in (0, None)), None)
        detail = ""
        if failed is None:
            device = next((r for r in records if r.call == "cuCtxGetDevice"), None)
            if device is not None and device.value != outcome.rank:
                failed = device
                detail = (
                    f"cuCtxGetDevice returned device {device.value} in the thread bound to "
                    f"{outcome.rank}"
                )
        if failed is not None and not failed.finished and not detail:
            detail = f"{failed.call} did not return"
        out.append(
            BindingOutcome(
                ordinal=outcome.rank,
                ok=failed is None,
                calls=records,
                failed_call=failed.call if failed else "",
                detail=detail,
                ms=sum(r.ms for r in records),
            )
        )
    return out


@check("context-threads")
def context_threads(facts: Facts, options: Options) -> List[CheckResult]:
    unavailable = cuda_unavailable(facts, "context-threads")
    if unavailable:
        return unavailable
    in_process = bool(facts.thread_bindings)
    outcomes = facts.thread_bindings if in_process else fresh_thread_bindings(facts)
    if not outcomes:
        return skipped(
            "context-threads",
            "no fresh thread got to bind a GPU (see 'thread-discipline' and 'context-ranks')",
        )
    where = (
        "from as many fresh threads of this process at once"
        if in_process
        else "from a fresh thread in each rank process, all at once"
    )
    per_gpu = []
    failures = []
    labels = {g.ordinal: f"GPU {g.ordinal} ({short_uuid(g.uuid)})" for g in facts.cuda.gpus}
    for outcome in outcomes:
        label = labels.get(outcome.ordinal, f"GPU {outcome.ordinal}")
        per_gpu.append(
            {
                "ordinal": outcome.ordinal,
                "result": "CUDA_SUCCESS" if outcome.ok else outcome.result_name(),
                "failed_call": outcome.failed_call or None,
                "ms": round(outcome.ms, 1),
            }
        )
        if not outcome.ok:
            failures.append((label, outcome))
    bound = {o.ordinal for o in outcomes}
    unbound = [
        g.ordinal
        for g in facts.cuda.gpus
        if g.ordinal < facts.plan.gpus_needed and g.ordinal not in bound
    ]
    if failures:
        _, first = failures[0]
        code = next((r.code for r in first.calls if r.call == first.failed_call), None)
        return result(
            "context-threads",
            FAIL,
            "; ".join(_binding_failure_text(lbl, o) for lbl, o in failures) + f" ({where})",
            binding_fix(code, first.failed_call),
            gpus=per_gpu,
            source="checker threads" if in_process else "rank processes",
        )
    slowest = max(outcomes, key=lambda o: o.ms)
    note = f"; GPUs {unbound} not bound from a thread (see 'compute-mode')" if unbound else ""
    return result(
        "context-threads",
        PASS,
        f"{plural(len(outcomes), 'GPU')} bound {where}: primary context retained and "
        f"current, cuCtxGetDevice right, 1 MiB allocated and synchronised (slowest GPU "
        f"{slowest.ordinal}: {slowest.ms:.0f} ms){note}",
        gpus=per_gpu,
        source="checker threads" if in_process else "rank processes",
    )


def _child_problem(outcome: ChildOutcome, timeout_s: float) -> Optional[str]:
    """Why a child did not finish normally, naming the call it was in."""
    stuck = outcome.unfinished
    where = f" in {stuck.call} ({stuck.thread} thread)" if stuck else ""
    if outcome.signal is not None:
        return f"the process died with {signal_name(outcome.signal)}{where}"
    if outcome.timed_out:
        after = outcome.notes.get("hang_after_s", timeout_s)
        if stuck is not None:
            return f"{stuck.call} ({stuck.thread} thread) did not return within {after:g} s"
        return f"the process did not finish within {after:g} s"
    if outcome.fatal:
        return outcome.fatal
    if not outcome.started:
        return "the process could not be started"
    if outcome.exit_code not in (0, None):
        return f"the process exited with code {outcome.exit_code}"
    return None


def _main_thread_failure(outcome: ChildOutcome) -> Optional[CallRecord]:
    for record in outcome.calls_on("main"):
        if record.finished and record.code not in (0, None):
            return record
    return None


@check("context-ranks")
def context_ranks(facts: Facts, options: Options) -> List[CheckResult]:
    unavailable = cuda_unavailable(facts, "context-ranks")
    if unavailable:
        return unavailable
    if not facts.ranks:
        return skipped("context-ranks", "no rank process was started")
    rows: List[Dict[str, object]] = []
    failures: List[str] = []
    fix = ""
    beyond: List[int] = []
    for outcome in facts.ranks:
        row: Dict[str, object] = {"rank": outcome.rank, "wall_ms": round(outcome.wall_ms, 1)}
        problem = _child_problem(outcome, options.timeout_s)
        failed = _main_thread_failure(outcome)
        bound = [
            r for r in outcome.calls_on("main") if r.call not in ("cuInit", "cuDeviceGetCount")
        ]
        row["bind_ms"] = round(sum(r.ms for r in bound), 1)
        if failed is not None:
            row["result"] = failed.name
            row["failed_call"] = failed.call
            if (
                failed.call == "cuDeviceGet"
                and failed.code == CUDA_ERROR_INVALID_DEVICE
                and outcome.rank >= facts.cuda.count
            ):
                # The plan asks for more GPUs than CUDA sees: 'gpu-count' reports it.
                beyond.append(outcome.rank)
                row["result"] = f"{failed.name} (no GPU {outcome.rank})"
            else:
                failures.append(f"rank {outcome.rank}: {failed.call} failed with {failed.name}")
                fix = fix or binding_fix(failed.code, failed.call)
        elif problem is not None and not any(r.thread.startswith("fresh") for r in outcome.calls):
            row["result"] = problem
            failures.append(f"rank {outcome.rank}: {problem}")
            fix = fix or "this node's GPU or driver stack is unhealthy: drain it, check nvidia-smi"
        else:
            row["result"] = "CUDA_SUCCESS"
        rows.append(row)
    evidence = {
        "ranks": rows,
        "not_probed": facts.ranks_not_probed or None,
        "beyond_visible": beyond or None,
    }
    if failures:
        return result(
            "context-ranks",
            FAIL,
            "; ".join(failures)
            + " (one fresh process per rank, binding GPU <rank> as a vLLM worker does)",
            fix,
            **evidence,
        )
    ok = [o for o in facts.ranks if o.rank not in beyond]
    if not ok:
        return skipped("context-ranks", "no rank has a GPU to bind (see 'gpu-count')")
    slowest = max(ok, key=lambda o: o.wall_ms)
    return result(
        "context-ranks",
        PASS,
        f"{plural(len(ok), 'rank')} bound GPU <rank> from a fresh process each "
        f"(slowest: rank {slowest.rank}, {slowest.wall_ms:.0f} ms from start to exit)",
        **evidence,
    )


def judge_probe(outcome: ChildOutcome, gpu_count: int, timeout_s: float) -> List[str]:
    """Insane answers of the thread-discipline probe in one rank process.

    Sane, per NVIDIA's driver (docs/GPU_FACTS.md): a thread without a context gets
    CUDA_ERROR_INVALID_CONTEXT from cuCtxGetDevice and cuMemGetInfo (or success with a
    real ordinal), success from cuCtxGetCurrent and the true count from
    cuDeviceGetCount; after binding, its own ordinal and real memory figures.
    """
    problems: List[str] = []
    for record in outcome.calls_on("fresh"):
        problem = _judge_call(record, outcome, gpu_count, timeout_s)
        if problem is not None:
            problems.append(problem)
    if not problems and outcome.crashed:
        problem = _child_problem(outcome, timeout_s)
        if problem and any(r.thread.startswith("fresh") for r in outcome.calls):
            problems.append(problem)
    return problems


def _judge_call(
    record: CallRecord, outcome: ChildOutcome, gpu_count: int, timeout_s: float
) -> Optional[str]:
    """What is insane about one call of the probe's fresh threads (None: it is sane)."""
    where = (
        "a fresh thread without a context"
        if record.thread.endswith("unbound")
        else "the same thread after binding"
    )
    if not record.finished:
        if outcome.signal is not None:
            return f"{record.call} in {where} crashed the process ({signal_name(outcome.signal)})"
        after = outcome.notes.get("hang_after_s", timeout_s)
        return f"{record.call} in {where} did not return within {after:g} s (hang)"
    code, value, call = record.code, record.value, record.call
    unbound = record.thread.endswith("unbound")
    if call in ("cuCtxGetCurrent", "cuCtxSetCurrent"):
        if code != 0:
            return f"{call} in {where} returned {record.name}"
    elif call == "cuCtxGetDevice":
        return _judge_ctx_get_device(record, where, gpu_count, outcome.rank)
    elif call == "cuDeviceGetCount":
        if code != 0 or value != gpu_count:
            return (
                f"cuDeviceGetCount in {where} returned {record.name}, count {value} "
                f"(the process's own cuInit saw {gpu_count})"
            )
    elif call == "cuMemGetInfo":
        sane_numbers = (
            isinstance(value, list)
            and len(value) == 2
            and value[1] > 0
            and 0 <= value[0] <= value[1]
        )
        if unbound and code == CUDA_ERROR_INVALID_CONTEXT:
            return None
        if code != 0 or not sane_numbers:
            return f"cuMemGetInfo in {where} returned {record.name}, {value}"
    return None


def _judge_ctx_get_device(
    record: CallRecord, where: str, gpu_count: int, rank: int
) -> Optional[str]:
    """cuCtxGetDevice: no context gives INVALID_CONTEXT (or a real ordinal); bound, its own."""
    code, value = record.code, record.value
    if not record.thread.endswith("unbound"):
        if code != 0 or value != rank:
            return (
                f"cuCtxGetDevice in {where} returned {record.name}, device {value} "
                f"(expected {rank})"
            )
        return None
    if code == CUDA_ERROR_INVALID_CONTEXT:
        return None
    if code == 0 and isinstance(value, int) and 0 <= value < gpu_count:
        return None
    if code == 0:
        return (
            f"cuCtxGetDevice in {where} returned device id {value}, but only "
            f"ordinals 0-{gpu_count - 1} exist (NVIDIA's driver returns "
            "CUDA_ERROR_INVALID_CONTEXT)"
        )
    return f"cuCtxGetDevice in {where} returned {record.name} instead of CUDA_ERROR_INVALID_CONTEXT"


def _rank_gpu_count(outcome: ChildOutcome, fallback: int) -> int:
    for record in outcome.calls_on("main"):
        if record.call == "cuDeviceGetCount" and record.code == 0 and isinstance(record.value, int):
            return record.value
    return fallback


@check("thread-discipline")
def thread_discipline(facts: Facts, options: Options) -> List[CheckResult]:
    unavailable = cuda_unavailable(facts, "thread-discipline")
    if unavailable:
        return unavailable
    probed = [o for o in facts.ranks if o.calls_on("fresh")]
    if not probed:
        return skipped("thread-discipline", "no rank process reached the thread probe")
    findings: Dict[int, List[str]] = {}
    for outcome in probed:
        problems = judge_probe(
            outcome, _rank_gpu_count(outcome, facts.cuda.count), options.timeout_s
        )
        if problems:
            findings[outcome.rank] = problems
    evidence = {
        "ranks": [
            {"rank": o.rank, "calls": [c.to_dict() for c in o.calls_on("fresh")]}
            for o in probed[:2]
        ],
        "problems": {str(k): v for k, v in findings.items()} or None,
    }
    if findings:
        rank, problems = next(iter(findings.items()))
        tp = facts.plan.tp
        status = FAIL if tp > 1 else WARN
        return result(
            "thread-discipline",
            status,
            f"rank {rank}: {problems[0]}"
            + (
                f" (+{sum(len(p) for p in findings.values()) - 1} more)"
                if sum(len(p) for p in findings.values()) > 1
                else ""
            )
            + ". vLLM with TP > 1 calls this from NCCL/worker threads and fails "
            + f"(e.g. '{AMP_ERROR}' "
            "on API-remoting vGPU, 'Illegal device id' with old HAMi-core)"
            + (
                ""
                if tp > 1
                else "; harmless only if vLLM runs TP = 1 (plan unknown)"
                if facts.plan.unknown
                else "; harmless while TP = 1"
            ),
            "the CUDA library in this pod is not NVIDIA's driver behaviour (see 'cuda-library'): "
            "upgrade the GPU-sharing/vGPU layer (HAMi-core >= 2.8.1), or run this workload with "
            "TP = 1 per pod or on GPUs passed through without the layer",
            **evidence,
        )
    return result(
        "thread-discipline",
        PASS,
        f"threads without a context get CUDA_ERROR_INVALID_CONTEXT from cuCtxGetDevice and sane "
        f"answers elsewhere, as from NVIDIA's driver ({plural(len(probed), 'rank')} probed)",
        **evidence,
    )
