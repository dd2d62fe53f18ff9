"""The bridge to the rules engine (preflight_operator.core.rules): its per-container results
become the operator's per-workload StaticResult and the plan the injected check gets.

The rules engine is pure and never raises on odd manifests (a crash becomes a
``rules-internal-error`` finding); this module only reshapes its answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from preflight_contract.verdicts import PASS, WARN, worse
from preflight_operator.core import rules
from preflight_operator.core.injection import LWS_NAME_LABEL, ray_role
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.rules import CUDA, Finding, nvidia_gpus, parse_quantity
from preflight_operator.core.static import (
    NOT_VLLM,
    Plan,
    StaticResult,
    bounded_findings,
)


@dataclasses.dataclass(frozen=True)
class InjectionTarget:
    """The vLLM container of a pod and the plan its check gets; or why there is none."""

    container: str | None
    plan: Plan | None
    reason: str = ""
    # the command line as the rules read it, and its model, for the runtime model checks and
    # the group phase; empty when the check validates a share of a multi-node engine that
    # the command line does not state (Ray)
    argv: tuple[str, ...] = ()
    model: str | None = None
    # reason PLAN_UNKNOWN: why the plan is unknown (the rules' own finding, one line), and
    # whether the rules counted the container's NVIDIA GPUs (else only its nvidia.com/gpu
    # requests say it has some: a DRA claim of a class not read may be any vendor's)
    why: str = ""
    gpus_counted: bool = False


# The rules recognised vLLM (they returned a result for the container) and it requests
# GPUs, but its parallel plan was not read: the check is injected without it.
PLAN_UNKNOWN = "plan-unknown"
# The findings that say why a recognised vLLM has no plan, in the order they explain it.
_UNKNOWN_WHY = ("vllm-command-unparsed", "plan-unresolved")


def plan_unknown_why(result: rules.ContainerResult) -> str:
    """Why ``result`` has no plan, in the rules' words (their finding), one line."""
    findings = sorted(
        (f for f in result.findings if f.id in _UNKNOWN_WHY), key=lambda f: _UNKNOWN_WHY.index(f.id)
    )
    if not findings:
        return "the rules recognised vLLM but could not read its parallel plan"
    return " ".join(f"{findings[0].id}: {findings[0].message}".split())[:300]


def _plan_unknown_target(results: Sequence[rules.ContainerResult]) -> InjectionTarget | None:
    """The first of ``results`` (recognised vLLM containers that may request NVIDIA GPUs,
    those known to first) whose plan is unknown."""
    # never one the rules crashed on: that says nothing of vLLM being there
    chosen = next(
        (
            r
            for r in results
            if _plan(r) is None and not any(f.id == "rules-internal-error" for f in r.findings)
        ),
        None,
    )
    if chosen is None:
        return None
    return InjectionTarget(
        chosen.container,
        None,
        PLAN_UNKNOWN,
        argv=chosen.argv,
        model=chosen.model,
        why=plan_unknown_why(chosen),
        gpus_counted=bool(chosen.gpus_requested),
    )


class Analyser(Protocol):
    def analyse(self, body: Mapping[str, Any], policy: PolicySpec) -> StaticResult: ...

    def injection_target(self, pod: Mapping[str, Any], policy: PolicySpec) -> InjectionTarget: ...


@functools.lru_cache(maxsize=256)
def rules_policy(policy: PolicySpec) -> rules.Policy:
    shm = parse_quantity(policy.thresholds.shm_min)
    return rules.Policy(
        shm_min_bytes=int(shm) if shm is not None and shm > 0 else rules.DEFAULT_SHM_MIN_BYTES,
        extra_gpus_allowed=policy.thresholds.extra_gpus_allowed,
        disabled=frozenset(policy.disabled_checks),
    )


def _plan(result: rules.ContainerResult) -> Plan | None:
    if result.plan is None or result.gpus_needed is None:
        return None
    plan = result.plan
    return Plan(
        tp=plan.tp,
        pp=plan.pp,
        dp=plan.dp,
        dp_local=plan.dp_local,
        gpus_needed=result.gpus_needed,
        container=result.container,
    )


def to_static(results: Sequence[rules.ContainerResult]) -> StaticResult:
    """One StaticResult for a workload's vLLM containers: the worst verdict, the findings
    of all of them (each once), the plan of the first with one."""
    if not results:
        return NOT_VLLM
    verdict = PASS
    findings: list[Finding] = []
    seen: set[tuple[str, str, str]] = set()
    for result in results:
        # an unjudged container (its command not read) weighs as a warning: admitted, shown
        verdict = worse(verdict, WARN if result.verdict == rules.UNJUDGED else result.verdict)
        for f in result.findings:
            key = (f.id, f.field, f.message)
            if key not in seen:
                seen.add(key)
                findings.append(f)
    planned = next((r for r in results if _plan(r) is not None), results[0])
    return StaticResult(
        verdict=verdict,
        findings=bounded_findings(findings),
        plan=_plan(planned),
        gpus_requested=planned.gpus_requested,
        unjudged=sum(1 for r in results if r.verdict == rules.UNJUDGED),
    )


def check_plan(plan: Plan) -> Plan:
    """The plan the pod's check validates: the pod's own share of GPUs. For an engine
    spread over several pods (multi-node), TP x PP x DP-local is more than one pod sees;
    the check is then asked for the pod's share as one group."""
    if plan.tp * plan.pp * plan.dp_local == plan.gpus_needed:
        return plan
    return dataclasses.replace(plan, tp=max(1, plan.gpus_needed), pp=1, dp_local=1)


class RulesAnalyser:
    def __init__(self, lookup: rules.ClusterLookup = rules.NO_LOOKUP) -> None:
        self._lookup = lookup

    @property
    def lookup(self) -> rules.ClusterLookup:
        return self._lookup

    def analyse(self, body: Mapping[str, Any], policy: PolicySpec) -> StaticResult:
        return to_static(rules.check_object(body, rules_policy(policy), self._lookup))

    def injection_target(self, pod: Mapping[str, Any], policy: PolicySpec) -> InjectionTarget:
        return injection_target(rules.check_object(pod, rules_policy(policy), self._lookup))

    def results(
        self, body: Mapping[str, Any], policy: PolicySpec
    ) -> Sequence[rules.ContainerResult]:
        return rules.check_object(body, rules_policy(policy), self._lookup)


async def analyse_off_loop(
    analyser: Analyser, body: Mapping[str, Any], policy: PolicySpec
) -> StaticResult:
    """``analyser.analyse`` without blocking the event loop: the rules pool's own async
    call, else a thread (in-process rules, as in tests)."""
    native = getattr(analyser, "analyse_async", None)
    if native is not None:
        result: StaticResult = await native(body, policy)
        return result
    return await asyncio.get_running_loop().run_in_executor(None, analyser.analyse, body, policy)


async def target_off_loop(
    analyser: Analyser, pod: Mapping[str, Any], policy: PolicySpec
) -> InjectionTarget:
    native = getattr(analyser, "injection_target_async", None)
    if native is not None:
        result: InjectionTarget = await native(pod, policy)
        return result
    return await asyncio.get_running_loop().run_in_executor(
        None, analyser.injection_target, pod, policy
    )


def out_of_memory(results: Sequence[rules.ContainerResult]) -> bool:
    """The rules engine turns a crash into a finding: a MemoryError among them means the
    input exhausted the memory budget (rulesworker.py), not a bug."""
    return any(
        f.id == "rules-internal-error" and "MemoryError" in f.message
        for r in results
        for f in r.findings
    )


def ray_worker_target(pod: Mapping[str, Any]) -> InjectionTarget | None:
    """A Ray worker of a LeaderWorkerSet (`ray start --address=...`, no vLLM of its own):
    vLLM's Ray executor runs TP workers on its GPUs, so its check validates them, as one
    group of the GPUs it requests (nvidia.com/gpu). None for any other pod."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if not isinstance(labels, Mapping) or not labels.get(LWS_NAME_LABEL):
        return None
    for container in (pod.get("spec") or {}).get("containers") or []:
        if not isinstance(container, Mapping) or ray_role(container) != "worker":
            continue
        gpus = nvidia_gpus(container)
        if gpus > 0:
            name = str(container.get("name", ""))
            plan = Plan(tp=gpus, pp=1, dp=1, dp_local=1, gpus_needed=gpus, container=name)
            return InjectionTarget(name, plan)
    return None


def injection_target(results: Sequence[rules.ContainerResult]) -> InjectionTarget:
    """The vLLM container and plan the injected check gets, from the rules' results."""
    if not results:
        return InjectionTarget(None, None, "no-vllm-container")
    # the runtime check is libcuda + NVML: NVIDIA GPUs only (TPU, ROCm, Neuron, ...
    # pods are judged by the static rules alone)
    with_gpus = [r for r in results if r.gpus_requested and r.platform in (None, CUDA)]
    chosen = next((r for r in with_gpus if _plan(r) is not None), None)
    if chosen is None:
        # GPUs not counted (an unread command line counts nothing): the injector looks at
        # the container's own nvidia.com/gpu requests then
        uncounted = [r for r in results if r.gpus_requested is None and r.platform in (None, CUDA)]
        unknown = _plan_unknown_target(with_gpus + uncounted)
        if unknown is not None:
            return unknown
        reason = "no-gpu-request"
        if any(r.gpus_requested and r.platform not in (None, CUDA) for r in results):
            reason = "not-nvidia"
        return InjectionTarget(results[0].container, None, reason)
    plan = _plan(chosen)
    assert plan is not None
    pod_plan = check_plan(plan)
    if pod_plan is not plan and (
        chosen.plan is None or chosen.plan.gpus_needed != plan.gpus_needed
    ):
        # a share of a multi-node engine the command line does not state (vLLM's Ray
        # executor over pods): the checker would read the whole engine's plan from it and
        # count GPUs this pod does not hold. A share vLLM's own --nnodes states is read by
        # the checker as the rules read it (ParallelPlan.gpus_needed), so the command line
        # goes along: the model checks and the group phase compare it.
        return InjectionTarget(chosen.container, pod_plan)
    return InjectionTarget(chosen.container, pod_plan, argv=chosen.argv, model=chosen.model)
