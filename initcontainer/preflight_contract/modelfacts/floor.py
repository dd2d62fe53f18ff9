"""The smallest the loaded weights can be: the certain side of the estimate
(``weight_floor``, ``param_floor``, ``bits_floor``), the side a FAIL may rest on.

Separate from the estimate (``weights``): it counts only what is certain.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from preflight_contract.modelfacts.config_text import (
    _dtype,
    _quant_config,
    compressed_tensors_bits,
    quant_method_of,
    text_part,
)
from preflight_contract.modelfacts.defaults import resolve
from preflight_contract.modelfacts.fact import EXACT, FACT_UNKNOWN, Fact
from preflight_contract.modelfacts.ids import CONFIG, HF_QUANT
from preflight_contract.modelfacts.keys import _EXPERT_KEYS, _int
from preflight_contract.modelfacts.layers import MAX_LAYERS, hybrid_pattern, moe_layer_flags
from preflight_contract.modelfacts.weights import WeightBytes, checkpoint_bytes

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
