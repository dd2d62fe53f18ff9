"""Reading a config as vLLM reads it: the text config of a multimodal model, the maximum
length (``derive_max_len``), the dtype and the quantization (``quant_method_of``, the
quantization config and its bits).

Separate from the layer structure (``layers``) and from the rules: these are the scalar
facts, each as one vLLM function derives it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from preflight_contract.modelfacts.defaults import _defaults_entry, resolve
from preflight_contract.modelfacts.ids import CONFIG, HF_QUANT
from preflight_contract.modelfacts.keys import (
    _DTYPE_NAMES,
    _LENGTH_KEYS,
    _QUANT_OVERRIDES,
    _UNSCALED_ROPE,
    _int,
)

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
