"""The config class defaults transformers fills in for keys a config leaves out
(``DEFAULTED_KEYS``, from the generated table model_defaults.py), and ``resolve``: the
config as vLLM reads it through transformers, each key with its certainty.

Separate from the readers that use it: it is the one place a left-out key gets a value.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

from preflight_contract import model_defaults as _model_defaults
from preflight_contract import vllm_registry as _vllm_registry
from preflight_contract.modelfacts.fact import DEFAULT, EXACT, FACT_UNKNOWN, Fact
from preflight_contract.modelfacts.keys import _int
from preflight_contract.modelfacts.layers import hybrid_pattern

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
