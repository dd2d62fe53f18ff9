"""Rules about the model itself: will it split over, and fit on, the GPUs it is given?

The verdicts come from ``preflight_contract.modelfacts`` (shared with the checker, so lint,
admission and the init container say the same under the same id). Here they are tied to
the manifest: the model's files come from ``ctx.lookup.model`` (``lint --model-config
DIR``, or the operator's cache / ``modelConfigs`` ConfigMap), the GPU product from the
pod's nodeSelector or required node affinity on ``nvidia.com/gpu.product``. Without a
model lookup nothing is said; a model the lookup cannot read is one info finding (the
verdict stays what the other rules make it), never a warning or a fail.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from preflight_contract import modelfacts as mf
from preflight_contract.verdicts import FAIL, INFO, WARN
from preflight_operator.core.rules.certainty import (
    ESTIMATED,
    EXACT,
    HEURISTIC,
    MODEL_FACT,
    UNKNOWN,
    VLLM_CODE,
    WEIGHT_BYTES,
    Basis,
    Input,
)
from preflight_operator.core.rules.context import ContainerContext
from preflight_operator.core.rules.inputs import plan_input
from preflight_operator.core.rules.registry import RULE_INFO, declare, register
from preflight_operator.core.rules.vllmversion import image_version
from preflight_operator.core.rules.vocabulary import Finding, Policy

PRODUCT_LABEL = "nvidia.com/gpu.product"
MEMORY_LABEL = "nvidia.com/gpu.memory"  # MiB, from GPU feature discovery
MAJOR_LABEL = "nvidia.com/gpu.compute.major"
MINOR_LABEL = "nvidia.com/gpu.compute.minor"

# Which vLLM option each rule's fix is about (for the finding's field).
_FIELD_DEST = {
    mf.TP_HEADS: "tensor_parallel_size",
    mf.TP_KV_HEADS: "tensor_parallel_size",
    mf.EP_EXPERTS: "enable_expert_parallel",
    mf.PP_LAYERS: "pipeline_parallel_size",
    mf.MAX_LEN: "max_model_len",
    mf.WEIGHTS_FIT: "tensor_parallel_size",
    mf.DTYPE_CAPABILITY: "dtype",
    mf.QUANT_CAPABILITY: "quantization",
    mf.MAMBA_GROUPS: "tensor_parallel_size",
    mf.ARCH_UNREGISTERED: "model",
}
_GPU_RULES = frozenset((mf.WEIGHTS_FIT, mf.DTYPE_CAPABILITY, mf.QUANT_CAPABILITY))
# Where each model rule's knowledge comes from: vLLM's own code, recorded over the corpus
# (tests/data/models/vllm_verdicts.json), except the memory fit, whose 2 GiB of
# activations and CUDA graphs (RUNTIME_OVERHEAD_BYTES) is an estimate at default settings.
_VERDICTS = "recorded in tests/data/models/vllm_verdicts.json"
BASES = {
    mf.TP_HEADS: Basis(VLLM_CODE, f"ModelConfig.verify_with_parallel_config, {_VERDICTS}"),
    mf.TP_KV_HEADS: Basis(VLLM_CODE, f"QKVParallelLinear's KV head split, {_VERDICTS}"),
    mf.EP_EXPERTS: Basis(VLLM_CODE, "_verify_with_expert_parallelism, determine_expert_map"),
    mf.PP_LAYERS: Basis(VLLM_CODE, "vllm/distributed/utils.py get_pp_indices"),
    mf.MAX_LEN: Basis(VLLM_CODE, f"_get_and_verify_max_len, {_VERDICTS}"),
    # fails only on the weights' certain lower bound against the GPU's most memory x
    # utilization; the estimate (2 GiB of activations and CUDA graphs, the KV cache) warns
    mf.WEIGHTS_FIT: Basis(
        VLLM_CODE,
        "vLLM's KV cache budget (check_enough_kv_cache_memory: 'No available memory for the"
        " cache blocks') against the weights' certain lower bound",
    ),
    mf.DTYPE_CAPABILITY: Basis(VLLM_CODE, "vllm/platforms/cuda.py check_if_supports_dtype"),
    mf.QUANT_CAPABILITY: Basis(
        VLLM_CODE, f"each method's get_min_capability(), {_VERDICTS}; AutoGPTQConfig.TYPE_MAP"
    ),
    mf.MAMBA_GROUPS: Basis(
        VLLM_CODE,
        "vLLM 0.33.0 (4ba787ec9) vllm/model_executor/layers/mamba/mamba_mixer2.py MambaMixer2",
    ),
    mf.ARCH_UNREGISTERED: Basis(
        VLLM_CODE,
        "each release's vllm/model_executor/models registry (_VLLM_MODELS, before 0.6.3 "
        "_MODELS) and Transformers fallback, generated into preflight_contract/"
        "vllm_versions.py; where the release is unknown, vLLM 0.33.0 (4ba787ec9), "
        "generated into preflight_contract/vllm_registry.py",
    ),
    mf.UNREADABLE: Basis(HEURISTIC, "the model's files could not be read here"),
}
# The fix in a few words, per rule (README's rule table; "## Model rules" in RULES.md says more).
FIXES = {
    mf.TP_HEADS: "a `--tensor-parallel-size` that divides the model's attention heads; add"
    " `--pipeline-parallel-size` for more GPUs",
    mf.TP_KV_HEADS: "a TP that divides the model's KV heads or is a multiple of them",
    mf.EP_EXPERTS: "drop `--enable-expert-parallel` on a dense model; an EP size (TP x DP)"
    " that divides the experts",
    mf.PP_LAYERS: "at most as many pipeline stages as the model has layers",
    mf.MAX_LEN: "`--max-model-len` at most the model's length (config.json, RoPE scaling included)",
    mf.WEIGHTS_FIT: "more GPUs (TP x PP), a quantized variant, a shorter `--max-model-len` or"
    " a higher `--gpu-memory-utilization`",
    mf.DTYPE_CAPABILITY: "`--dtype half` on GPUs below compute capability 8.0",
    mf.QUANT_CAPABILITY: "GPUs with the compute capability the quantization method needs, or"
    " another variant of the model",
    mf.MAMBA_GROUPS: "a `--tensor-parallel-size` dividing the model's Mamba-2 `n_groups` and"
    " heads; `--pipeline-parallel-size` for more GPUs",
    mf.ARCH_UNREGISTERED: "a vLLM image (or plugin) that registers the architecture, or"
    " `--model-impl transformers`",
    mf.UNREADABLE: "give the model's config: `lint --model-config DIR`, the operator's model"
    " fetch or `modelConfigs` ConfigMap",
}
# Their worst severity (some also warn); model-tp-heads is the registered function below.
# An unregistered architecture fails only on vLLM's own image of a release before its
# Transformers backend (0.7.3); elsewhere it warns (the backend or a plugin may run it).
for _rule in mf.RULE_IDS[1:]:
    declare(_rule, FAIL, mf.RULE_SUMMARIES[_rule], BASES[_rule], fix=FIXES[_rule])
# info, not warn: an unknown model is said once per result and never changes the verdict
declare(
    mf.UNREADABLE,
    INFO,
    mf.RULE_SUMMARIES[mf.UNREADABLE],
    BASES[mf.UNREADABLE],
    fix=FIXES[mf.UNREADABLE],
)


def _selector_terms(spec: Mapping[str, Any]) -> list[dict[str, list[str]]]:
    """Label -> allowed values, one dict per way the pod can be placed: the nodeSelector
    merged into each required nodeAffinity term (a pod must match both)."""
    base: dict[str, list[str]] = {}
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping):
        base = {str(k): [str(v)] for k, v in selector.items() if isinstance(v, (str, int))}
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = (
        node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(node, Mapping)
        else None
    )
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list) or not terms:
        return [base]
    out = []
    for term in terms:
        merged = dict(base)
        expressions = term.get("matchExpressions") if isinstance(term, Mapping) else None
        for expr in expressions if isinstance(expressions, list) else []:
            if not isinstance(expr, Mapping) or expr.get("operator") != "In":
                continue
            values = expr.get("values")
            if isinstance(values, list) and values:
                merged[str(expr.get("key"))] = [str(v) for v in values]
        out.append(merged)
    return out


def gpu_of(spec: Mapping[str, Any]) -> mf.Gpu | None:
    """The GPU the pod will land on, when its placement names exactly one product (or
    the GPU feature discovery memory / compute labels); None when not known."""
    gpus: list[mf.Gpu] = []
    for term in _selector_terms(spec):
        products = term.get(PRODUCT_LABEL, [])
        if len(products) == 1:
            gpu = mf.gpu_from_product(products[0], f"{PRODUCT_LABEL}={products[0]}")
        elif not products and (MEMORY_LABEL in term or MAJOR_LABEL in term):
            gpu = mf.Gpu("the selected GPU", None, None, "node labels")
        else:
            return None  # several products, or nothing known about this placement
        memory, capability, upper = gpu.memory_bytes, gpu.capability, gpu.memory_upper_bytes
        with_memory = term.get(MEMORY_LABEL, [])
        if len(with_memory) == 1 and with_memory[0].isdigit():
            memory, upper = int(with_memory[0]) << 20, None  # NVML's total: measured
        major, minor = term.get(MAJOR_LABEL, []), term.get(MINOR_LABEL, ["0"])
        if len(major) == 1 and major[0].isdigit() and len(minor) == 1 and minor[0].isdigit():
            capability = int(major[0]) * 10 + int(minor[0])
        gpus.append(mf.Gpu(gpu.name, memory, capability, gpu.source, upper))
    if len({(g.memory_bytes, g.capability) for g in gpus}) != 1:
        return None
    return gpus[0]


def serving_of(ctx: ContainerContext) -> mf.Serving:
    parsed = ctx.parsed
    plan = parsed.plan
    max_len, _ = mf.parse_max_model_len(parsed.max_model_len)
    allow, _ = ctx.process_env("VLLM_ALLOW_LONG_MAX_MODEL_LEN")
    return mf.Serving(
        tp=plan.tp,
        pp=plan.pp,
        dp=plan.dp,
        enable_expert_parallel=parsed.enable_expert_parallel,
        max_model_len=max_len,
        dtype=parsed.dtype or "auto",
        quantization=parsed.quantization,
        gpu_memory_utilization=parsed.gpu_memory_utilization or 0.9,
        allow_long_max_model_len=(allow or "").strip().lower() in ("1", "true"),
        hf_overrides=parsed.hf_overrides,
        trust_remote_code=parsed.trust_remote_code,
        cpu_offload_gb=parsed.cpu_offload_gb,
        kv_cache_memory_bytes=parsed.kv_cache_memory_bytes is not None,
        load_format=parsed.load_format,
        vllm_release=image_version(ctx.container.get("image")).release,
    )


def _flag_text(ctx: ContainerContext, dest: str) -> str:
    origin = ctx.parsed.origins.get(dest)
    return origin.spelling if origin is not None else "--" + dest.replace("_", "-")


@register(
    mf.TP_HEADS, FAIL, mf.RULE_SUMMARIES[mf.TP_HEADS], BASES[mf.TP_HEADS], fix=FIXES[mf.TP_HEADS]
)
def model_rules(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    """Every model rule at once: the model's files are looked up a single time."""
    lookup = ctx.lookup.model
    model = ctx.parsed.model
    if lookup is None or not model or not ctx.parsed.plan_valid:
        return
    if "$" in model:
        return  # from a variable unknown here: the env rules say so
    try:
        files = lookup(model)
    except Exception:  # a lookup that breaks is unknown, never fatal
        files = None
    trust = ctx.parsed.trust_remote_code
    facts = mf.read_facts(files, model, trust) if files is not None else None
    model_path = ctx.arg_path("model")
    if facts is None:
        yield RULE_INFO[mf.UNREADABLE].finding(
            f"the config.json of model {model!r} is not available here, so the model rules "
            "(heads vs TP, layers vs PP, max length, memory fit, GPU capability) were not "
            "checked",
            model_path,
            "lint: pass --model-config DIR holding <org>/<name>/config.json; operator: enable "
            "the model fetch or add the model to the modelConfigs ConfigMap",
        )
        return
    serving = serving_of(ctx)
    gpu = gpu_of(ctx.spec)
    plan = plan_input(ctx)
    for verdict in mf.evaluate(facts, serving, gpu):
        if verdict.status not in (mf.FAIL, mf.WARN):
            continue
        dest = _FIELD_DEST.get(verdict.rule, "model")
        where = ctx.arg_path(dest) if dest in ctx.parsed.origins else ctx.command_path
        detail = ""
        if verdict.rule in _GPU_RULES and gpu is not None and gpu.source:
            detail = f" (GPU from {gpu.source})"
        rests_on = (plan, *(fact_input(f, model) for f in verdict.rests_on))
        yield Finding(
            verdict.rule,
            FAIL if verdict.status == mf.FAIL else WARN,
            f"model {model}: {verdict.message}{detail}",
            where,
            verdict.fix.replace("--tensor-parallel-size", _flag_text(ctx, "tensor_parallel_size"))
            if "tensor_parallel_size" in ctx.parsed.origins
            else verdict.fix,
            rests_on,
        )


# a model fact's certainty (preflight_contract.modelfacts) as the engine's: a class default
# is what transformers gives vLLM for a key config.json leaves out, so it is as exact
_CERTAINTY = {mf.EXACT: EXACT, mf.DEFAULT: EXACT, mf.ESTIMATED: ESTIMATED}


def fact_input(fact: mf.Fact, model: str) -> Input:
    """A model fact a verdict rests on, as an engine input: the engine downgrades a fail
    resting on one that is estimated (weight bytes from config arithmetic) or unknown (a
    key config.json leaves out of a config class not known here)."""
    kind = WEIGHT_BYTES if fact.name.startswith("weight_bytes") else MODEL_FACT
    what = "the size of the weights" if kind == WEIGHT_BYTES else f"{fact.name} of {model}"
    certainty = _CERTAINTY.get(fact.certainty, UNKNOWN)
    if certainty == EXACT:
        return Input(kind, what, EXACT)
    why = fact.source
    if kind == WEIGHT_BYTES and fact.certainty == mf.ESTIMATED:
        why = (
            f"is estimated from the architecture in config.json ({fact.source}; no "
            "model.safetensors.index.json total_size, *.safetensors files or Hub counts)"
        )
    elif fact.certainty == mf.FACT_UNKNOWN:
        why = f"is unknown: {fact.source}"
    return Input(kind, what, certainty, why)
