"""What NCCL needs between the GPUs of a pod: shared memory and peer access."""

from __future__ import annotations

from typing import Dict, List

from preflight_check.checks.base import check, cuda_unavailable, result, size_text, skipped
from preflight_check.facts import Facts
from preflight_check.options import Options
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, PASS, WARN

SHM_FIX = (
    "mount an emptyDir with medium: Memory at /dev/shm in the pod (volumes: - name: dshm, "
    "emptyDir: {{medium: Memory, sizeLimit: {size}}}; volumeMounts: - name: dshm, "
    "mountPath: /dev/shm)"
)


@check("shm")
def shm(facts: Facts, options: Options) -> List[CheckResult]:
    plan = facts.plan
    info = facts.shm
    if info is None:
        return skipped("shm", "/dev/shm was not examined")
    evidence = {
        "path": info.path,
        "size": info.size,
        "free": info.free,
        "threshold": options.shm_min,
    }
    threshold = size_text(options.shm_min)
    if plan.unknown:
        return _shm_plan_unknown(facts, options, evidence)
    if not plan.uses_collectives:
        size = size_text(info.size) if info.exists else "absent"
        return result("shm", PASS, f"TP x PP = 1, NCCL is not used (/dev/shm: {size})", **evidence)
    if not info.exists:
        return result(
            "shm",
            FAIL,
            f"there is no {info.path}; NCCL needs shared memory for TP x PP = {plan.tp * plan.pp}",
            SHM_FIX.format(size=threshold),
            **evidence,
        )
    if info.size < options.shm_min:
        return result(
            "shm",
            FAIL,
            f"{info.path} is {size_text(info.size)}, below {threshold} "
            f"({options.sources.get('shm_min') or 'the default --shm-min'}); with TP x PP = "
            f"{plan.tp * plan.pp} NCCL fails with 'Error while creating shared memory segment "
            "/dev/shm/nccl-... No space left on device' (unhandled system error)",
            SHM_FIX.format(size=threshold),
            **evidence,
        )
    return result(
        "shm",
        PASS,
        f"{info.path} is {size_text(info.size)} ({size_text(info.free)} free), "
        f"at least {threshold}",
        **evidence,
    )


def _shm_plan_unknown(
    facts: Facts, options: Options, evidence: Dict[str, object]
) -> List[CheckResult]:
    """/dev/shm without a plan: whether NCCL runs (TP x PP > 1) is not known, so a
    /dev/shm too small for it is a warning, never a failure; with one GPU it cannot."""
    info = facts.shm
    assert info is not None
    threshold = size_text(options.shm_min)
    size = size_text(info.size) if info.exists else "absent"
    if facts.plan.gpus_needed < 2:
        return result(
            "shm", PASS, f"plan unknown, one GPU: NCCL is not used (/dev/shm: {size})", **evidence
        )
    if not info.exists or info.size < options.shm_min:
        return result(
            "shm",
            WARN,
            f"plan unknown: /dev/shm is {size}, below {threshold}; if vLLM runs TP x PP > 1 "
            "over these GPUs NCCL fails with 'Error while creating shared memory segment'",
            SHM_FIX.format(size=threshold),
            **evidence,
        )
    return result(
        "shm", PASS, f"{info.path} is {size}, at least {threshold} (plan unknown)", **evidence
    )


@check("p2p")
def p2p(facts: Facts, options: Options) -> List[CheckResult]:
    unavailable = cuda_unavailable(facts, "p2p")
    if unavailable:
        return unavailable
    if facts.plan.unknown:
        return skipped("p2p", "plan unknown: the tensor-parallel groups are not known")
    if facts.plan.tp < 2:
        return skipped("p2p", "TP = 1: no tensor-parallel peers")
    pairs = facts.cuda.peer_access
    if not pairs:
        return skipped("p2p", "no TP group has two GPUs CUDA can see (see 'gpu-count')")
    missing = sorted((a, b) for (a, b), ok in pairs.items() if not ok)
    evidence = {"pairs": len(pairs), "without_peer_access": [list(p) for p in missing]}
    if missing:
        shown = ", ".join(f"{a}->{b}" for a, b in missing[:8])
        return result(
            "p2p",
            WARN,
            f"no peer access between GPUs {shown} of a TP group: NCCL goes through host memory "
            "and vLLM logs 'Custom allreduce is disabled because your platform lacks GPU P2P "
            "capability', so TP is slower",
            "place the pod on GPUs linked by NVLink or one PCIe switch (topology-aware "
            "scheduling), and check IOMMU/ACS settings of the node",
            **evidence,
        )
    return result(
        "p2p",
        PASS,
        f"every pair of GPUs in each TP group has peer access ({len(pairs)} directed pairs)",
        **evidence,
    )
