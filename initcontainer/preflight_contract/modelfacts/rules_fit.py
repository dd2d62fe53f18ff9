"""The rules over whether the model fits: ``--max-model-len`` against the model's maximum
length, and the weights per GPU against its memory (the certain floor fails, the estimate
warns).

Separate from the structural rules: these weigh sizes against the GPU and the budget.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

from preflight_contract.modelfacts.fact import ESTIMATED, EXACT, Fact
from preflight_contract.modelfacts.ids import FAIL, GIB, MAX_LEN, PASS, UNKNOWN, WARN, WEIGHTS_FIT
from preflight_contract.modelfacts.records import (
    RUNTIME_OVERHEAD_BYTES,
    Gpu,
    ModelFacts,
    Serving,
    Verdict,
)


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
        (facts.fact("max_model_len"),),
    )


# --load-format values that read the checkpoint's tensors as they are (others, e.g.
# bitsandbytes or gguf, change what is loaded)
_PLAIN_LOAD_FORMATS = frozenset(
    (None, "auto", "safetensors", "fastsafetensors", "pt", "mistral", "runai_streamer")
)


def weights_floor_fail(
    facts: ModelFacts, serving: Serving, gpu: Optional[Gpu]
) -> Optional[Verdict]:
    """A FAIL on the certain side of the estimate: even the smallest the weights can be
    (``weight_floor``) over the GPUs that share them is more than the most the GPU can
    offer (its memory's upper bound x --gpu-memory-utilization). vLLM then either runs
    out of memory loading them or has no memory left for the KV cache
    (``check_enough_kv_cache_memory``: 'No available memory for the cache blocks').
    None when the floor does not exceed it or anything it needs is not certain."""
    floor = facts.weight_floor_bytes
    if floor is None or gpu is None or gpu.memory_most is None or serving.hf_overrides:
        return None  # (--hf-overrides may rewrite the config the floor was read from)
    online = (serving.quantization or "").lower()
    if online and online != (facts.quant_method or "").lower():
        return None  # --quantization quantizes at load: the loaded size is not this
    if (serving.load_format or "auto").lower() not in _PLAIN_LOAD_FORMATS:
        return None
    # each GPU holds at least 1/TP of every split tensor and the largest pipeline stage
    # at least 1/PP of the layers; with expert parallelism the experts spread over TP x DP
    ranks = serving.tp * serving.pp * (serving.dp if serving.enable_expert_parallel else 1)
    per_gpu = floor / ranks
    offload = 0.0
    if serving.cpu_offload_gb is not None:
        try:
            offload = float(serving.cpu_offload_gb)
        except ValueError:
            return None
        if not math.isfinite(offload) or offload < 0:
            return None
    per_gpu -= offload * GIB
    most = gpu.memory_most
    budget = most if serving.kv_cache_memory_bytes else most * serving.gpu_memory_utilization
    if per_gpu <= budget:
        return None
    measured = gpu.memory_upper_bytes is None
    memory_text = f"{most / GIB:.1f} GiB"
    if not measured:
        memory_text = f"at most {memory_text} (product table + 10%)"
    offered = (
        f"{memory_text} (--kv-cache-memory-bytes: the whole GPU)"
        if serving.kv_cache_memory_bytes
        else f"{memory_text} x --gpu-memory-utilization {serving.gpu_memory_utilization:g}"
    )
    split = f"TP {serving.tp} x PP {serving.pp}" + (
        f" x DP {serving.dp} (expert parallel)" if serving.enable_expert_parallel else ""
    )
    more = max(2, math.ceil(floor / max(1.0, budget)))
    evidence: Dict[str, Any] = {
        "weights_per_gpu_gib": round(
            (facts.weight_bytes or floor) / (serving.tp * serving.pp) / GIB, 2
        ),
        "budget_gib": round((gpu.memory_bytes or most) * serving.gpu_memory_utilization / GIB, 2),
        "weights_floor_per_gpu_gib": round(per_gpu / GIB, 2),
        "budget_most_gib": round(budget / GIB, 2),
        "weights_floor": facts.weight_floor_text,
        "gpu_memory_most_gib": round(most / GIB, 2),
        "gpu_memory_utilization": serving.gpu_memory_utilization,
    }
    return Verdict(
        WEIGHTS_FIT,
        FAIL,
        f"the weights need at least {per_gpu / GIB:.1f} GiB per GPU "
        f"({facts.weight_floor_text}; over {split}"
        + (f", less --cpu-offload-gb {offload:g}" if offload else "")
        + f") and {gpu.name or 'the GPU'} offers {budget / GIB:.1f} GiB = {offered}: vLLM "
        "fails with 'CUDA out of memory' while loading or 'No available memory for the "
        "cache blocks'",
        f"spread the model over at least {more} GPUs (raise --tensor-parallel-size or "
        "--pipeline-parallel-size), use a smaller quantized variant, or GPUs with more memory",
        evidence,
        (Fact("weight_bytes_floor", EXACT, facts.weight_floor_text),),
    )


def rule_weights_fit(facts: ModelFacts, serving: Serving, gpu: Optional[Gpu]) -> Verdict:
    """FAIL only on the weights' certain lower bound (``weights_floor_fail``); the
    estimate (weights + an estimated 2 GiB of activations and CUDA graphs + one
    sequence's KV cache) that does not fit is a WARN that says by how much."""
    certain = weights_floor_fail(facts, serving, gpu)
    if certain is not None:
        return certain
    if facts.weight_bytes is None:
        return Verdict(WEIGHTS_FIT, UNKNOWN, "the size of the weights is unknown")
    if gpu is None or gpu.memory_bytes is None:
        return Verdict(WEIGHTS_FIT, UNKNOWN, "the GPU's memory is unknown here")
    per_gpu = facts.weight_bytes / (serving.tp * serving.pp)
    budget = gpu.memory_bytes * serving.gpu_memory_utilization
    room = budget - per_gpu - RUNTIME_OVERHEAD_BYTES
    length = serving.max_model_len or facts.max_model_len or 0
    kv_one = None
    if facts.kv_bytes_per_token is not None:
        share = 1.0
        if not facts.use_mla and facts.num_kv_heads:
            share = max(1, facts.num_kv_heads // serving.tp) / facts.num_kv_heads
        held = facts.kv_bytes_per_token * length
        if facts.kv_window_bytes_per_token and facts.sliding_window:
            held += facts.kv_window_bytes_per_token * min(length, facts.sliding_window)
        kv_one = held * share / serving.pp
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
    weights = facts.fact("weight_bytes")
    online = (serving.quantization or "").lower()
    if online and online != (facts.quant_method or "").lower():
        weights = Fact(
            "weight_bytes",
            ESTIMATED,
            f"--quantization {serving.quantization} quantizes at load: the loaded size is "
            "not the checkpoint's",
        )
    loaded = weights.source if weights is not facts.fact("weight_bytes") else facts.weight_text
    figures = (
        f"weights {per_gpu / GIB:.1f} GiB per GPU ({loaded}; {plan}) against "
        f"{budget / GIB:.1f} GiB = {gpu.memory_bytes / GIB:.1f} GiB x "
        f"--gpu-memory-utilization {serving.gpu_memory_utilization:g} on {gpu.name or 'the GPU'}"
    )
    more = max(1, math.ceil(per_gpu * serving.tp * serving.pp / max(1.0, budget - 2 * GIB)))
    if room <= 0:
        floor_note = (
            f"; the weights' certain lower bound, {facts.weight_floor_bytes / GIB:.1f} GiB "
            f"({facts.weight_floor_text}), fits"
            if facts.weight_floor_bytes
            else "; no certain lower bound of the weights is known"
        )
        return Verdict(
            WEIGHTS_FIT,
            WARN,
            figures + f" leaves {room / GIB:.1f} GiB for the KV cache once an estimated "
            f"{RUNTIME_OVERHEAD_BYTES / GIB:.0f} GiB of activations and CUDA graphs is "
            "taken: vLLM probably fails with 'CUDA out of memory' while loading or 'No "
            "available memory for the cache blocks'" + floor_note,
            f"spread the model over more GPUs (about {more} in all: raise "
            "--tensor-parallel-size or --pipeline-parallel-size), use a quantized variant, "
            "or raise --gpu-memory-utilization",
            evidence,
            (weights,),
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
