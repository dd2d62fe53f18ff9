"""The group phase as checks: ``group`` (every member joined and agrees) and
``group-allreduce`` (deep tier: a collective over every GPU of the group).

They run after the local checks (``runner.evaluate`` leaves them out; ``cli.run`` calls
``group_phase``), because a member's facts include its own verdict and how long its local
check took. The facts come from what the local checks already collected (NVML, CUDA, the
image's package metadata), so the phase adds only the meeting itself.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from preflight_check.facts import Facts
from preflight_check.group import GroupConfig, GroupVerdict, member_name
from preflight_check.options import Options
from preflight_contract import envnames
from preflight_contract.check_ids import DEEP
from preflight_contract.report import CheckResult, group_summary

# Distributions whose version the members compare (read from their metadata: nothing is
from preflight_contract.verdicts import ERROR, FAIL, PASS, SKIP, WARN

# Distributions whose version the members compare (read from their metadata: nothing is
# imported). NCCL ships in the nvidia-nccl wheels torch depends on.
_NCCL_DISTS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11", "nvidia-nccl")
RESERVE_S = 0.5  # kept for writing the report after the phase
DEFAULT_BUDGET_S = 60.0  # without --deadline / PREFLIGHT_DEADLINE


def dist_version(names: tuple[str, ...]) -> Optional[str]:
    try:
        from importlib import metadata  # noqa: PLC0415 - only when in a group
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    for name in names:
        try:
            return f"{name} {metadata.version(name)}" if len(names) > 1 else metadata.version(name)
        except Exception:
            continue
    return None


def local_verdict(results: List[CheckResult]) -> tuple[str, List[str]]:
    failed = [r.id for r in results if r.status in (FAIL, ERROR)]
    if failed:
        return FAIL, failed
    if any(r.status == WARN for r in results):
        return WARN, []
    return PASS, []


def member_facts(
    facts: Facts, options: Options, results: List[CheckResult], local_ms: float
) -> Dict[str, Any]:
    """What this pod tells its group: no secrets, no raw command line."""
    verdict, failed = local_verdict(results)
    uuids = [g.uuid for g in facts.cuda.gpus] or [g.uuid for g in facts.nvml.gpus]
    names = [g.name for g in facts.nvml.gpus if g.name] or [g.name for g in facts.cuda.gpus]
    config = options.group
    return {
        "node": (config.node if config else "") or None,
        # who this pod is (the downward API's name and uid): the leader lists it, the
        # operator matches it to the pod the API server knows
        "pod": (config.pod if config else "") or None,
        "uid": (config.uid if config else "") or None,
        "host": socket.gethostname(),
        "gpu_count": len(uuids),
        "gpu_uuids": uuids,
        "gpu_names": sorted(set(names)),
        "driver": facts.nvml.driver_version or None,
        "cuda_driver": facts.cuda.driver_version or facts.nvml.cuda_driver_version or None,
        "cuda_runtime": _cuda_runtime(facts),
        "nccl": dist_version(_NCCL_DISTS),
        "image": os.environ.get(envnames.GROUP_IMAGE, "").strip()[:256] or None,
        "vllm": dist_version(("vllm",)),
        "torch": facts.runtime.torch_version or None,
        "args": dict(config.args) if config else {},
        "args_from": (config.args_from if config else "") or None,
        "verdict": verdict,
        "failed": failed,
        "local_ms": round(local_ms, 1),
        # the deep tier's backend, when the pod forces one (gloo: CPU ranks)
        "backend": (config.backend if config else "") or None,
    }


def _cuda_runtime(facts: Facts) -> Optional[str]:
    """The CUDA version the image's user space needs ("12.4"), when the image says."""
    version = facts.runtime.version
    return f"{version[0]}.{version[1]}" if version else None


def phase_deadline(options: Options, started_wall: float) -> float:
    """The phase's deadline on the monotonic clock: what is left of --deadline (or the
    default budget) minus the time the report needs."""
    budget = options.deadline_s if options.deadline_s is not None else DEFAULT_BUDGET_S
    left = budget - (time.time() - started_wall) - RESERVE_S
    return time.monotonic() + max(0.0, left)


def _result(
    config: GroupConfig, verdict: GroupVerdict, spent_ms: float, began_wall: float
) -> CheckResult:
    evidence = dict(verdict.evidence)
    # wall-clock bounds of this pod's phase: lines the members' phases up (bench, logs)
    evidence["phase_started_at"] = round(began_wall, 3)
    evidence["phase_ended_at"] = round(began_wall + spent_ms / 1000.0, 3)
    evidence.setdefault("index", config.index)
    evidence["role"] = "leader" if config.is_leader else "member"
    evidence["phase_ms"] = round(spent_ms, 1)
    evidence["source"] = config.source
    return CheckResult("group", verdict.status, verdict.message, verdict.remediation, evidence)


def group_phase(
    facts: Facts, options: Options, results: List[CheckResult], started_wall: float
) -> List[CheckResult]:
    """Meet the group and report its verdict (and, deep tier, the group all-reduce)."""
    config = options.group
    if config is None:
        return []
    if "group" in options.skip:
        return [CheckResult("group", SKIP, "turned off (--skip / PREFLIGHT_SKIP)")]
    from preflight_check import groupnet  # noqa: PLC0415 - sockets only for groups

    began = time.perf_counter()
    began_wall = time.time()
    local_ms = (began_wall - started_wall) * 1000.0
    own = member_facts(facts, options, results, local_ms)
    deadline = phase_deadline(options, started_wall)
    deep = options.tier == DEEP and "group-allreduce" not in options.skip
    try:
        if config.is_leader:
            decide = groupnet.leader_deadline(time.monotonic(), deadline)
            verdict = groupnet.lead(config, own, decide, plan=_rank_plan if deep else None)
        else:
            verdict = groupnet.join(config, own, deadline)
    except Exception as exc:  # the phase's own bug: an error result, never a traceback
        verdict = GroupVerdict(
            ERROR,
            f"internal error in the group phase: {type(exc).__name__}: {exc}",
            "report it with the JSON report attached (--json)",
        )
    out = [_result(config, verdict, (time.perf_counter() - began) * 1000.0, began_wall)]
    rdma = _rdma(options, facts)
    if rdma is not None:
        out.append(rdma[0])
    if options.tier == DEEP:
        allreduce, ranks, lay = _allreduce(config, options, verdict, deadline)
        out.append(allreduce)
        if "group-transport" in options.skip:
            out.append(CheckResult("group-transport", SKIP, "turned off (--skip / PREFLIGHT_SKIP)"))
        else:
            out.append(_transport(config, allreduce, ranks, lay, rdma[1] if rdma else None))
    return out


def _rdma(options: Options, facts: Facts) -> Optional[Tuple[CheckResult, Any]]:
    """``rdma``: the RDMA devices this container can use, GPUDirect RDMA, NCCL's env
    (fabric.py); with the verdict, for the transport check's reasons."""
    if "rdma" in options.skip:
        return CheckResult("rdma", SKIP, "turned off (--skip / PREFLIGHT_SKIP)"), None
    from preflight_check.fabric import judge_rdma, read_fabric  # noqa: PLC0415

    try:
        fabric = read_fabric("/", driver=facts.nvml.driver_version or "")
        verdict = judge_rdma(fabric)
    except Exception as exc:  # unknown is a warning, never a traceback
        return CheckResult("rdma", WARN, f"could not read the RDMA devices: {exc}"), None
    return (
        CheckResult("rdma", verdict.status, verdict.message, verdict.remediation, verdict.evidence),
        verdict,
    )


def _transport(
    config: GroupConfig,
    allreduce: CheckResult,
    ranks: List[Dict[str, Any]],
    lay: Any,
    rdma: Any,
) -> CheckResult:
    """``group-transport``: the transport NCCL chose to each other pod, from its own INFO
    lines, against the RDMA devices of this node; the bandwidth against its floor."""
    from preflight_check import floors, nccl_transport  # noqa: PLC0415

    check_id = "group-transport"
    if lay is None or allreduce.status == SKIP:
        return CheckResult(check_id, SKIP, "not run: the group all-reduce did not run")
    if lay.backend != "nccl":
        return CheckResult(
            check_id, SKIP, f"the group all-reduce ran over {lay.backend}: no NCCL transport"
        )
    if allreduce.status != PASS:
        return CheckResult(
            check_id, SKIP, "not judged: the group all-reduce failed (see group-allreduce)"
        )
    if config.size <= 1 or len(lay.ranks) <= 1:
        # measured on an H200 (GPU_RUNS run 17): a one-pod group's NCCL has no other pod
        # to connect to, so "no connection line" says nothing about the fabric
        return CheckResult(check_id, SKIP, "a group of one pod: no transport between pods")
    first, count = lay.ranks.get(config.index, (0, 0))
    lines: List[str] = []
    for result in ranks:
        log = result.get("nccl_log")
        if isinstance(log, list):
            lines += [str(x) for x in log]
    found = nccl_transport.parse(lines, range(first, first + count))
    per_member = {
        m: t for m, t in nccl_transport.by_member(found, lay.ranks).items() if m != config.index
    }
    devices = len(rdma.evidence.get("devices") or []) if rdma is not None else 0
    reasons = list(rdma.reasons) if rdma is not None else []
    verdict = nccl_transport.judge(
        per_member,
        rdma_devices=devices,
        reasons=reasons,
        socket_action=socket_action(),
        gdr=bool(found.gdr),
        member_names={m: member_name(m, None) for m in per_member},
    )
    evidence: Dict[str, Any] = {
        "transport": verdict.transport,
        "peers": {str(m): t for m, t in per_member.items()},
        "connections": found.lines,
    }
    if found.network:
        evidence["network"] = found.network
    if found.version:
        evidence["nccl_version"] = found.version
    status, message = verdict.status, verdict.message
    busbw = allreduce.evidence.get("bus_bandwidth_gbps")
    link = _inter_node_link(verdict.transport, rdma)
    if isinstance(busbw, (int, float)):
        evidence["bus_bandwidth_gbps"] = busbw
        floor_status, floor_text = floors.judge(float(busbw), link)
        if link is not None:
            evidence["floor_gbps"] = floors.floor_gbps(link)
            evidence["link"] = link.name
        if floor_text:
            message += f"; {floor_text}"
        if floor_status == WARN and status == PASS:
            status = WARN
    return CheckResult(check_id, status, message, verdict.remediation, evidence)


def _inter_node_link(transport: str, rdma: Any) -> Any:
    """The link whose floor applies: an active InfiniBand port's rate for NET/IB."""
    from preflight_check import floors  # noqa: PLC0415

    if rdma is None or not transport.startswith("NET/IB"):
        return None
    for device in rdma.evidence.get("devices") or []:
        for port in device.get("ports") or []:
            if port.get("state") == "ACTIVE":
                link = floors.from_ib_rate(str(port.get("rate", "")))
                if link is not None:
                    return link
    return None


def socket_action() -> str:
    """PREFLIGHT_SOCKET_FALLBACK: "fail" makes a fall-back to sockets a failure; anything
    else (the default) a warning."""
    text = os.environ.get(envnames.SOCKET_FALLBACK, "").strip().lower()
    return "fail" if text == "fail" else "warn"


def _rank_plan(members: Mapping[int, Mapping[str, Any]]) -> Dict[str, Any]:
    from preflight_check.group_allreduce import layout  # noqa: PLC0415

    counts = {i: int(m.get("gpu_count") or 0) for i, m in members.items()}
    force = str(members.get(0, {}).get("backend") or "")
    return layout(counts, force).to_dict()


def _allreduce(
    config: GroupConfig, options: Options, verdict: GroupVerdict, deadline: float
) -> Tuple[CheckResult, List[Dict[str, Any]], Any]:
    """Every pod runs its ranks of one all-reduce over the whole group; with its ranks'
    results and the layout (for the transport check)."""
    check_id = "group-allreduce"
    if check_id in options.skip:
        return CheckResult(check_id, SKIP, "turned off (--skip / PREFLIGHT_SKIP)"), [], None
    from preflight_check.group_allreduce import Layout, run_ranks, summarize  # noqa: PLC0415

    raw = verdict.evidence.get("allreduce")
    lay = Layout.from_dict(raw) if isinstance(raw, dict) else None
    if lay is None:
        return (
            CheckResult(
                check_id, SKIP, f"not run: the group did not meet and agree ({verdict.status})"
            ),
            [],
            None,
        )
    started = time.perf_counter()
    results = run_ranks(lay, config.index, config.address, config.port + 1, deadline)
    status, message, evidence = summarize(results, lay)
    evidence["ranks_here"] = [r.get("rank") for r in results]
    evidence["phase_ms"] = round((time.perf_counter() - started) * 1000.0, 1)
    fix = (
        ""
        if status == PASS
        else (
            f"NCCL_DEBUG=INFO names the failing transport; allow TCP {config.port + 1} and NCCL's "
            "ports between the group's pods; NCCL_SOCKET_IFNAME must name an interface every "
            "pod has"
        )
    )
    return CheckResult(check_id, status, message, fix, evidence), results, lay


def summary(config: GroupConfig, results: List[CheckResult]) -> Dict[str, Any]:
    """The report's ``group`` field: what the operator shows per group."""
    found = {r.id: r for r in results if r.id in ("group", "group-allreduce", "group-transport")}
    group = found.get("group")
    out: Dict[str, Any] = {"id": config.group_id, "index": config.index, "size": config.size}
    if group is not None:
        evidence = group.evidence
        out["status"] = group.status
        joined = evidence.get("joined")
        if isinstance(joined, list):
            out["joined"] = len(joined)
        if isinstance(evidence.get("missing"), list):
            out["missing"] = evidence["missing"]
        if config.is_leader and isinstance(evidence.get("roster"), list):
            out["members"] = evidence["roster"]
        slowest = evidence.get("slowest")
        if isinstance(slowest, dict):
            out["slowest"] = str(slowest.get("member", ""))
            if isinstance(slowest.get("local_ms"), (int, float)):
                out["slowest_ms"] = round(float(slowest["local_ms"]))
    allreduce = found.get("group-allreduce")
    if allreduce is not None and isinstance(allreduce.evidence.get("bus_bandwidth_gbps"), float):
        out["busbw_gbps"] = allreduce.evidence["bus_bandwidth_gbps"]
    transport = found.get("group-transport")
    if transport is not None and isinstance(transport.evidence.get("transport"), str):
        out["transport"] = transport.evidence["transport"]
    return group_summary(out)
