"""The model checks at run time: the model rules of lint and admission (same ids, same
logic, ``preflight_contract.modelfacts``), with the real GPUs: each GPU's memory from NVML
and its compute capability from its product name.

The model comes from ``--vllm-args`` (``vllm serve MODEL ...``); its files were found by
``modelsource`` during collection (a mounted directory, the Hugging Face cache, or the
Hub at ``HF_ENDPOINT`` with ``HF_TOKEN``, bounded). A model that cannot be read is one
skipped check (``model-config-unknown``, with how to make it readable); the other model
checks are then skipped too: unknown is never a warning or a failure. A check that fails
on a fact that is not certain (weights estimated from config.json, a key config.json
leaves out of a config class not known here) warns instead (``modelfacts.settle``).
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

from preflight_check.checks.base import check, plan_gpus, result, skipped
from preflight_check.facts import Facts
from preflight_check.options import Options
from preflight_contract import modelfacts as mf
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, PASS, SKIP, WARN

_STATUS = {mf.FAIL: FAIL, mf.WARN: WARN, mf.PASS: PASS, mf.UNKNOWN: SKIP}


def _facts(facts: Facts, options: Options) -> Optional[mf.ModelFacts]:
    if facts.model is None or facts.model.files is None:
        return None
    trust = bool(options.model_args.get("trust_remote_code"))
    return mf.read_facts(facts.model.files, facts.model.where, trust)


def _serving(facts: Facts, options: Options) -> mf.Serving:
    args = options.model_args
    max_len, _ = mf.parse_max_model_len(args.get("max_model_len"))
    flags = facts.model.flags if facts.model is not None else {}
    allow = flags.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "").strip().lower() in ("1", "true")
    return mf.Serving(
        tp=options.plan.tp,
        pp=options.plan.pp,
        dp=int(args.get("dp") or 1),
        enable_expert_parallel=bool(args.get("enable_expert_parallel")),
        max_model_len=max_len,
        dtype=str(args.get("dtype") or "auto"),
        quantization=args.get("quantization"),
        gpu_memory_utilization=options.gpu_memory_utilization,
        allow_long_max_model_len=allow,
        hf_overrides=bool(args.get("hf_overrides")),
        trust_remote_code=bool(args.get("trust_remote_code")),
        cpu_offload_gb=args.get("cpu_offload_gb"),
        kv_cache_memory_bytes=args.get("kv_cache_memory_bytes") is not None,
        load_format=args.get("load_format"),
        # the registry of the release the image holds, where it is exact (no plugin)
        vllm_release=facts.vllm_release,
    )


def gpu_of(facts: Facts) -> Optional[mf.Gpu]:
    """The tightest GPU of the plan: the least memory, the lowest capability. Memory is
    NVML's total (vLLM budgets total x --gpu-memory-utilization; memory already in use is
    check 'gpu-memory'), else CUDA's; the capability comes from the product name."""
    memories: List[int] = []
    capabilities: List[int] = []
    names: List[str] = []
    for gpu, nvml in plan_gpus(facts):
        name = (nvml.name if nvml and nvml.name else "") or gpu.name
        names.append(name)
        total = nvml.memory_total if nvml and nvml.memory_total else gpu.total_memory
        if total:
            memories.append(int(total))
        capability = mf.gpu_from_product(name).capability
        if capability is not None:
            capabilities.append(capability)
    if not names:
        return None
    return mf.Gpu(
        ", ".join(sorted(set(names))),
        min(memories) if len(memories) == len(names) else None,
        min(capabilities) if len(capabilities) == len(names) else None,
        "NVML",
    )


def _model_check(rule: str) -> Callable[[Facts, Options], List[CheckResult]]:
    def run(facts: Facts, options: Options) -> List[CheckResult]:
        if not options.model_args.get("model"):
            return skipped(rule, "no model: give the vLLM command line (--vllm-args)")
        model = _facts(facts, options)
        if model is None:
            return skipped(rule, "the model's config.json is unknown (see 'model-config-unknown')")
        serving = _serving(facts, options)
        gpu = gpu_of(facts)
        verdicts = {v.rule: v for v in mf.evaluate(model, serving, gpu)}
        # only certain facts fail: a fail on an estimated or unknown fact is a warning
        verdict = mf.settle(verdicts[rule])
        evidence: Dict[str, object] = dict(verdict.evidence)
        if gpu is not None and rule in (mf.WEIGHTS_FIT, mf.DTYPE_CAPABILITY, mf.QUANT_CAPABILITY):
            evidence["gpu"] = gpu.name
        return result(
            rule,
            _STATUS[verdict.status],
            f"model {facts.model.model if facts.model else '?'}: {verdict.message}",
            verdict.fix,
            **evidence,
        )

    run.__name__ = rule.replace("-", "_")
    return run


@check(mf.UNREADABLE)
def model_config(facts: Facts, options: Options) -> List[CheckResult]:
    model = options.model_args.get("model")
    if not model:
        return skipped(mf.UNREADABLE, "no model: give the vLLM command line (--vllm-args)")
    found = facts.model
    if found is None or found.files is None:
        where = found.where if found is not None else "not looked up"
        # unknown is never a finding that changes the verdict (as at admission, where an
        # unknown model is information): most pods cannot reach the Hub from an init
        # container, and a warning on every one of them would drown the real ones
        return result(
            mf.UNREADABLE,
            SKIP,
            f"the config.json of model {model!r} could not be read ({where}): the model "
            "checks did not run",
            "mount the model, or let the init container reach the Hub (HF_ENDPOINT, HF_TOKEN "
            "in its env), or pre-fill the Hugging Face cache (HF_HOME / HF_HUB_CACHE)",
        )
    read = mf.read_facts(
        found.files, found.where, bool(options.model_args.get("trust_remote_code"))
    )
    if read is None:
        return result(mf.UNREADABLE, WARN, f"{found.where}: config.json is not a JSON object")
    return result(
        mf.UNREADABLE,
        PASS,
        f"model {model}: config.json read from {found.where} in {found.ms:.0f} ms",
        "",
        model=read.to_dict(),
    )


for _rule in mf.RULE_IDS:
    check(_rule)(_model_check(_rule))
