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
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

# Values above this are treated as typos, not plans: no axis of a real deployment is this
# wide, and it keeps the arithmetic of a fat-fingered "40000" out of the messages.
MAX_PARALLEL_SIZE = 1024
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
DEFAULT_PORT = 8000

# Entry points, as returned in ParsedArgs.entrypoint.
SERVE = "serve"  # `vllm serve ...` (or `python -m vllm.entrypoints.cli.main serve ...`)
API_SERVER = "api_server"  # `python -m vllm.entrypoints.openai.api_server ...`
# a warning's dest: one positional word given to the api_server module (read_model)
API_SERVER_POSITIONAL = "api-server-positional"

_INT = "int"
_FLOAT = "float"
_STR = "str"
_BOOL = "bool"  # argparse.BooleanOptionalAction: --x and --no-x, no value
_FLAG = "flag"  # store_true: --x only


@dataclass(frozen=True)
class _Opt:
    dest: str
    kind: str
    names: Tuple[str, ...]  # long name first, then short aliases


# The options that decide the plan (and the few facts the rules need), with every alias
# vLLM registers for them.
_TRACKED: Tuple[_Opt, ...] = (
    _Opt("model", _STR, ("--model",)),
    _Opt("tensor_parallel_size", _INT, ("--tensor-parallel-size", "-tp")),
    _Opt("pipeline_parallel_size", _INT, ("--pipeline-parallel-size", "-pp")),
    _Opt("data_parallel_size", _INT, ("--data-parallel-size", "-dp")),
    _Opt("data_parallel_size_local", _INT, ("--data-parallel-size-local", "-dpl")),
    _Opt("data_parallel_rank", _INT, ("--data-parallel-rank", "-dpn")),
    _Opt("data_parallel_start_rank", _INT, ("--data-parallel-start-rank", "-dpr")),
    _Opt("decode_context_parallel_size", _INT, ("--decode-context-parallel-size", "-dcp")),
    _Opt("prefill_context_parallel_size", _INT, ("--prefill-context-parallel-size", "-pcp")),
    _Opt("nnodes", _INT, ("--nnodes", "-n")),
    _Opt("node_rank", _INT, ("--node-rank", "-r")),
    _Opt("data_parallel_external_lb", _BOOL, ("--data-parallel-external-lb", "-dpe")),
    _Opt("data_parallel_hybrid_lb", _BOOL, ("--data-parallel-hybrid-lb", "-dph")),
    _Opt(
        "data_parallel_multi_port_external_lb",
        _BOOL,
        ("--data-parallel-multi-port-external-lb",),
    ),
    _Opt("data_parallel_backend", _STR, ("--data-parallel-backend", "-dpb")),
    _Opt("distributed_executor_backend", _STR, ("--distributed-executor-backend",)),
    _Opt("enable_expert_parallel", _BOOL, ("--enable-expert-parallel", "-ep")),
    _Opt("headless", _FLAG, ("--headless",)),
    _Opt("api_server_count", _INT, ("--api-server-count", "-asc")),
    _Opt("port", _INT, ("--port",)),
    _Opt("host", _STR, ("--host",)),
    _Opt("gpu_memory_utilization", _FLOAT, ("--gpu-memory-utilization",)),
    # read by the model rules (preflight_contract.modelfacts)
    _Opt("max_model_len", _STR, ("--max-model-len",)),
    _Opt("dtype", _STR, ("--dtype",)),
    _Opt("quantization", _STR, ("--quantization", "-q")),
    # read by the model-source check and the probe rule (where the weights come from,
    # how long start-up takes)
    _Opt("revision", _STR, ("--revision",)),
    _Opt("download_dir", _STR, ("--download-dir",)),
    _Opt("tokenizer", _STR, ("--tokenizer",)),
    _Opt("load_format", _STR, ("--load-format",)),
    _Opt("enforce_eager", _BOOL, ("--enforce-eager",)),
    # read by the model rules: which config class transformers builds (auto_map), and
    # what takes weights off the GPU or lifts the gpu-memory-utilization budget
    _Opt("trust_remote_code", _BOOL, ("--trust-remote-code",)),
    _Opt("cpu_offload_gb", _STR, ("--cpu-offload-gb",)),
    _Opt("kv_cache_memory_bytes", _STR, ("--kv-cache-memory-bytes",)),
)


# Other vLLM options that take no value (store_true / BooleanOptionalAction). Needed to
# know that the token after them is not their value (`vllm serve --enforce-eager MODEL`).
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_OTHER_NO_VALUE = _words(
    """
    --enable-prefix-caching --enable-chunked-prefill
    --disable-log-stats --disable-log-requests --enable-log-requests --enable-auto-tool-choice
    --disable-custom-all-reduce --skip-tokenizer-init --enable-lora --disable-sliding-window
    --disable-cascade-attn --enable-prompt-embeds --enable-sleep-mode --enable-eplb
    --enable-dbo --ray-workers-use-nsight --disable-fastapi-docs --enable-request-id-headers
    --disable-uvicorn-access-log --allow-credentials --return-tokens-as-token-ids
    --enable-server-load-tracking --enable-force-include-usage
    --enable-tokenizer-info-endpoint --enable-log-outputs --enable-prompt-tokens-details
    --enable-ssl-refresh --use-tqdm-on-load --calculate-kv-scales --kv-sharing-fast-prefill
    --async-scheduling --disable-chunked-mm-input --disable-hybrid-kv-cache-manager
    --enable-mm-embeds --interleave-mm-strings --skip-mm-profiling --fully-sharded-loras
    --grpc --aggregate-engine-logging --tokens-only --disable-nccl-for-dp-synchronization
    --enable-return-routed-experts --allow-deprecated-quantization --mm-encoder-only
    --exclude-tools-when-tool-choice-none --trust-request-chat-template --enable-log-deltas
    --log-error-stack --enable-offline-docs --enable-fault-tolerance
    --shutdown-on-fault-tolerance-failure --kv-cache-metrics --cudagraph-metrics
    --enable-layerwise-nvtx-tracing --enable-mfu-metrics --enable-logging-iteration-details
    --enable-mm-processor-stats --enable-tower-connector-lora --specialize-active-lora
    --enable-elastic-ep --enable-ep-weight-filter --numa-bind --enable-per-request-metrics
    --enable-flash-late-interaction --disable-frontend-multiprocessing --enable-reasoning
    --worker-use-ray --engine-use-ray --disable-async-output-proc --enable-lora-bias
    --enable-prompt-adapter --use-v2-block-manager --help -h
    """
)

# Options that take one or more values (nargs="+"): they swallow every following
# non-option token, the model included.
_OTHER_MANY_VALUES = _words(
    """
    --served-model-name --lora-modules --allowed-media-domains --cudagraph-capture-sizes
    --cuda-graph-sizes --api-key --ignore-patterns --logits-processors
    --collect-detailed-traces --numa-bind-nodes --numa-bind-cpus --prompt-adapters
    """
)

# Other long options, so that unique-prefix abbreviations are resolved only when they are
# unique among vLLM's real options (argparse's allow_abbrev, which vLLM leaves on).
_OTHER_LONG = _words(
    """
    --runner --convert --tokenizer-mode --dtype --seed --hf-config-path
    --allowed-local-media-path --code-revision --tokenizer-revision
    --max-model-len --quantization --max-logprobs --logprobs-mode --config-format --hf-token
    --hf-overrides --pooler-config --logits-processor-pattern --generation-config
    --override-generation-config --model-impl --override-attention-dtype
    --io-processor-plugin --model-weights --model-loader-extra-config
    --safetensors-load-strategy --pt-load-map-location --attention-backend
    --reasoning-parser --reasoning-parser-plugin --master-addr --master-port
    --dcp-kv-cache-interleave-size --cp-kv-cache-interleave-size --dcp-comm-backend
    --data-parallel-address --data-parallel-rpc-port --all2all-backend --ubatch-size
    --dbo-decode-token-threshold --dbo-prefill-token-threshold --eplb-config
    --expert-placement-strategy --max-parallel-loading-workers --worker-cls
    --worker-extension-cls --block-size --swap-space
    --kv-cache-dtype --num-gpu-blocks-override --prefix-caching-hash-algo
    --mamba-cache-dtype --mamba-ssm-cache-dtype --mamba-block-size --mamba-cache-mode
    --kv-offloading-size --kv-offloading-backend --limit-mm-per-prompt --media-io-kwargs
    --mm-processor-kwargs --mm-processor-cache-gb --mm-processor-cache-type
    --mm-shm-cache-max-object-size-mb --mm-encoder-tp-mode --mm-encoder-attn-backend
    --video-pruning-rate --max-loras --max-lora-rank --lora-dtype --max-cpu-loras
    --default-mm-loras --show-hidden-metrics-for-version --otlp-traces-endpoint
    --kv-cache-metrics-sample --max-num-batched-tokens --max-num-seqs
    --max-num-partial-prefills --max-long-partial-prefills --long-prefill-token-threshold
    --scheduling-policy --scheduler-cls --stream-interval --max-cudagraph-capture-size
    --speculative-config --kv-transfer-config --kv-events-config --ec-transfer-config
    --compilation-config --attention-config --additional-config --structured-outputs-config
    --profiler-config --afd-config --optimization-level --weight-transfer-config
    --engine-recovery-timeout --internal-fault-report-port --external-fault-notify-port
    --gloo-comm-timeout --chat-template --chat-template-content-format
    --default-chat-template-kwargs --response-role --tool-call-parser --tool-parser-plugin
    --tool-server --log-config-file --max-log-len --data-parallel-supervisor-port
    --dp-supervisor-probe-interval-s --dp-supervisor-probe-timeout-s
    --dp-supervisor-probe-failure-threshold --uds --uvicorn-log-level
    --disable-access-log-for-endpoints --allowed-origins --allowed-methods
    --allowed-headers --ssl-keyfile --ssl-certfile --ssl-ca-certs --ssl-cert-reqs
    --ssl-ciphers --root-path --middleware --h11-max-incomplete-event-size
    --h11-max-header-count --config --fingerprint-mode --fingerprint-value
    --cohere-is-reasoning-model --cohere-format
    """
)

_OTHER_SHORT_WITH_VALUE = frozenset(("-q", "-cc", "-ac"))

_BY_NAME: Dict[str, Tuple[_Opt, bool]] = {}  # option string -> (option, is the --no- form)
for _opt in _TRACKED:
    for _name in _opt.names:
        _BY_NAME[_name] = (_opt, False)
    if _opt.kind == _BOOL:
        _BY_NAME["--no-" + _opt.names[0][2:]] = (_opt, True)
_TRACKED_BY_DEST: Dict[str, _Opt] = {o.dest: o for o in _TRACKED}

_ALL_LONG: Tuple[str, ...] = tuple(
    sorted(
        {n for n in _BY_NAME if n.startswith("--")}
        | {n for n in _OTHER_NO_VALUE if n.startswith("--")}
        | _OTHER_MANY_VALUES
        | _OTHER_LONG
    )
)
_ALL_SHORT: Tuple[str, ...] = tuple(
    sorted({n for n in _BY_NAME if not n.startswith("--")} | _OTHER_SHORT_WITH_VALUE | {"-h"})
)


def _known_option(name: str) -> bool:
    """An option string vLLM registers, exactly as written (after FlexibleArgumentParser's
    underscores-to-dashes)."""
    return (
        name in _BY_NAME
        or name in _OTHER_NO_VALUE
        or name in _OTHER_MANY_VALUES
        or name in _OTHER_LONG
        or name in _OTHER_SHORT_WITH_VALUE
    )


# `--tp 4` is not an option anywhere in vLLM; people write it (and `tp: 4` in --config).
_SHORT_ALIAS_WORDS: Dict[str, str] = {
    n[1:]: o.names[0] for o in _TRACKED for n in o.names[1:] if len(n) > 2
}

# argparse treats "-1" and "-0.5" as values when no option looks like a negative number.
# The rules engine marks a value it cannot know (a Secret, the image's ENV) with NUL
# bytes; no real argument contains one (the kernel's argv is NUL-terminated).
_UNKNOWN_MARK = "\x00"

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_PYTHON = re.compile(r"^python[0-9.]*$")
# NVIDIA Dynamo's vLLM worker takes vLLM's engine options (and its own) and no positional
_API_SERVER_MODULES = (
    "vllm.entrypoints.openai.api_server",
    "vllm.entrypoints.api_server",
    "dynamo.vllm",
)
_CLI_MODULES = ("vllm.entrypoints.cli.main",)
# The axes whose problems make the GPU count unknowable.
PLAN_DESTS = frozenset(
    (
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
        "data_parallel_size_local",
        "data_parallel_rank",
        "data_parallel_start_rank",
        "decode_context_parallel_size",
        "prefill_context_parallel_size",
        "nnodes",
        "node_rank",
        "data_parallel_external_lb",
        "data_parallel_hybrid_lb",
        "data_parallel_multi_port_external_lb",
        "data_parallel_backend",
        "headless",
        "config",
    )
)


@dataclass(frozen=True)
class ArgProblem:
    """Something vLLM would refuse (or silently ignore) on this command line.

    ``flag`` is the spelling the user wrote (``-tp``, ``--tensor_parallel_size``,
    ``tensor-parallel-size (in --config)``); ``dest`` the canonical option name
    (``tensor_parallel_size``), empty when none applies.
    """

    flag: str
    value: str
    message: str
    dest: str = ""

    @property
    def field(self) -> str:
        """Alias of ``flag`` for callers that think in fields."""
        return self.flag


@dataclass(frozen=True)
class Origin:
    """Where a value came from: the spelling and its index in the argv given to the
    parser (None when it came from the --config file)."""

    spelling: str
    index: Optional[int]
    from_config: bool = False


@dataclass(frozen=True)
class ParallelPlan:
    """The parallel layout vLLM will build, and the GPUs one pod (node) needs for it."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    dp_local: int = 1
    dcp: int = 1
    pcp: int = 1
    nnodes: int = 1
    node_rank: int = 0
    data_parallel_rank: Optional[int] = None
    external_lb: bool = False
    hybrid_lb: bool = False
    multi_port_lb: bool = False
    headless: bool = False
    distributed_executor_backend: Optional[str] = None
    data_parallel_backend: str = "mp"

    @property
    def world_size(self) -> int:
        """Processes (GPUs) of one engine: TP x PP x PCP; DCP reuses TP ranks."""
        return self.tp * self.pp * self.pcp

    @property
    def nodes_per_replica(self) -> int:
        if self.nnodes <= 1 or self.dp_local <= 0:
            return 1
        return max(1, self.nnodes // max(1, self.dp // self.dp_local))

    @property
    def gpus_needed(self) -> int:
        """GPUs this pod (node) must see: DP-local x world size over the nodes one replica
        spans (vLLM 0.33.0: ``local_world_size = world_size // nnodes_within_dp`` per
        engine, 0 where a replica spans more nodes than it has ranks). The
        only place the product computes it: the rules' context, the checker's ``Plan``
        (a subclass) and the operator's status take it from here (issue 37)."""
        return max(0, self.dp_local * self.world_size // self.nodes_per_replica)

    def group_gpus(self, engines: int = 1) -> int:
        """GPUs of every rank of ``engines`` engines when Ray places them over a group of
        pods: every DP rank with Ray's DP backend (one engine spans the group), else the
        DP ranks each engine's pod runs."""
        dp = self.dp if self.data_parallel_backend == "ray" else self.dp_local
        return self.world_size * dp * max(1, engines)

    @property
    def uses_ray(self) -> bool:
        return self.distributed_executor_backend == "ray" or self.data_parallel_backend == "ray"

    def to_dict(self) -> Dict[str, int]:
        return {
            "tp": self.tp,
            "pp": self.pp,
            "dp": self.dp,
            "dp_local": self.dp_local,
            "gpus_needed": self.gpus_needed,
        }


@dataclass
class ParsedArgs:
    """The parse of one vLLM command line.

    ``problems``: what vLLM refuses (it exits or raises before serving). ``warnings``:
    what vLLM accepts but probably does not do what was meant (``--config=FILE`` ignored,
    a config file the caller could not provide).
    """

    plan: ParallelPlan = field(default_factory=ParallelPlan)
    problems: List[ArgProblem] = field(default_factory=list)
    warnings: List[ArgProblem] = field(default_factory=list)
    entrypoint: str = SERVE
    model: Optional[str] = None
    port: Optional[int] = None
    host: Optional[str] = None
    gpu_memory_utilization: Optional[float] = None
    api_server_count: Optional[int] = None
    enable_expert_parallel: bool = False
    # as written (the model rules read them): --max-model-len, --dtype, --quantization
    max_model_len: Optional[str] = None
    dtype: Optional[str] = None
    quantization: Optional[str] = None
    hf_overrides: bool = False  # --hf-overrides given (in any spelling)
    # where the weights come from and how the engine starts: --revision, --download-dir,
    # --tokenizer, --load-format (as written), --enforce-eager
    revision: Optional[str] = None
    download_dir: Optional[str] = None
    tokenizer: Optional[str] = None
    load_format: Optional[str] = None
    enforce_eager: bool = False
    # --trust-remote-code; --cpu-offload-gb and --kv-cache-memory-bytes as written
    trust_remote_code: bool = False
    cpu_offload_gb: Optional[str] = None
    kv_cache_memory_bytes: Optional[str] = None
    config_path: Optional[str] = None
    config_loaded: bool = False
    # dest -> where its (last) value came from
    origins: Dict[str, Origin] = field(default_factory=dict)

    @property
    def plan_valid(self) -> bool:
        """True when no problem touches the options that size the plan."""
        return not any(p.dest in PLAN_DESTS for p in self.problems)


class ConfigUnavailable(LookupError):
    """Raised by a ``load_config`` callback that cannot know the file's content (e.g. a
    ConfigMap outside the manifest set). Any LookupError is read the same way."""


LoadConfig = Callable[[str], Mapping[str, object]]


@dataclass
class _Tok:
    text: str
    index: Optional[int]  # position in the caller's argv; None for --config tokens
    spelling: str  # as the user wrote it (before underscore conversion)
    from_config: bool = False


def vllm_args_start(argv: Sequence[str]) -> Optional[Tuple[int, str]]:
    """Where vLLM's own arguments begin in a full command, and which entry point it is.

    ``["vllm", "serve", "m"]`` -> ``(1, "serve")`` (the ``serve`` token is included);
    ``["python3", "-u", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]`` ->
    ``(4, "api_server")``. None when argv does not start vLLM's server.
    """
    if not argv:
        return None
    program = str(argv[0]).rsplit("/", 1)[-1]
    if program == "vllm":
        if len(argv) > 1 and argv[1] == "serve":
            return 1, SERVE
        return None
    if not _PYTHON.match(program):
        return None
    i = 1
    while i < len(argv):
        tok = str(argv[i])
        module = None
        if tok == "-m" and i + 1 < len(argv):
            module, nxt = str(argv[i + 1]), i + 2
        elif tok.startswith("-m") and len(tok) > 2:
            module, nxt = tok[2:], i + 1
        elif tok.startswith("-") and tok not in ("-", "--"):
            # interpreter options such as -u, -O, -X dev, -W ignore
            i += 2 if tok in ("-X", "-W", "-c") else 1
            continue
        else:
            return None  # a script, not a module
        if module in _API_SERVER_MODULES:
            return nxt, API_SERVER
        if module in _CLI_MODULES and nxt < len(argv) and argv[nxt] == "serve":
            return nxt, SERVE
        return None
    return None


def parse_vllm_args(
    argv: Sequence[str],
    load_config: Optional[LoadConfig] = None,
) -> ParsedArgs:
    """Read a vLLM command line; never raises.

    ``argv`` is what follows the program: ``["serve", MODEL, "-tp", "2", ...]`` for the
    ``vllm`` CLI, or the options alone for ``python -m vllm.entrypoints.openai.api_server``.
    A full command (``vllm serve ...``, ``python3 -m vllm.entrypoints.openai.api_server
    ...``) is also accepted; origins then index into the full argv.

    ``load_config(path)`` returns the mapping of a ``--config`` YAML file. Raising
    LookupError (e.g. :class:`ConfigUnavailable`) means "unknown here" and becomes a
    warning; any other exception, or a non-mapping, is a problem (vLLM would fail too).
    """
    try:
        tokens = [str(a) for a in argv]
    except Exception as exc:  # e.g. an object whose __str__ raises
        return ParsedArgs(problems=[ArgProblem("", "", f"arguments are not text: {exc!r}")])
    try:
        return _Parser(tokens, load_config).run()
    except Exception as exc:  # the contract: never raise, whatever the input
        return ParsedArgs(
            problems=[ArgProblem("", "", f"could not read the vLLM arguments: {exc!r}")]
        )


@dataclass
class _LayoutFlags:
    """The plan-sizing flags as read, before vLLM's cross-checks and inference."""

    tp: int
    pp: int
    dp: int
    dcp: int
    pcp: int
    nnodes: int
    node_rank: int
    dpl: Optional[int]
    dp_rank: Optional[int]
    start_rank: Optional[int]
    external: bool
    hybrid: bool
    multi_port: bool
    headless: bool
    dp_backend: str
    executor: Optional[str]


class _Parser:
    def __init__(self, argv: List[str], load_config: Optional[LoadConfig]) -> None:
        self.argv = argv
        self.load_config = load_config
        self.result = ParsedArgs()
        self.raw: Dict[str, Tuple[object, Origin]] = {}
        self.positionals: List[_Tok] = []
        # positionals that may really be the value of an option we do not know (a newer
        # vLLM flag taking several values) or come from a value unknown here
        self.uncertain: List[_Tok] = []

    # -- problems -----------------------------------------------------------------------
    def problem(self, flag: str, value: str, message: str, dest: str = "") -> None:
        self.result.problems.append(ArgProblem(flag, value, message, dest))

    def warning(self, flag: str, value: str, message: str, dest: str = "") -> None:
        self.result.warnings.append(ArgProblem(flag, value, message, dest))

    # -- driver -------------------------------------------------------------------------
    def run(self) -> ParsedArgs:
        start = 0
        entry = SERVE if self.argv[:1] == ["serve"] else API_SERVER
        found = vllm_args_start(self.argv)
        if found is not None:
            start, entry = found
        self.result.entrypoint = entry
        toks = [_Tok(t, start + i, t) for i, t in enumerate(self.argv[start:])]
        if entry == SERVE:
            toks = self.move_model_flag(toks)
            self.check_served_model_name(toks)
        toks = self.pull_config(toks, entry)
        toks = self.preprocess(toks)
        self.walk(toks)
        self.finish(entry)
        return self.result

    def move_model_flag(self, toks: List[_Tok]) -> List[_Tok]:
        """`vllm serve -tp 2 --model M` -> `vllm serve M -tp 2` (vLLM does this first)."""
        for i, tok in enumerate(toks):
            if tok.text == "--model" or (tok.text.startswith("--model=") and len(tok.text) > 8):
                if tok.text == "--model":
                    if i + 1 >= len(toks) or toks[i + 1].text.startswith("-"):
                        self.problem("--model", "", "expects a model name", "model")
                        return toks
                    model, rest = toks[i + 1], toks[i + 2 :]
                else:
                    model = _Tok(tok.text[8:], tok.index, tok.spelling)
                    rest = toks[i + 1 :]
                return [toks[0], model, *toks[1:i], *rest]
        return toks

    def check_served_model_name(self, toks: List[_Tok]) -> None:
        texts = [t.text for t in toks]
        if (
            len(texts) > 1
            and texts[1].startswith("-")
            and not any(re.match(r"^--config(=.+|$)", t) for t in texts)
            and any(re.match(r"^--served[-_]model[-_]name(=.+|$)", t) for t in texts)
        ):
            self.problem(
                "model",
                texts[1],
                "with --served-model-name, vLLM requires the model as the first "
                "positional argument (`vllm serve MODEL --served-model-name ...`)",
                "model",
            )

    # -- --config -----------------------------------------------------------------------
    def pull_config(self, toks: List[_Tok], entry: str) -> List[_Tok]:
        for tok in toks:
            if tok.text.startswith("--config="):
                self.warning(
                    "--config=",
                    tok.text[len("--config=") :],
                    "vLLM reads a config file only from the two-token form `--config FILE`; "
                    "this spelling is accepted and then ignored",
                    "config",
                )
        where = [i for i, t in enumerate(toks) if t.text == "--config"]
        if not where:
            return toks
        if len(where) > 1:
            self.problem("--config", "", "more than one config file specified", "config")
            return toks
        index = where[0]
        if index == len(toks) - 1:
            self.problem("--config", "", "no config file specified", "config")
            return toks
        path = toks[index + 1].text
        self.result.config_path = path
        self.result.origins["config"] = Origin("--config", toks[index + 1].index)
        before, after = toks[:index], toks[index + 2 :]
        extension = path.split(".")[-1]
        if extension not in ("yaml", "yml"):
            self.problem(
                "--config",
                path,
                f"config file must be of a yaml/yml type, {extension} supplied",
                "config",
            )
            return before + after
        config_toks = self.config_tokens(path)
        if config_toks is None:
            return before + after
        if entry != SERVE:
            return config_toks + before + after
        # Judged on the command line as written, --config included: `vllm serve --config
        # c.yaml MODEL` does not count as "model on the command line" for vLLM either.
        model_in_cli = len(toks) > 1 and not toks[1].text.startswith("-")
        model_in_config = any(t.text == "--model" for t in config_toks)
        if not model_in_cli and not model_in_config:
            self.problem(
                "model",
                "",
                "no model specified: give it as the positional argument or in the config file",
                "model",
            )
        cut = 2 if model_in_cli else 1
        return before[:cut] + config_toks + before[cut:] + after

    def config_tokens(self, path: str) -> Optional[List[_Tok]]:
        if self.load_config is None:
            self.warning("--config", path, "config file not available; its options are not known")
            return None
        try:
            content = self.load_config(path)
        except LookupError as exc:
            detail = f": {exc.args[0]}" if exc.args else ""
            self.warning(
                "--config", path, f"config file not available{detail}; its options are not known"
            )
            return None
        except Exception as exc:
            self.problem("--config", path, f"config file cannot be read: {exc}", "config")
            return None
        if not isinstance(content, Mapping):
            self.problem(
                "--config",
                path,
                f"config file must be a YAML mapping of option: value, "
                f"not {type(content).__name__}",
                "config",
            )
            return None
        self.result.config_loaded = True
        out: List[_Tok] = []

        def add(text: str, key: str) -> None:
            out.append(_Tok(text, None, f"{key} (in --config {path})", True))

        for key, value in content.items():
            if not isinstance(key, str):
                self.problem("--config", path, f"config key {key!r} is not a string", "config")
                continue
            for text in _config_entry_texts(key, value):
                add(text, key)
        return out

    # -- FlexibleArgumentParser's rewriting ---------------------------------------------
    def preprocess(self, toks: List[_Tok]) -> List[_Tok]:
        out: List[_Tok] = []
        for i, tok in enumerate(toks):
            text = tok.text
            if text.startswith("--"):
                # underscores -> dashes in the name, up to the first '.' (dict keys stay)
                key, eq, value = text.partition("=")
                head, dot, tail = key[2:].partition(".")
                key = "--" + head.replace("_", "-") + dot + tail
                if head.replace("_", "-") == "hf-overrides":
                    # may rewrite the model's config (length, RoPE): the model rules
                    # then do not judge what it can change
                    self.result.hf_overrides = True
                out.append(_Tok(key + eq + value, tok.index, tok.spelling, tok.from_config))
            elif text.startswith("-O") and text != "-O":
                level = text[3:] if text[2:3] == "=" else text[2:]
                out.append(_Tok("--optimization-level", tok.index, tok.spelling, tok.from_config))
                out.append(_Tok(level, tok.index, tok.spelling, tok.from_config))
            elif text == "-O" and i + 1 < len(toks) and toks[i + 1].text in ("0", "1", "2", "3"):
                out.append(_Tok("--optimization-level", tok.index, tok.spelling, tok.from_config))
            else:
                out.append(tok)
        # `--compilation-config.level 3` style dict arguments are folded into JSON and
        # appended; they never carry the options we track, so drop them here.
        kept: List[_Tok] = []
        skip = False
        for i, tok in enumerate(out):
            if skip:
                skip = False
                continue
            text = tok.text
            if text.startswith("-") and "." in text.split("=", 1)[0]:
                if "=" not in text:
                    if i + 1 >= len(out):
                        self.problem(tok.spelling, "", "expects a value")
                    skip = True
                continue
            kept.append(tok)
        return kept

    # -- argparse -----------------------------------------------------------------------
    def resolve(self, name: str, spelling: str) -> Tuple[Optional[str], bool]:
        """Option string for `name` (exact or a unique prefix), and whether it is one."""
        if name in _BY_NAME or name in _OTHER_NO_VALUE or name in _OTHER_MANY_VALUES:
            return name, True
        if name in _OTHER_LONG or name in _OTHER_SHORT_WITH_VALUE:
            return name, True
        if name.startswith("--no-"):
            # vLLM registers --no-X for every boolean option; we do not list them all, so
            # an abbreviated --no- form is left unresolved rather than guessed.
            return None, False
        if name.startswith("--"):
            word = name[2:]
            if word in _SHORT_ALIAS_WORDS:
                self.problem(
                    spelling,
                    "",
                    f"`--{word}` is not a vLLM option; the short form is `-{word}` and the "
                    f"long one `{_SHORT_ALIAS_WORDS[word]}`",
                    _BY_NAME[_SHORT_ALIAS_WORDS[word]][0].dest,
                )
                return None, True
            candidates = [o for o in _ALL_LONG if o.startswith(name)]
        else:
            candidates = [o for o in _ALL_SHORT if o.startswith(name)]
        if len(candidates) == 1:
            return candidates[0], True
        tracked = [c for c in candidates if c in _BY_NAME]
        if len(candidates) > 1 and tracked:
            self.problem(
                spelling,
                "",
                f"ambiguous abbreviation: it could match {', '.join(candidates[:4])}; "
                "argparse refuses it",
                _BY_NAME[tracked[0]][0].dest,
            )
            return None, True
        return None, False

    def check_glued_value(self, tok: _Tok) -> None:
        """`-tp2`: argparse knows no `-t`, so this is an unrecognized argument."""
        for opt in _TRACKED:
            for alias in opt.names[1:]:
                rest = tok.text[len(alias) :]
                if len(alias) > 2 and tok.text.startswith(alias) and rest.isdigit():
                    self.problem(
                        tok.spelling,
                        rest,
                        f"argparse does not split `{tok.text}`; write `{alias} {rest}`",
                        opt.dest,
                    )
                    return

    def is_option(self, text: str) -> bool:
        """argparse's test (`_parse_optional`): does this token start an option (else it
        is a value)? Its order matters: the name before a `=`, and a long prefix of a
        known option, are looked up before a word holding a space is taken as a
        positional, so `--limit-mm-per-prompt={"image": 0}` is an option."""
        if not text.startswith("-") or text == "-":
            return False
        name, eq, _ = text.partition("=")
        if _known_option(text) or (eq and _known_option(name)):
            return True
        if text.startswith("--") and any(o.startswith(name) for o in _ALL_LONG):
            return True  # an abbreviation (or an ambiguous one argparse refuses)
        if _NEGATIVE_NUMBER.match(text):
            return False
        name, eq, _ = text.partition("=")
        if eq and name.startswith("--") and " " not in name:
            # argparse splits `--opt=value` at `=` before its "a space means a positional"
            # test: `--kv-transfer-config={"a": 1, "b": 2}` is an option
            return True
        return " " not in text

    def walk(self, toks: List[_Tok]) -> None:
        i = 0
        doubt = False  # since the last option we know: could this token be a value?
        while i < len(toks):
            tok = toks[i]
            text = tok.text
            if text == "--":
                self.positionals.extend(toks[i + 1 :])
                return
            if not self.is_option(text):
                self.positionals.append(tok)
                if doubt or _UNKNOWN_MARK in text:
                    self.uncertain.append(tok)
                    doubt = True
                i += 1
                continue
            resolved, value, known = self.read_option(tok)
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            doubt = resolved is None and not known
            if resolved is not None and resolved in _BY_NAME:
                i += self.take_tracked(tok, resolved, value, nxt)
            else:
                next_is_value = nxt is not None and not self.is_option(nxt.text)
                i = self.skip_untracked(toks, i + 1, resolved, value, next_is_value)

    def read_option(self, tok: _Tok) -> Tuple[Optional[str], Optional[str], bool]:
        """An option token as argparse splits it: (option string, its value, known?).

        The option string is None when it matches nothing; `known` says it is a vLLM
        option all the same (one we do not track, or one already reported).
        """
        text = tok.text
        name, eq, explicit = text.partition("=")
        if eq and not name.startswith("--") and name not in _BY_NAME:
            # argparse splits `-x=v` only for a registered short option; `-t=2` is
            # looked up whole (and matches nothing)
            name, eq, explicit = text, "", ""
        value: Optional[str] = explicit if eq else None
        resolved, known = self.resolve(name, tok.spelling)
        if resolved is not None or known or name.startswith("--"):
            return resolved, value, known
        short = name[:2]
        if len(name) > 2 and (short in _BY_NAME or short in _OTHER_SHORT_WITH_VALUE):
            # `-n2`: a two-character option with its value attached
            return short, text[2:], known
        self.check_glued_value(tok)
        return resolved, value, known

    def take_tracked(
        self, tok: _Tok, resolved: str, value: Optional[str], nxt: Optional[_Tok]
    ) -> int:
        """Record a tracked option's value; returns the tokens it used (1 or 2)."""
        opt, negated = _BY_NAME[resolved]
        origin = Origin(tok.spelling, tok.index, tok.from_config)
        if opt.kind in (_BOOL, _FLAG):
            if value is not None:
                self.problem(
                    tok.spelling,
                    value,
                    f"{opt.names[0]} takes no value (argparse: ignored explicit argument)",
                    opt.dest,
                )
            else:
                self.raw[opt.dest] = (not negated, origin)
            return 1
        used = 1
        if value is None:
            if nxt is None or self.is_option(nxt.text):
                self.problem(tok.spelling, "", "expects one value", opt.dest)
                return 1
            value = nxt.text
            used = 2
        self.raw[opt.dest] = (value, origin)
        return used

    def skip_untracked(
        self,
        toks: List[_Tok],
        i: int,
        resolved: Optional[str],
        value: Optional[str],
        next_is_value: bool,
    ) -> int:
        """Index past the values of an option we do not track (`i`: the token after it)."""
        if value is not None or resolved in _OTHER_NO_VALUE:
            return i
        if resolved in _OTHER_MANY_VALUES:
            while i < len(toks) and toks[i].text != "--" and not self.is_option(toks[i].text):
                i += 1
            return i
        # an option we do not track, taking one value (the common case)
        return i + 1 if next_is_value else i

    # -- values and the plan ------------------------------------------------------------
    def get_int(self, dest: str, default: Optional[int], minimum: int) -> Optional[int]:
        if dest not in self.raw:
            return default
        raw, origin = self.raw[dest]
        self.result.origins[dest] = origin
        text = str(raw)
        try:
            value = int(text)
        except (ValueError, TypeError):
            self.problem(origin.spelling, text, f"{text!r} is not an integer", dest)
            return default
        if value < minimum:
            self.problem(origin.spelling, text, f"must be >= {minimum}, got {value}", dest)
            return default
        if value > MAX_PARALLEL_SIZE and dest != "port":
            self.problem(
                origin.spelling,
                text,
                f"{value} is implausibly large (> {MAX_PARALLEL_SIZE}); almost certainly a typo",
                dest,
            )
            return default
        return value

    def get_bool(self, dest: str) -> bool:
        if dest not in self.raw:
            return False
        raw, origin = self.raw[dest]
        self.result.origins[dest] = origin
        return bool(raw)

    def get_str(self, dest: str) -> Optional[str]:
        if dest not in self.raw:
            return None
        raw, origin = self.raw[dest]
        self.result.origins[dest] = origin
        return str(raw)

    def finish(self, entry: str) -> None:
        r = self.result
        flags = self.read_layout_flags()
        self.read_server_flags()
        self.read_gpu_memory_utilization()
        self.read_model(entry)
        if any(p.dest in PLAN_DESTS for p in r.problems):
            # argparse stops at the first size it cannot convert, before any cross-check
            # below; comparing a default (DP=1) with a real value would invent an error
            r.plan = ParallelPlan(
                tp=flags.tp,
                pp=flags.pp,
                dp=flags.dp,
                dp_local=min(flags.dpl or flags.dp, flags.dp),  # a plan is never dp_local > dp
                nnodes=flags.nnodes,
            )
            return
        self.check_layout(flags)
        dp_local = self.derive_dp_local(flags)
        r.plan = ParallelPlan(
            tp=flags.tp,
            pp=flags.pp,
            dp=flags.dp,
            dp_local=dp_local,
            dcp=flags.dcp,
            pcp=flags.pcp,
            nnodes=flags.nnodes,
            node_rank=flags.node_rank,
            data_parallel_rank=flags.dp_rank,
            external_lb=flags.external,
            hybrid_lb=flags.hybrid,
            multi_port_lb=flags.multi_port,
            headless=flags.headless,
            distributed_executor_backend=flags.executor,
            data_parallel_backend=flags.dp_backend,
        )

    def read_layout_flags(self) -> _LayoutFlags:
        """The flags that size the plan, converted (problems recorded) in vLLM's order."""
        return _LayoutFlags(
            tp=self.get_int("tensor_parallel_size", 1, 1) or 1,
            pp=self.get_int("pipeline_parallel_size", 1, 1) or 1,
            dp=self.get_int("data_parallel_size", 1, 1) or 1,
            dcp=self.get_int("decode_context_parallel_size", 1, 1) or 1,
            pcp=self.get_int("prefill_context_parallel_size", 1, 1) or 1,
            nnodes=self.get_int("nnodes", 1, 1) or 1,
            node_rank=self.get_int("node_rank", 0, 0) or 0,
            dpl=self.get_int("data_parallel_size_local", None, 0),
            dp_rank=self.get_int("data_parallel_rank", None, 0),
            start_rank=self.get_int("data_parallel_start_rank", None, 0),
            external=self.get_bool("data_parallel_external_lb"),
            hybrid=self.get_bool("data_parallel_hybrid_lb"),
            multi_port=self.get_bool("data_parallel_multi_port_external_lb"),
            headless=self.get_bool("headless"),
            dp_backend=self.get_str("data_parallel_backend") or "mp",
            executor=self.get_str("distributed_executor_backend"),
        )

    def read_server_flags(self) -> None:
        """The facts the rules need besides the plan: model length, dtype, host and port."""
        r = self.result
        r.enable_expert_parallel = self.get_bool("enable_expert_parallel")
        r.max_model_len = self.get_str("max_model_len")
        r.dtype = self.get_str("dtype")
        r.quantization = self.get_str("quantization")
        r.revision = self.get_str("revision")
        r.download_dir = self.get_str("download_dir")
        r.tokenizer = self.get_str("tokenizer")
        r.load_format = self.get_str("load_format")
        r.enforce_eager = self.get_bool("enforce_eager")
        r.trust_remote_code = self.get_bool("trust_remote_code")
        r.cpu_offload_gb = self.get_str("cpu_offload_gb")
        r.kv_cache_memory_bytes = self.get_str("kv_cache_memory_bytes")
        r.host = self.get_str("host")
        r.api_server_count = self.get_int("api_server_count", None, 0)
        port = self.get_int("port", None, 0)
        if port is not None and port > 65535:
            self.problem(r.origins["port"].spelling, str(port), "not a TCP port", "port")
            port = None
        r.port = port

    def bad(self, dest: str, message: str, value: str = "") -> None:
        """A problem with `dest`, named by the spelling the user wrote (else the dest)."""
        origin = self.result.origins.get(dest)
        self.problem(origin.spelling if origin else dest, value, message, dest)

    def check_layout(self, f: _LayoutFlags) -> None:
        """ParallelConfig's cross-checks of the sizes and the load-balancing flags."""
        bad = self.bad
        if f.dp_backend not in ("mp", "ray"):
            bad("data_parallel_backend", "must be 'mp' or 'ray'", f.dp_backend)
        if f.pcp == 1 and f.tp % f.dcp != 0:
            bad(
                "decode_context_parallel_size",
                f"tensor parallel size {f.tp} must be divisible by decode context parallel "
                f"size {f.dcp}",
                str(f.dcp),
            )
        elif f.pcp > 1 and f.dcp not in (1, f.pcp, f.tp * f.pcp):
            bad(
                "decode_context_parallel_size",
                f"with prefill context parallel {f.pcp}, decode context parallel must be "
                f"1, {f.pcp} or {f.tp * f.pcp}",
                str(f.dcp),
            )
        if f.pcp > 1 and f.dp > 1:
            bad("prefill_context_parallel_size", "PCP does not support data parallelism")
        if f.nnodes > 1:
            if f.dp_backend != "mp":
                bad("nnodes", "nnodes > 1 is only supported with data_parallel_backend=mp")
            if (f.dp * f.pp * f.tp) % f.nnodes != 0:
                bad(
                    "nnodes",
                    f"world size DP x PP x TP = {f.dp * f.pp * f.tp} must be divisible by "
                    f"nnodes = {f.nnodes}",
                    str(f.nnodes),
                )
        if f.node_rank >= f.nnodes and "node_rank" in self.raw:
            bad("node_rank", f"node rank {f.node_rank} must be less than nnodes {f.nnodes}")
        if f.headless and f.hybrid:
            bad("data_parallel_hybrid_lb", "hybrid load balancing is not applicable headless")
        if f.hybrid and f.external:
            bad("data_parallel_hybrid_lb", "hybrid and external load balancing exclude each other")

    def derive_dp_local(self, f: _LayoutFlags) -> int:
        """data_parallel_size_local, following create_engine_config.

        Settles `f.external` and `f.hybrid` the way vLLM does on the way (a DP rank implies
        external LB; a start rank implies hybrid LB).
        """
        dpl = f.dpl
        if f.nnodes > 1 and not (f.dp > 1 and f.external) and dpl is None:
            per_node = f.dp * f.pp * f.tp // f.nnodes
            dpl = max(per_node // (f.pp * f.tp), 1)
        if f.multi_port:
            dp_local = self.multi_port_dp_local(f, dpl)
        elif f.external or f.dp_rank is not None:
            f.external = True
            dp_local = self.external_lb_dp_local(f, dpl)
        elif dpl is not None:
            if f.start_rank and not f.headless:
                f.hybrid = True
            if f.hybrid and dpl == 1:
                f.hybrid, f.external = False, True
            if dpl == f.dp:
                f.hybrid = False
            dp_local = dpl
        else:
            if f.hybrid:
                self.bad("data_parallel_hybrid_lb", "requires --data-parallel-size-local")
            dp_local = f.dp
        if dp_local > f.dp:
            self.bad(
                "data_parallel_size_local",
                f"data parallel size local ({dp_local}) must be <= data parallel size ({f.dp})",
                str(dp_local),
            )
            dp_local = f.dp
        if f.headless and dp_local <= 0:
            self.bad("data_parallel_size_local", "must be > 0 in headless mode", str(dp_local))
        return dp_local

    def multi_port_dp_local(self, f: _LayoutFlags, dpl: Optional[int]) -> int:
        """--data-parallel-multi-port-external-lb: several DP ranks per pod, one port each."""
        if f.external or f.hybrid or f.dp_rank is not None:
            self.bad(
                "data_parallel_multi_port_external_lb",
                "cannot be combined with --data-parallel-external-lb, "
                "--data-parallel-hybrid-lb or --data-parallel-rank",
            )
        if f.dp < 2:
            self.bad("data_parallel_multi_port_external_lb", "requires --data-parallel-size > 1")
        if dpl is None or dpl < 2:
            self.bad(
                "data_parallel_multi_port_external_lb",
                "requires --data-parallel-size-local >= 2",
            )
        elif f.dp % dpl != 0:
            self.bad("data_parallel_size_local", "data parallel size must be divisible by it")
        return dpl if dpl is not None else f.dp

    def external_lb_dp_local(self, f: _LayoutFlags, dpl: Optional[int]) -> int:
        """External load balancing (or --data-parallel-rank): one DP rank per pod."""
        if f.dp <= 1:
            self.bad(
                "data_parallel_rank" if f.dp_rank is not None else "data_parallel_external_lb",
                "external data-parallel load balancing needs --data-parallel-size > 1",
            )
        if dpl not in (None, 1):
            self.bad(
                "data_parallel_size_local",
                "must be 1 (or unset) when --data-parallel-rank / external LB is used",
                str(dpl),
            )
        if f.dp_rank is not None and f.dp_rank >= f.dp:
            self.bad("data_parallel_rank", f"must be in [0, {f.dp})", str(f.dp_rank))
        return 1

    def read_gpu_memory_utilization(self) -> None:
        text = self.get_str("gpu_memory_utilization")
        if text is None:
            return
        origin = self.result.origins["gpu_memory_utilization"]
        try:
            value = float(text)
        except ValueError:
            self.problem(
                origin.spelling, text, f"{text!r} is not a number", "gpu_memory_utilization"
            )
            return
        if not 0.0 < value <= 1.0:
            self.problem(
                origin.spelling,
                text,
                "must be a fraction of GPU memory in (0, 1]",
                "gpu_memory_utilization",
            )
            return
        self.result.gpu_memory_utilization = value

    def read_model(self, entry: str) -> None:
        flag_model = self.get_str("model")
        positional = self.positionals[1:] if entry == SERVE else []
        if positional:
            tok = positional[0]
            self.result.model = tok.text
            self.result.origins["model"] = Origin(tok.spelling, tok.index, tok.from_config)
        else:
            self.result.model = flag_model
        # `vllm serve` takes one positional (the model). The api_server module took none
        # up to vLLM 0.11 and takes one optional `model_tag` since (vLLM 0.33.0
        # vllm/entrypoints/common/cli_args.py make_arg_parser), which it then ignores:
        # one such word is a warning whose verdict depends on the image's vLLM
        # (API_SERVER_POSITIONAL); any other exits with "unrecognized arguments"
        extra = positional[1:] if entry == SERVE else self.positionals
        certain = [t for t in extra if t not in self.uncertain]
        if entry != SERVE and certain:
            first, certain = certain[0], certain[1:]
            self.warning(
                first.spelling,
                first.text,
                "vLLM up to 0.11 exits with 'error: unrecognized arguments: "
                f"{first.text}'; newer vLLM takes it as the optional model_tag of "
                "`python -m vllm.entrypoints.openai.api_server` and ignores it",
                API_SERVER_POSITIONAL,
            )
        if certain:
            words = " ".join(t.text for t in certain)
            first = certain[0]
            where = "after the model " + repr(positional[0].text) if entry == SERVE else ""
            self.problem(
                first.spelling,
                first.text,
                f"vLLM exits with 'error: unrecognized arguments: {words}'"
                f"{' (' + where + ')' if where else ''}; a command line takes one model "
                "and options only",
                "positional",
            )
            self.result.origins["positional"] = Origin(first.spelling, first.index)


def _config_entry_texts(key: str, value: object) -> List[str]:
    """The command-line tokens vLLM makes of one `key: value` of a --config file."""
    flag = "--" + key
    if isinstance(value, bool):
        if value:
            return [flag]
        return ["--no-" + key] if _no_form_exists(flag) else []
    if isinstance(value, list):
        return [flag, *(_safe_str(item) for item in value)] if value else []
    if isinstance(value, dict):
        return [flag, json.dumps(value, default=str)]
    return [flag, _safe_str(value)]


def _no_form_exists(flag: str) -> bool:
    """vLLM maps `key: false` in --config to --no-key only where that option exists."""
    found = _BY_NAME.get(flag.replace("_", "-"))
    return found is not None and found[0].kind == _BOOL


def _safe_str(value: object) -> str:
    try:
        return str(value)
    except Exception:
        return repr(type(value))
