"""LeaderWorkerSet groups: one vLLM engine over several pods.

Two shapes exist:
* Ray (the LWS vLLM example): the leader runs `ray start --head` then `vllm serve`, the
  workers `ray start --address=$(LWS_LEADER_ADDRESS)`; vLLM places TP x PP workers on the
  GPUs of the whole group. The group's GPUs must cover the engine: if they fall short
  the placement group never fits and vLLM waits for resources.
* multiprocessing across nodes (`--nnodes N --node-rank R`, workers `--headless`): every
  pod runs vLLM on its share; --nnodes must equal the group size.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from preflight_operator.rules.checks.shm import shm_findings
from preflight_operator.rules.context import ContainerContext
from preflight_operator.rules.model import FAIL, WARN, Finding, Policy
from preflight_operator.rules.registry import RULE_INFO, declare, register
from preflight_operator.rules.resources import gpu_resources, pod_gpus

GROUP_EXTRA = declare(
    "lws-gpu-extra", WARN, "the LeaderWorkerSet group requests more GPUs than vLLM uses"
)


@register("lws-nnodes-mismatch", FAIL, "--nnodes differs from the LeaderWorkerSet size")
def nnodes_mismatch(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    group = ctx.template.group
    nnodes = ctx.parsed.plan.nnodes
    if group is None or nnodes <= 1 or nnodes == group.size or not ctx.parsed.plan_valid:
        return
    yield RULE_INFO["lws-nnodes-mismatch"].finding(
        f"vLLM is told --nnodes {nnodes} but the group has {group.size} pods "
        f"({group.size_path}): the missing nodes never join and start-up hangs in "
        "torch.distributed initialisation",
        ctx.arg_path("nnodes"),
        f"make --nnodes equal {group.size_path} ({group.size}), e.g. --nnodes $(LWS_GROUP_SIZE)",
    )


def _gpu_container(spec: Mapping[str, Any], path: str) -> tuple[Mapping[str, Any], str] | None:
    containers = spec.get("containers")
    if not isinstance(containers, list):
        return None
    for i, container in enumerate(containers):
        cpath = f"{path}.containers[{i}]"
        if isinstance(container, Mapping) and gpu_resources(container, cpath).requested:
            return container, cpath
    return None


@register("lws-gpu-total", FAIL, "the LeaderWorkerSet group has fewer GPUs than the engine")
def group_total(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    group = ctx.template.group
    if group is None or not ctx.spread or ctx.template.role != "leader":
        return
    if ctx.gpus_needed is None:
        return  # the plan is not known (bad or unresolved arguments)
    need = ctx.group_gpus_needed
    leader = pod_gpus(group.leader_spec, group.leader_path)
    worker = pod_gpus(group.worker_spec, group.worker_path)
    have = leader + (group.size - 1) * worker
    worker_limit = f"{group.worker_path}.containers[*].resources.limits"
    if have < need:
        yield RULE_INFO["lws-gpu-total"].finding(
            f"vLLM needs {need} GPUs (TP={ctx.parsed.plan.tp} x PP={ctx.parsed.plan.pp}) over "
            f"the group of {group.size} pods, which has {have} (leader {leader} + "
            f"{group.size - 1} workers x {worker}): Ray never fits the placement group and "
            "vLLM waits for resources until it times out",
            worker_limit,
            f"give each pod {need // group.size if need % group.size == 0 else 'its share of'}"
            f" GPUs, or change {group.size_path} / the parallel sizes",
        )
    elif have > need + policy.extra_gpus_allowed * group.size:
        yield GROUP_EXTRA.finding(
            f"the group of {group.size} pods requests {have} GPUs but vLLM uses {need}",
            worker_limit,
            "request only the GPUs the engine uses",
        )
    # worker pods run vLLM's GPU processes too: they need /dev/shm just like the leader
    share = worker
    found = _gpu_container(group.worker_spec, group.worker_path)
    if found is not None and group.worker_path != group.leader_path:
        container, cpath = found
        yield from shm_findings(
            group.worker_spec,
            pod_path=group.worker_path,
            container=container,
            container_path=cpath,
            processes=share,
            policy=policy,
        )
