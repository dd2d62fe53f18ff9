"""``read_facts``: the model's files (config.json, the index, hf_quant_config.json) to
``ModelFacts``, with the KV heads and layouts per attention layer.

Separate: it puts the readers of ``config_text``, ``layers``, ``weights`` and ``floor``
together into the one record the rules read.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple

from preflight_contract.modelfacts.config_text import (
    _dtype,
    _quant_config,
    derive_max_len,
    quant_method_of,
    text_part,
)
from preflight_contract.modelfacts.defaults import _combined, resolve
from preflight_contract.modelfacts.fact import EXACT, FACT_UNKNOWN, Fact
from preflight_contract.modelfacts.floor import weight_floor
from preflight_contract.modelfacts.ids import CONFIG, QUANT_MIN_CAPABILITY
from preflight_contract.modelfacts.keys import (
    _EXPERT_KEYS,
    _KV_HEAD_KEYS,
    _LAYER_KEYS,
    _LENGTH_KEYS,
    _MLA_TYPES,
    _first,
    _int,
)
from preflight_contract.modelfacts.layers import (
    MAMBA2_KEYS,
    _has_mamba_layers,
    hybrid_pattern,
    nas_layers,
)
from preflight_contract.modelfacts.records import ModelFacts
from preflight_contract.modelfacts.weights import weight_bytes


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
