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

Modules
-------
The package face re-exports the public names, so ``from preflight_contract import
modelfacts as mf`` and ``mf.FAIL``, ``mf.read_facts``, ``mf.evaluate``, ... read as before;
the parts, split by concern (issue 37):

* ``ids``: the verdicts, the model files, the rule ids and summaries, and vLLM's minimum
  compute capability per quantization method;
* ``fact``: how certain a model fact is (``Fact``);
* ``keys``: the config keys vLLM reads each fact under, and the value readers;
* ``layers``: the model's layers (MoE, NAS, hybrid, Mamba-2) and the parameter estimate;
* ``defaults``: the config class defaults for keys a config leaves out (``resolve``);
* ``records``: what the rules read and give (``ModelFacts``, ``Serving``, ``Gpu``,
  ``Verdict``) and ``settle``;
* ``config_text``: reading a config (the text config, the maximum length, dtype and
  quantization);
* ``weights``: the weight bytes, from the checkpoint's own data first; ``floor``: the
  certain lower bound of the loaded weights;
* ``read``: ``read_facts``, the model's files to ``ModelFacts``;
* ``inputs``: the other side of the rules (``--max-model-len``, the GPU product);
* ``rules_parallel``, ``rules_fit``, ``rules_support``: the rules (how the model splits
  over TP/EP/PP, whether it fits, whether the GPU and vLLM run it), and ``evaluate``,
  every rule in RULE_IDS order.
"""

from __future__ import annotations

from preflight_contract.modelfacts.config_text import (
    TEXT_TYPE_RENAMES,
    compressed_tensors_bits,
    derive_max_len,
    quant_method_of,
    text_config,
    text_part,
)
from preflight_contract.modelfacts.defaults import DEFAULTED_KEYS, resolve
from preflight_contract.modelfacts.evaluate import evaluate
from preflight_contract.modelfacts.fact import (
    CERTAIN,
    DEFAULT,
    ESTIMATED,
    EXACT,
    FACT_UNKNOWN,
    Fact,
)
from preflight_contract.modelfacts.floor import bits_floor, param_floor, weight_floor
from preflight_contract.modelfacts.ids import (
    ARCH_UNREGISTERED,
    CONFIG,
    DTYPE_CAPABILITY,
    EP_EXPERTS,
    FAIL,
    GIB,
    HF_QUANT,
    INDEX,
    MAMBA_GROUPS,
    MAX_LEN,
    MODEL_FILES,
    PASS,
    PP_LAYERS,
    QUANT_CAPABILITY,
    QUANT_MIN_CAPABILITY,
    RULE_IDS,
    RULE_SUMMARIES,
    TP_HEADS,
    TP_KV_HEADS,
    UNKNOWN,
    UNREADABLE,
    WARN,
    WEIGHTS_FIT,
)
from preflight_contract.modelfacts.inputs import (
    capability_text,
    gpu_from_product,
    parse_max_model_len,
)
from preflight_contract.modelfacts.layers import (
    MAMBA2_KEYS,
    MAX_LAYERS,
    hybrid_pattern,
    moe_layer_flags,
    nas_layers,
)
from preflight_contract.modelfacts.read import read_facts
from preflight_contract.modelfacts.records import (
    RUNTIME_OVERHEAD_BYTES,
    Gpu,
    ModelFacts,
    Serving,
    Verdict,
    settle,
    shaky,
)
from preflight_contract.modelfacts.rules_fit import (
    rule_max_len,
    rule_weights_fit,
    weights_floor_fail,
)
from preflight_contract.modelfacts.rules_parallel import (
    rule_ep_experts,
    rule_mamba_groups,
    rule_pp_layers,
    rule_tp_heads,
    rule_tp_kv_heads,
)
from preflight_contract.modelfacts.rules_support import (
    AUTO_GPTQ_TYPES,
    rule_arch_registered,
    rule_dtype,
    rule_gptq_type,
    rule_quant,
)
from preflight_contract.modelfacts.weights import (
    HUB_SAFETENSORS,
    SAFETENSORS_SIZES,
    WeightBytes,
    checkpoint_bytes,
    weight_bytes,
)

__all__ = [
    "ARCH_UNREGISTERED",
    "AUTO_GPTQ_TYPES",
    "CERTAIN",
    "CONFIG",
    "DEFAULT",
    "DEFAULTED_KEYS",
    "DTYPE_CAPABILITY",
    "EP_EXPERTS",
    "ESTIMATED",
    "EXACT",
    "FACT_UNKNOWN",
    "FAIL",
    "GIB",
    "HF_QUANT",
    "HUB_SAFETENSORS",
    "INDEX",
    "MAMBA2_KEYS",
    "MAMBA_GROUPS",
    "MAX_LAYERS",
    "MAX_LEN",
    "MODEL_FILES",
    "PASS",
    "PP_LAYERS",
    "QUANT_CAPABILITY",
    "QUANT_MIN_CAPABILITY",
    "RULE_IDS",
    "RULE_SUMMARIES",
    "RUNTIME_OVERHEAD_BYTES",
    "SAFETENSORS_SIZES",
    "TEXT_TYPE_RENAMES",
    "TP_HEADS",
    "TP_KV_HEADS",
    "UNKNOWN",
    "UNREADABLE",
    "WARN",
    "WEIGHTS_FIT",
    "Fact",
    "Gpu",
    "ModelFacts",
    "Serving",
    "Verdict",
    "WeightBytes",
    "bits_floor",
    "capability_text",
    "checkpoint_bytes",
    "compressed_tensors_bits",
    "derive_max_len",
    "evaluate",
    "gpu_from_product",
    "hybrid_pattern",
    "moe_layer_flags",
    "nas_layers",
    "param_floor",
    "parse_max_model_len",
    "quant_method_of",
    "read_facts",
    "resolve",
    "rule_arch_registered",
    "rule_dtype",
    "rule_ep_experts",
    "rule_gptq_type",
    "rule_mamba_groups",
    "rule_max_len",
    "rule_pp_layers",
    "rule_quant",
    "rule_tp_heads",
    "rule_tp_kv_heads",
    "rule_weights_fit",
    "settle",
    "shaky",
    "text_config",
    "text_part",
    "weight_bytes",
    "weight_floor",
    "weights_floor_fail",
]
