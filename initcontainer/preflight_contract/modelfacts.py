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
  keys it leaves out (Gemma 3);
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
* TP over heads: ``ModelConfig.verify_with_parallel_config``; TP over KV heads:
  ``QKVParallelLinear`` (``vllm/model_executor/layers/linear.py``: KV heads divide over
  TP, or TP is a multiple of them and they are replicated); EP:
  ``_verify_with_expert_parallelism``; PP: ``get_pp_indices``
  (``vllm/distributed/utils.py``) gives a stage no layer when PP exceeds the layers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

# A model rule's verdict: the contract's names (verdicts.py; unknown: the config could not
# say), exported here too because every caller reads them as mf.FAIL, mf.UNKNOWN, ...
from preflight_contract import verdicts as _verdicts

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
    QUANT_CAPABILITY: "a quantization method the GPU's compute capability cannot run",
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

# The transformers class defaults vLLM sees for keys a Hub text_config leaves out: Google's
# gemma-3-4b-it/-12b-it configs state no heads, KV heads or length (Gemma3TextConfig's
# defaults, transformers/models/gemma3/configuration_gemma3.py, fill them in).
_TEXT_CONFIG_DEFAULTS: Dict[str, Dict[str, Any]] = {
    "gemma3_text": {
        "vocab_size": 262208,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131072,
    },
}

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
    kv_bytes_per_token: Optional[int] = None  # whole model, every layer
    problems: Tuple[str, ...] = ()

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
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


@dataclass(frozen=True)
class Verdict:
    rule: str
    status: str  # fail | warn | pass | unknown
    message: str
    fix: str = ""
    evidence: Dict[str, Any] = field(default_factory=dict)


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


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's part of a config, as vLLM's get_hf_text_config picks it."""
    thinker = config.get("thinker_config")
    if isinstance(thinker, Mapping) and isinstance(thinker.get("text_config"), Mapping):
        inner: Mapping[str, Any] = thinker["text_config"]
        return inner
    text = config.get("text_config")
    if isinstance(text, Mapping):
        defaults = _TEXT_CONFIG_DEFAULTS.get(str(text.get("model_type") or ""))
        if defaults:
            text = {**defaults, **text}
        if "num_attention_heads" in text:
            return text
    return config


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
            return _QUANT_OVERRIDES.get(name, name)
    return None


def _quant_bits(files: Mapping[str, Any], method: Optional[str]) -> Optional[float]:
    """Bits per weight of the quantized linear layers (None: not quantized / unknown)."""
    if method is None:
        return None
    config = files.get(CONFIG)
    quant = config.get("quantization_config") if isinstance(config, Mapping) else None
    if isinstance(quant, Mapping):
        bits = _int(quant.get("bits") or quant.get("w_bit") or quant.get("weight_bits"))
        if bits:
            return bits + 0.25  # scales and zeros, group size 128
    if "fp4" in method or "mxfp4" in method:
        return 4.25
    if "fp8" in method or method in ("modelopt", "fbgemm_fp8", "experts_int8", "mxfp8"):
        return 8.0
    return None


def _param_estimate(text: Mapping[str, Any]) -> Optional[Tuple[float, float, float]]:
    """(embedding + head, attention + dense MLP + norms, expert) parameter counts from
    the architecture; None when a dimension is missing."""
    hidden = _int(text.get("hidden_size"))
    layers = _int(text.get("num_hidden_layers"))
    vocab = _int(text.get("vocab_size"))
    heads = _int(text.get("num_attention_heads"))
    if not hidden or not layers or not vocab or not heads:
        return None
    kv = _int(_first(text, _KV_HEAD_KEYS)[0]) or heads
    head_dim = _int(text.get("head_dim")) or hidden // heads
    inter = _int(text.get("intermediate_size")) or 4 * hidden
    embed = float(vocab * hidden) * (1 if text.get("tie_word_embeddings") else 2)
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
        attn = (
            q
            + hidden * (kv_lora + rope)
            + kv_lora * heads * (nope + v_dim)
            + heads * v_dim * hidden
        )
    else:
        attn = hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2
    experts = _int(_first(text, _EXPERT_KEYS)[0]) or 0
    dense_layers = layers
    expert_params = 0.0
    # gated MLPs (SwiGLU: gate, up, down) have three matrices, the older fc1/fc2 two
    dense_mlp = (2.0 if text.get("model_type") in _UNGATED_MLP else 3.0) * hidden * inter
    if experts:
        moe_inter = _int(text.get("moe_intermediate_size")) or inter
        first_dense = _int(text.get("first_k_dense_replace")) or 0
        sparse_layers = layers - first_dense
        dense_layers = first_dense
        shared = _int(text.get("n_shared_experts")) or 0
        shared_inter = _int(text.get("shared_expert_intermediate_size"))
        per_layer_shared = 3.0 * hidden * (shared_inter or moe_inter * shared)
        expert_params = sparse_layers * experts * 3.0 * hidden * moe_inter
        base = layers * attn + dense_layers * dense_mlp
        base += sparse_layers * (per_layer_shared + hidden * experts)
    else:
        base = layers * (attn + dense_mlp)
    return embed, float(base), expert_params


def _weights(
    files: Mapping[str, Any], text: Mapping[str, Any], dtype: Optional[str], method: Optional[str]
) -> Tuple[Optional[int], str]:
    """Bytes of the weights in GPU memory, from the safetensors index or estimated."""
    index = files.get(INDEX)
    if isinstance(index, Mapping):
        metadata = index.get("metadata")
        total = _int(metadata.get("total_size")) if isinstance(metadata, Mapping) else None
        if total:
            if method is None and dtype == "float32":
                return total // 2, (
                    f"{INDEX} metadata.total_size {total} (float32 on disk, loaded as 16-bit)"
                )
            return total, f"{INDEX} metadata.total_size"
    estimate = _param_estimate(text)
    if estimate is None:
        return None, ""
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
    return int(size), text_out


def read_facts(files: Mapping[str, Any], source: str = "") -> Optional[ModelFacts]:
    """ModelFacts from the parsed files; None when there is no usable config.json."""
    config = files.get(CONFIG)
    if not isinstance(config, Mapping):
        return None
    text = text_config(config)
    problems: List[str] = []
    heads = _int(text.get("num_attention_heads"))
    if heads is None:
        problems.append("num_attention_heads")
    kv_raw, _ = _first(text, _KV_HEAD_KEYS)
    kv = _int(kv_raw) if kv_raw is not None else heads
    model_type = str(text.get("model_type") or config.get("model_type") or "")
    # MLA caches one latent vector per token and layer; vLLM still reports the heads
    use_mla = model_type in _MLA_TYPES and text.get("kv_lora_rank") is not None
    layers = _int(_first(text, _LAYER_KEYS)[0])
    if layers is None:
        problems.append("num_hidden_layers")
    experts_raw, _ = _first(text, _EXPERT_KEYS)
    if isinstance(experts_raw, list) and experts_raw:
        experts_raw = experts_raw[0]
    experts = _int(experts_raw) or 0
    max_len, max_text = derive_max_len(config)
    dtype = _dtype(config)
    method = quant_method_of(files)
    if method == "mxfp4" and model_type == "gpt_oss":
        method = "gpt_oss_mxfp4"  # vLLM's override for gpt-oss (same minimum capability)
    head_dim = _int(text.get("head_dim"))
    if head_dim is None and heads:
        hidden = _int(text.get("hidden_size"))
        head_dim = hidden // heads if hidden else None
    kv_per_token: Optional[int] = None
    if layers:
        if use_mla:
            width = (_int(text.get("kv_lora_rank")) or 0) + (
                _int(text.get("qk_rope_head_dim")) or 0
            )
            kv_per_token = layers * width * 2
        elif kv and head_dim:
            kv_per_token = 2 * layers * kv * head_dim * 2
    weight_bytes, weight_text = _weights(files, text, dtype, method)
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
        weight_bytes=weight_bytes,
        weight_text=weight_text,
        kv_bytes_per_token=kv_per_token,
        problems=tuple(problems),
    )


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
            # NVIDIA's "80GB" is decimal-ish marketing: the usable total is ~79.2 GiB
            total = int(gib * GIB * 0.99) if gib else None
            return Gpu(name, total, capability, source)
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
        )
    return Verdict(TP_HEADS, PASS, f"{heads} attention heads divide over TP {tp}")


def rule_tp_kv_heads(facts: ModelFacts, serving: Serving) -> Verdict:
    kv, tp = facts.num_kv_heads, serving.tp
    if kv is None or kv <= 0:
        return Verdict(TP_KV_HEADS, UNKNOWN, "config.json gives no KV head count")
    if facts.use_mla:
        return Verdict(TP_KV_HEADS, PASS, "MLA: one latent KV head, replicated on every TP rank")
    if (tp <= kv and kv % tp == 0) or (tp >= kv and tp % kv == 0):
        how = "replicated" if tp > kv else "split"
        return Verdict(TP_KV_HEADS, PASS, f"{kv} KV heads {how} over TP {tp}")
    return Verdict(
        TP_KV_HEADS,
        FAIL,
        f"the model has {kv} KV heads and TP is {tp}: vLLM splits KV heads when TP divides "
        f"them and replicates them when they divide TP, so QKVParallelLinear fails with "
        f"'{kv if tp < kv else tp} is not divisible by {tp if tp < kv else kv}'",
        f"use a tensor-parallel size that divides {kv} or is a multiple of it",
        {"num_kv_heads": kv, "tp": tp},
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
    )


def rule_weights_fit(facts: ModelFacts, serving: Serving, gpu: Optional[Gpu]) -> Verdict:
    if facts.weight_bytes is None:
        return Verdict(WEIGHTS_FIT, UNKNOWN, "the size of the weights is unknown")
    if gpu is None or gpu.memory_bytes is None:
        return Verdict(WEIGHTS_FIT, UNKNOWN, "the GPU's memory is unknown here")
    per_gpu = facts.weight_bytes / (serving.tp * serving.pp)
    budget = gpu.memory_bytes * serving.gpu_memory_utilization
    room = budget - per_gpu - RUNTIME_OVERHEAD_BYTES
    length = serving.max_model_len or facts.max_model_len or 0
    kv_one = None
    if facts.kv_bytes_per_token:
        share = 1.0
        if not facts.use_mla and facts.num_kv_heads:
            share = max(1, facts.num_kv_heads // serving.tp) / facts.num_kv_heads
        kv_one = facts.kv_bytes_per_token * share / serving.pp * length
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
    figures = (
        f"weights {per_gpu / GIB:.1f} GiB per GPU ({facts.weight_text}; {plan}) against "
        f"{budget / GIB:.1f} GiB = {gpu.memory_bytes / GIB:.1f} GiB x "
        f"--gpu-memory-utilization {serving.gpu_memory_utilization:g} on {gpu.name or 'the GPU'}"
    )
    more = max(1, math.ceil(per_gpu * serving.tp * serving.pp / max(1.0, budget - 2 * GIB)))
    if room <= 0:
        return Verdict(
            WEIGHTS_FIT,
            FAIL,
            figures + ": no memory is left for the KV cache; vLLM fails with 'CUDA out of "
            "memory' while loading or 'No available memory for the cache blocks'",
            f"spread the model over more GPUs (about {more} in all: raise "
            "--tensor-parallel-size or --pipeline-parallel-size), use a quantized variant, "
            "or raise --gpu-memory-utilization",
            evidence,
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


def rule_quant(facts: ModelFacts, serving: Serving, gpu: Optional[Gpu]) -> Verdict:
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
    ]
