"""LeaderWorkerSet groups: the leader and worker templates must agree.

One vLLM engine spread over several pods only starts when every node builds the same
engine. vLLM does not compare its nodes' configurations: each node computes its own world
size, loads its own model and allocates its own KV cache from its own command line, and a
node that disagrees waits in ``torch.distributed`` rendezvous or at the first collective
until a timeout (600 s for NCCL, 1800 s for gloo by default: ``ParallelConfig`` of
vllm-project/vllm ``vllm/config/parallel.py``, ``distributed_timeout_seconds`` and
``cpu_distributed_timeout_seconds``). These rules read the worker template's container
with the engine's own parser and compare it with the leader's, for the three shapes
(docs/RULES.md, "LeaderWorkerSet consistency"):

* Ray (workers run ``ray start --address``): the workers get their vLLM arguments from
  the leader, so only the image and the env NCCL reads are compared;
* vLLM multiprocessing across nodes (``--nnodes N --node-rank R --master-addr A``,
  workers ``--headless``): the engine arguments, and each worker's node rank;
* multi-node data parallelism (``-dp N -dpl M``, workers ``--headless
  --data-parallel-start-rank S``): the engine arguments, and each worker's start rank
  (index x M).

The leader's container reports every finding (the worker template is not a vLLM container
in the Ray shape), with the leader's path as the field and the worker's in the message.

The docs of its rules (hack/gen_rule_docs.py renders them into docs/RULES.md):

### LeaderWorkerSet consistency (`lws-args-mismatch`, `lws-args-default`, `lws-rank-mismatch`, `lws-worker-not-headless`, `lws-master-addr-mismatch`, `lws-image-mismatch`, `lws-nccl-env-mismatch`)
One engine over several pods starts only when every node builds the same engine, and vLLM
never compares its nodes: each computes its own world size (`world_size` "is TPxPP, it
affects the number of workers we create"), loads its own model and plans its own memory,
then meets the others in `torch.distributed` rendezvous and NCCL. A node that disagrees
waits there until the timeout, "PyTorch's default timeout is used (600s for NCCL)" and
1800 s for gloo (`ParallelConfig.distributed_timeout_seconds` and
`cpu_distributed_timeout_seconds`, vllm-project/vllm `vllm/config/parallel.py` at
00193b82b0e2d4faea5d3b4ea4f6c4c2bd9d057a; the same file gives `master_addr` its default
`127.0.0.1` and `master_port` 29501, `data_parallel_master_port` 29500 and
`data_parallel_rpc_port` 29550). The rules read the worker template's container with the
engine's own parser (`find_invocation` after `build_env` with `LWS_WORKER_INDEX` set to 1,
2 and `size - 1`, then `parse_vllm_args`) and compare it with the leader's
(`operator/preflight_operator/core/rules/ruleset/consistency.py`). The leader's container reports
each finding; its field is the leader's path and the message gives the worker's.

| shape | compared |
|---|---|
| Ray: workers run `ray start --address` (or a script around it); vLLM runs on the leader only and hands the workers its arguments | image, NCCL env |
| vLLM multiprocessing: `--nnodes N --node-rank R --master-addr A`, workers `--headless` | engine arguments, image, NCCL env; worker i is `--node-rank i`, has the leader's `--master-addr`, is `--headless` |
| multi-node DP: `-dp N -dpl M --data-parallel-address A`, workers `--headless --data-parallel-start-rank S` | engine arguments, image, NCCL env; worker i starts at rank i x M |

*Fail* where vLLM cannot start: TP, PP, DP, DCP, PCP and `--nnodes` (compared with vLLM's
default when one side leaves them out: the world sizes differ and rendezvous never
completes); two different explicit values of the model, `--revision`, `--tokenizer`,
`--tokenizer-revision`, `--max-model-len`, `--dtype`, `--quantization`, `--kv-cache-dtype`,
`--block-size`, `--max-num-seqs`, `--max-num-batched-tokens`, `--enable-expert-parallel`,
`--distributed-executor-backend`, `--data-parallel-backend` (different weights, shapes or
memory plans: the first collective between the nodes carries tensors of different sizes or
dtypes, and hangs or fails); a worker whose node rank or DP start rank is not its index
(two nodes claim one rank, one rank never comes); a worker without `--master-addr` where the
leader passes one (it dials its own 127.0.0.1). *Warn* where the outcome depends on what
the manifest does not say: an option written on one side only that defaults to "auto"
(`--dtype`, `--max-model-len`, ... resolve from the model's config and may agree); a
worker without `--headless` (it starts its own front-end instead of joining); two
different `--master-addr` values (both may name the leader); a different image (vLLM does
not compare versions across nodes; a different vLLM, torch or NCCL may still interoperate,
Ray refuses other Ray/Python versions on its own); a different `NCCL_*`,
`GLOO_SOCKET_IFNAME`, `TP_SOCKET_IFNAME`, `UCX_NET_DEVICES`, `UCX_TLS`, `NVSHMEM_*`,
`VLLM_ALL2ALL_BACKEND` (NCCL on each node picks interfaces and transports from its own
env: mismatches hang when the chosen paths cannot reach each other, but many mismatches,
such as `NCCL_DEBUG`, are harmless). Not compared: values unknown here (Secrets, an
unreadable `envFrom`, shell arithmetic over unknowns), options the shared parser does not
track when one side spells them as an abbreviation, a `--config` file's options beyond
those the parser reads, and `NCCL_DEBUG_FILE`, `NCCL_COMM_ID`, `NCCL_HOSTID` (per node by
design). At run time the injected check compares what it measures across the group
(docs/CHECKS.md, "Group phase").
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from preflight_contract.verdicts import FAIL, WARN
from preflight_contract.vllm_args import ParsedArgs, parse_vllm_args
from preflight_operator.core.rules.certainty import (
    DEVICE_COUNT,
    ESTIMATED,
    HEURISTIC,
    VLLM_CODE,
    Basis,
    Input,
)
from preflight_operator.core.rules.command import Invocation, find_invocation
from preflight_operator.core.rules.context import ContainerContext
from preflight_operator.core.rules.inputs import plan_input
from preflight_operator.core.rules.kubeenv import ContainerEnv, build_env, display, has_unknown
from preflight_operator.core.rules.registry import RULE_INFO, declare, register
from preflight_operator.core.rules.resources import gpu_resources
from preflight_operator.core.rules.shrun import literal_references
from preflight_operator.core.rules.template import PodTemplate, running_containers
from preflight_operator.core.rules.vllmconfigfile import ConfigResolver
from preflight_operator.core.rules.vocabulary import Finding, Policy

ARG_DEFAULT = declare(
    "lws-args-default",
    WARN,
    "a vLLM option set on the leader is left to vLLM's default on the workers (or back)",
    Basis(HEURISTIC, "an 'auto' default may or may not equal the other side's value"),
    fix="write the option in both templates instead of leaving one to vLLM's default",
)
MASTER_ADDR = declare(
    "lws-master-addr-mismatch",
    WARN,
    "the leader and the workers name different --master-addr values",
    Basis(HEURISTIC, "two addresses may both name the leader"),
    fix="`--master-addr $(LWS_LEADER_ADDRESS)` in both templates",
)
NOT_HEADLESS = declare(
    "lws-worker-not-headless",
    WARN,
    "a LeaderWorkerSet worker runs vLLM without --headless",
    Basis(VLLM_CODE, "vLLM without --headless starts its own API server"),
    fix="add `--headless` to the worker template's vLLM command",
)

# vLLM options every node of one engine must agree on. ``int`` options have a known default
# (vLLM's), so an option given on one side only is compared with it; a ``str`` option left
# unset means "auto" (from the model's config), which may or may not equal the other side:
# that is a warning (lws-args-default), two different explicit values a failure.
_INT_OPTIONS: tuple[tuple[str, str], ...] = (
    ("tensor_parallel_size", "--tensor-parallel-size"),
    ("pipeline_parallel_size", "--pipeline-parallel-size"),
    ("data_parallel_size", "--data-parallel-size"),
    ("decode_context_parallel_size", "--decode-context-parallel-size"),
    ("prefill_context_parallel_size", "--prefill-context-parallel-size"),
    ("nnodes", "--nnodes"),
)
_STR_OPTIONS: tuple[tuple[str, str], ...] = (
    ("model", "the model"),
    ("max_model_len", "--max-model-len"),
    ("dtype", "--dtype"),
    ("quantization", "--quantization"),
    ("distributed_executor_backend", "--distributed-executor-backend"),
    ("data_parallel_backend", "--data-parallel-backend"),
)
# Options the shared parser does not track, read here by their exact long spelling
# (``--x v``, ``--x=v``, underscores for dashes). An abbreviation is not recognised, so a
# value is compared only when both sides spell it out (never fail on what was not read).
_UNTRACKED: tuple[str, ...] = (
    "--revision",
    "--tokenizer",
    "--tokenizer-revision",
    "--kv-cache-dtype",
    "--block-size",
    "--max-num-seqs",
    "--max-num-batched-tokens",
    "--enable-expert-parallel",
)
_FLAGS = frozenset(("--enable-expert-parallel",))

# The env NCCL, gloo and torch.distributed read to choose interfaces, transports and
# protocols: nodes that disagree pick different transports and hang or fail at the first
# collective (NCCL's environment variables documentation).
NCCL_ENV_PATTERNS: tuple[str, ...] = (
    "NCCL_*",
    "GLOO_SOCKET_IFNAME",
    "TP_SOCKET_IFNAME",
    "UCX_NET_DEVICES",
    "UCX_TLS",
    "NVSHMEM_*",
    "VLLM_ALL2ALL_BACKEND",
    "VLLM_USE_RAY_COMPILED_DAG_CHANNEL_TYPE",
)
# NCCL variables that are per-process by design, never compared.
_PER_NODE_ENV = frozenset(("NCCL_DEBUG_FILE", "NCCL_COMM_ID", "NCCL_HOSTID"))


def nccl_env_name(name: str) -> bool:
    if name in _PER_NODE_ENV:
        return False
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in NCCL_ENV_PATTERNS)


@dataclass(frozen=True)
class WorkerView:
    """The worker template's main container, read as the engine reads the leader's."""

    container: Mapping[str, Any]
    path: str
    env: ContainerEnv
    invocation: Invocation | None
    parsed: ParsedArgs | None


def _worker_container(spec: Mapping[str, Any], path: str) -> tuple[Mapping[str, Any], str] | None:
    """The container that runs vLLM, else the one with the GPUs (a Ray worker), else the
    first one."""
    found = [(c, f"{path}.{key}[{i}]") for key, i, c in running_containers(spec)]
    for container, cpath in found:
        if gpu_resources(container, cpath, spec).requested:
            return container, cpath
    return found[0] if found else None


def read_worker(ctx: ContainerContext, index: int) -> WorkerView | None:
    """The worker template's container as worker ``index`` of the group would run it."""
    group = ctx.template.group
    if group is None:
        return None
    chosen = None
    config_map = ctx.config_map
    for key, i, container in running_containers(group.worker_spec):
        cpath = f"{group.worker_path}.{key}[{i}]"
        env = _worker_env(ctx, container, cpath, index, config_map)
        found = find_invocation(container, cpath, env)
        if isinstance(found, Invocation):
            resolver = ConfigResolver(container, group.worker_spec, config_map)
            parsed = parse_vllm_args(list(found.argv), resolver)
            return WorkerView(container, cpath, env, found, parsed)
    chosen = _worker_container(group.worker_spec, group.worker_path)
    if chosen is None:
        return None
    container, cpath = chosen
    env = _worker_env(ctx, container, cpath, index, config_map)
    return WorkerView(container, cpath, env, None, None)


def _worker_env(
    ctx: ContainerContext,
    container: Mapping[str, Any],
    path: str,
    index: int,
    config_map: Any,
) -> ContainerEnv:
    offsets = ctx.template.index_offsets
    if offsets is None:
        offsets = ((ctx.template.index_env, 0),)
    injected = {**ctx.template.injected_env, **{name: str(index - at) for name, at in offsets}}
    return build_env(
        container, path, namespace=ctx.template.namespace, config_map=config_map, injected=injected
    )


def _applies(ctx: ContainerContext) -> bool:
    group = ctx.template.group
    # one path for both (a RoleBasedGroup's template with leader and worker patches):
    # the patched specs themselves tell whether there is another template to compare
    return (
        group is not None
        and group.size > 1
        and ctx.template.is_leader
        and (group.leader_path != group.worker_path or group.leader_spec != group.worker_spec)
    )


def _sample_indices(size: int) -> list[int]:
    """Worker indices to evaluate: the first, the second and the last worker (a value
    written literally instead of from LWS_WORKER_INDEX shows on the second)."""
    return sorted({i for i in (1, 2, size - 1) if 1 <= i < size})


def untracked_option(argv: tuple[str, ...], option: str) -> tuple[str | None, int | None]:
    """(value, index) of ``option`` written by its exact long name; the last one wins, as
    with argparse. A flag (no value) gives "true"."""
    value: str | None = None
    where: int | None = None
    names = {option, "--" + option[2:].replace("-", "_")}
    for i, word in enumerate(argv):
        name, eq, explicit = word.partition("=")
        if name not in names:
            continue
        if option in _FLAGS:
            value, where = "true", i
        elif eq:
            value, where = explicit, i
        elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            value, where = argv[i + 1], i
    if option in _FLAGS and value is None:
        for i, word in enumerate(argv):
            if word in ("--no-" + option[2:], "--no_" + option[2:].replace("-", "_")):
                value, where = "false", i
    return value, where


def _path_of(invocation: Invocation, index: int | None, fallback: str) -> str:
    if index is not None and index < len(invocation.paths):
        return invocation.paths[index]
    return invocation.shell_path or fallback


def _parsed_value(parsed: ParsedArgs, dest: str) -> str | None:
    if dest == "model":
        return parsed.model
    if dest in ("max_model_len", "dtype", "quantization"):
        value = getattr(parsed, dest)
        return None if value is None else str(value)
    if dest == "distributed_executor_backend":
        return parsed.plan.distributed_executor_backend
    if dest == "data_parallel_backend":
        return parsed.plan.data_parallel_backend if dest in parsed.origins else None
    return None


def _int_value(parsed: ParsedArgs, dest: str) -> int:
    plan = parsed.plan
    return {
        "tensor_parallel_size": plan.tp,
        "pipeline_parallel_size": plan.pp,
        "data_parallel_size": plan.dp,
        "decode_context_parallel_size": plan.dcp,
        "prefill_context_parallel_size": plan.pcp,
        "nnodes": plan.nnodes,
    }[dest]


def _known(text: str | None) -> bool:
    # an undefined $(NAME) is one text on every pod of the group: comparable as written
    return text is None or not has_unknown(literal_references(text))


@register(
    "lws-args-mismatch",
    FAIL,
    "the LeaderWorkerSet's leader and workers give vLLM different engine arguments",
    Basis(VLLM_CODE, "each vLLM node computes its own world size (vllm/config/parallel.py)"),
    fix=(
        "give the option (TP/PP/DP sizes, model, revision, dtype, quantization, max-model-len, "
        "...) the same value in the leader and worker templates"
    ),
)
def args_mismatch(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    """vLLM multiprocessing and multi-node DP: every node must build the same engine."""
    group = ctx.template.group
    if group is None or not _applies(ctx) or not ctx.parsed.plan_valid:
        return
    worker = read_worker(ctx, 1)
    if worker is None or worker.parsed is None or worker.invocation is None:
        return  # Ray workers: the leader hands them its arguments
    if not worker.parsed.plan_valid:
        return  # vllm-args-invalid is reported on the worker's own container
    if any(p.config_path and not p.config_loaded for p in (ctx.parsed, worker.parsed)):
        return  # a --config not read here: its values are unknown, never a mismatch
    wparsed, winv = worker.parsed, worker.invocation
    where_worker = f"{group.worker_path} (worker)"
    inputs = (plan_input(ctx),)
    for dest, flag in _INT_OPTIONS:
        mine, theirs = _int_value(ctx.parsed, dest), _int_value(wparsed, dest)
        if mine == theirs:
            continue
        worker_origin = wparsed.origins.get(dest)
        wpath = _path_of(winv, worker_origin.index if worker_origin else None, worker.path)
        yield RULE_INFO["lws-args-mismatch"].finding(
            f"{ctx.flag(dest, flag)} is {mine} on the leader ({ctx.arg_path(dest)}) but "
            f"{theirs} on the workers ({wpath}"
            f"{'' if worker_origin else ', vLLM default'}): each node computes its own "
            "world size, so the nodes never agree on the process group and start-up hangs "
            "in torch.distributed until its timeout",
            ctx.arg_path(dest),
            f"give {flag} the same value ({mine}) in the leader and the worker template "
            f"({where_worker})",
            inputs=inputs,
        )
    for dest, label in _STR_OPTIONS:
        mine_s, theirs_s = _parsed_value(ctx.parsed, dest), _parsed_value(wparsed, dest)
        worker_origin = wparsed.origins.get(dest)
        wpath = _path_of(winv, worker_origin.index if worker_origin else None, worker.path)
        yield from _compare_text(label, mine_s, ctx.arg_path(dest), theirs_s, wpath, inputs=inputs)
    for option in _UNTRACKED:
        mine_s, mine_at = untracked_option(ctx.invocation.argv, option)
        theirs_s, theirs_at = untracked_option(winv.argv, option)
        yield from _compare_text(
            option,
            mine_s,
            _path_of(ctx.invocation, mine_at, ctx.command_path),
            theirs_s,
            _path_of(winv, theirs_at, worker.path),
            inputs=inputs,
        )


def _compare_text(
    label: str,
    mine: str | None,
    mine_path: str,
    theirs: str | None,
    theirs_path: str,
    *,
    inputs: tuple[Input, ...],
) -> Iterator[Finding]:
    if mine == theirs or not _known(mine) or not _known(theirs):
        return
    if mine is not None and theirs is not None:
        yield RULE_INFO["lws-args-mismatch"].finding(
            f"{label} is {display(mine)!r} on the leader ({mine_path}) but {display(theirs)!r} "
            f"on the workers ({theirs_path}): the nodes build different engines (different "
            "weights, shapes or memory plans), and the first collective between them hangs "
            "or fails",
            mine_path,
            f"give {label} the same value in the leader and the worker template",
            inputs=inputs,
        )
        return
    side, value, path = (
        ("leader", mine, mine_path) if mine is not None else ("workers", theirs, theirs_path)
    )
    other = "workers" if side == "leader" else "leader"
    yield ARG_DEFAULT.finding(
        f"{label} is {display(value or '')!r} on the {side} ({path}) and left to vLLM's "
        f"default on the {other}: the nodes agree only if the default resolves to the same "
        "value",
        path,
        f"write {label} in both the leader and the worker template",
    )


@register(
    "lws-rank-mismatch",
    FAIL,
    "a worker's --node-rank / --data-parallel-start-rank is not its place in the group",
    Basis(VLLM_CODE, "torch.distributed ranks: two nodes claim one rank"),
    fix=(
        "workers: `--node-rank $(LWS_WORKER_INDEX)`, `--master-addr $(LWS_LEADER_ADDRESS)`, "
        "`--data-parallel-start-rank $((LWS_WORKER_INDEX*DPL))`"
    ),
)
def rank_mismatch(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    """``--nnodes``: worker i must be ``--node-rank i``, ``--headless`` and pointed at the
    leader (``--master-addr``); multi-node DP: worker i starts at rank ``i x dpl``."""
    group = ctx.template.group
    if group is None or not _applies(ctx) or not ctx.parsed.plan_valid:
        return
    plan = ctx.parsed.plan
    mp_nodes = plan.nnodes > 1
    dp_nodes = not mp_nodes and ctx.own_dp_ranks and plan.dp > 1 and not plan.external_lb
    if not (mp_nodes or dp_nodes):
        return
    for index in _sample_indices(group.size):
        worker = read_worker(ctx, index)
        if worker is None or worker.parsed is None or worker.invocation is None:
            return
        wparsed, winv = worker.parsed, worker.invocation
        if not wparsed.plan_valid:
            return
        if mp_nodes:
            stop = _node_rank_finding(
                index, worker, wparsed, winv, ctx.template
            ) or _master_addr_missing(ctx, worker, winv)
            if stop is not None:
                yield stop
                return
            mismatch = _master_addr_mismatch(ctx, worker, winv)
            if mismatch is not None:
                yield mismatch
        else:
            wrong = _start_rank_finding(index, plan.dp_local, worker, wparsed, winv)
            if wrong is None:
                continue
            yield wrong
            return
        if not wparsed.plan.headless and not (plan.hybrid_lb or wparsed.plan.hybrid_lb):
            yield NOT_HEADLESS.finding(
                f"worker {index} runs vLLM without --headless ({worker.path}): a second "
                "API server and engine front-end start there instead of joining the "
                "leader's engine",
                worker.path,
                "add --headless to the worker template's vLLM command",
            )
            return


def _pods_inputs(template: PodTemplate) -> tuple[Input, ...]:
    """The group's pod count as an input of a rank finding: estimated where the group is
    (pods found by a name they share in the checked files: others may share it), so a
    failure resting on it is a warning."""
    group = template.group
    if group is None or not group.estimated:
        return ()
    return (Input(DEVICE_COUNT, "the group's pod count", ESTIMATED, group.estimated),)


def index_word(template: PodTemplate) -> str:
    """How a worker's command line names its place in the group, for a fix: the variable
    its declarer's controller sets (``$(LWS_WORKER_INDEX)``, ``$(RBG_LWP_WORKER_INDEX)``,
    Volcano's ``$((VC_TASK_INDEX+1))`` after a one-pod leader task), or words when the
    declarer sets none (a Kueue Workload)."""
    offsets = template.index_offsets
    if offsets is None:
        return f"$({template.index_env})"
    if not offsets:
        return "the pod's place in the group (its declarer sets no index variable)"
    name, at = offsets[0]
    return f"$({name})" if at == 0 else f"$(({name}+{at})) (in sh -c)"


def _node_rank_finding(
    index: int, worker: WorkerView, wparsed: ParsedArgs, winv: Invocation, template: PodTemplate
) -> Finding | None:
    """``--nnodes``: worker ``index`` must run ``--node-rank index``."""
    origin = wparsed.origins.get("node_rank")
    got = wparsed.plan.node_rank
    if got == index:
        return None
    path = _path_of(winv, origin.index if origin else None, worker.path)
    return RULE_INFO["lws-rank-mismatch"].finding(
        f"worker {index} of the group runs --node-rank {got} ({path}"
        f"{'' if origin else ', vLLM default'}), so two nodes claim rank {got} "
        f"and node {index} never joins: start-up hangs",
        path,
        f"pass --node-rank {index_word(template)} in the worker template",
        inputs=_pods_inputs(template),
    )


def _master_addr_missing(
    ctx: ContainerContext, worker: WorkerView, winv: Invocation
) -> Finding | None:
    """The leader names the master; a worker left at vLLM's default 127.0.0.1 dials
    itself. (Neither naming it is not judged: a --config may.)"""
    addr, _ = untracked_option(winv.argv, "--master-addr")
    mine, _ = untracked_option(ctx.invocation.argv, "--master-addr")
    if addr is not None or mine is None:
        return None
    return RULE_INFO["lws-rank-mismatch"].finding(
        f"the leader passes --master-addr but the workers run --nnodes "
        f"{ctx.parsed.plan.nnodes} without it ({worker.path}): vLLM's default 127.0.0.1 is "
        "the worker itself, so it never reaches the leader",
        worker.path,
        "pass --master-addr $(LWS_LEADER_ADDRESS) in the worker template",
    )


def _master_addr_mismatch(
    ctx: ContainerContext, worker: WorkerView, winv: Invocation
) -> Finding | None:
    """Leader and workers both name a --master-addr, and not the same one."""
    addr, addr_at = untracked_option(winv.argv, "--master-addr")
    mine, mine_at = untracked_option(ctx.invocation.argv, "--master-addr")
    if addr is None or mine is None or mine == addr or not (_known(mine) and _known(addr)):
        return None
    return MASTER_ADDR.finding(
        f"--master-addr is {display(mine)!r} on the leader but {display(addr)!r} on "
        f"the workers ({_path_of(winv, addr_at, worker.path)}): they meet only if "
        "both name the leader",
        _path_of(ctx.invocation, mine_at, ctx.command_path),
        "use $(LWS_LEADER_ADDRESS) for --master-addr in both templates",
    )


def _start_rank_finding(
    index: int, dp_local: int, worker: WorkerView, wparsed: ParsedArgs, winv: Invocation
) -> Finding | None:
    """Multi-node DP: worker ``index`` starts its DP ranks at ``index x dp_local``."""
    origin = wparsed.origins.get("data_parallel_start_rank")
    expected = index * dp_local
    if origin is None:
        got_text = "no --data-parallel-start-rank"
    else:
        start = _start_rank(wparsed, winv.argv)
        if start is None or start == expected:
            return None
        got_text = f"--data-parallel-start-rank {start}"
    path = _path_of(winv, origin.index if origin else None, worker.path)
    return RULE_INFO["lws-rank-mismatch"].finding(
        f"worker {index} of the group starts its DP ranks with {got_text} ({path}), "
        f"but with -dpl {dp_local} per pod its ranks are {expected}.."
        f"{expected + dp_local - 1}: two pods claim the same ranks and the "
        "engines wait for the missing ones",
        path,
        f"pass --data-parallel-start-rank $((LWS_WORKER_INDEX*{dp_local})) "
        "(in sh -c) in the worker template",
    )


def _start_rank(parsed: ParsedArgs, argv: tuple[str, ...]) -> int | None:
    """The worker's --data-parallel-start-rank, re-read from the word the parser saw (it
    keeps no field for it); None when it is not a plain integer here."""
    origin = parsed.origins.get("data_parallel_start_rank")
    if origin is None or origin.from_config or origin.index is None:
        return None
    if origin.index >= len(argv):
        return None
    word = argv[origin.index]
    if "=" in word:
        text = word.split("=", 1)[1]
    elif word.startswith("-dpr") and len(word) > 4:
        text = word[4:]
    elif origin.index + 1 < len(argv):
        text = argv[origin.index + 1]
    else:
        return None
    try:
        return int(text)
    except ValueError:
        return None


@register(
    "lws-image-mismatch",
    WARN,
    "the LeaderWorkerSet's leader and workers run different images",
    Basis(HEURISTIC, "another image may run another vLLM, torch or NCCL"),
    fix="the same image (tag, ideally digest) in both templates",
)
def image_mismatch(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    """All three shapes: a worker on another image may run another vLLM, torch or NCCL."""
    group = ctx.template.group
    if group is None or not _applies(ctx):
        return
    worker = read_worker(ctx, 1)
    if worker is None:
        return
    mine, theirs = ctx.container.get("image"), worker.container.get("image")
    if not isinstance(mine, str) or not isinstance(theirs, str) or mine == theirs:
        return
    yield RULE_INFO["lws-image-mismatch"].finding(
        f"the leader runs image {mine!r} ({ctx.path}.image) but the workers {theirs!r} "
        f"({worker.path}.image): vLLM does not compare versions across nodes, and a "
        "different vLLM, torch or NCCL on one node can fail or hang at the first collective "
        "(Ray refuses workers of another Ray or Python version)",
        f"{ctx.path}.image",
        "run the same image (same tag, ideally the same digest) in both templates",
    )


@register(
    "lws-nccl-env-mismatch",
    WARN,
    "the LeaderWorkerSet's leader and workers set the env NCCL/gloo read differently",
    Basis(HEURISTIC, "NCCL env read per node; many mismatches are harmless"),
    fix="set `NCCL_*` / `GLOO_SOCKET_IFNAME` the same way in both templates",
)
def nccl_env_mismatch(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    group = ctx.template.group
    if group is None or not _applies(ctx):
        return
    worker = read_worker(ctx, 1)
    if worker is None:
        return
    if ctx.env.open_ended or worker.env.open_ended:
        return  # an envFrom we cannot read may set any of them
    names = sorted(n for n in ctx.env.explicit | worker.env.explicit if nccl_env_name(n))
    for name in names:
        mine = ctx.env.values.get(name) if name in ctx.env.explicit else None
        theirs = worker.env.values.get(name) if name in worker.env.explicit else None
        if mine == theirs or not _known(mine) or not _known(theirs):
            continue
        mine_path = ctx.env.paths.get(name, ctx.path)
        theirs_path = worker.env.paths.get(name, worker.path)
        mine_text = "unset" if mine is None else repr(display(mine))
        theirs_text = "unset" if theirs is None else repr(display(theirs))
        yield RULE_INFO["lws-nccl-env-mismatch"].finding(
            f"{name} is {mine_text} on the leader ({mine_path}) but {theirs_text} on the "
            f"workers ({theirs_path}): NCCL on each node then picks interfaces, transports "
            "or protocols independently, and a collective between nodes that disagree hangs "
            "or fails",
            mine_path if mine is not None else theirs_path,
            f"set {name} the same way in the leader and the worker template",
        )
