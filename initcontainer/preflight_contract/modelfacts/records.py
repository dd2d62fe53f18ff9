"""What the model rules read and give: ``ModelFacts`` (the model's facts, each with its
certainty), ``Serving`` (the command line's side), ``Gpu``, ``Verdict``, and ``settle``
(a FAIL resting on a fact that is not certain becomes a WARN).

Separate: every other part builds or reads these records.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

from preflight_contract.modelfacts.fact import EXACT, Fact
from preflight_contract.modelfacts.ids import FAIL, GIB, WARN

# vLLM's activation peak, CUDA graphs and NCCL buffers at default settings, kept out of
# the KV budget: an estimate (1-3 GiB for the corpus on an H200, see docs/RULES.md).
RUNTIME_OVERHEAD_BYTES = 2 * GIB


@dataclass(frozen=True)
class ModelFacts:
    """What vLLM will derive from the model's files; None where it cannot be read."""

    source: str = ""
    model_type: str = ""
    architectures: Tuple[str, ...] = ()
    num_attention_heads: Optional[int] = None
    num_kv_heads: Optional[int] = None
    num_layers: Optional[int] = None
    num_experts: int = 0
    head_dim: Optional[int] = None
    use_mla: bool = False
    max_model_len: Optional[int] = None
    max_len_text: str = ""  # how it was derived, e.g. "max_position_embeddings=131072"
    model_max_length: Optional[int] = None
    dtype: Optional[str] = None  # the checkpoint's (torch_dtype / dtype)
    quant_method: Optional[str] = None
    quant_min_capability: Optional[int] = None
    weight_bytes: Optional[int] = None  # in GPU memory once loaded
    weight_text: str = ""  # where weight_bytes came from
    # the smallest the loaded weights can be (weight_floor), with its derivation
    weight_floor_bytes: Optional[int] = None
    weight_floor_text: str = ""
    # a GPTQ checkpoint's (bits, sym) as AutoGPTQConfig.from_config reads them
    gptq_bits_sym: Optional[Tuple[int, bool]] = None
    kv_bytes_per_token: Optional[int] = None  # whole model, every attention layer
    # sliding-window layers (layer_types): their KV per token, held for at most the window
    kv_window_bytes_per_token: int = 0
    sliding_window: Optional[int] = None
    problems: Tuple[str, ...] = ()
    # every distinct KV head count of the attention layers (per-layer NAS configs differ)
    kv_heads_per_layer: Tuple[int, ...] = ()
    # Mamba-2 mixers: (groups, heads, the config keys they came from), None without
    mamba2: Optional[Tuple[int, int, str]] = None
    # the certainty and source of each fact the rules read (see Fact)
    facts: Tuple[Fact, ...] = ()
    auto_map: Optional[Mapping[str, Any]] = field(default=None, compare=False, repr=False)

    def fact(self, name: str) -> Fact:
        for item in self.facts:
            if item.name == name:
                return item
        return Fact(name, EXACT, "config.json")

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name == "auto_map":
                continue
            if name == "facts":
                shaky = {f.name: f"{f.certainty}: {f.source}" for f in value if not f.certain}
                if shaky:
                    out["not_exact"] = shaky
                continue
            if value not in (None, "", (), 0) or name == "num_experts":
                out[name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True)
class Serving:
    """How vLLM is asked to serve the model (from its command line)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    enable_expert_parallel: bool = False
    max_model_len: Optional[int] = None  # None: unset (or -1/auto)
    dtype: str = "auto"
    quantization: Optional[str] = None
    gpu_memory_utilization: float = 0.9
    allow_long_max_model_len: bool = False  # VLLM_ALLOW_LONG_MAX_MODEL_LEN
    hf_overrides: bool = False  # --hf-overrides may rewrite the config's length
    trust_remote_code: bool = False  # --trust-remote-code: auto_map's config class
    # --cpu-offload-gb as written (GiB of weights per GPU kept in CPU memory)
    cpu_offload_gb: Optional[str] = None
    # --kv-cache-memory-bytes given: vLLM sizes the cache by it, not by the utilization
    kv_cache_memory_bytes: bool = False
    load_format: Optional[str] = None  # --load-format as written
    # the exact vLLM release that will load the model (lint and admission: the tag of
    # vLLM's own image; rules.vllmversion), None where not known: the architecture is then
    # judged by vllm_registry's release
    vllm_release: Optional[str] = None

    @property
    def ep_size(self) -> int:
        return self.tp * self.dp


@dataclass(frozen=True)
class Gpu:
    """What is known of the GPU: name, memory (bytes) and compute capability (x 10)."""

    name: str = ""
    memory_bytes: Optional[int] = None
    capability: Optional[int] = None
    source: str = ""  # "node label nvidia.com/gpu.product=...", "NVML"
    # the most memory the GPU can have: memory_bytes where that is measured (NVML, GPU
    # feature discovery's nvidia.com/gpu.memory), else the product table's figure + 10%
    memory_upper_bytes: Optional[int] = None

    @property
    def memory_most(self) -> Optional[int]:
        return self.memory_upper_bytes or self.memory_bytes


@dataclass(frozen=True)
class Verdict:
    rule: str
    status: str  # fail | warn | pass | unknown
    message: str
    fix: str = ""
    evidence: Dict[str, Any] = field(default_factory=dict)
    # the model facts the verdict rests on, with their certainty: a FAIL on a fact that
    # is not certain is a WARN (settle; the rules engine's downgrade at admission)
    rests_on: Tuple[Fact, ...] = ()


def shaky(verdict: Verdict) -> List[Fact]:
    """The facts a verdict rests on that are neither exact nor a class default."""
    return [f for f in verdict.rests_on if not f.certain]


def settle(verdict: Verdict) -> Verdict:
    """Only certain facts may fail: a FAIL resting on an estimated or unknown fact becomes
    a WARN that says which (the checker's side of the engine's downgrade)."""
    weak = shaky(verdict)
    if verdict.status != FAIL or not weak:
        return verdict
    parts = "; ".join(f"{f.name} is {f.certainty} ({f.source})" for f in weak)
    return replace(verdict, status=WARN, message=f"{verdict.message} (not a failure: {parts})")
