"""The rules over what the GPU and vLLM support: the dtype and the quantization method
against the compute capability, GPTQ types vLLM refuses, and the architecture against
vLLM's registry (of the release that loads it, where known).

Separate from the structural and fit rules: these read capability tables and registries.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Tuple

from preflight_contract import vllm_registry as _vllm_registry
from preflight_contract import vllm_release as _vllm_release
from preflight_contract.modelfacts.fact import EXACT, Fact
from preflight_contract.modelfacts.ids import (
    ARCH_UNREGISTERED,
    DTYPE_CAPABILITY,
    FAIL,
    PASS,
    QUANT_CAPABILITY,
    QUANT_MIN_CAPABILITY,
    UNKNOWN,
    WARN,
)
from preflight_contract.modelfacts.inputs import capability_text
from preflight_contract.modelfacts.keys import _DTYPE_NAMES
from preflight_contract.modelfacts.records import Gpu, ModelFacts, Serving, Verdict


def rule_dtype(facts: ModelFacts, serving: Serving, gpu: Optional[Gpu]) -> Verdict:
    if gpu is None or gpu.capability is None:
        return Verdict(DTYPE_CAPABILITY, UNKNOWN, "the GPU's compute capability is unknown here")
    chosen = _DTYPE_NAMES.get(serving.dtype.lower(), serving.dtype.lower())
    cc = capability_text(gpu.capability)
    if chosen == "bfloat16" and gpu.capability < 80:
        return Verdict(
            DTYPE_CAPABILITY,
            FAIL,
            f"--dtype {serving.dtype} on {gpu.name or 'a GPU'} (compute capability {cc}): vLLM "
            "fails with 'Bfloat16 is only supported on GPUs with compute capability of at "
            "least 8.0'",
            "use --dtype half (float16), or GPUs of compute capability 8.0 or newer",
            {"capability": cc},
        )
    if chosen == "auto" and facts.dtype == "bfloat16" and gpu.capability < 80:
        return Verdict(
            DTYPE_CAPABILITY,
            WARN,
            f"the model is bfloat16 and {gpu.name or 'the GPU'} (compute capability {cc}) has "
            "no bfloat16: vLLM falls back to float16, which can overflow for models trained "
            "in bfloat16",
            "check the model's outputs in float16, or use GPUs of compute capability 8.0+",
            {"capability": cc},
        )
    return Verdict(DTYPE_CAPABILITY, PASS, f"dtype {chosen} runs on compute capability {cc}")


# AutoGPTQConfig.TYPE_MAP (vllm/model_executor/layers/quantization/auto_gptq.py, read at
# vllm-project/vllm 055e47c28003156421365af985d676fc921cb075): the
# (bits, sym) its Marlin kernels run; any other raises in __init__. Every checkpoint with
# quant_method gptq is claimed by AutoGPTQConfig (override_quantization_method) unless
# --quantization names a method other than gptq / gptq_marlin / auto_gptq / marlin.
AUTO_GPTQ_TYPES = frozenset(((4, True), (8, True)))
_AUTO_GPTQ_USER = (None, "gptq", "gptq_marlin", "auto_gptq", "marlin")


def rule_gptq_type(facts: ModelFacts, serving: Serving) -> Optional[Verdict]:
    """A GPTQ checkpoint vLLM refuses at start-up whatever the GPU: (bits, sym) outside
    AutoGPTQConfig.TYPE_MAP (3-bit, 2-bit, asymmetric 4-bit): 'Unsupported quantization
    config: bits=3, sym=True'. desc_act (act order) is not refused there: the Marlin
    kernels take g_idx (``has_g_idx``), so it is never a finding."""
    if facts.quant_method != "auto_gptq" or facts.gptq_bits_sym is None or serving.hf_overrides:
        return None
    user = (serving.quantization or "").lower() or None
    if user not in _AUTO_GPTQ_USER or facts.gptq_bits_sym in AUTO_GPTQ_TYPES:
        return None
    bits, sym = facts.gptq_bits_sym
    return Verdict(
        QUANT_CAPABILITY,
        FAIL,
        f"the checkpoint is GPTQ with bits={bits}, sym={sym} (config.json quantization_config)"
        f": vLLM reads every GPTQ checkpoint with AutoGPTQConfig, whose kernels take only "
        f"4- and 8-bit symmetric weights, and fails with 'Unsupported quantization config: "
        f"bits={bits}, sym={sym}'",
        "use a 4-bit or 8-bit symmetric GPTQ variant of the model (or an AWQ / FP8 one)",
        {"quant_method": "gptq", "bits": bits, "sym": sym},
        (Fact("gptq_bits_sym", EXACT, "config.json quantization_config bits and sym"),),
    )


def rule_quant(facts: ModelFacts, serving: Serving, gpu: Optional[Gpu]) -> Verdict:
    refused = rule_gptq_type(facts, serving)
    if refused is not None:
        return refused
    method = serving.quantization or facts.quant_method
    if method is None:
        return Verdict(QUANT_CAPABILITY, PASS, "the model is not quantized")
    minimum = QUANT_MIN_CAPABILITY.get(method.lower())
    if minimum is None:
        return Verdict(QUANT_CAPABILITY, UNKNOWN, f"no known minimum capability for {method}")
    if gpu is None or gpu.capability is None:
        return Verdict(QUANT_CAPABILITY, UNKNOWN, "the GPU's compute capability is unknown here")
    if gpu.capability < minimum:
        return Verdict(
            QUANT_CAPABILITY,
            FAIL,
            f"quantization {method} needs compute capability {capability_text(minimum)} and "
            f"{gpu.name or 'the GPU'} has {capability_text(gpu.capability)}: vLLM fails with "
            f"'The quantization method {method} is not supported for the current GPU. "
            f"Minimum capability: {minimum}. Current capability: {gpu.capability}'",
            f"use GPUs of compute capability {capability_text(minimum)} or newer, or an "
            "unquantized or differently quantized variant of the model",
            {"quant_method": method, "min_capability": minimum, "capability": gpu.capability},
        )
    return Verdict(
        QUANT_CAPABILITY,
        PASS,
        f"{method} needs compute capability {capability_text(minimum)}; "
        f"the GPU has {capability_text(gpu.capability)}",
    )


def _registered(arch: str) -> bool:
    """vLLM's _ModelRegistry._normalize_arch: the name itself, or (for a task suffix it
    knows, e.g. ForSequenceClassification) the same base with another known suffix."""
    known = _REGISTERED
    if arch in known:
        return True
    for suffix in _vllm_registry.SUFFIXES:
        if arch.endswith(suffix):
            stem = arch[: -len(suffix)]
            return any(stem + other in known for other in _vllm_registry.SUFFIXES)
    return False


_REGISTERED = frozenset(_vllm_registry.ARCHITECTURES)


def _arch_by_release(archs: Tuple[str, ...], serving: Serving) -> Optional[Verdict]:
    """The verdict of the exact release that loads the model, where its registry answers
    for every architecture: a FAIL where that release registers none of them and has no
    Transformers backend to fall back to (before 0.7.3 vLLM exits with "Model
    architectures [...] are not supported for now"). The release is given only where it
    is exact: statically, vLLM's own image with a release tag (no plugin is installed in
    it); at run time, the release the image holds where no distribution in it declares a
    vLLM general plugin (preflight_check.environment.installed_vllm_release).
    ``--hf-overrides`` may name another architecture, so it never fails."""
    release = serving.vllm_release
    if not release:
        return None
    answers = [_vllm_release.registers(a, release) for a in archs]
    if True in answers:
        return Verdict(ARCH_UNREGISTERED, PASS, f"{archs[0]} is registered in vLLM {release}")
    if None in answers:
        return None  # a release between two generated ones that disagree: the table's own
    since = [s for s in map(_vllm_release.first_registering, archs) if s]
    when = f"vLLM registers it since {since[0]}" if since else "no vLLM release registers it"
    fallback = _vllm_release.falls_back_to_transformers(release)
    evidence = {"architectures": list(archs), "vllm": release}
    fact = (Fact("architectures", EXACT, "config.json"),)
    if fallback is False and not serving.hf_overrides:
        return Verdict(
            ARCH_UNREGISTERED,
            FAIL,
            f"architecture {', '.join(archs)} is not registered in vLLM {release} ({when}), "
            f"which has no Transformers backend: vLLM exits with 'Model architectures "
            f"{list(archs)} are not supported for now'",
            f"run vLLM {since[0]} or later (vllm/vllm-openai:v{since[0]})"
            if since
            else "a vLLM image (or plugin) that registers the architecture",
            evidence,
            fact,
        )
    return Verdict(
        ARCH_UNREGISTERED,
        WARN,
        f"architecture {', '.join(archs)} is not registered in vLLM {release} ({when}): vLLM "
        "then tries its Transformers backend, which works only if transformers has this "
        "architecture and it is backend-compatible",
        f"run vLLM {since[0]} or later, or pass --model-impl transformers"
        if since
        else "check that the vLLM image supports this model, or pass --model-impl transformers",
        evidence,
    )


def rule_arch_registered(
    facts: ModelFacts, config: Optional[Mapping[str, Any]] = None, serving: Optional[Serving] = None
) -> Verdict:
    """Judged by the exact release where it is known (``Serving.vllm_release``): a FAIL
    only where that release has no Transformers backend (``_arch_by_release``). Otherwise
    a WARN (a plugin may register the architecture, and vLLM's Transformers backend may run
    it) when none of config.json's ``architectures`` is in the registry of the vLLM
    version the rules follow (``vllm_registry``)."""
    archs = facts.architectures
    version = _vllm_registry.VLLM_VERSION
    if not archs:
        return Verdict(ARCH_UNREGISTERED, UNKNOWN, "config.json names no architectures")
    by_release = _arch_by_release(archs, serving) if serving is not None else None
    if by_release is not None:
        return by_release
    if any(_registered(a) for a in archs):
        return Verdict(ARCH_UNREGISTERED, PASS, f"{archs[0]} is registered in vLLM {version}")
    removed = [a for a in archs if a in _vllm_registry.PREVIOUSLY_SUPPORTED]
    if removed:
        last = _vllm_registry.PREVIOUSLY_SUPPORTED[removed[0]]
        return Verdict(
            ARCH_UNREGISTERED,
            WARN,
            f"architecture {removed[0]} was removed from vLLM after v{last}: vLLM {version} "
            f"fails with 'Model architecture {removed[0]} was supported in vLLM until "
            f"v{last}, and is not supported anymore'",
            f"use vLLM v{last} or older for this model, or a model vLLM {version} supports",
            {"architectures": list(archs)},
        )
    auto_map = config.get("auto_map") if isinstance(config, Mapping) else None
    custom = isinstance(auto_map, Mapping) and any(str(k).startswith("AutoModel") for k in auto_map)
    fallback = (
        "vLLM then tries its Transformers backend with the model's own code (auto_map; "
        "needs --trust-remote-code)"
        if custom
        else "vLLM then tries its Transformers backend, which works only if transformers "
        "has this architecture and it is backend-compatible"
    )
    return Verdict(
        ARCH_UNREGISTERED,
        WARN,
        f"architecture {', '.join(archs)} is not registered in vLLM {version}: {fallback}; "
        "otherwise vLLM fails with 'Model architectures [...] are not supported for now' "
        "(a plugin or a newer vLLM may register it)",
        "check that the vLLM image supports this model (docs: Supported Models), or pass "
        "--model-impl transformers",
        {"architectures": list(archs), "vllm": version},
    )
