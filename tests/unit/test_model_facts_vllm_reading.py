"""Model facts as vLLM reads them, and estimates with bounds (issue 35, items 5 and 6).

The expected verdicts were written from vLLM's and transformers' source before running the
rules: transformers' ``AutoConfig.from_pretrained`` (models/auto/configuration_auto.py: the
checkpoint's own config class only ``if has_remote_code and trust_remote_code``),
``Exaone4_5_Config.__post_init__`` (exaone4_5_text -> exaone4), ``NemotronHConfig``
(``num_hidden_layers`` is ``len(layers_block_type)``); vLLM's ModelOpt configs'
``override_quantization_method`` (quantization/modelopt.py), its legacy hf_quant_config
normalization (tests/config/test_model_arch_config.py), ``_verify_with_expert_parallelism``
and ``check_enough_kv_cache_memory`` ('No available memory for the cache blocks').
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from test_rules_support import deployment, pod_spec, vllm

from preflight_contract import modelfacts as mf
from preflight_contract.modelsource import read_model_dir
from preflight_contract.vllm_args import parse_vllm_args
from preflight_operator.core.rules import ClusterLookup, check_objects

CORPUS = Path(__file__).parents[1] / "data" / "models"
GIB = 1 << 30
T4 = mf.gpu_from_product("Tesla T4")
H200 = mf.gpu_from_product("NVIDIA H200")


def files_of(model: str) -> dict[str, Any]:
    files, why = read_model_dir(str(CORPUS / model))
    assert files is not None, why
    return files


def facts_of(files: dict[str, Any], trust: bool = False) -> mf.ModelFacts:
    got = mf.read_facts(files, "test", trust)
    assert got is not None
    return got


def admit(files: dict[str, Any], *args: str, gpus: int = 1, **spec: Any) -> dict[str, Any]:
    lookup = ClusterLookup(model=lambda model: files)
    obj = deployment(pod_spec(vllm("org/model", *args, gpus=gpus), **spec))
    (only,) = check_objects([obj], lookup=lookup)
    return {f.id: f for f in only.findings}


def verdicts(files: dict[str, Any], serving: mf.Serving, gpu: mf.Gpu | None = None) -> Any:
    got = facts_of(files, serving.trust_remote_code)
    return {v.rule: mf.settle(v) for v in mf.evaluate(got, serving, gpu)}


# -- auto_map is read only with --trust-remote-code ----------------------------------------


def test_auto_map_without_trust_remote_code_is_the_known_class_and_ep_fails() -> None:
    # microsoft/phi-1 and phi-2: model_type phi and an auto_map.AutoConfig. vLLM passes
    # trust_remote_code=False, so transformers builds its own PhiConfig: no expert key at
    # all, exactly 0 experts, and vLLM refuses --enable-expert-parallel ("Number of experts
    # in the model must be greater than 0"). Before: unknown, a warning.
    files = files_of("microsoft/phi-2")
    assert "AutoConfig" in files[mf.CONFIG]["auto_map"]
    got = admit(files, "--enable-expert-parallel")
    assert got["model-ep-experts"].severity == "fail", got["model-ep-experts"].message
    assert verdicts(files, mf.Serving(enable_expert_parallel=True))[mf.EP_EXPERTS].status == (
        mf.FAIL
    )
    # with --trust-remote-code transformers builds the checkpoint's own class: unknown
    trusted = admit(files, "--enable-expert-parallel", "--trust-remote-code")
    assert trusted["model-ep-experts"].severity == "warn"
    assert "its own AutoConfig" in trusted["model-ep-experts"].message
    serving = mf.Serving(enable_expert_parallel=True, trust_remote_code=True)
    assert verdicts(files, serving)[mf.EP_EXPERTS].status == mf.WARN


def test_the_trust_remote_code_flag_is_parsed_in_both_spellings() -> None:
    assert parse_vllm_args(["vllm", "serve", "m", "--trust-remote-code"]).trust_remote_code
    off = parse_vllm_args(["vllm", "serve", "m", "--trust-remote-code", "--no-trust-remote-code"])
    assert not off.trust_remote_code
    got = parse_vllm_args(["vllm", "serve", "m", "--cpu-offload-gb", "8"])
    assert got.cpu_offload_gb == "8"
    assert not got.problems


def test_a_renamed_text_model_type_takes_the_new_class_defaults() -> None:
    # EXAONE 4.5 configs name their text part exaone4_5_text; transformers reads it as
    # exaone4 (Exaone4_5_Config.__post_init__): keys it leaves out take Exaone4Config's
    # defaults, not "unknown"
    config = {
        "model_type": "exaone4_5",
        "architectures": ["Exaone4_5_ForConditionalGeneration"],
        "text_config": {"model_type": "exaone4_5_text", "hidden_size": 5120,
                        "num_attention_heads": 40, "num_hidden_layers": 64},
    }  # fmt: skip
    got = facts_of({mf.CONFIG: config})
    assert got.model_type == "exaone4"
    assert got.fact("num_kv_heads").certainty == mf.DEFAULT
    assert "'exaone4' config class default" in got.fact("num_kv_heads").source


# -- quantization as vLLM reads it ---------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "method"),
    [
        ("nvidia/Kimi-K2.5-NVFP4", "modelopt_fp4"),  # flat quant_algo NVFP4 in config.json
        ("nvidia/Qwen3.6-35B-A3B-NVFP4", "modelopt_mixed"),  # flat MIXED_PRECISION
        # hf_quant_config.json without producer or quant_method: vLLM normalizes it
        ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "modelopt_fp4"),
    ],
)
def test_modelopt_fp4_and_mixed_are_not_fp8_and_run_on_a_t4(model: str, method: str) -> None:
    # ModelOptNvFp4Config / ModelOptMixedPrecisionConfig: minimum capability 7.5 (Marlin
    # W4A16 on Turing); read as "modelopt" (FP8, 8.0) they failed on a T4 (issue 35)
    got = facts_of(files_of(model))
    assert got.quant_method == method
    assert got.quant_min_capability == 75
    assert verdicts(files_of(model), mf.Serving(tp=8), T4)[mf.QUANT_CAPABILITY].status == mf.PASS


def test_compressed_tensors_int4_is_four_bits_not_sixteen() -> None:
    # moonshotai/Kimi-K2.5: config_groups weights num_bits 4 (the routed experts)
    files = files_of("moonshotai/Kimi-K2.5")
    got = facts_of(files)
    assert got.quant_method == "compressed-tensors"
    assert mf.bits_floor(files, got.quant_method) == 4
    assert got.weight_bytes is not None
    assert got.weight_bytes < 600 * GIB  # ~1T parameters at 4.25 bits, not 2 TB at 16
    assert "x 4 bits" in got.weight_floor_text
    # its floor (681B parameters x 4 bits = 317 GiB) over 2 H200s is 159 GiB per GPU,
    # more than the 139.6 GiB an H200 may offer: a certain failure; over 4 it fits
    assert verdicts(files, mf.Serving(tp=2), H200)[mf.WEIGHTS_FIT].status == mf.FAIL
    assert verdicts(files, mf.Serving(tp=4), H200)[mf.WEIGHTS_FIT].status != mf.FAIL


def test_an_unreadable_quantization_block_has_no_floor() -> None:
    config = copy.deepcopy(files_of("meta-llama/Meta-Llama-3.1-70B")[mf.CONFIG])
    config["quantization_config"] = {"something": "new"}
    files = {mf.CONFIG: config}
    assert mf.bits_floor(files, mf.quant_method_of(files)) is None
    assert facts_of(files).weight_floor_bytes is None


# -- layer counts of hybrids ---------------------------------------------------------------


def test_nemotron_h_layers_come_from_layers_block_type() -> None:
    # NemotronHConfig.num_hidden_layers returns len(layers_block_type): a Nemotron-3 config
    # that states only the list has that many layers (exact), whatever else it says
    config = copy.deepcopy(files_of("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")[mf.CONFIG])
    pattern = config.pop("hybrid_override_pattern")
    del config["num_hidden_layers"]
    names = {"M": "mamba", "E": "moe", "*": "attention", "-": "mlp"}
    config["layers_block_type"] = [names[c] for c in pattern]
    got = facts_of({mf.CONFIG: config})
    assert got.num_layers == len(pattern) == 52
    assert got.fact("num_layers").certainty == mf.EXACT
    serving = mf.Serving(pp=64)
    assert mf.rule_pp_layers(got, serving).status == mf.FAIL
    # the weight estimate and floor count its experts, as the pattern's did
    plain = facts_of(files_of("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"))
    assert got.weight_floor_bytes == plain.weight_floor_bytes
    assert got.weight_bytes == plain.weight_bytes


def test_nemotron_3_super_counts_its_latent_experts() -> None:
    got = facts_of(files_of("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"))
    assert got.num_layers == 88
    assert "40 x 512 experts 2 x 1024 x 2688" in got.weight_floor_text
    # ~120B parameters: at 4.25 bits about 60 GiB; its floor fails one 24 GB L4
    assert got.weight_bytes is not None
    assert 50 * GIB < got.weight_bytes < 75 * GIB
    l4 = mf.gpu_from_product("NVIDIA L4")
    files = files_of("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4")
    assert verdicts(files, mf.Serving(), l4)[mf.WEIGHTS_FIT].status == mf.FAIL


# -- the floor leaves out what vLLM may not load ---------------------------------------------


def test_a_checkpoint_with_mtp_layers_or_a_vision_tower_is_not_floored_by_its_size() -> None:
    # DeepSeek-R1's index counts its MTP layer (loaded only for speculative decoding): the
    # checkpoint's bytes are no lower bound; the architecture's floor stands
    files = dict(files_of("deepseek-ai/DeepSeek-R1"))
    files[mf.INDEX] = {"metadata": {"total_size": 688 * 10**9}, "weight_map": {}}
    got = facts_of(files)
    assert got.fact("weight_bytes").certainty == mf.EXACT
    assert got.weight_floor_text.startswith("at least 445B parameters")
    # Llama-3.1-70B has neither: its index's total_size, less one output head at float32
    # (a tied copy or a pooling runner's head vLLM may skip), is the floor
    llama = dict(files_of("meta-llama/Meta-Llama-3.1-70B"))
    llama[mf.INDEX] = {"metadata": {"total_size": 141 * 10**9}, "weight_map": {}}
    assert facts_of(llama).weight_floor_bytes == 141 * 10**9 - 128256 * 8192 * 4
    assert "total_size less one head" in facts_of(llama).weight_floor_text


def test_kv_cache_memory_bytes_lifts_the_utilization_from_the_budget() -> None:
    # Qwen3-32B's floor (22.9B parameters x 16 bits = 42.7 GiB) on a GPU NVML measures at
    # 46 GiB: more than 46 x 0.9 = 41.4 GiB (fails); with --kv-cache-memory-bytes vLLM
    # sizes the cache by it and ignores the utilization: the floor fits the whole GPU
    files = files_of("Qwen/Qwen3-32B")
    gpu = mf.Gpu("a 46 GiB GPU", 46 * GIB, 89, "NVML")
    assert verdicts(files, mf.Serving(), gpu)[mf.WEIGHTS_FIT].status == mf.FAIL
    lifted = verdicts(files, mf.Serving(kv_cache_memory_bytes=True), gpu)[mf.WEIGHTS_FIT]
    assert lifted.status != mf.FAIL


def test_the_corpus_floors_never_exceed_the_estimates_or_published_sizes() -> None:
    # a floor above what the model really is would be a false FAIL: every corpus model's
    # floor stays under its estimate (the estimate agrees with published counts within 3%)
    for config in sorted(CORPUS.glob("*/*/config.json")):
        model = str(config.parent.relative_to(CORPUS))
        got = facts_of(files_of(model))
        if got.weight_floor_bytes is None:
            continue
        assert got.weight_bytes is not None, model
        assert got.weight_floor_bytes <= got.weight_bytes, (model, got.weight_floor_text)
    assert json.loads((CORPUS / "vllm_verdicts.json").read_text())


# -- the KV cache of one sequence: sliding-window and linear-attention layers ---------------


def test_sliding_and_linear_attention_layers_do_not_grow_with_the_sequence() -> None:
    # gpt-oss: layer_types alternate sliding (window 128) and full attention; vLLM's
    # hybrid KV cache manager keeps a sliding layer's cache to its window
    oss = facts_of(files_of("openai/gpt-oss-120b"))
    assert oss.kv_bytes_per_token == oss.kv_window_bytes_per_token == 18 * 2 * 8 * 64 * 2
    assert oss.sliding_window == 128
    # Qwen3.6: 30 of 40 layers are linear attention (no per-token KV): 10 full layers
    qwen = facts_of(files_of("nvidia/Qwen3.6-35B-A3B-NVFP4"))
    assert qwen.kv_bytes_per_token == 10 * 2 * 2 * 256 * 2
    assert qwen.kv_window_bytes_per_token == 0
    fit = mf.rule_weights_fit(oss, mf.Serving(max_model_len=131072), H200)
    full_only = 18 * 2 * 8 * 64 * 2 * 131072 + 18 * 2 * 8 * 64 * 2 * 128
    assert fit.evidence["kv_cache_one_sequence_gib"] == round(full_only / GIB, 2)


# -- GPTQ checkpoints vLLM refuses at start-up ---------------------------------------------


def _gptq(**quant: Any) -> dict[str, Any]:
    files = copy.deepcopy(files_of("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4"))
    files[mf.CONFIG]["quantization_config"].update(quant)
    return files


@pytest.mark.parametrize(
    ("quant", "status"),
    [
        ({}, mf.PASS),  # Qwen's own: bits 4, sym true, desc_act false
        ({"bits": 8}, mf.PASS),
        ({"desc_act": True}, mf.PASS),  # act order: Marlin takes g_idx, not refused
        ({"bits": 3}, mf.FAIL),  # AutoGPTQConfig.TYPE_MAP has (4, True) and (8, True)
        ({"bits": 2}, mf.FAIL),
        ({"sym": False}, mf.FAIL),
    ],
)
def test_gptq_bits_and_sym_outside_autogptq_types_fail(quant: dict[str, Any], status: str) -> None:
    files = _gptq(**quant)
    got = verdicts(files, mf.Serving(), H200)[mf.QUANT_CAPABILITY]
    assert got.status == status, got.message
    if status == mf.FAIL:
        assert "Unsupported quantization config: bits=" in got.message
    # --quantization naming another method takes the checkpoint away from AutoGPTQConfig
    other = verdicts(files, mf.Serving(quantization="moe_wna16"), H200)[mf.QUANT_CAPABILITY]
    assert other.status == mf.PASS


def test_gptq_three_bit_is_denied_at_admission() -> None:
    got = admit(_gptq(bits=3))
    assert got["model-quant-capability"].severity == "fail"


def test_without_a_layer_count_the_embedding_is_still_a_floor() -> None:
    # issue 35: no layer count meant no weights-fit finding at all. A config with no
    # num_hidden_layers of a class not known here: the embedding alone (vocab x hidden x
    # 16 bits) is certain, and 2M x 16384 x 2 bytes = 64 GiB does not fit a T4
    config = {"model_type": "acme_custom", "hidden_size": 16384, "vocab_size": 2_097_152,
              "num_attention_heads": 128, "torch_dtype": "bfloat16"}  # fmt: skip
    got = facts_of({mf.CONFIG: config})
    assert got.num_layers is None
    assert got.weight_floor_bytes == 2_097_152 * 16384 * 2
    assert "layers not counted" in got.weight_floor_text
    assert mf.rule_weights_fit(got, mf.Serving(), T4).status == mf.FAIL


# -- transformers itself, where installed (dev only: pip install transformers) --------------


def test_transformers_reads_these_configs_as_the_rules_do(tmp_path: Path) -> None:
    """The oracle: transformers' AutoConfig on the same files (5.24.0, the version of
    model_defaults.py, run 2026-12-06: PhiConfig with no expert key for phi-2 without
    trust_remote_code, NemotronHConfig 88 layers from either spelling, Exaone4Config with
    32 KV heads for exaone4_5_text)."""
    transformers = pytest.importorskip("transformers")
    auto = transformers.AutoConfig
    phi = auto.from_pretrained(str(CORPUS / "microsoft/phi-2"))
    assert type(phi).__name__ == "PhiConfig"
    experts = [getattr(phi, k, None) for k in ("num_experts", "num_local_experts")]
    assert not any(experts)
    assert facts_of(files_of("microsoft/phi-2")).num_experts == 0
    config = copy.deepcopy(files_of("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4")[mf.CONFIG])
    pattern = config.pop("hybrid_override_pattern")
    del config["num_hidden_layers"]
    config["layers_block_type"] = [
        {"M": "mamba", "E": "moe", "*": "attention", "-": "mlp"}[c] for c in pattern
    ]
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert auto.from_pretrained(str(tmp_path)).num_hidden_layers == 88
    assert facts_of({mf.CONFIG: config}).num_layers == 88
    exaone = {"model_type": "exaone4_5", "text_config": {"model_type": "exaone4_5_text",
              "hidden_size": 5120, "num_attention_heads": 40, "num_hidden_layers": 64}}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(exaone))
    text = auto.from_pretrained(str(tmp_path)).text_config
    assert facts_of({mf.CONFIG: exaone}).num_kv_heads == text.num_key_value_heads


def test_a_hostile_layer_count_is_not_iterated() -> None:
    # per-layer arithmetic (MoE placement) stops at MAX_LAYERS: a config claiming 10^9
    # layers gets no estimate and an embedding-only floor, at once
    config = {"model_type": "qwen3_moe", "num_hidden_layers": 10**9, "hidden_size": 4096,
              "vocab_size": 1000, "num_attention_heads": 32, "num_experts": 8}  # fmt: skip
    got = facts_of({mf.CONFIG: config})
    assert got.weight_bytes is None
    assert got.weight_floor_bytes == 1000 * 4096 * 2
    assert mf.MAX_LAYERS >= 126  # Llama-3.1-405B, the corpus's deepest


def test_two_four_sparse_weights_have_no_bits_floor() -> None:
    # compressed-tensors 2:4 sparsity (sparsity_config, format sparse-24-bitmask) stores
    # and runs half the elements: the dense parameter count is no lower bound
    config = copy.deepcopy(files_of("meta-llama/Meta-Llama-3.1-70B")[mf.CONFIG])
    config["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "format": "sparse-24-bitmask",
        "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}},
        "sparsity_config": {"format": "sparse-24-bitmask", "sparsity_structure": "2:4"},
    }
    files = {mf.CONFIG: config}
    assert mf.bits_floor(files, mf.quant_method_of(files)) is None
    assert facts_of(files).weight_floor_bytes is None
