"""The rules over how the model splits: attention heads and KV heads over TP, experts
over EP, layers over PP, Mamba-2 groups and heads over TP.

Separate from the fit and support rules: each reads the model's structure against the
parallel plan only.
"""

from __future__ import annotations

from preflight_contract.modelfacts.ids import (
    EP_EXPERTS,
    FAIL,
    MAMBA_GROUPS,
    PASS,
    PP_LAYERS,
    TP_HEADS,
    TP_KV_HEADS,
    UNKNOWN,
    WARN,
)
from preflight_contract.modelfacts.records import ModelFacts, Serving, Verdict

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
