"""LeaderWorkerSet groups: one vLLM engine over several pods.

Two shapes exist:
* Ray (the LWS vLLM example): the leader runs `ray start --head` then `vllm serve`, the
  workers `ray start --address=$(LWS_LEADER_ADDRESS)`; vLLM places TP x PP workers on the
  GPUs of the whole group. The group's GPUs must cover the engine: if they fall short
  the placement group never fits and vLLM waits for resources.
* multiprocessing across nodes (`--nnodes N --node-rank R`, workers `--headless`): every
  pod runs vLLM on its share; --nnodes must equal the group size.
* multi-node data parallelism (vLLM's multi-node DP/EP guide): every pod runs its own
  ``-dpl M`` DP ranks of ``-dp N`` (``--data-parallel-address`` the leader, workers
  ``--headless --data-parallel-start-rank``); a pod needs TP x PP x M GPUs and the group's
  pods must together start all N ranks, or the engines wait for ranks that never come.

The docs of its rules (hack/gen_rule_docs.py renders them into docs/RULES.md):

### `lws-gpu-total`
A LeaderWorkerSet group running one engine through Ray (no `--nnodes`): the leader's GPUs
plus `(size - 1)` x the worker's GPUs are fewer than TP x PP x PCP x DP-local. The same
finding reports a worker template without `/dev/shm` (`shm-missing` on the worker path).
*Symptom:* "Waiting for creating a placement group of specs for N seconds ... Check
'ray status' ... to see if you have enough resources", then a timeout.
*Fix:* give each pod its share of GPUs, or change the group size / parallel sizes.

### `lws-dp-mismatch`
vLLM's multi-node data parallelism over a LeaderWorkerSet (each pod `-dp N -dpl M`,
`--data-parallel-address` the leader, workers `--headless --data-parallel-start-rank`):
the group's `size` pods x M ranks each start fewer than N ranks. Every pod's own count is
`gpu-count-too-low`'s business (TP x PP x M); this is the group's. The leader's `-dpl` is
assumed for every pod: when the worker template gives another (or none that can be read),
the failure rests on an estimate and is a warning ("Certainty and actions").
*Symptom:* the engines wait for DP ranks that never start; start-up hangs.
*Fix:* `--data-parallel-size` = `size` x `--data-parallel-size-local`, e.g.
`$((LWS_GROUP_SIZE*8))` inside `sh -c`.

### `lws-dp-extra`
The same group starts more ranks than `-dp`: ranks past `N - 1` are refused.
*Fix:* `--data-parallel-size` = `size` x `--data-parallel-size-local`.

### `lws-gpu-extra`
The group requests more GPUs than the engine uses.
*Fix:* request only what the engine uses.

### `lws-nnodes-mismatch`
`--nnodes` differs from `spec.leaderWorkerTemplate.size`.
*Symptom:* start-up hangs in `torch.distributed` initialisation waiting for nodes that never
come (or a node rank out of range).
*Fix:* `--nnodes $(LWS_GROUP_SIZE)`.

### `ray-gpu-total`
A Ray cluster (RayCluster, RayService, RayJob, AIBrix RayClusterFleet) whose GPUs at the
largest it can grow (head + every worker group at `maxReplicas`/`replicas` x `numOfHosts`,
as `rayStartParams.num-gpus` advertises them, else the GPU limits) are fewer than TP x PP
(x DP with the Ray DP backend, x the Ray Serve LLM replicas) of one vLLM engine. More
GPUs than one engine is normal for a Ray cluster and is not reported. In a CRD judged
generically whose vLLM template starts a Ray head and whose sibling templates join it, the
pods are counted from a sibling field (`workerReplicas` beside `workerTemplate`); for a
plain workload whose pod starts a Ray head, `lint` counts the Ray worker workloads of its
namespace in the checked files. Both are estimated inputs, so a shortfall there is a
warning.
*Symptom:* `Waiting for creating a placement group of specs for N seconds ... Check 'ray
status'`, then a timeout.
*Fix:* more GPUs per worker group or more replicas, or lower the parallel sizes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from preflight_contract.verdicts import FAIL, WARN
from preflight_operator.core.rules.certainty import (
    ARGV,
    DEVICE_COUNT,
    ESTIMATED,
    EXACT,
    HEURISTIC,
    VLLM_CODE,
    Basis,
    Input,
)
from preflight_operator.core.rules.context import ContainerContext, group_devices
from preflight_operator.core.rules.inputs import plan_input
from preflight_operator.core.rules.registry import RULE_INFO, declare, register
from preflight_operator.core.rules.resources import gpu_resources, pod_gpus
from preflight_operator.core.rules.ruleset.consistency import read_worker
from preflight_operator.core.rules.ruleset.shm import ranks_inputs, shm_findings
from preflight_operator.core.rules.spread import HEAD, RAY
from preflight_operator.core.rules.template import Group, running_containers
from preflight_operator.core.rules.vocabulary import Finding, Policy

GROUP_EXTRA = declare(
    "lws-gpu-extra",
    WARN,
    "the LeaderWorkerSet group requests more GPUs than vLLM uses",
    Basis(HEURISTIC, "group GPUs vLLM does not use stay idle"),
    fix="shrink the group or the per-pod GPU request",
)
DP_EXTRA = declare(
    "lws-dp-extra",
    WARN,
    "the LeaderWorkerSet group starts more DP ranks than --data-parallel-size",
    Basis(VLLM_CODE, "vLLM refuses start ranks beyond -dp"),
    fix="`--data-parallel-size` = `size` x `--data-parallel-size-local`",
)


@register(
    "lws-dp-mismatch",
    FAIL,
    "the LeaderWorkerSet group starts fewer DP ranks than -dp",
    Basis(VLLM_CODE, "vLLM's DP coordinator waits for every rank of -dp"),
    fix="`--data-parallel-size` = `size` x `--data-parallel-size-local`",
)
def dp_mismatch(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    """Multi-node DP: size pods x -dpl ranks each must start all -dp ranks."""
    group = ctx.template.group
    plan = ctx.parsed.plan
    if (
        group is None
        or group.family != "lws"
        or group.size <= 1
        or not ctx.template.is_leader
        or not ctx.own_dp_ranks
        or plan.nnodes > 1
        or plan.external_lb
        or not ctx.parsed.plan_valid
        or "data_parallel_size_local" not in ctx.parsed.origins
    ):
        return
    started = plan.dp_local * group.size
    if started == plan.dp:
        return
    where = ctx.arg_path("data_parallel_size")
    inputs = (plan_input(ctx), _workers_dp_local(ctx), pods_input(group))
    sizes = (
        f"--data-parallel-size {plan.dp}, but {group.size} pods ({group.size_path}) x "
        f"--data-parallel-size-local {plan.dp_local} start {started} DP ranks"
    )
    if started < plan.dp:
        yield RULE_INFO["lws-dp-mismatch"].finding(
            f"{sizes} (assuming every pod runs the leader's -dpl): the engines wait for "
            f"{plan.dp - started} ranks that never start, and start-up hangs",
            where,
            f"make --data-parallel-size equal {group.size_path} x --data-parallel-size-local"
            f" ({started}), e.g. $((LWS_GROUP_SIZE*{plan.dp_local})) in a shell command",
            inputs=inputs,
        )
    else:
        yield DP_EXTRA.finding(
            f"{sizes}: the pods start more ranks than the engine has (start ranks beyond "
            f"{plan.dp - 1} are refused)",
            where,
            f"make --data-parallel-size equal {group.size_path} x --data-parallel-size-local",
            inputs=inputs,
        )


def _workers_dp_local(ctx: ContainerContext) -> Input:
    """The rule counts every pod at the leader's -dpl: exact when the worker template is
    the leader's, or its vLLM command says the same -dpl (read as the engine reads it)."""
    group = ctx.template.group
    what = "the workers' --data-parallel-size-local"
    if group is None or group.worker_path == group.leader_path:
        return Input(ARGV, what, EXACT)
    worker = read_worker(ctx, 1)
    parsed = worker.parsed if worker is not None else None
    if (
        parsed is not None
        and parsed.plan_valid
        and "data_parallel_size_local" in parsed.origins
        and parsed.plan.dp_local == ctx.parsed.plan.dp_local
    ):
        return Input(ARGV, what, EXACT)
    return Input(
        ARGV,
        what,
        ESTIMATED,
        "is assumed to be the leader's (the worker template gives another or none that "
        "could be read)",
    )


@register(
    "lws-nnodes-mismatch",
    FAIL,
    "--nnodes differs from the LeaderWorkerSet size",
    Basis(VLLM_CODE, "torch.distributed rendezvous waits for --nnodes nodes"),
    fix="`--nnodes` = the LeaderWorkerSet's `size`",
)
def nnodes_mismatch(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    group = ctx.template.group
    nnodes = ctx.parsed.plan.nnodes
    if (
        group is None
        or group.family != "lws"
        or nnodes <= 1
        or nnodes == group.size
        or not ctx.parsed.plan_valid
    ):
        return
    yield RULE_INFO["lws-nnodes-mismatch"].finding(
        f"vLLM is told --nnodes {nnodes} but the group has {group.size} pods "
        f"({group.size_path}): the missing nodes never join and start-up hangs in "
        "torch.distributed initialisation",
        ctx.arg_path("nnodes"),
        f"make --nnodes equal {group.size_path} ({group.size}){_size_hint(ctx)}",
        inputs=(plan_input(ctx), pods_input(group)),
    )


# the variable each declarer's controller sets to the group's size (LeaderWorkerSet,
# RoleBasedGroup, Kthena, Volcano's pytorch plugin)
_SIZE_ENV = ("LWS_GROUP_SIZE", "RBG_LWP_GROUP_SIZE", "GROUP_SIZE", "WORLD_SIZE")


def _size_hint(ctx: ContainerContext) -> str:
    """ ", e.g. --nnodes $(VAR)" with the size variable the group's controller sets, or ""
    when it sets none (a Kueue Workload, a JobSet, Volcano without the pytorch plugin)."""
    name = next((n for n in _SIZE_ENV if n in ctx.template.injected_env), None)
    return f", e.g. --nnodes $({name})" if name else ""


def _gpu_container(spec: Mapping[str, Any], path: str) -> tuple[Mapping[str, Any], str] | None:
    for key, i, container in running_containers(spec):
        cpath = f"{path}.{key}[{i}]"
        if gpu_resources(container, cpath, spec).requested:
            return container, cpath
    return None


@register(
    "lws-gpu-total",
    FAIL,
    "the LeaderWorkerSet group has fewer GPUs than the engine",
    Basis(VLLM_CODE, "vLLM's Ray executor: a placement group of TP x PP GPU bundles"),
    fix="give the group `size` x GPUs per pod >= the engine's world size",
)
def group_total(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    group = ctx.template.group
    if group is None or group.family != "lws" or not ctx.spread or not ctx.template.is_leader:
        return
    if ctx.pod_gpus is None:
        return  # the plan is not known (bad or unresolved arguments)
    need = ctx.group_gpus
    leader = pod_gpus(group.leader_spec, group.leader_path, ctx.resolve)
    worker = pod_gpus(group.worker_spec, group.worker_path, ctx.resolve)
    if leader is None or worker is None:
        return  # a DRA count unknown here: plan-unresolved says so
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
            inputs=(plan_input(ctx), pods_input(group)),
        )
    elif have > need + policy.extra_gpus_allowed * group.size:
        yield GROUP_EXTRA.finding(
            f"the group of {group.size} pods requests {have} GPUs but vLLM uses {need}",
            worker_limit,
            "request only the GPUs the engine uses",
            inputs=(plan_input(ctx), pods_input(group)),
        )
    # worker pods run vLLM's GPU processes too: /dev/shm for the ranks Ray places on
    # one (one per GPU when the group has exactly the engine's GPUs; else at most its GPUs)
    found = _gpu_container(group.worker_spec, group.worker_path)
    if found is not None and group.worker_path != group.leader_path:
        container, cpath = found
        yield from shm_findings(
            group.worker_spec,
            pod_path=group.worker_path,
            container=container,
            container_path=cpath,
            processes=min(worker, need),
            policy=policy,
            inputs=ranks_inputs(ctx),
        )


@register(
    "ray-gpu-total",
    FAIL,
    "the Ray cluster can never hold the GPUs one engine needs",
    Basis(VLLM_CODE, "vLLM's Ray executor: a placement group of TP x PP GPU bundles"),
    fix=(
        "give the Ray worker groups the GPUs of one engine (limits and "
        "`rayStartParams.num-gpus`, replicas), or lower TP/PP"
    ),
)
def ray_total(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    """A Ray cluster (RayCluster, RayService, RayJob, RayClusterFleet): vLLM's Ray
    executor asks for a placement group of TP x PP GPU bundles (x the Serve replicas); if
    the whole cluster at its largest (head + every worker group at maxReplicas x
    numOfHosts, counting what rayStartParams.num-gpus advertises) has fewer GPUs, the
    placement group never fits. More GPUs than one engine is normal on a Ray cluster
    (autoscaling, other applications) and is not reported. A Ray cluster whose other
    pods are not in the object: plan-unresolved (topology_unknown)."""
    yield from topology_unknown(ctx)
    group = ctx.template.group
    if group is None or group.family != RAY or ctx.pod_gpus is None:
        return
    need = ctx.group_gpus
    have = group_devices(group, ctx.resolve)
    if have is None or have >= need:
        return  # fits, or a DRA count unknown here
    parts = [
        f"{m.replicas} x {m.gpus if m.gpus is not None else pod_gpus(m.spec, m.path, ctx.resolve)}"
        f" ({m.path})"
        for m in group.members
    ]
    plan = ctx.parsed.plan
    replicas = ctx.template.engine_replicas
    what = f"TP={plan.tp} x PP={plan.pp}" + (f" x {replicas} replicas" if replicas > 1 else "")
    yield RULE_INFO["ray-gpu-total"].finding(
        f"vLLM needs {need} GPUs ({what}) in the Ray cluster, which has at most {have}: "
        f"{' + '.join(parts)}: the placement group never fits and vLLM waits for resources "
        "('Waiting for creating a placement group of specs') until it times out",
        ctx.arg_path("tensor_parallel_size"),
        "give the worker groups more GPUs (nvidia.com/gpu limits and rayStartParams num-gpus, "
        "or replicas/maxReplicas), or lower the parallel sizes",
        inputs=(plan_input(ctx), pods_input(group)),
    )


def pods_input(group: Group) -> Input:
    """How certain the group's pod counts are: exact from a kind's own fields (LWS size,
    KubeRay replicas), estimated from a CRD judged generically (rules.spread)."""
    what = "the group's pod count"
    if group.estimated:
        return Input(DEVICE_COUNT, what, ESTIMATED, group.estimated)
    return Input(DEVICE_COUNT, what, EXACT)


def topology_unknown(ctx: ContainerContext) -> Iterator[Finding]:
    """plan-unresolved for a pod that starts or joins a Ray cluster, runs vLLM on Ray and
    holds fewer devices than the engine: the other pods are elsewhere (another object, a
    cluster started by hand). Which pods and how many GPUs they bring is unknown here, so
    the per-pod count rules judge this pod on its own devices and the total is not
    checked: a warning, never a failure."""
    if not ctx.ray_unplaced:
        return
    plan = ctx.parsed.plan
    need = ctx.group_gpus
    have = ctx.gpus_have
    holds = (
        "an unknown number of devices"
        if have is None
        else f"{have} device{'' if have == 1 else 's'}"
    )
    started = (
        "starts a Ray head that other pods may join"
        if ctx.ray_node == HEAD
        else "joins a Ray cluster that other pods make up"
    )
    yield RULE_INFO["plan-unresolved"].finding(
        f"vLLM runs TP={plan.tp} x PP={plan.pp} = {need} ranks through Ray, and this pod "
        f"{started} ({ctx.command_path}); it holds {holds}: Ray places the other ranks on "
        "pods that are not in this object, so how many pods there are and which ranks each "
        f"runs is unknown here. This pod was judged on its own devices (/dev/shm for the "
        f"ranks they hold); whether the Ray cluster has the {need} GPUs the engine needs "
        "was not checked",
        ctx.gpu_path,
        "nothing to fix if the Ray workers bring the rest; to have the group checked, run "
        "it as a LeaderWorkerSet or a KubeRay RayCluster (or give this pod every rank)",
        inputs=(plan_input(ctx),),
    )
