"""The command line's vocabulary and what a parse gives back: the entry points, the
limits, ``ArgProblem``, ``Origin``, ``ParallelPlan`` (the layout and the GPUs one pod
needs) and ``ParsedArgs``.

Separate from the parser because every caller (the checker, the rules engine) reads these
types, and only the parser reads the option tables and the steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional

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
