"""The model rules' vocabulary: the verdicts (the contract's names), the model files read,
the rule ids (the same in lint, admission and the checker) with their one-line summaries,
and vLLM's minimum compute capability per quantization method.

Separate because the operator and the checker import these names without the rules.
"""

from __future__ import annotations

from typing import Dict

from preflight_contract import verdicts as _verdicts

# A model rule's verdict: the contract's names (verdicts.py; unknown: the config could not
# say), exported here too because every caller reads them as mf.FAIL, mf.UNKNOWN, ...
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
