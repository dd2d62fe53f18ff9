"""vLLM's command line, read the way vLLM reads it: how many GPUs one pod/node needs.

Shared by the checker (which runs inside vLLM images from a zipapp: standard library
only, Python >= 3.9) and the operator's rules engine. It never imports vLLM and never
raises: anything vLLM would refuse becomes an :class:`ArgProblem`.

Semantics followed
------------------
vLLM's ``main`` branch as of the 0.11-0.13 releases (late 2025): ``FlexibleArgumentParser``
in ``vllm/utils/argparse_utils.py``, ``EngineArgs.add_cli_args`` /
``create_engine_config`` in ``vllm/engine/arg_utils.py``, ``ParallelConfig`` in
``vllm/config/parallel.py``, the ``serve`` subcommand in ``vllm/entrypoints/cli/serve.py``
and ``make_arg_parser`` in ``vllm/entrypoints/openai/cli_args.py``. Older releases accept a
subset of these flags with the same meaning. Reproduced exactly:

* ``vllm serve MODEL`` (positional) and ``--model``; with ``serve`` the first ``--model``
  is moved to the positional slot, as vLLM does; ``--served-model-name`` without a
  positional model first is an error there.
* Every spelling of the flags that size the plan: long names, underscores for dashes
  (``--tensor_parallel_size``), ``--flag=value``, short aliases (``-tp -pp -dp -dpl -dpn
  -dpr -dcp -pcp -dpe -dph -dpb -n -r -asc -ep``), ``-tp=2``, attached values for the
  two-character aliases (``-n2``), argparse's unique-prefix abbreviations (``--tensor-par
  4``, ``-dc 2``), ``--no-<flag>`` for boolean flags, ``-O3``, ``--`` and "last one wins".
* ``--config FILE``: a YAML map whose keys are long option names; its options are inserted
  right after the subcommand (and model), so the command line wins. Only the two-token form
  is read: vLLM looks for the exact token ``--config``, so ``--config=FILE`` is accepted by
  argparse and then silently ignored (reported as a warning).
* Values are converted with Python's ``int()``/``float()``, as argparse does.

GPUs one pod (node) needs
-------------------------
* ``world = TP x PP x PCP``. Decode context parallel (DCP) reuses the TP ranks and adds no
  GPU (without PCP, TP must be divisible by DCP; with PCP, DCP must be 1, PCP or TP x PCP).
* ``dp_local`` (engines started in this pod):
  - 1 with external load balancing (``--data-parallel-external-lb`` or
    ``--data-parallel-rank``: one pod per DP rank);
  - ``--data-parallel-size-local`` when given (hybrid LB, ``--headless`` workers,
    multi-port external LB);
  - with ``--nnodes > 1``: ``max(DP x PP x TP / nnodes / (PP x TP), 1)``, as vLLM infers it;
  - otherwise DP: every DP rank runs here.
* ``nodes_per_replica`` = 1, or with ``--nnodes > 1``: ``nnodes / (DP / dp_local)``.
* ``gpus_needed = dp_local x world / nodes_per_replica``.
* With ``--distributed-executor-backend ray`` the placement is Ray's: inside one pod it is
  the same number; across pods (LeaderWorkerSet) the caller splits the group total.

Modules
-------
The package face re-exports the public names, so ``from preflight_contract.vllm_args
import ...`` reads as before; the parts, split by concern (issue 37):

* ``results``: the public vocabulary (entry points, limits) and what a parse gives back:
  ``ArgProblem``, ``Origin``, ``ParallelPlan`` (with ``gpus_needed``), ``ParsedArgs``;
* ``options``: the tables of vLLM's options (the tracked ones with every alias, and the
  others only as far as their arity matters);
* ``entry``: ``vllm_args_start``, where vLLM's own arguments begin in a full command;
* ``parser_state``, ``rewrite``, ``argparse_walk``, ``plan`` and ``parser``: the parser,
  one module per step (vLLM's rewriting of argv, argparse's reading of it, the values
  and the plan), put together in ``parser`` behind ``parse_vllm_args``.
"""

from __future__ import annotations

from preflight_contract.vllm_args.entry import vllm_args_start
from preflight_contract.vllm_args.parser import parse_vllm_args
from preflight_contract.vllm_args.results import (
    API_SERVER,
    API_SERVER_POSITIONAL,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_PORT,
    MAX_PARALLEL_SIZE,
    PLAN_DESTS,
    SERVE,
    ArgProblem,
    ConfigUnavailable,
    LoadConfig,
    Origin,
    ParallelPlan,
    ParsedArgs,
)

__all__ = [
    "API_SERVER",
    "API_SERVER_POSITIONAL",
    "DEFAULT_GPU_MEMORY_UTILIZATION",
    "DEFAULT_PORT",
    "MAX_PARALLEL_SIZE",
    "PLAN_DESTS",
    "SERVE",
    "ArgProblem",
    "ConfigUnavailable",
    "LoadConfig",
    "Origin",
    "ParallelPlan",
    "ParsedArgs",
    "parse_vllm_args",
    "vllm_args_start",
]
