"""The config keys vLLM reads each fact under (``CONFIG_FIELD_ALIASES``), its names for
quantization overrides, dtypes and MLA models, and the value readers every reader uses
(``_int``, ``_first``, ``_ints``: a config value as a number, never raising).

Separate: the lowest layer of the readers, shared by all of them.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple

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


def _ints(value: Any) -> List[int]:
    return [v for v in (_int(x) for x in value) if v is not None] if isinstance(value, list) else []
