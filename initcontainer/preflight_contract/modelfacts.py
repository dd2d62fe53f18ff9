"""What a model's own files say about how it splits and fits, and the rules over them.

Shared by the checker (run time, standard library only, Python >= 3.9), ``lint`` and the
admission webhook, so the three give the same verdict under the same rule id. The input
is the model's files as parsed JSON, keyed by file name (``config.json``,
``model.safetensors.index.json``, ``hf_quant_config.json``); nothing here reads a file or
the network, and nothing raises: a field that cannot be read makes the rules that need it
say "unknown" (never "fail").

Semantics mirrored (vLLM 0.33.0, the version ``hack/vllm/record_verdicts.py`` records):

* the text config: ``text_config`` (or ``thinker_config.text_config``) of multimodal
  models, as ``get_hf_text_config`` picks it, with the transformers class defaults for
  keys it leaves out (Gemma 3); the class of a ``model_type`` transformers knows, not the
  checkpoint's ``auto_map.AutoConfig``, unless ``--trust-remote-code`` (``resolve``); a
  text model type transformers renames read as the new one (``TEXT_TYPE_RENAMES``);
* attention heads, KV heads, layers and experts: ``ModelArchConfigConvertorBase`` in
  ``vllm/transformers_utils/model_arch_config_convertor.py`` with the key aliases of
  ``CONFIG_FIELD_ALIASES`` (``vllm/transformers_utils/config.py``); MLA models
  (``is_deepseek_mla``) cache one latent KV head;
* the model's maximum length: ``derive_max_model_len_and_key`` (smallest of the length
  keys; ``model_max_length`` wins) and ``_get_and_verify_max_len`` in
  ``vllm/config/model.py`` (a RoPE ``factor`` scales it except for su/longrope/llama3/
  yarn/deepseek_yarn/deepseek_llama_scaling, and never for Gemma 3);
* dtype: ``get_torch_dtype`` and ``_resolve_auto_dtype`` (float32 checkpoints are cast
  down; bfloat16 needs compute capability 8.0: ``CudaPlatform.supported_dtypes`` and
  ``check_if_supports_dtype`` in ``vllm/platforms/cuda.py``);
* quantization: ``_normalize_quantization_config`` (``quantization_config``, then
  ``compression_config``, then ModelOpt's ``hf_quant_config.json``), the AutoAWQ/AutoGPTQ
  overrides of ``_verify_quantization`` (``awq`` -> ``auto_awq``, ``gptq`` ->
  ``auto_gptq``), and the minimum
  capability each method's ``get_min_capability`` declares, checked in
  ``VllmConfig._get_quantization_config`` (``vllm/config/vllm.py``);
* quantization, further: ModelOpt's ``quant_algo`` (flat or under ``quantization``) names
  modelopt_fp4 / modelopt_mxfp8 / modelopt_mixed as its configs'
  ``override_quantization_method`` do; GPTQ (bits, sym) outside ``AutoGPTQConfig.TYPE_MAP``
  is refused at start-up (``rule_gptq_type``);
* the weights as an interval (issue 35): the estimate (``weight_bytes``) warns, the certain
  lower bound (``weight_floor``) against the most the GPU can offer fails
  (``weights_floor_fail``);
* TP over heads: ``ModelConfig.verify_with_parallel_config``; TP over KV heads:
  ``QKVParallelLinear`` (``vllm/model_executor/layers/linear.py``: KV heads divide over
  TP, or TP is a multiple of them and they are replicated); EP:
  ``_verify_with_expert_parallelism``; PP: ``get_pp_indices``
  (``vllm/distributed/utils.py``) gives a stage no layer when PP exceeds the layers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

# A model rule's verdict: the contract's names (verdicts.py; unknown: the config could not
# say), exported here too because every caller reads them as mf.FAIL, mf.UNKNOWN, ...
from preflight_contract import certainty as _certainty
from preflight_contract import model_defaults as _model_defaults
from preflight_contract import verdicts as _verdicts
from preflight_contract import vllm_registry as _vllm_registry
from preflight_contract import vllm_release as _vllm_release

FAIL = _verdicts.FAIL
WARN = _verdicts.WARN
PASS = _verdicts.PASS
UNKNOWN = _verdicts.UNKNOWN

GIB = 1 << 30
CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
HF_QUANT = "hf_quant_config.json"
MODEL_FILES = (CONFIG, INDEX, HF_QUANT)

# Rule ids: the same in lint, admission (rules engine) and at run time (checker).
TP_HEADS = "model-tp-heads"
TP_KV_HEADS = "model-tp-kv-heads"
EP_EXPERTS = "model-ep-experts"
PP_LAYERS = "model-pp-layers"
MAX_LEN = "model-max-len"
WEIGHTS_FIT = "model-weights-fit"
DTYPE_CAPABILITY = "model-dtype-capability"
QUANT_CAPABILITY = "model-quant-capability"
MAMBA_GROUPS = "model-tp-mamba-groups"
ARCH_UNREGISTERED = "model-arch-unregistered"
UNREADABLE = "model-config-unknown"
RULE_IDS = (
    TP_HEADS,
    TP_KV_HEADS,
    EP_EXPERTS,
    PP_LAYERS,
    MAX_LEN,
    WEIGHTS_FIT,
    DTYPE_CAPABILITY,
    QUANT_CAPABILITY,
    MAMBA_GROUPS,
    ARCH_UNREGISTERED,
)
RULE_SUMMARIES: Dict[str, str] = {
    TP_HEADS: "the model's attention heads are not divisible by the tensor-parallel size",
    TP_KV_HEADS: "the model's KV heads neither divide over TP nor divide TP",
    EP_EXPERTS: "--enable-expert-parallel on a model without experts (or experts that do "
    "not spread evenly over the EP ranks)",
    PP_LAYERS: "more pipeline stages than the model has layers",
    MAX_LEN: "--max-model-len above the model's maximum length",
    WEIGHTS_FIT: "the weights per GPU leave no room for the KV cache",
    DTYPE_CAPABILITY: "bfloat16 on a GPU below compute capability 8.0",
    QUANT_CAPABILITY: "a quantization method the GPU's compute capability cannot run, or a "
    "GPTQ bits/sym vLLM refuses",
    MAMBA_GROUPS: "a Mamba-2 layer's groups or heads do not split over the tensor-parallel size",
    ARCH_UNREGISTERED: "the model's architecture is not registered in the vLLM version the "
    "rules follow",
    UNREADABLE: "the model's config.json could not be read; model rules not checked",
}

# vLLM's get_min_capability() per quantization method (capability x 10, e.g. 80 = 8.0),
# as printed by hack/vllm/record_verdicts.py (tests compare with its fixture).
QUANT_MIN_CAPABILITY: Dict[str, int] = {
    "awq": 75,
    "auto_awq": 75,
    "awq_marlin": 75,
    "fp8": 75,
    "fbgemm_fp8": 80,
    "fp_quant": 100,
    "modelopt": 80,
    "modelopt_fp4": 75,
    "modelopt_mxfp8": 80,
    "modelopt_mixed": 75,
    "auto_gptq": 60,
    "gptq": 60,
    "gptq_marlin": 60,
    "humming": 75,
    "compressed-tensors": 70,
    "experts_int8": 80,
    "quark": 70,
    "moe_wna16": 70,
    "torchao": 75,
    "inc": 60,
    "mxfp4": 80,
    "gpt_oss_mxfp4": 80,
    "deepseek_v4_fp8": 75,
    "mxfp8": 80,
    # online quantization of an unquantized checkpoint (--quantization only)
    "online": 75,
    "fp8_per_tensor": 75,
    "fp8_per_block": 75,
    "fp8_per_channel": 75,
    "int8_per_channel_weight_only": 75,
    "nvfp4_per_token": 75,
}

# -- how certain a model fact is -----------------------------------------------------------
# A rule may fail only on facts that are certain: stated in the model's own files as
# transformers reads them (EXACT), or left out there and filled in by the config class's
# default exactly as transformers applies it (DEFAULT: vLLM reads the same value). Config
# arithmetic is ESTIMATED; a key left out of a config whose class is not known here
# (custom code, a vLLM-only config class) is UNKNOWN. A FAIL resting on either is a WARN
# (``settle`` here for the checker; the rules engine's downgrade at admission).
# a fact's certainty: the contract's one vocabulary (certainty.py)
EXACT = _certainty.EXACT
DEFAULT = _certainty.DEFAULT
ESTIMATED = _certainty.ESTIMATED
FACT_UNKNOWN = _certainty.UNKNOWN
CERTAIN = _certainty.CERTAIN


@dataclass(frozen=True)
class Fact:
    """One model fact's certainty and where it came from (``config.json``, a class
    default, ``model.safetensors.index.json metadata.total_size``, an estimate, ...)."""

    name: str
    certainty: str
    source: str

    @property
    def certain(self) -> bool:
        return self.certainty in CERTAIN


# Keys the rules read whose class defaults matter (the generator of model_defaults.py
# reads exactly these from every transformers config class). Per-layer structure
# (layer_types, hybrid_override_pattern) is not here: a class derives it from the layer
# count, so its default is only right for the default layer count.
DEFAULTED_KEYS = (
    "num_attention_heads",
    "num_key_value_heads",
    "n_head_kv",
    "num_kv_heads",
    "multi_query_group_num",
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "intermediate_size_mlp",
    "vocab_size",
    "head_dim",
    "tie_word_embeddings",
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
    "num_experts",
    "moe_num_experts",
    "n_routed_experts",
    "num_local_experts",
    "moe_intermediate_size",
    "n_shared_experts",
    "shared_expert_intermediate_size",
    "first_k_dense_replace",
    "moe_layer_freq",
    "interleave_moe_layer_step",
    "decoder_sparse_step",
    "mlp_only_layers",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "n_groups",
    "mamba_n_groups",
    "mamba_ngroups",
    "num_heads",
    "mamba_num_heads",
    "mamba_n_heads",
    "n_mamba_heads",
)


def _defaults_entry(model_type: str) -> Optional[Mapping[str, Any]]:
    """The generated table's entry for a model type; None when transformers has no class
    for it here (custom code) or vLLM reads it with a config class of its own."""
    if not model_type or model_type in _vllm_registry.CONFIG_CLASSES:
        return None
    return _model_defaults.MODELS.get(model_type)


def _default_source(model_type: str) -> str:
    return (
        f"the {model_type!r} config class default (transformers "
        f"{_model_defaults.TRANSFORMERS_VERSION})"
    )


def _fill(
    key: str,
    config: Mapping[str, Any],
    model_type: str,
    entry: Optional[Mapping[str, Any]],
    merged: Dict[str, Any],
) -> Fact:
    """One key of ``DEFAULTED_KEYS`` as the class gives it to vLLM (see ``resolve``)."""
    defaults: Mapping[str, Any] = (entry or {}).get("defaults", {})
    target = (entry or {}).get("aliases", {}).get(key)
    if config.get(key) is not None:
        return Fact(key, EXACT, "config.json")
    if entry is None:
        why = (
            f"config.json leaves {key} out and the {model_type!r} config class is not known here"
            if model_type
            else f"config.json leaves {key} out and names no model_type"
        )
        return Fact(key, EXACT if key in config else FACT_UNKNOWN, why)
    if target is not None:  # the class reads this name as another key (attribute_map)
        if config.get(target) is not None:
            merged[key] = config[target]
            return Fact(key, EXACT, f"config.json {target} (the class's alias)")
        if target in defaults:
            merged[key] = defaults[target]
            return Fact(key, DEFAULT, f"{_default_source(model_type)} of {target}")
        return Fact(key, DEFAULT, f"the {model_type!r} config class has no {target}")
    derived = entry.get("derived", {}).get(key)
    if derived is not None:
        return Fact(key, DEFAULT, f"{_default_source(model_type)}: {derived}")
    if key in config:  # stated as null: the class keeps None
        return Fact(key, EXACT, "config.json (null)")
    if key in defaults:
        merged[key] = defaults[key]
        return Fact(key, DEFAULT, _default_source(model_type))
    return Fact(key, DEFAULT, f"the {model_type!r} config class has no {key}")


def resolve(
    config: Mapping[str, Any], model_type: str, trust_remote_code: bool = False
) -> Tuple[Dict[str, Any], Dict[str, Fact]]:
    """The config as vLLM reads it through transformers: the keys it states, and for the
    keys it leaves out (``DEFAULTED_KEYS``) the class's default, each with its certainty.
    A key the class does not define stays None: vLLM's own fallback applies (exact).

    A checkpoint's own config class (``auto_map.AutoConfig``) is built only with
    ``--trust-remote-code``: transformers' ``AutoConfig.from_pretrained``
    (models/auto/configuration_auto.py) takes it when ``has_remote_code and
    trust_remote_code``, else the class of a ``model_type`` it knows (``CONFIG_MAPPING``);
    vLLM passes ``trust_remote_code`` False unless the flag is given. So microsoft/phi-1
    (model_type phi, an auto_map) is read with transformers' PhiConfig by default."""
    entry = _defaults_entry(model_type)
    auto_map = config.get("auto_map")
    own_class = isinstance(auto_map, Mapping) and "AutoConfig" in auto_map
    if own_class and (trust_remote_code or not entry):
        # the checkpoint's own config class is what transformers builds: its defaults are
        # not known here
        entry = None
        model_type = f"{model_type or '?'} (its own AutoConfig, auto_map)"
    merged: Dict[str, Any] = dict(config)
    facts = {key: _fill(key, config, model_type, entry, merged) for key in DEFAULTED_KEYS}
    pattern = hybrid_pattern(config, model_type)
    if pattern is not None:  # NemotronHConfig.num_hidden_layers is len(layers_block_type)
        merged["num_hidden_layers"] = len(pattern)
        facts["num_hidden_layers"] = Fact(
            "num_hidden_layers",
            EXACT,
            "the length of hybrid_override_pattern / layers_block_type (NemotronHConfig)",
        )
    for key, rule in (entry or {}).get("derived", {}).items():
        if config.get(key) is not None:
            continue
        heads = _int(merged.get("num_attention_heads"))
        if rule == "=num_attention_heads":
            merged[key] = heads
        elif rule == "hidden_size // num_attention_heads":
            hidden = _int(merged.get("hidden_size"))
            merged[key] = hidden // heads if hidden and heads else None
    return merged, facts


def _combined(facts: Mapping[str, Fact], keys: Tuple[str, ...], chosen: str, name: str) -> Fact:
    """The certainty of a fact read through aliases: the chosen key's, else (none set)
    unknown if any alias is unknown, else exact (the class has none of them)."""
    if chosen and chosen in facts:
        got = facts[chosen]
        return Fact(name, got.certainty, f"{chosen}: {got.source}")
    unknown = [facts[k] for k in keys if k in facts and facts[k].certainty == FACT_UNKNOWN]
    if unknown:
        return Fact(name, FACT_UNKNOWN, unknown[0].source)
    return Fact(name, EXACT, f"none of {', '.join(keys)} is set")


# The method vLLM picks for a checkpoint's quant_method on a GPU node: ModelConfig.
# _verify_quantization lets AutoAWQConfig/AutoGPTQConfig.override_quantization_method
# claim every "awq"/"gptq" config (same minimum capability as awq/gptq).
_QUANT_OVERRIDES = {"awq": "auto_awq", "gptq": "auto_gptq"}

# vLLM's own text of the failures, so users can match what they have seen in logs.
_LENGTH_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
_KV_HEAD_KEYS = ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num")
_EXPERT_KEYS = ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts")
_LAYER_KEYS = ("num_hidden_layers",)
_UNSCALED_ROPE = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")
_MLA_TYPES = frozenset(
    (
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "deepseek_mtp",
        "glm_moe_dsa",
        "glm4_moe_lite",
        "kimi_k2",
        "kimi_linear",
        "longcat_flash",
        "pangu_ultra_moe",
    )
)
_UNGATED_MLP = frozenset(
    ("phi", "gpt2", "gpt_neox", "gptj", "falcon", "gpt_bigcode", "starcoder2", "opt", "bloom")
)
_DTYPE_NAMES = {
    "float": "float32",
    "float32": "float32",
    "fp32": "float32",
    "half": "float16",
    "float16": "float16",
    "fp16": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
}

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


# -- reading ------------------------------------------------------------------------------


def _int(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _first(config: Mapping[str, Any], keys: Tuple[str, ...]) -> Tuple[Any, str]:
    for key in keys:
        value = config.get(key)
        if value is not None:
            return value, key
    return None, ""


# Text model types transformers renames before it looks the class up (the checkpoint keeps
# the old name): huggingface/transformers src/transformers/models/exaone4_5/
# configuration_exaone4_5.py (573d9f09) Exaone4_5_Config.__post_init__: "BC: EXAONE 4.5
# first released with the text model type as `exaone4_5_text`, now changed to `exaone4`".
TEXT_TYPE_RENAMES: Dict[str, str] = {"exaone4_5_text": "exaone4"}


def text_part(config: Mapping[str, Any]) -> Tuple[Mapping[str, Any], str]:
    """The language model's part of a config, as vLLM's get_hf_text_config picks it, and
    its model type (the text config's own, else its class's: Gemma 3's ``gemma3_text``)."""
    top_type = str(config.get("model_type") or "")
    thinker = config.get("thinker_config")
    if isinstance(thinker, Mapping) and isinstance(thinker.get("text_config"), Mapping):
        inner: Mapping[str, Any] = thinker["text_config"]
        return inner, str(inner.get("model_type") or "")
    text = config.get("text_config")
    if isinstance(text, Mapping):
        entry = _defaults_entry(top_type) or {}
        text_type = str(text.get("model_type") or entry.get("text", ""))
        text_type = TEXT_TYPE_RENAMES.get(text_type, text_type)
        merged, _ = resolve(text, text_type)
        if merged.get("num_attention_heads") is not None:
            return text, text_type
    return config, top_type


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The text part with the class defaults of the keys it leaves out filled in."""
    text, model_type = text_part(config)
    merged, _ = resolve(text, model_type)
    return merged


def _rope_parameters(config: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    """rope_parameters (transformers v5) or rope_scaling, one dict per layer type."""
    raw = config.get("rope_parameters")
    if not isinstance(raw, Mapping):
        raw = config.get("rope_scaling")
    if not isinstance(raw, Mapping) or not raw:
        return []
    if all(isinstance(v, Mapping) for v in raw.values()):
        return [v for v in raw.values() if isinstance(v, Mapping) and v]
    return [raw]


def _rope_type(params: Mapping[str, Any]) -> str:
    kind = str(params.get("rope_type") or params.get("type") or "default")
    return {"su": "longrope", "mrope": "default"}.get(kind, kind)


def derive_max_len(config: Mapping[str, Any]) -> Tuple[Optional[int], str]:
    """The longest sequence vLLM accepts for this model, and how that was derived."""
    text = text_config(config)
    derived: Optional[float] = None
    key = ""
    for name in _LENGTH_KEYS:
        value = text.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if derived is None or value < derived:
            derived, key = float(value), name
    if isinstance(text.get("model_max_length"), (int, float)) and text["model_max_length"]:
        derived, key = float(text["model_max_length"]), "model_max_length"
    if derived is None:
        return 2048, "no length key in config.json: vLLM assumes 2048"
    description = f"{key}={int(derived)}"
    model_type = str(config.get("model_type") or "")
    params = _rope_parameters(text) or _rope_parameters(config)
    if params and "gemma3" not in model_type:
        factor: Optional[float] = 1.0
        for rp in params:
            if _rope_type(rp) not in _UNSCALED_ROPE:
                got = rp.get("factor", factor)
                factor = float(got) if isinstance(got, (int, float)) else None
        if factor is None:
            factor = 1.0
        if factor != 1.0:
            derived *= factor
            description += f" x RoPE factor {factor:g}"
    return int(derived), description


def _dtype(config: Mapping[str, Any]) -> Optional[str]:
    for source in (config, text_config(config)):
        for key in ("dtype", "torch_dtype"):
            value = source.get(key)
            if isinstance(value, str):
                return _DTYPE_NAMES.get(value.lower(), value.lower())
    return None


def quant_method_of(files: Mapping[str, Any]) -> Optional[str]:
    """The quantization method vLLM reads from the model's files, normalised."""
    config = files.get(CONFIG)
    candidates: List[Any] = []
    if isinstance(config, Mapping):
        candidates += [config.get("quantization_config"), config.get("compression_config")]
        text = config.get("text_config")
        if isinstance(text, Mapping):
            candidates.append(text.get("quantization_config"))
    candidates.append(files.get(HF_QUANT))
    for quant in candidates:
        if not isinstance(quant, Mapping):
            continue
        producer = quant.get("producer")
        algo_block = quant.get("quantization")
        if isinstance(producer, Mapping) and producer.get("name") == "modelopt":
            algo = (
                str(algo_block.get("quant_algo", "")).upper()
                if isinstance(algo_block, Mapping)
                else ""
            )
            if algo in ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO"):
                return "modelopt"
            if algo == "NVFP4":
                return "modelopt_fp4"
            if algo == "MIXED_PRECISION":
                return "modelopt_mixed"
        method = quant.get("quant_method")
        if isinstance(method, str) and method:
            name = method.lower().replace("compressed_tensors", "compressed-tensors")
            if name == "modelopt":
                return _modelopt_method(quant)
            return _QUANT_OVERRIDES.get(name, name)
        if isinstance(algo_block, Mapping) and algo_block.get("quant_algo"):
            # a legacy ModelOpt hf_quant_config.json without producer or quant_method
            # (nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4): vLLM normalizes it as
            # ModelOpt (tests/config/test_model_arch_config.py
            # test_legacy_modelopt_config_without_producer_is_normalized: modelopt_fp4)
            return _modelopt_method(quant)
    return None


def _modelopt_method(quant: Mapping[str, Any]) -> str:
    """The method vLLM runs a ``quant_method: modelopt`` config with: the ModelOpt
    configs' ``override_quantization_method`` rename it by ``quant_algo``, read flat
    (config.json's compressed-tensors-style ``quantization_config``) or under
    ``quantization`` (``ModelOptQuantConfigBase._extract_modelopt_quant_algo``,
    vllm/model_executor/layers/quantization/modelopt.py): NVFP4 / W4A16_NVFP4 ->
    modelopt_fp4, MXFP8 -> modelopt_mxfp8, MIXED_PRECISION -> modelopt_mixed; the FP8
    algorithms stay ``modelopt``."""
    block = quant.get("quantization")
    source = block if isinstance(block, Mapping) else quant
    algo = str(source.get("quant_algo") or "").upper()
    if "FP4" in algo:
        return "modelopt_fp4"
    if "MXFP8" in algo:
        return "modelopt_mxfp8"
    if algo == "MIXED_PRECISION":
        return "modelopt_mixed"
    return "modelopt"


def _quant_bits(files: Mapping[str, Any], method: Optional[str]) -> Optional[float]:
    """Bits per weight of the quantized linear layers (None: not quantized / unknown)."""
    if method is None:
        return None
    quant = _quant_config(files)
    if isinstance(quant, Mapping):
        bits = _int(quant.get("bits") or quant.get("w_bit") or quant.get("weight_bits"))
        if not bits and method == "compressed-tensors":
            bits = compressed_tensors_bits(quant)
        if bits:
            return bits + 0.25  # scales and zeros, group size 128
    if "fp4" in method or "mxfp4" in method or method == "modelopt_mixed":
        return 4.25
    if "fp8" in method or method in ("modelopt", "fbgemm_fp8", "experts_int8", "mxfp8"):
        return 8.0
    return None


def _ints(value: Any) -> List[int]:
    return [v for v in (_int(x) for x in value) if v is not None] if isinstance(value, list) else []


# More layers than any model has (the largest in the corpus: 126): per-layer arithmetic
# stops there, so a hostile config cannot make the rules loop 10^9 times.
MAX_LAYERS = 4096


def moe_layer_flags(text: Mapping[str, Any], layers: int) -> List[bool]:
    """Which decoder layers hold experts, as vLLM 0.33.0's model code decides: llama4.py
    ``(i + 1) % interleave_moe_layer_step == 0`` (0: none); deepseek_v2.py / glm4_moe.py
    ``i >= first_k_dense_replace and i % moe_layer_freq == 0``; qwen2_moe.py /
    qwen3_moe.py ``i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0``.
    Each model sets only its own keys; the others keep their neutral value."""
    step = _int(text.get("interleave_moe_layer_step"))
    first_dense = _int(text.get("first_k_dense_replace")) or 0
    freq = _int(text.get("moe_layer_freq")) or 1
    sparse_step = _int(text.get("decoder_sparse_step")) or 1
    mlp_only = set(_ints(text.get("mlp_only_layers")))
    flags = []
    for i in range(layers):
        moe = i >= first_dense and i % freq == 0 and (i + 1) % sparse_step == 0
        moe = moe and i not in mlp_only
        if step is not None:
            moe = moe and step > 0 and (i + 1) % step == 0
        flags.append(moe)
    return flags


def _find_multiple(n: int, k: int) -> int:
    return n if n % k == 0 else n + k - n % k


def nas_layers(text: Mapping[str, Any]) -> Optional[List[Tuple[Optional[int], int]]]:
    """Per-layer (NAS) configs, as vLLM's nemotron_nas.py builds them: per block, the KV
    heads of its attention (``num_attention_heads // n_heads_in_group``; None: a no-op
    attention) and its MLP's intermediate size (``ffn_mult`` -> ``_find_multiple(int(2 *
    ffn_mult * hidden / 3), 256)``, else ``intermediate_size``; 0: a no-op MLP). None when
    the config has no block_configs or a block cannot be read."""
    blocks = text.get("block_configs")
    heads = _int(text.get("num_attention_heads"))
    hidden = _int(text.get("hidden_size"))
    if not isinstance(blocks, list) or not blocks or not heads or not hidden:
        return None
    out: List[Tuple[Optional[int], int]] = []
    for block in blocks:
        if not isinstance(block, Mapping):
            return None
        attention, ffn = block.get("attention"), block.get("ffn")
        if not isinstance(attention, Mapping) or not isinstance(ffn, Mapping):
            return None
        kv: Optional[int] = None
        if not attention.get("no_op"):
            group = _int(attention.get("n_heads_in_group"))
            if not group:
                return None
            kv = heads // group
        inter = 0
        if not ffn.get("no_op"):
            mult = ffn.get("ffn_mult")
            if isinstance(mult, (int, float)) and not isinstance(mult, bool):
                inter = _find_multiple(int(2 * mult * hidden / 3), 256)
            else:
                inter = _int(ffn.get("intermediate_size")) or 0
            if not inter:
                return None
        out.append((kv, inter))
    return out


# NemotronHConfig's layer kinds as pattern letters (transformers models/nemotron_h/
# configuration_nemotron_h.py _list_to_pattern; "mamba"/"attention": the names older
# Hub configs use, which remap_legacy_layer_types turns into these).
_BLOCK_LETTERS = {
    "linear_attention": "M",
    "mamba": "M",
    "moe": "E",
    "full_attention": "*",
    "attention": "*",
    "mlp": "-",
}


def hybrid_pattern(text: Mapping[str, Any], model_type: str) -> Optional[str]:
    """Nemotron-H's layer pattern (vLLM's nemotron_h.py: M Mamba-2, * attention, - MLP,
    E experts), None for other models: ``hybrid_override_pattern``, else the
    ``layers_block_type`` list of Nemotron-3 configs, as NemotronHConfig.__post_init__
    reads them (the pattern wins). Its length IS the layer count: the class's
    ``num_hidden_layers`` property returns ``len(layers_block_type)`` whatever config.json
    says."""
    if model_type != "nemotron_h":
        return None
    pattern = text.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern and set(pattern) <= set("ME*-"):
        return pattern
    blocks = text.get("layers_block_type")
    if isinstance(blocks, list) and blocks:
        letters = [_BLOCK_LETTERS.get(str(b)) for b in blocks]
        if all(letters):
            return "".join(str(x) for x in letters)
    return None


# The Mamba-2 mixers vLLM 0.33.0 builds (MambaMixer2 in
# vllm/model_executor/layers/mamba/mamba_mixer2.py), and which config keys give their
# groups and heads: falcon_h1.py, granitemoehybrid.py, mamba2.py, nemotron_h.py, zamba2.py.
MAMBA2_KEYS: Dict[str, Tuple[str, str]] = {
    "falcon_h1": ("mamba_n_groups", "mamba_n_heads"),
    "granitemoehybrid": ("mamba_n_groups", "mamba_n_heads"),
    "mamba2": ("n_groups", "num_heads"),
    "nemotron_h": ("n_groups", "mamba_num_heads"),
    "zamba2": ("mamba_ngroups", "n_mamba_heads"),
}


def _has_mamba_layers(text: Mapping[str, Any], model_type: str) -> bool:
    pattern = hybrid_pattern(text, model_type)
    if pattern is not None:
        return "M" in pattern
    types = text.get("layer_types")
    if model_type == "granitemoehybrid" and isinstance(types, list):
        return "mamba" in types
    return True


def _attention(text: Mapping[str, Any], hidden: int, heads: int, kv: int, head_dim: int) -> float:
    if text.get("kv_lora_rank"):
        q_lora = _int(text.get("q_lora_rank"))
        nope = _int(text.get("qk_nope_head_dim")) or 0
        rope = _int(text.get("qk_rope_head_dim")) or 0
        v_dim = _int(text.get("v_head_dim")) or head_dim
        kv_lora = _int(text.get("kv_lora_rank")) or 0
        q = (
            hidden * q_lora + q_lora * heads * (nope + rope)
            if q_lora
            else hidden * heads * (nope + rope)
        )
        return float(
            q
            + hidden * (kv_lora + rope)
            + kv_lora * heads * (nope + v_dim)
            + heads * v_dim * hidden
        )
    return float(hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2)


def _param_estimate(
    text: Mapping[str, Any], model_type: str = ""
) -> Optional[Tuple[float, float, float]]:
    """(embedding + head, attention + dense MLP + norms, expert) parameter counts from
    the architecture, layer by layer where the model's layers differ (interleaved MoE,
    per-layer NAS blocks, Nemotron-H's pattern); None when a dimension is missing."""
    hidden = _int(text.get("hidden_size"))
    layers = _int(text.get("num_hidden_layers"))
    vocab = _int(text.get("vocab_size"))
    heads = _int(text.get("num_attention_heads"))
    if not hidden or not layers or not vocab or not heads or layers > MAX_LAYERS:
        return None
    kv = _int(_first(text, _KV_HEAD_KEYS)[0]) or heads
    head_dim = _int(text.get("head_dim")) or hidden // heads
    inter = _int(text.get("intermediate_size")) or 4 * hidden
    embed = float(vocab * hidden) * (1 if text.get("tie_word_embeddings") else 2)
    nas = nas_layers(text)
    if nas is not None:
        base = 0.0
        for kv_heads, nas_inter in nas:
            if kv_heads is not None:
                base += _attention(text, hidden, heads, kv_heads, head_dim)
            base += 3.0 * hidden * nas_inter
        return embed, base, 0.0
    attn = _attention(text, hidden, heads, kv, head_dim)
    experts = _int(_first(text, _EXPERT_KEYS)[0]) or 0
    pattern = hybrid_pattern(text, model_type)
    if pattern is not None:
        mamba_heads = _int(text.get("mamba_num_heads")) or 0
        mamba_inner = mamba_heads * (_int(text.get("mamba_head_dim")) or 0)
        groups_state = (
            2 * (_int(text.get("n_groups")) or 1) * (_int(text.get("ssm_state_size")) or 0)
        )
        mamba = hidden * (2 * mamba_inner + groups_state + mamba_heads) + mamba_inner * hidden
        moe_inter = _int(text.get("moe_intermediate_size")) or inter
        # Nemotron-3 Super: experts work in a latent space of moe_latent_size (None: the
        # hidden size), with one down and one up projection per MoE layer
        latent = _int(text.get("moe_latent_size")) or hidden
        shared_inter = _int(text.get("moe_shared_expert_intermediate_size")) or 0
        moe_layers = pattern.count("E")
        base = pattern.count("*") * attn + pattern.count("M") * mamba
        base += pattern.count("-") * 2.0 * hidden * inter  # relu2 MLPs: up and down
        base += moe_layers * (2.0 * hidden * shared_inter + hidden * experts)
        if latent != hidden:
            base += moe_layers * 2.0 * hidden * latent
        expert_params = moe_layers * experts * 2.0 * latent * moe_inter
        return embed, float(base), expert_params
    # gated MLPs (SwiGLU: gate, up, down) have three matrices, the older fc1/fc2 two
    dense_inter = _int(text.get("intermediate_size_mlp")) or inter
    dense_mlp = (2.0 if model_type in _UNGATED_MLP else 3.0) * hidden * dense_inter
    if not experts:
        return embed, float(layers * (attn + dense_mlp)), 0.0
    sparse_layers = sum(moe_layer_flags(text, layers))
    dense_layers = layers - sparse_layers
    moe_inter = _int(text.get("moe_intermediate_size")) or inter
    shared = _int(text.get("n_shared_experts")) or 0
    shared_inter = _int(text.get("shared_expert_intermediate_size")) or moe_inter * shared
    if model_type == "llama4_text":
        shared_inter = inter  # Llama4MoE's shared expert (vLLM llama4.py)
    per_layer_shared = 3.0 * hidden * shared_inter
    expert_params = sparse_layers * experts * 3.0 * hidden * moe_inter
    base = layers * attn + dense_layers * dense_mlp
    base += sparse_layers * (per_layer_shared + hidden * experts)
    return embed, float(base), expert_params


# -- weight bytes: the checkpoint's own data first -----------------------------------------

# Files the model lookups may add beside config.json (never on the Hub under these names):
# the tensor bytes of the *.safetensors files on a mounted volume or in the HF cache
# (weightfiles.safetensors_sizes: {"files": {name: bytes}, "complete": bool, "where": ...}),
# and the Hub's per-dtype parameter counts (the "safetensors" field of the Hub's model info:
# {"parameters": {"BF16": n, ...}, "total": n}), e.g. from the modelConfigs ConfigMap.
SAFETENSORS_SIZES = "safetensors-sizes.json"
HUB_SAFETENSORS = "hub-safetensors.json"
# bytes per element of the safetensors dtypes the Hub counts parameters in
_DTYPE_BYTES: Dict[str, float] = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}


@dataclass(frozen=True)
class WeightBytes:
    """A size in bytes with its certainty (EXACT from the checkpoint's own data,
    ESTIMATED from config arithmetic, FACT_UNKNOWN) and where it came from."""

    value: Optional[int]
    certainty: str
    source: str


def checkpoint_bytes(files: Mapping[str, Any]) -> WeightBytes:
    """The bytes of the checkpoint's tensors as stored (what a load reads), from the
    checkpoint's own data only: the safetensors index's ``metadata.total_size``, the
    tensor bytes of every *.safetensors file vLLM would load (on a volume or in the HF
    cache, all of them present), or the Hub's per-dtype parameter counts. Exact, or
    unknown: never an estimate (``weight_bytes`` estimates when this is unknown)."""
    index = files.get(INDEX)
    if isinstance(index, Mapping):
        metadata = index.get("metadata")
        total = _int(metadata.get("total_size")) if isinstance(metadata, Mapping) else None
        if total and total > 0:
            return WeightBytes(total, EXACT, f"{INDEX} metadata.total_size")
    sizes = files.get(SAFETENSORS_SIZES)
    if isinstance(sizes, Mapping) and sizes.get("complete") is True:
        listed = sizes.get("files")
        counts = [_int(v) for v in listed.values()] if isinstance(listed, Mapping) else []
        if counts and all(c is not None and c >= 0 for c in counts):
            total = sum(c for c in counts if c is not None)
            if total > 0:
                where = str(sizes.get("where") or "the model directory")
                return WeightBytes(total, EXACT, f"{len(counts)} *.safetensors file(s) in {where}")
    hub = files.get(HUB_SAFETENSORS)
    params = hub.get("parameters") if isinstance(hub, Mapping) else None
    if isinstance(params, Mapping) and params:
        total_f = 0.0
        for dtype, count in params.items():
            width, number = _DTYPE_BYTES.get(str(dtype).upper()), _int(count)
            if width is None or number is None or number < 0:
                break
            total_f += width * number
        else:
            if total_f > 0:
                kinds = ", ".join(sorted(str(k) for k in params))
                return WeightBytes(int(total_f), EXACT, f"the Hub's parameter counts ({kinds})")
    return WeightBytes(
        None,
        FACT_UNKNOWN,
        f"no {INDEX} total_size, complete *.safetensors files or Hub parameter counts",
    )


def weight_bytes(files: Mapping[str, Any]) -> WeightBytes:
    """The weights' bytes in GPU memory once vLLM has loaded them at the checkpoint's
    dtype: the checkpoint's own size (``checkpoint_bytes``, EXACT; a float32 checkpoint is
    cast to 16 bits on load, so half), else config arithmetic (ESTIMATED), else unknown."""
    config = files.get(CONFIG)
    if not isinstance(config, Mapping):
        return WeightBytes(None, FACT_UNKNOWN, "no config.json")
    dtype = _dtype(config)
    method = quant_method_of(files)
    stored = checkpoint_bytes(files)
    if stored.value is not None:
        if method is None and dtype == "float32":
            return WeightBytes(
                stored.value // 2,
                EXACT,
                f"{stored.source} {stored.value} (float32 on disk, loaded as 16-bit)",
            )
        return stored
    text, model_type = text_part(config)
    merged, _ = resolve(text, model_type)
    estimate = _param_estimate(merged, model_type)
    if estimate is None:
        return WeightBytes(None, FACT_UNKNOWN, "config.json lacks the model's dimensions")
    embed, base, experts = estimate
    bits = _quant_bits(files, method)
    size: float
    if bits is None:
        size = (embed + base + experts) * 2
        text_out = f"estimated: {(embed + base + experts) / 1e9:.3g}B parameters x 2 bytes"
    elif method == "mxfp4" or (method or "").endswith("_mxfp4"):
        size = (embed + base) * 2 + experts * bits / 8
        text_out = f"estimated: {(embed + base + experts) / 1e9:.3g}B parameters, experts MXFP4"
    else:
        size = embed * 2 + (base + experts) * bits / 8
        text_out = (
            f"estimated: {(embed + base + experts) / 1e9:.3g}B parameters, {bits:g} bits ({method})"
        )
    return WeightBytes(int(size), ESTIMATED, text_out)


# -- the smallest the loaded weights can be: the certain side of the estimate --------------

# MoE models whose expert layers ``moe_layer_flags`` places exactly as vLLM's model code
# does (its docstring names the files), with the keys that code reads: their experts count
# toward the lower bound when those keys are certain and no other layout key is set. Other
# MoE models' MLPs are left out of it (which layers hold experts is not known here).
_DEEPSEEK_LAYOUT = ("first_k_dense_replace", "moe_layer_freq")
_QWEN_LAYOUT = ("decoder_sparse_step", "mlp_only_layers")
_MOE_LAYOUT_KEYS: Dict[str, Tuple[str, ...]] = {
    "mixtral": (),
    "qwen2_moe": _QWEN_LAYOUT,
    "qwen3_moe": _QWEN_LAYOUT,
    "deepseek_v2": _DEEPSEEK_LAYOUT,
    "deepseek_v3": _DEEPSEEK_LAYOUT,
    "kimi_k2": _DEEPSEEK_LAYOUT,
    "glm4_moe": _DEEPSEEK_LAYOUT,
    "llama4_text": ("interleave_moe_layer_step",),
    "gpt_oss": (),
    "olmoe": (),
    "granitemoe": (),
    "phimoe": (),
}
_LAYOUT_KEYS = (*_DEEPSEEK_LAYOUT, *_QWEN_LAYOUT, "interleave_moe_layer_step")
# Keys of models whose layers are not all attention + MLP (Mamba, linear attention,
# per-layer blocks): their layers are left out of the lower bound, the embedding stays.
_NOT_PLAIN = re.compile(
    r"mamba|ssm|linear_attn|lightning|attn_layer|full_attention_interval|block_configs|"
    r"state_size"
)
_ATTENTION_LAYERS = frozenset(("full_attention", "sliding_attention", "chunked_attention"))
# Quantization methods and the fewest bits a weight of theirs takes once loaded.
_FP8_METHODS = frozenset(
    ("fp8", "modelopt", "fbgemm_fp8", "ptpc_fp8", "mxfp8", "modelopt_mxfp8", "deepseek_v4_fp8")
)
_FP4_METHODS = frozenset(("modelopt_fp4", "modelopt_mixed", "mxfp4", "gpt_oss_mxfp4"))
_BITS_KEY_METHODS = frozenset(
    ("gptq", "auto_gptq", "gptq_marlin", "awq", "auto_awq", "awq_marlin", "moe_wna16")
)
_MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers")


def _quant_config(files: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    config = files.get(CONFIG)
    if not isinstance(config, Mapping):
        return None
    for holder in (config, config.get("text_config")):
        if isinstance(holder, Mapping):
            for key in ("quantization_config", "compression_config"):
                got = holder.get(key)
                if isinstance(got, Mapping):
                    return got
    return None


def compressed_tensors_bits(quant: Mapping[str, Any]) -> Optional[int]:
    """The fewest weight bits among a compressed-tensors config's ``config_groups``
    (``weights.num_bits``: moonshotai/Kimi-K2.5's experts are 4); None when unreadable."""
    groups = quant.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        return None
    bits: List[int] = []
    for group in groups.values():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        got = _int(weights.get("num_bits")) if isinstance(weights, Mapping) else None
        if not got or got < 1:
            return None
        bits.append(got)
    return min(bits)


def bits_floor(files: Mapping[str, Any], method: Optional[str]) -> Optional[int]:
    """The fewest bits any weight takes in GPU memory: 16 for an unquantized checkpoint
    (float32 is cast down to 16 bits, never below), the method's own width for a quantized
    one (fp8: 8, fp4/mxfp4: 4, GPTQ/AWQ: ``bits``, compressed-tensors: the least
    ``num_bits``); None when not known (no lower bound then)."""
    config = files.get(CONFIG)
    if method is None:
        if _quant_config(files) is not None or files.get(HF_QUANT) is not None:
            return None  # a quantization block no method is read from: not known
        dtype = _dtype(config) if isinstance(config, Mapping) else None
        return 16 if dtype in (None, "float32", "bfloat16", "float16") else None
    quant = _quant_config(files)
    if isinstance(quant, Mapping) and (
        quant.get("sparsity_config") or "sparse" in str(quant.get("format") or "")
    ):
        return None  # 2:4 sparse weights are stored and run compressed: fewer bytes
    if method in _FP8_METHODS:
        return 8
    if method in _FP4_METHODS:
        return 4
    if quant is None:
        return None
    if method in _BITS_KEY_METHODS:
        bits = _int(quant.get("bits") or quant.get("w_bit") or quant.get("weight_bits"))
        return bits if bits and bits > 0 else None
    if method == "compressed-tensors":
        return compressed_tensors_bits(quant)
    return None


def _plain_layers(text: Mapping[str, Any]) -> bool:
    """Every decoder layer is attention + MLP (no Mamba, linear attention or per-layer
    blocks; ``layer_types`` only full/sliding/chunked attention)."""
    if any(_NOT_PLAIN.search(str(key)) for key in text):
        return False
    types = text.get("layer_types")
    if types is None:
        return True
    return isinstance(types, list) and all(t in _ATTENTION_LAYERS for t in types)


def _is_certain(keyed: Mapping[str, Fact], key: str) -> bool:
    fact = keyed.get(key)
    return fact is None or fact.certain


def param_floor(
    text: Mapping[str, Any], keyed: Mapping[str, Fact], model_type: str
) -> Tuple[Optional[float], str]:
    """The fewest parameters the model's layers can hold, counting only matrices every
    such layer has, from certain facts only: the embedding once (vocab x hidden, tied or
    not), per attention layer its query and output projections (MLA: the output), per
    dense MLP two matrices (up and down: gated MLPs have three), per MoE layer of a
    known layout its experts' two. Hybrid layers count nothing; Nemotron-H counts its
    pattern. (None, why) when a fact it needs is not certain."""
    for key in ("hidden_size", "vocab_size"):
        fact = keyed.get(key)
        if fact is not None and not fact.certain:
            return None, f"{key} is {fact.certainty} ({fact.source})"
    hidden = _int(text.get("hidden_size"))
    vocab = _int(text.get("vocab_size"))
    if not hidden or not vocab:
        return None, "config.json lacks the hidden size or the vocabulary"
    layers = _int(text.get("num_hidden_layers"))
    heads = _int(text.get("num_attention_heads"))
    shaky = [k for k in ("num_hidden_layers", "num_attention_heads") if not _is_certain(keyed, k)]
    if shaky or not layers or not heads or layers > MAX_LAYERS:
        # the layers are not known: the embedding alone is still certain
        return float(vocab) * hidden, f"embedding {vocab} x {hidden}; layers not counted"

    def certain(key: str) -> Optional[int]:
        fact = keyed.get(key)
        if fact is not None and not fact.certain:
            return None
        value = _int(text.get(key))
        return value if value and value > 0 else None

    # vLLM's attention: config head_dim, else hidden // heads; a head_dim that is not
    # certain leaves attention out (it may be below hidden // heads: Mistral-Nemo)
    head_fact = keyed.get("head_dim")
    head_dim: Optional[int] = None
    if head_fact is None or head_fact.certain:
        head_dim = _int(text.get("head_dim")) or hidden // heads
    embed = float(vocab) * hidden
    parts = [f"embedding {vocab} x {hidden}"]
    if text.get("kv_lora_rank"):
        v_dim = certain("v_head_dim")
        attn = float(heads * v_dim * hidden) if v_dim else 0.0
    else:
        attn = 2.0 * hidden * heads * head_dim if head_dim else 0.0
    inter = certain("intermediate_size")
    pattern = hybrid_pattern(text, model_type)
    total = embed
    if pattern is not None:
        total += pattern.count("*") * attn + pattern.count("-") * 2.0 * hidden * (inter or 0)
        parts.append(f"{pattern.count('*')} attention and {pattern.count('-')} MLP layers")
        # NemotronH's experts: up and down over moe_latent_size (None: the hidden size)
        experts = certain("n_routed_experts")
        moe_inter = certain("moe_intermediate_size")
        latent = certain("moe_latent_size") or hidden
        if experts and moe_inter and pattern.count("E"):
            total += pattern.count("E") * experts * 2.0 * latent * moe_inter
            parts.append(f"{pattern.count('E')} x {experts} experts 2 x {latent} x {moe_inter}")
        return total, ", ".join(parts)
    if not _plain_layers(text):
        parts.append("hybrid layers not counted")
        return total, ", ".join(parts)
    total += layers * attn
    parts.append(f"{layers} x attention q+o")

    def certain_fact(key: str) -> bool:
        fact = keyed.get(key)
        return fact is None or fact.certain

    mlp, said = _mlp_floor(text, certain, model_type, inter, certain_fact)
    return total + mlp, ", ".join(parts + said)


def _mlp_floor(
    text: Mapping[str, Any],
    certain: Any,
    model_type: str,
    inter: Optional[int],
    certain_fact: Any,
) -> Tuple[float, List[str]]:
    """``param_floor``'s MLPs: two matrices per dense layer, two per expert of a MoE
    layer of a known layout; nothing where the experts or the layout are not certain."""
    hidden = int(text["hidden_size"])
    layers = int(text["num_hidden_layers"])
    experts_key = next((k for k in _EXPERT_KEYS if text.get(k) is not None), "")
    experts = certain(experts_key) if experts_key else 0
    if experts_key and experts is None:
        return 0.0, []  # experts unknown: MLPs left out
    if not experts:
        if not inter:
            return 0.0, []
        return layers * 2.0 * hidden * inter, [f"{layers} x MLP 2 x {hidden} x {inter}"]
    layout = _MOE_LAYOUT_KEYS.get(model_type)
    if layout is None:
        return 0.0, ["MoE layers not counted"]
    foreign = [k for k in _LAYOUT_KEYS if k not in layout and text.get(k) is not None]
    if foreign or not all(certain_fact(k) for k in layout):
        return 0.0, ["MoE layers not counted (their placement is not certain)"]
    sparse = sum(moe_layer_flags(text, layers))
    moe_inter = certain("moe_intermediate_size") or inter
    dense_inter = certain("intermediate_size_mlp") or inter
    total, said = 0.0, []
    if dense_inter and layers - sparse:
        total += (layers - sparse) * 2.0 * hidden * dense_inter
        said.append(f"{layers - sparse} x MLP 2 x {hidden} x {dense_inter}")
    if moe_inter and sparse:
        total += sparse * experts * 2.0 * hidden * moe_inter
        said.append(f"{sparse} x {experts} experts 2 x {hidden} x {moe_inter}")
    return total, said


def _has_extra_parts(config: Mapping[str, Any]) -> bool:
    """Parts a checkpoint may hold that vLLM need not load: multi-token-prediction layers
    (loaded only for speculative decoding) and non-text towers (a vision encoder)."""
    text, _ = text_part(config)
    for holder in (config, text):
        for key in _MTP_KEYS:
            got = _int(holder.get(key))
            if got:
                return True
    skip = ("text_config", "quantization_config", "compression_config", "rope_scaling")
    return any(
        isinstance(v, Mapping) and str(k).endswith("_config") and k not in skip
        for k, v in config.items()
    )


def weight_floor(files: Mapping[str, Any], trust_remote_code: bool = False) -> WeightBytes:
    """The smallest the weights can be in GPU memory once vLLM has loaded them, with its
    derivation: the larger of (a) the checkpoint's own exact bytes (``checkpoint_bytes``;
    float32 halved; one output head taken off) where it holds nothing else vLLM may skip
    (no MTP layers, no vision tower), and (b) ``param_floor`` x ``bits_floor``. EXACT (it
    rests on the checkpoint's data or on certain facts) or FACT_UNKNOWN (value None)."""
    config = files.get(CONFIG)
    if not isinstance(config, Mapping):
        return WeightBytes(None, FACT_UNKNOWN, "no config.json")
    method = quant_method_of(files)
    raw_text, text_type = text_part(config)
    text, keyed = resolve(raw_text, text_type, trust_remote_code)
    model_type = str(text_type or text.get("model_type") or "")
    bits = bits_floor(files, method)
    best: Optional[float] = None
    how = ""
    if bits is not None:
        params, why = param_floor(text, keyed, model_type)
        if params is not None:
            best = params * bits / 8
            how = f"at least {params / 1e9:.3g}B parameters ({why}) x {bits} bits"
        else:
            how = why
    stored = checkpoint_bytes(files)
    if stored.value is not None and not _has_extra_parts(config):
        value = float(stored.value)
        note = stored.source
        if method is None and _dtype(config) == "float32":
            value /= 2
            note += " (float32, loaded as 16-bit)"
        # less one output head at float32: a tied model's stored copy, or the head a
        # pooling runner (--runner pooling, --convert embed) never loads
        vocab, hidden = _int(text.get("vocab_size")), _int(text.get("hidden_size"))
        if not vocab or not hidden:
            value = 0.0
        else:
            value -= vocab * hidden * 4.0
            note += f" less one head ({vocab} x {hidden} x 4 bytes) vLLM may skip"
        if value > (best or 0):
            best, how = value, note
    if best is None or best <= 0:
        return WeightBytes(None, FACT_UNKNOWN, how or "no certain lower bound")
    return WeightBytes(int(best), EXACT, how)


def _kv_layout(
    text: Mapping[str, Any], model_type: str, kv: Optional[int]
) -> Tuple[Optional[int], Tuple[int, ...]]:
    """(KV heads summed over the attention layers, the distinct per-layer KV head counts)
    for per-layer NAS configs and Nemotron-H's pattern; (None, ()) for uniform models."""
    nas = nas_layers(text)
    if nas is not None:
        heads = [h for h, _ in nas if h is not None]
        return sum(heads), tuple(sorted(set(heads)))
    pattern = hybrid_pattern(text, model_type)
    if pattern is not None and kv:
        return pattern.count("*") * kv, (kv,)
    return None, ()


def read_facts(
    files: Mapping[str, Any], source: str = "", trust_remote_code: bool = False
) -> Optional[ModelFacts]:
    """ModelFacts from the parsed files; None when there is no usable config.json. Keys
    config.json leaves out take the class defaults (``resolve``; the checkpoint's own
    config class only with ``--trust-remote-code``); every fact the rules read carries its
    certainty and source (``ModelFacts.facts``)."""
    config = files.get(CONFIG)
    if not isinstance(config, Mapping):
        return None
    raw_text, text_type = text_part(config)
    text, keyed = resolve(raw_text, text_type, trust_remote_code)
    problems: List[str] = []
    facts: List[Fact] = []
    heads = _int(text.get("num_attention_heads"))
    if heads is None:
        problems.append("num_attention_heads")
    facts.append(
        _combined(keyed, ("num_attention_heads",), "num_attention_heads", "num_attention_heads")
    )
    model_type = str(text_type or text.get("model_type") or config.get("model_type") or "")
    # MLA caches one latent vector per token and layer; vLLM still reports the heads
    use_mla = model_type in _MLA_TYPES and text.get("kv_lora_rank") is not None
    layers = _int(_first(text, _LAYER_KEYS)[0])
    if layers is None:
        problems.append("num_hidden_layers")
    facts.append(_combined(keyed, _LAYER_KEYS, "num_hidden_layers", "num_layers"))
    kv, kv_fact, kv_total, kv_per_layer = _kv_heads(text, keyed, model_type, heads)
    facts.append(kv_fact)
    experts_raw, experts_key = _first(text, _EXPERT_KEYS)
    if isinstance(experts_raw, list) and experts_raw:
        experts_raw = experts_raw[0]
    experts = _int(experts_raw) or 0
    facts.append(_combined(keyed, _EXPERT_KEYS, experts_key, "num_experts"))
    max_len, max_text = derive_max_len(config)
    length_key = max_text.partition("=")[0] if "=" in max_text else ""
    facts.append(_combined(keyed, _LENGTH_KEYS, length_key, "max_model_len"))
    dtype = _dtype(config)
    method = quant_method_of(files)
    if method == "mxfp4" and model_type == "gpt_oss":
        method = "gpt_oss_mxfp4"  # vLLM's override for gpt-oss (same minimum capability)
    head_dim = _int(text.get("head_dim"))
    if head_dim is None and heads:
        hidden = _int(text.get("hidden_size"))
        head_dim = hidden // heads if hidden else None
    kv_per_token, kv_window, window = _kv_per_token(
        text, layers, use_mla=use_mla, head_dim=head_dim, kv=kv, kv_total=kv_total
    )
    weights = weight_bytes(files)
    facts.append(Fact("weight_bytes", weights.certainty, weights.source))
    floor = weight_floor(files, trust_remote_code)
    facts.append(Fact("weight_bytes_floor", floor.certainty, floor.source))
    mamba2, mamba_facts = _mamba2(text, keyed, model_type)
    facts.extend(mamba_facts)
    archs = config.get("architectures")
    return ModelFacts(
        source=source,
        model_type=model_type,
        architectures=tuple(str(a) for a in archs) if isinstance(archs, list) else (),
        num_attention_heads=heads,
        num_kv_heads=kv,
        num_layers=layers,
        num_experts=experts,
        head_dim=head_dim,
        use_mla=use_mla,
        max_model_len=max_len,
        max_len_text=max_text,
        model_max_length=_int(config.get("model_max_length")),
        dtype=dtype,
        quant_method=method,
        quant_min_capability=QUANT_MIN_CAPABILITY.get(method) if method else None,
        weight_bytes=weights.value,
        weight_text=weights.source if weights.value is not None else "",
        weight_floor_bytes=floor.value,
        gptq_bits_sym=_gptq_bits_sym(files) if method == "auto_gptq" else None,
        weight_floor_text=floor.source if floor.value is not None else "",
        kv_bytes_per_token=kv_per_token,
        kv_window_bytes_per_token=kv_window,
        sliding_window=window if kv_window else None,
        problems=tuple(problems),
        kv_heads_per_layer=kv_per_layer,
        mamba2=mamba2,
        facts=tuple(facts),
        auto_map=config.get("auto_map") if isinstance(config.get("auto_map"), Mapping) else None,
    )


def _kv_per_token(
    text: Mapping[str, Any],
    layers: Optional[int],
    *,
    use_mla: bool,
    head_dim: Optional[int],
    kv: Optional[int],
    kv_total: Optional[int],
) -> Tuple[Optional[int], int, Optional[int]]:
    """(KV bytes per token of the layers whose cache grows with the sequence, KV bytes per
    token of the sliding-window layers, their window) at 2 bytes an element."""
    kv_per_token: Optional[int] = None
    if layers and use_mla:
        width = (_int(text.get("kv_lora_rank")) or 0) + (_int(text.get("qk_rope_head_dim")) or 0)
        kv_per_token = layers * width * 2
    elif layers and head_dim and (kv_total or kv):
        kv_per_token = 2 * (kv_total if kv_total is not None else layers * (kv or 0)) * head_dim * 2
    full, sliding = _attention_layer_kinds(text, layers)
    window = _int(text.get("sliding_window"))
    kv_window = 0
    if kv_per_token and layers and full is not None and kv_total is None:
        # per layer_types: full attention grows with the sequence, a sliding layer holds at
        # most its window (vLLM's hybrid KV cache manager), other layers (linear
        # attention, Mamba) hold no per-token KV at all
        per_layer = kv_per_token // layers
        kv_per_token = per_layer * full
        if sliding and window:
            kv_window = per_layer * sliding
        else:
            kv_per_token += per_layer * sliding
    return kv_per_token, kv_window, window


def _gptq_bits_sym(files: Mapping[str, Any]) -> Optional[Tuple[int, bool]]:
    """``bits`` and ``sym`` of a GPTQ quantization_config, both stated; None otherwise."""
    quant = _quant_config(files)
    if quant is None:
        return None
    bits, sym = _int(quant.get("bits")), quant.get("sym")
    if bits is None or not isinstance(sym, bool):
        return None
    return bits, sym


def _attention_layer_kinds(
    text: Mapping[str, Any], layers: Optional[int]
) -> Tuple[Optional[int], int]:
    """(full-attention layers, sliding-window layers) from ``layer_types`` when it lists
    every layer; (None, 0) otherwise (every layer is taken as full attention)."""
    types = text.get("layer_types")
    if not isinstance(types, list) or not layers or len(types) != layers:
        return None, 0
    full = sum(1 for t in types if t in ("full_attention", "chunked_attention", "attention"))
    sliding = sum(1 for t in types if t == "sliding_attention")
    return full, sliding


def _kv_heads(
    text: Mapping[str, Any], keyed: Mapping[str, Fact], model_type: str, heads: Optional[int]
) -> Tuple[Optional[int], Fact, Optional[int], Tuple[int, ...]]:
    """(KV heads as vLLM counts them, their Fact, KV heads summed over the attention layers
    or None when uniform, the distinct per-layer counts)."""
    kv_raw, kv_key = _first(text, _KV_HEAD_KEYS)
    kv = _int(kv_raw) if kv_raw is not None else heads
    kv_fact = _combined(keyed, _KV_HEAD_KEYS, kv_key, "num_kv_heads")
    kv_total, kv_per_layer = _kv_layout(text, model_type, kv)
    if kv_per_layer and nas_layers(text) is not None:
        # vLLM's NemotronNasModelArchConfigConvertor: the first attention block's KV heads
        kv = _nas_first_kv(text)
        kv_fact = Fact("num_kv_heads", EXACT, "block_configs (per layer)")
    elif not kv_key and kv_fact.certainty != FACT_UNKNOWN:
        kv_fact = Fact("num_kv_heads", kv_fact.certainty, "no KV head key: one per attention head")
    return kv, kv_fact, kv_total, kv_per_layer


def _mamba2(
    text: Mapping[str, Any], keyed: Mapping[str, Fact], model_type: str
) -> Tuple[Optional[Tuple[int, int, str]], List[Fact]]:
    """The Mamba-2 mixers' (groups, heads, keys) and their Facts; (None, []) without."""
    keys = MAMBA2_KEYS.get(model_type)
    if keys is None or not _has_mamba_layers(text, model_type):
        return None, []
    facts = [
        _combined(keyed, (keys[0],), keys[0], "mamba_groups"),
        _combined(keyed, (keys[1],), keys[1], "mamba_heads"),
    ]
    groups, mamba_heads = _int(text.get(keys[0])), _int(text.get(keys[1]))
    if groups and mamba_heads:
        return (groups, mamba_heads, f"{keys[0]}/{keys[1]}"), facts
    return None, facts


def _nas_first_kv(text: Mapping[str, Any]) -> Optional[int]:
    for kv_heads, _ in nas_layers(text) or []:
        if kv_heads is not None:
            return kv_heads
    return None


# -- command-line values ------------------------------------------------------------------


def parse_max_model_len(text: Optional[str]) -> Tuple[Optional[int], str]:
    """vLLM's --max-model-len (human_readable_int_or_auto): '32k' = 32000, '32K' = 32768,
    '-1'/'auto' = fit to memory (None). Returns (value, problem)."""
    if text is None:
        return None, ""
    value = text.strip()
    if value.lower() == "auto" or value == "-1":
        return None, ""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", value)
    if match:
        number, suffix = match.groups()
        if suffix in "kmgt":
            return int(float(number) * 10 ** (3 * ("kmgt".index(suffix) + 1))), ""
        if "." in number:
            return None, f"{text!r}: decimals are not allowed with binary suffixes"
        return int(number) * 2 ** (10 * ("KMGT".index(suffix) + 1)), ""
    try:
        return int(value), ""
    except ValueError:
        return None, f"{text!r} is not a length (write e.g. 32768, 32k or 32K)"


def capability_text(capability: int) -> str:
    return f"{capability // 10}.{capability % 10}"


# -- GPU products -------------------------------------------------------------------------

# (pattern over the product name with '-' and ' ' alike, compute capability x 10, memory
# GiB or None). Names as NVML reports them and as GPU feature discovery labels them
# (nvidia.com/gpu.product: spaces become '-'). Capabilities: NVIDIA's CUDA GPU list.
_PRODUCTS: Tuple[Tuple[str, int, Optional[int]], ...] = (
    (r"GB300", 103, 279),
    (r"B300", 103, 268),
    (r"GB200", 100, 186),
    (r"B200", 100, 180),
    (r"GH200.*144", 90, 144),
    (r"GH200", 90, 96),
    (r"H200.*NVL", 90, 141),
    (r"H200", 90, 141),
    (r"H100.*NVL", 90, 94),
    (r"H100.*(PCIe|PCIE)", 90, 80),
    (r"H100", 90, 80),
    (r"H800", 90, 80),
    (r"H20", 90, 96),
    (r"L40S", 89, 45),
    (r"L40", 89, 45),
    (r"L4\b", 89, 22),
    (r"RTX.?PRO.?6000", 120, 96),
    (r"RTX.?5090", 120, 32),
    (r"RTX.?4090", 89, 24),
    (r"RTX.?6000.?Ada", 89, 48),
    (r"A100.*80GB", 80, 80),
    (r"A100", 80, 40),
    (r"A800", 80, 80),
    (r"A10G", 86, 22),
    (r"A10\b", 86, 22),
    (r"A30", 80, 24),
    (r"A40", 86, 45),
    (r"RTX.?A6000", 86, 48),
    (r"RTX.?3090", 86, 24),
    (r"T4\b", 75, 15),
    (r"V100.*32GB", 70, 32),
    (r"V100", 70, 16),
    (r"P100", 60, 16),
)


def gpu_from_product(name: str, source: str = "") -> Gpu:
    """Compute capability and memory of a GPU product by name; unknown stays None. A
    memory figure in the name (…-80GB-…) wins over the table's."""
    normal = name.replace("-", " ").replace("_", " ")
    for pattern, capability, memory in _PRODUCTS:
        if re.search(pattern.replace("-", " "), normal, re.IGNORECASE):
            sized = re.search(r"(\d+)\s?GB\b", normal, re.IGNORECASE)
            gib = int(sized.group(1)) if sized else memory
            # NVIDIA's "80GB" is decimal-ish marketing: the usable total is ~79.2 GiB.
            # The most it can be: + 10% (NVML totals: H100 80GB 81559 MiB, A100 80GB
            # 81920 MiB, L4 23034 MiB, T4 15360 MiB, H200 143771 MiB: all within)
            total = int(gib * GIB * 0.99) if gib else None
            upper = int(gib * GIB * 1.1) if gib else None
            return Gpu(name, total, capability, source, upper)
    return Gpu(name, None, None, source)


# -- the rules ----------------------------------------------------------------------------


def _tp_flag(serving: Serving) -> str:
    return f"--tensor-parallel-size {serving.tp}"


def rule_tp_heads(facts: ModelFacts, serving: Serving) -> Verdict:
    heads, tp = facts.num_attention_heads, serving.tp
    if heads is None:
        return Verdict(TP_HEADS, UNKNOWN, "config.json gives no num_attention_heads")
    if heads % tp:
        good = [n for n in range(1, heads + 1) if heads % n == 0 and n <= 16]
        return Verdict(
            TP_HEADS,
            FAIL,
            f"the model has {heads} attention heads and {_tp_flag(serving)} does not divide "
            f"them: vLLM fails with 'Total number of attention heads ({heads}) must be "
            f"divisible by tensor parallel size ({tp})'",
            f"use a tensor-parallel size that divides {heads} ({', '.join(map(str, good))}); "
            "to use more GPUs add pipeline parallelism (--pipeline-parallel-size)",
            {"num_attention_heads": heads, "tp": tp},
            (facts.fact("num_attention_heads"),),
        )
    return Verdict(TP_HEADS, PASS, f"{heads} attention heads divide over TP {tp}")


def _kv_splits(kv: int, tp: int) -> bool:
    return (tp <= kv and kv % tp == 0) or (tp >= kv and tp % kv == 0)


def rule_tp_kv_heads(facts: ModelFacts, serving: Serving) -> Verdict:
    kv, tp = facts.num_kv_heads, serving.tp
    if kv is None or kv <= 0:
        return Verdict(TP_KV_HEADS, UNKNOWN, "config.json gives no KV head count")
    if facts.use_mla:
        return Verdict(TP_KV_HEADS, PASS, "MLA: one latent KV head, replicated on every TP rank")
    # per-layer (NAS) configs: every attention layer builds its own QKVParallelLinear
    bad = [h for h in facts.kv_heads_per_layer if not _kv_splits(h, tp)]
    if bad:
        kv = bad[0]
    elif _kv_splits(kv, tp):
        how = "replicated" if tp > kv else "split"
        layers = facts.kv_heads_per_layer
        if len(layers) > 1:
            return Verdict(
                TP_KV_HEADS,
                PASS,
                f"KV heads per layer ({', '.join(map(str, layers))}) over TP {tp}",
            )
        return Verdict(TP_KV_HEADS, PASS, f"{kv} KV heads {how} over TP {tp}")
    return Verdict(
        TP_KV_HEADS,
        FAIL,
        f"the model has {kv} KV heads and TP is {tp}: vLLM splits KV heads when TP divides "
        f"them and replicates them when they divide TP, so QKVParallelLinear fails with "
        f"'{kv if tp < kv else tp} is not divisible by {tp if tp < kv else kv}'",
        f"use a tensor-parallel size that divides {kv} or is a multiple of it",
        {"num_kv_heads": kv, "tp": tp},
        (facts.fact("num_kv_heads"),),
    )


def rule_ep_experts(facts: ModelFacts, serving: Serving) -> Verdict:
    if not serving.enable_expert_parallel:
        return Verdict(EP_EXPERTS, PASS, "expert parallelism not enabled")
    experts, ep = facts.num_experts, serving.ep_size
    if experts < 1:
        return Verdict(
            EP_EXPERTS,
            FAIL,
            "--enable-expert-parallel on a model without experts: vLLM fails with 'Number "
            "of experts in the model must be greater than 0 when expert parallelism is "
            "enabled'",
            "drop --enable-expert-parallel (this is a dense model)",
            {"num_experts": experts},
            (facts.fact("num_experts"),),
        )
    if experts < ep:
        return Verdict(
            EP_EXPERTS,
            WARN,
            f"{experts} experts over an expert-parallel group of {ep} (TP {serving.tp} x "
            f"DP {serving.dp}): {ep - experts} ranks hold no expert and sit idle in every "
            "MoE layer",
            f"use TP x DP <= {experts} with --enable-expert-parallel, or drop it",
            {"num_experts": experts, "ep_size": ep},
        )
    if experts % ep:
        return Verdict(
            EP_EXPERTS,
            WARN,
            f"{experts} experts do not divide over {ep} EP ranks: vLLM gives the first "
            f"{experts % ep} ranks one expert more, so those GPUs carry more load and memory",
            f"use an EP size (TP x DP) that divides {experts}",
            {"num_experts": experts, "ep_size": ep},
        )
    return Verdict(EP_EXPERTS, PASS, f"{experts} experts, {experts // ep} per EP rank")


def rule_pp_layers(facts: ModelFacts, serving: Serving) -> Verdict:
    layers, pp = facts.num_layers, serving.pp
    if layers is None:
        return Verdict(PP_LAYERS, UNKNOWN, "config.json gives no num_hidden_layers")
    if pp > layers:
        return Verdict(
            PP_LAYERS,
            FAIL,
            f"--pipeline-parallel-size {pp} exceeds the model's {layers} layers: vLLM's "
            f"layer partition leaves {pp - layers} stages without a layer and they fail",
            f"use at most {layers} pipeline stages",
            {"num_hidden_layers": layers, "pp": pp},
            (facts.fact("num_layers"),),
        )
    return Verdict(PP_LAYERS, PASS, f"{layers} layers over {pp} pipeline stages")


def rule_max_len(facts: ModelFacts, serving: Serving) -> Verdict:
    derived, wanted = facts.max_model_len, serving.max_model_len
    if serving.hf_overrides:
        return Verdict(MAX_LEN, UNKNOWN, "--hf-overrides may change the model's length")
    if wanted is None:
        return Verdict(MAX_LEN, PASS, f"--max-model-len not set: vLLM uses {derived}")
    if derived is None:
        return Verdict(MAX_LEN, UNKNOWN, "the model's maximum length is unknown")
    if wanted <= derived:
        return Verdict(MAX_LEN, PASS, f"--max-model-len {wanted} <= {derived}")
    longest = facts.model_max_length
    if longest is not None and wanted <= longest:
        return Verdict(MAX_LEN, PASS, f"--max-model-len {wanted} <= model_max_length {longest}")
    text = f"--max-model-len {wanted} is above the model's {derived} ({facts.max_len_text})"
    if serving.allow_long_max_model_len:
        return Verdict(
            MAX_LEN,
            WARN,
            text + ": VLLM_ALLOW_LONG_MAX_MODEL_LEN lets vLLM start, but positions beyond "
            "the model's length give NaNs (RoPE) or out-of-bounds errors",
            f"use --max-model-len {derived} or less",
            {"max_model_len": wanted, "derived": derived},
        )
    return Verdict(
        MAX_LEN,
        FAIL,
        text + f": vLLM fails with 'User-specified max_model_len ({wanted}) is greater than "
        "the derived max_model_len'",
        f"use --max-model-len {derived} or less",
        {"max_model_len": wanted, "derived": derived},
        (facts.fact("max_model_len"),),
    )


# --load-format values that read the checkpoint's tensors as they are (others, e.g.
# bitsandbytes or gguf, change what is loaded)
_PLAIN_LOAD_FORMATS = frozenset(
    (None, "auto", "safetensors", "fastsafetensors", "pt", "mistral", "runai_streamer")
)


def weights_floor_fail(
    facts: ModelFacts, serving: Serving, gpu: Optional[Gpu]
) -> Optional[Verdict]:
    """A FAIL on the certain side of the estimate: even the smallest the weights can be
    (``weight_floor``) over the GPUs that share them is more than the most the GPU can
    offer (its memory's upper bound x --gpu-memory-utilization). vLLM then either runs
    out of memory loading them or has no memory left for the KV cache
    (``check_enough_kv_cache_memory``: 'No available memory for the cache blocks').
    None when the floor does not exceed it or anything it needs is not certain."""
    floor = facts.weight_floor_bytes
    if floor is None or gpu is None or gpu.memory_most is None or serving.hf_overrides:
        return None  # (--hf-overrides may rewrite the config the floor was read from)
    online = (serving.quantization or "").lower()
    if online and online != (facts.quant_method or "").lower():
        return None  # --quantization quantizes at load: the loaded size is not this
    if (serving.load_format or "auto").lower() not in _PLAIN_LOAD_FORMATS:
        return None
    # each GPU holds at least 1/TP of every split tensor and the largest pipeline stage
    # at least 1/PP of the layers; with expert parallelism the experts spread over TP x DP
    ranks = serving.tp * serving.pp * (serving.dp if serving.enable_expert_parallel else 1)
    per_gpu = floor / ranks
    offload = 0.0
    if serving.cpu_offload_gb is not None:
        try:
            offload = float(serving.cpu_offload_gb)
        except ValueError:
            return None
        if not math.isfinite(offload) or offload < 0:
            return None
    per_gpu -= offload * GIB
    most = gpu.memory_most
    budget = most if serving.kv_cache_memory_bytes else most * serving.gpu_memory_utilization
    if per_gpu <= budget:
        return None
    measured = gpu.memory_upper_bytes is None
    memory_text = f"{most / GIB:.1f} GiB"
    if not measured:
        memory_text = f"at most {memory_text} (product table + 10%)"
    offered = (
        f"{memory_text} (--kv-cache-memory-bytes: the whole GPU)"
        if serving.kv_cache_memory_bytes
        else f"{memory_text} x --gpu-memory-utilization {serving.gpu_memory_utilization:g}"
    )
    split = f"TP {serving.tp} x PP {serving.pp}" + (
        f" x DP {serving.dp} (expert parallel)" if serving.enable_expert_parallel else ""
    )
    more = max(2, math.ceil(floor / max(1.0, budget)))
    evidence: Dict[str, Any] = {
        "weights_per_gpu_gib": round(
            (facts.weight_bytes or floor) / (serving.tp * serving.pp) / GIB, 2
        ),
        "budget_gib": round((gpu.memory_bytes or most) * serving.gpu_memory_utilization / GIB, 2),
        "weights_floor_per_gpu_gib": round(per_gpu / GIB, 2),
        "budget_most_gib": round(budget / GIB, 2),
        "weights_floor": facts.weight_floor_text,
        "gpu_memory_most_gib": round(most / GIB, 2),
        "gpu_memory_utilization": serving.gpu_memory_utilization,
    }
    return Verdict(
        WEIGHTS_FIT,
        FAIL,
        f"the weights need at least {per_gpu / GIB:.1f} GiB per GPU "
        f"({facts.weight_floor_text}; over {split}"
        + (f", less --cpu-offload-gb {offload:g}" if offload else "")
        + f") and {gpu.name or 'the GPU'} offers {budget / GIB:.1f} GiB = {offered}: vLLM "
        "fails with 'CUDA out of memory' while loading or 'No available memory for the "
        "cache blocks'",
        f"spread the model over at least {more} GPUs (raise --tensor-parallel-size or "
        "--pipeline-parallel-size), use a smaller quantized variant, or GPUs with more memory",
        evidence,
        (Fact("weight_bytes_floor", EXACT, facts.weight_floor_text),),
    )


def rule_weights_fit(facts: ModelFacts, serving: Serving, gpu: Optional[Gpu]) -> Verdict:
    """FAIL only on the weights' certain lower bound (``weights_floor_fail``); the
    estimate (weights + an estimated 2 GiB of activations and CUDA graphs + one
    sequence's KV cache) that does not fit is a WARN that says by how much."""
    certain = weights_floor_fail(facts, serving, gpu)
    if certain is not None:
        return certain
    if facts.weight_bytes is None:
        return Verdict(WEIGHTS_FIT, UNKNOWN, "the size of the weights is unknown")
    if gpu is None or gpu.memory_bytes is None:
        return Verdict(WEIGHTS_FIT, UNKNOWN, "the GPU's memory is unknown here")
    per_gpu = facts.weight_bytes / (serving.tp * serving.pp)
    budget = gpu.memory_bytes * serving.gpu_memory_utilization
    room = budget - per_gpu - RUNTIME_OVERHEAD_BYTES
    length = serving.max_model_len or facts.max_model_len or 0
    kv_one = None
    if facts.kv_bytes_per_token is not None:
        share = 1.0
        if not facts.use_mla and facts.num_kv_heads:
            share = max(1, facts.num_kv_heads // serving.tp) / facts.num_kv_heads
        held = facts.kv_bytes_per_token * length
        if facts.kv_window_bytes_per_token and facts.sliding_window:
            held += facts.kv_window_bytes_per_token * min(length, facts.sliding_window)
        kv_one = held * share / serving.pp
    evidence: Dict[str, Any] = {
        "weights_per_gpu_gib": round(per_gpu / GIB, 2),
        "budget_gib": round(budget / GIB, 2),
        "gpu_memory_gib": round(gpu.memory_bytes / GIB, 2),
        "gpu_memory_utilization": serving.gpu_memory_utilization,
        "weights": facts.weight_text,
    }
    if kv_one is not None:
        evidence["kv_cache_one_sequence_gib"] = round(kv_one / GIB, 2)
    plan = f"TP {serving.tp} x PP {serving.pp}"
    weights = facts.fact("weight_bytes")
    online = (serving.quantization or "").lower()
    if online and online != (facts.quant_method or "").lower():
        weights = Fact(
            "weight_bytes",
            ESTIMATED,
            f"--quantization {serving.quantization} quantizes at load: the loaded size is "
            "not the checkpoint's",
        )
    loaded = weights.source if weights is not facts.fact("weight_bytes") else facts.weight_text
    figures = (
        f"weights {per_gpu / GIB:.1f} GiB per GPU ({loaded}; {plan}) against "
        f"{budget / GIB:.1f} GiB = {gpu.memory_bytes / GIB:.1f} GiB x "
        f"--gpu-memory-utilization {serving.gpu_memory_utilization:g} on {gpu.name or 'the GPU'}"
    )
    more = max(1, math.ceil(per_gpu * serving.tp * serving.pp / max(1.0, budget - 2 * GIB)))
    if room <= 0:
        floor_note = (
            f"; the weights' certain lower bound, {facts.weight_floor_bytes / GIB:.1f} GiB "
            f"({facts.weight_floor_text}), fits"
            if facts.weight_floor_bytes
            else "; no certain lower bound of the weights is known"
        )
        return Verdict(
            WEIGHTS_FIT,
            WARN,
            figures + f" leaves {room / GIB:.1f} GiB for the KV cache once an estimated "
            f"{RUNTIME_OVERHEAD_BYTES / GIB:.0f} GiB of activations and CUDA graphs is "
            "taken: vLLM probably fails with 'CUDA out of memory' while loading or 'No "
            "available memory for the cache blocks'" + floor_note,
            f"spread the model over more GPUs (about {more} in all: raise "
            "--tensor-parallel-size or --pipeline-parallel-size), use a quantized variant, "
            "or raise --gpu-memory-utilization",
            evidence,
            (weights,),
        )
    if kv_one is not None and room < kv_one:
        return Verdict(
            WEIGHTS_FIT,
            WARN,
            figures + f": about {room / GIB:.1f} GiB is left for the KV cache and one "
            f"sequence of {length} tokens needs {kv_one / GIB:.1f} GiB; vLLM then fails with "
            "'larger than the available KV cache memory'",
            f"lower --max-model-len to about {int(length * room / kv_one)}, or use more GPUs",
            evidence,
        )
    return Verdict(
        WEIGHTS_FIT,
        PASS,
        figures + f": about {room / GIB:.1f} GiB left for the KV cache",
        "",
        evidence,
    )


def rule_dtype(facts: ModelFacts, serving: Serving, gpu: Optional[Gpu]) -> Verdict:
    if gpu is None or gpu.capability is None:
        return Verdict(DTYPE_CAPABILITY, UNKNOWN, "the GPU's compute capability is unknown here")
    chosen = _DTYPE_NAMES.get(serving.dtype.lower(), serving.dtype.lower())
    cc = capability_text(gpu.capability)
    if chosen == "bfloat16" and gpu.capability < 80:
        return Verdict(
            DTYPE_CAPABILITY,
            FAIL,
            f"--dtype {serving.dtype} on {gpu.name or 'a GPU'} (compute capability {cc}): vLLM "
            "fails with 'Bfloat16 is only supported on GPUs with compute capability of at "
            "least 8.0'",
            "use --dtype half (float16), or GPUs of compute capability 8.0 or newer",
            {"capability": cc},
        )
    if chosen == "auto" and facts.dtype == "bfloat16" and gpu.capability < 80:
        return Verdict(
            DTYPE_CAPABILITY,
            WARN,
            f"the model is bfloat16 and {gpu.name or 'the GPU'} (compute capability {cc}) has "
            "no bfloat16: vLLM falls back to float16, which can overflow for models trained "
            "in bfloat16",
            "check the model's outputs in float16, or use GPUs of compute capability 8.0+",
            {"capability": cc},
        )
    return Verdict(DTYPE_CAPABILITY, PASS, f"dtype {chosen} runs on compute capability {cc}")


# AutoGPTQConfig.TYPE_MAP (vllm/model_executor/layers/quantization/auto_gptq.py, read at
# vllm-project/vllm 055e47c28003156421365af985d676fc921cb075): the
# (bits, sym) its Marlin kernels run; any other raises in __init__. Every checkpoint with
# quant_method gptq is claimed by AutoGPTQConfig (override_quantization_method) unless
# --quantization names a method other than gptq / gptq_marlin / auto_gptq / marlin.
AUTO_GPTQ_TYPES = frozenset(((4, True), (8, True)))
_AUTO_GPTQ_USER = (None, "gptq", "gptq_marlin", "auto_gptq", "marlin")


def rule_gptq_type(facts: ModelFacts, serving: Serving) -> Optional[Verdict]:
    """A GPTQ checkpoint vLLM refuses at start-up whatever the GPU: (bits, sym) outside
    AutoGPTQConfig.TYPE_MAP (3-bit, 2-bit, asymmetric 4-bit): 'Unsupported quantization
    config: bits=3, sym=True'. desc_act (act order) is not refused there: the Marlin
    kernels take g_idx (``has_g_idx``), so it is never a finding."""
    if facts.quant_method != "auto_gptq" or facts.gptq_bits_sym is None or serving.hf_overrides:
        return None
    user = (serving.quantization or "").lower() or None
    if user not in _AUTO_GPTQ_USER or facts.gptq_bits_sym in AUTO_GPTQ_TYPES:
        return None
    bits, sym = facts.gptq_bits_sym
    return Verdict(
        QUANT_CAPABILITY,
        FAIL,
        f"the checkpoint is GPTQ with bits={bits}, sym={sym} (config.json quantization_config)"
        f": vLLM reads every GPTQ checkpoint with AutoGPTQConfig, whose kernels take only "
        f"4- and 8-bit symmetric weights, and fails with 'Unsupported quantization config: "
        f"bits={bits}, sym={sym}'",
        "use a 4-bit or 8-bit symmetric GPTQ variant of the model (or an AWQ / FP8 one)",
        {"quant_method": "gptq", "bits": bits, "sym": sym},
        (Fact("gptq_bits_sym", EXACT, "config.json quantization_config bits and sym"),),
    )


def rule_quant(facts: ModelFacts, serving: Serving, gpu: Optional[Gpu]) -> Verdict:
    refused = rule_gptq_type(facts, serving)
    if refused is not None:
        return refused
    method = serving.quantization or facts.quant_method
    if method is None:
        return Verdict(QUANT_CAPABILITY, PASS, "the model is not quantized")
    minimum = QUANT_MIN_CAPABILITY.get(method.lower())
    if minimum is None:
        return Verdict(QUANT_CAPABILITY, UNKNOWN, f"no known minimum capability for {method}")
    if gpu is None or gpu.capability is None:
        return Verdict(QUANT_CAPABILITY, UNKNOWN, "the GPU's compute capability is unknown here")
    if gpu.capability < minimum:
        return Verdict(
            QUANT_CAPABILITY,
            FAIL,
            f"quantization {method} needs compute capability {capability_text(minimum)} and "
            f"{gpu.name or 'the GPU'} has {capability_text(gpu.capability)}: vLLM fails with "
            f"'The quantization method {method} is not supported for the current GPU. "
            f"Minimum capability: {minimum}. Current capability: {gpu.capability}'",
            f"use GPUs of compute capability {capability_text(minimum)} or newer, or an "
            "unquantized or differently quantized variant of the model",
            {"quant_method": method, "min_capability": minimum, "capability": gpu.capability},
        )
    return Verdict(
        QUANT_CAPABILITY,
        PASS,
        f"{method} needs compute capability {capability_text(minimum)}; "
        f"the GPU has {capability_text(gpu.capability)}",
    )


def rule_mamba_groups(facts: ModelFacts, serving: Serving) -> Verdict:
    """vLLM 0.33.0's MambaMixer2 (vllm/model_executor/layers/mamba/mamba_mixer2.py)
    asserts ``num_heads % tp == 0`` ("Tensor parallel world size must divide num heads.")
    and ``n_groups % tp == 0 or n_groups == 1`` ("If tensor parallel world size does not
    divide num_groups, then num_groups must equal 1."): one group is replicated to every
    rank, more groups must split evenly."""
    if facts.mamba2 is None:
        return Verdict(MAMBA_GROUPS, PASS, "no Mamba-2 layers")
    groups, heads, keys = facts.mamba2
    tp = serving.tp
    rests = (facts.fact("mamba_groups"), facts.fact("mamba_heads"))
    evidence = {"n_groups": groups, "mamba_heads": heads, "tp": tp, "keys": keys}
    if heads % tp:
        return Verdict(
            MAMBA_GROUPS,
            FAIL,
            f"the model's Mamba-2 layers have {heads} heads and {_tp_flag(serving)} does not "
            "divide them: vLLM's MambaMixer2 fails with 'Tensor parallel world size must "
            "divide num heads.'",
            f"use a tensor-parallel size that divides {heads}"
            + (f" and {groups}" if groups > 1 else ""),
            evidence,
            rests,
        )
    if groups % tp and groups != 1:
        good = [n for n in range(1, groups + 1) if groups % n == 0 and heads % n == 0]
        return Verdict(
            MAMBA_GROUPS,
            FAIL,
            f"the model's Mamba-2 layers have {groups} groups ({keys.split('/')[0]}) and "
            f"{_tp_flag(serving)} does not divide them: vLLM's MambaMixer2 fails with 'If "
            "tensor parallel world size does not divide num_groups, then num_groups must "
            "equal 1.'",
            f"use a tensor-parallel size that divides {groups} "
            f"({', '.join(map(str, good))}); to use more GPUs add pipeline parallelism",
            evidence,
            rests,
        )
    how = "one group, replicated" if groups == 1 else f"{groups // tp} group(s) per rank"
    return Verdict(MAMBA_GROUPS, PASS, f"Mamba-2: {heads} heads and {how} over TP {tp}")


def _registered(arch: str) -> bool:
    """vLLM's _ModelRegistry._normalize_arch: the name itself, or (for a task suffix it
    knows, e.g. ForSequenceClassification) the same base with another known suffix."""
    known = _REGISTERED
    if arch in known:
        return True
    for suffix in _vllm_registry.SUFFIXES:
        if arch.endswith(suffix):
            stem = arch[: -len(suffix)]
            return any(stem + other in known for other in _vllm_registry.SUFFIXES)
    return False


_REGISTERED = frozenset(_vllm_registry.ARCHITECTURES)


def _arch_by_release(archs: Tuple[str, ...], serving: Serving) -> Optional[Verdict]:
    """The verdict of the exact release that loads the model, where its registry answers
    for every architecture: a FAIL where that release registers none of them and has no
    Transformers backend to fall back to (before 0.7.3 vLLM exits with "Model
    architectures [...] are not supported for now"). Only vLLM's own image with a release
    tag gives the release, and no plugin is installed in it; ``--hf-overrides`` may name
    another architecture, so it never fails."""
    release = serving.vllm_release
    if not release:
        return None
    answers = [_vllm_release.registers(a, release) for a in archs]
    if True in answers:
        return Verdict(ARCH_UNREGISTERED, PASS, f"{archs[0]} is registered in vLLM {release}")
    if None in answers:
        return None  # a release between two generated ones that disagree: the table's own
    since = [s for s in map(_vllm_release.first_registering, archs) if s]
    when = f"vLLM registers it since {since[0]}" if since else "no vLLM release registers it"
    fallback = _vllm_release.falls_back_to_transformers(release)
    evidence = {"architectures": list(archs), "vllm": release}
    fact = (Fact("architectures", EXACT, "config.json"),)
    if fallback is False and not serving.hf_overrides:
        return Verdict(
            ARCH_UNREGISTERED,
            FAIL,
            f"architecture {', '.join(archs)} is not registered in vLLM {release} ({when}), "
            f"which has no Transformers backend: vLLM exits with 'Model architectures "
            f"{list(archs)} are not supported for now'",
            f"run vLLM {since[0]} or later (vllm/vllm-openai:v{since[0]})"
            if since
            else "a vLLM image (or plugin) that registers the architecture",
            evidence,
            fact,
        )
    return Verdict(
        ARCH_UNREGISTERED,
        WARN,
        f"architecture {', '.join(archs)} is not registered in vLLM {release} ({when}): vLLM "
        "then tries its Transformers backend, which works only if transformers has this "
        "architecture and it is backend-compatible",
        f"run vLLM {since[0]} or later, or pass --model-impl transformers"
        if since
        else "check that the vLLM image supports this model, or pass --model-impl transformers",
        evidence,
    )


def rule_arch_registered(
    facts: ModelFacts, config: Optional[Mapping[str, Any]] = None, serving: Optional[Serving] = None
) -> Verdict:
    """Judged by the exact release where it is known (``Serving.vllm_release``): a FAIL
    only where that release has no Transformers backend (``_arch_by_release``). Otherwise
    a WARN (a plugin may register the architecture, and vLLM's Transformers backend may run
    it) when none of config.json's ``architectures`` is in the registry of the vLLM
    version the rules follow (``vllm_registry``)."""
    archs = facts.architectures
    version = _vllm_registry.VLLM_VERSION
    if not archs:
        return Verdict(ARCH_UNREGISTERED, UNKNOWN, "config.json names no architectures")
    by_release = _arch_by_release(archs, serving) if serving is not None else None
    if by_release is not None:
        return by_release
    if any(_registered(a) for a in archs):
        return Verdict(ARCH_UNREGISTERED, PASS, f"{archs[0]} is registered in vLLM {version}")
    removed = [a for a in archs if a in _vllm_registry.PREVIOUSLY_SUPPORTED]
    if removed:
        last = _vllm_registry.PREVIOUSLY_SUPPORTED[removed[0]]
        return Verdict(
            ARCH_UNREGISTERED,
            WARN,
            f"architecture {removed[0]} was removed from vLLM after v{last}: vLLM {version} "
            f"fails with 'Model architecture {removed[0]} was supported in vLLM until "
            f"v{last}, and is not supported anymore'",
            f"use vLLM v{last} or older for this model, or a model vLLM {version} supports",
            {"architectures": list(archs)},
        )
    auto_map = config.get("auto_map") if isinstance(config, Mapping) else None
    custom = isinstance(auto_map, Mapping) and any(str(k).startswith("AutoModel") for k in auto_map)
    fallback = (
        "vLLM then tries its Transformers backend with the model's own code (auto_map; "
        "needs --trust-remote-code)"
        if custom
        else "vLLM then tries its Transformers backend, which works only if transformers "
        "has this architecture and it is backend-compatible"
    )
    return Verdict(
        ARCH_UNREGISTERED,
        WARN,
        f"architecture {', '.join(archs)} is not registered in vLLM {version}: {fallback}; "
        "otherwise vLLM fails with 'Model architectures [...] are not supported for now' "
        "(a plugin or a newer vLLM may register it)",
        "check that the vLLM image supports this model (docs: Supported Models), or pass "
        "--model-impl transformers",
        {"architectures": list(archs), "vllm": version},
    )


def evaluate(facts: ModelFacts, serving: Serving, gpu: Optional[Gpu] = None) -> List[Verdict]:
    """Every model rule, in RULE_IDS order."""
    return [
        rule_tp_heads(facts, serving),
        rule_tp_kv_heads(facts, serving),
        rule_ep_experts(facts, serving),
        rule_pp_layers(facts, serving),
        rule_max_len(facts, serving),
        rule_weights_fit(facts, serving, gpu),
        rule_dtype(facts, serving, gpu),
        rule_quant(facts, serving, gpu),
        rule_mamba_groups(facts, serving),
        rule_arch_registered(facts, facts.auto_map, serving),
    ]
