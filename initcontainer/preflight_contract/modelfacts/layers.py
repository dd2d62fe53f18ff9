"""The model's layers as vLLM's model code builds them: which layers hold experts
(``moe_layer_flags``), NAS per-layer configs (``nas_layers``), hybrid patterns
(``hybrid_pattern``), Mamba-2 mixers, and the parameter estimate over them.

Separate from the scalar facts (``config_text``): this is per-layer structure, bounded
by ``MAX_LAYERS``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from preflight_contract.modelfacts.keys import (
    _EXPERT_KEYS,
    _KV_HEAD_KEYS,
    _UNGATED_MLP,
    _first,
    _int,
    _ints,
)

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
