"""The parser's last step: the raw values converted (``int()``, ``float()``, as argparse
does), ParallelConfig's cross-checks of the sizes and load-balancing flags,
``data_parallel_size_local`` as create_engine_config infers it, the server facts the rules
read, and the model (positional or ``--model``).

Separate from the reading of the tokens: this is vLLM's config validation, the part that
decides the ``ParallelPlan``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from preflight_contract.vllm_args.parser_state import _ParserBase
from preflight_contract.vllm_args.results import (
    API_SERVER_POSITIONAL,
    MAX_PARALLEL_SIZE,
    PLAN_DESTS,
    SERVE,
    Origin,
    ParallelPlan,
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


class _PlanSteps(_ParserBase):
    """The values converted and cross-checked, and the plan they give."""

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
