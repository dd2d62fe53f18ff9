"""Model facts from the checkpoint, not arithmetic (issue 24, item 7).

Each false FAIL or miss of the rules before this change has a test here that failed on
that code (the report quotes the lines); the expected verdicts come from reading vLLM
0.33.0's source (the sdist's commit 4ba787ec9), cited per test.
"""

from __future__ import annotations

import copy
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from test_rules_support import deployment, pod_spec, vllm

from preflight_contract import modelfacts as mf
from preflight_contract.modelsource import read_model_dir
from preflight_operator.core.rules import ClusterLookup, check_objects

CORPUS = Path(__file__).parents[1] / "data" / "models"
GIB = 1 << 30
H100 = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}
H200 = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H200"}}


def files_of(model: str) -> dict[str, Any]:
    files, why = read_model_dir(str(CORPUS / model))
    assert files is not None, why
    return files


def config_of(model: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CORPUS / model / "config.json").read_text())
    return loaded


def facts_of(files: dict[str, Any]) -> mf.ModelFacts:
    got = mf.read_facts(files, "test")
    assert got is not None
    return got


def admit(files: dict[str, Any], *args: str, gpus: int, **spec: Any) -> Any:
    """The rules engine (lint and admission) over a Deployment serving ``files``."""
    lookup = ClusterLookup(model=lambda model: files)
    obj = deployment(pod_spec(vllm("org/model", *args, gpus=gpus), **spec))
    (only,) = check_objects([obj], lookup=lookup)
    return only


def found(res: Any) -> dict[str, Any]:
    return {f.id: f for f in res.findings}


def run_time(
    files: dict[str, Any], serving: mf.Serving, gpu: mf.Gpu | None = None
) -> dict[str, Any]:
    """The checker's verdicts: every model rule, settled as checks/model.py settles them."""
    settle = getattr(mf, "settle", lambda v: v)  # absent before this change
    return {v.rule: settle(v) for v in mf.evaluate(facts_of(files), serving, gpu)}


# -- keys config.json leaves out take the class's defaults ---------------------------------


def test_an_omitted_expert_count_takes_the_class_default_not_zero() -> None:
    # Qwen3MoeConfig's num_experts defaults to 128 (transformers): vLLM reads 128 experts
    # and --enable-expert-parallel runs (_verify_with_expert_parallelism: num_experts > 0)
    config = config_of("Qwen/Qwen3-30B-A3B")
    del config["num_experts"]
    res = admit({mf.CONFIG: config}, "-tp", "2", "--enable-expert-parallel", gpus=2)
    assert "model-ep-experts" not in found(res), found(res)["model-ep-experts"].message
    assert facts_of({mf.CONFIG: config}).num_experts == 128


def test_an_omitted_key_of_an_unknown_class_is_unknown_never_a_fail() -> None:
    # a config class transformers does not have (custom code): its defaults are unknown,
    # so "no experts" may be wrong: the engine downgrades the fail and says why
    config = {
        "architectures": ["MyMoeForCausalLM"],
        "model_type": "my_custom_moe",
        "num_attention_heads": 16,
        "num_hidden_layers": 24,
        "hidden_size": 2048,
        "vocab_size": 32000,
    }
    res = admit({mf.CONFIG: config}, "-tp", "2", "--enable-expert-parallel", gpus=2)
    ep = found(res)["model-ep-experts"]
    assert ep.severity == "warn"
    assert "(downgraded from fail: num_experts of org/model is unknown" in ep.message
    assert "my_custom_moe" in ep.message
    # the checker says the same (its settle)
    verdict = run_time({mf.CONFIG: config}, mf.Serving(tp=2, enable_expert_parallel=True))
    assert verdict[mf.EP_EXPERTS].status == mf.WARN
    assert "not a failure: num_experts is unknown" in verdict[mf.EP_EXPERTS].message


def test_a_config_with_its_own_config_class_has_unknown_defaults() -> None:
    # auto_map.AutoConfig: with --trust-remote-code transformers builds the checkpoint's own
    # class, whose defaults are not known here (not the native class's)
    config = config_of("Qwen/Qwen3-30B-A3B")
    del config["num_experts"]
    config["auto_map"] = {"AutoConfig": "configuration_x.XConfig"}
    got = mf.read_facts({mf.CONFIG: config}, "test", trust_remote_code=True)
    assert got is not None
    assert got.fact("num_experts").certainty == mf.FACT_UNKNOWN
    assert "its own AutoConfig" in got.fact("num_experts").source
    # without the flag transformers ignores auto_map for a model type it knows
    # (AutoConfig.from_pretrained: "if has_remote_code and trust_remote_code" else
    # CONFIG_MAPPING[model_type]): Qwen3MoeConfig's default, 128 experts
    plain = facts_of({mf.CONFIG: config})
    assert plain.fact("num_experts").certainty == mf.DEFAULT
    assert plain.num_experts == 128


def test_a_dense_model_of_a_known_class_still_fails_expert_parallel() -> None:
    # LlamaConfig has no expert key at all: 0 experts is exact, the fail stands
    res = admit(files_of("meta-llama/Meta-Llama-3.1-8B"), "--enable-expert-parallel", gpus=1)
    assert found(res)["model-ep-experts"].severity == "fail"


def test_class_defaults_fill_the_text_config_of_gemma3() -> None:
    got = facts_of(files_of("google/gemma-3-4b-it"))
    assert (got.num_attention_heads, got.num_kv_heads) == (8, 4)
    assert got.fact("num_attention_heads").certainty == mf.DEFAULT
    assert "gemma3_text" in got.fact("num_attention_heads").source


def test_an_attribute_alias_reads_the_key_the_class_maps_it_to() -> None:
    # GptOssConfig maps num_experts to num_local_experts (attribute_map): 32, not the
    # class's 128
    assert facts_of(files_of("openai/gpt-oss-20b")).num_experts == 32


# -- weight bytes: exact from the checkpoint, estimated from arithmetic ---------------------


def _llama70b_index(total: int) -> dict[str, Any]:
    return {
        mf.CONFIG: config_of("meta-llama/Meta-Llama-3.1-70B"),
        mf.INDEX: {"metadata": {"total_size": total}, "weight_map": {}},
    }


def test_the_certain_lower_bound_fails_70b_on_one_h100_without_an_index() -> None:
    # issue 35 item 5: 70B in bf16 on one H100. Only estimated before (~131 GiB: a WARN);
    # its certain lower bound (the embedding once, q and o projections, two MLP matrices
    # per layer: 49.4B parameters x 16 bits = 92 GiB) exceeds the most an H100 can offer
    # (80 GiB + 10% x 0.9 = 79.2 GiB): a FAIL the engine keeps
    estimated = admit({mf.CONFIG: config_of("meta-llama/Meta-Llama-3.1-70B")}, gpus=1, **H100)
    fit = found(estimated)["model-weights-fit"]
    assert fit.severity == "fail", fit.message
    assert "downgraded" not in fit.message
    assert "the weights need at least 92.0 GiB per GPU" in fit.message
    assert "49.4B parameters" in fit.message
    assert "x 16 bits" in fit.message
    assert "at most 88.0 GiB (product table + 10%) x --gpu-memory-utilization 0.9" in fit.message
    exact = admit(_llama70b_index(141 * 10**9), gpus=1, **H100)
    fit = found(exact)["model-weights-fit"]
    assert fit.severity == "fail"
    assert "model.safetensors.index.json metadata.total_size" in fit.message
    assert "downgraded" not in fit.message
    # two H100s: the floor (46 GiB per GPU) fits; the estimate (65.7 GiB + 2 GiB) does not
    # leave room for a 128k sequence: a WARN, never a FAIL
    two = admit(_llama70b_index(141 * 10**9), "-tp", "2", gpus=2, **H100)
    assert found(two)["model-weights-fit"].severity == "warn"


def test_an_estimate_that_does_not_fit_but_whose_floor_does_only_warns() -> None:
    # Llama-3.1-8B on a T4: estimated 15 GiB against 15 x 0.9 = 13.4 GiB, but its certain
    # lower bound (5.36B parameters x 16 bits = 10 GiB) fits in the 14.85 GiB a T4 may
    # offer: vLLM's own profile decides; a WARN that names both
    t4 = {"nodeSelector": {"nvidia.com/gpu.product": "Tesla-T4"}}
    res = admit({mf.CONFIG: config_of("meta-llama/Meta-Llama-3.1-8B")}, gpus=1, **t4)
    fit = found(res)["model-weights-fit"]
    assert fit.severity == "warn"
    assert "the weights' certain lower bound, 10.0 GiB" in fit.message, fit.message


def test_the_checker_fails_on_the_floor_and_warns_on_the_estimate() -> None:
    h100 = mf.gpu_from_product("NVIDIA H100 80GB HBM3")
    estimated = run_time(
        {mf.CONFIG: config_of("meta-llama/Meta-Llama-3.1-70B")}, mf.Serving(), h100
    )
    assert estimated[mf.WEIGHTS_FIT].status == mf.FAIL
    exact = run_time(_llama70b_index(141 * 10**9), mf.Serving(), h100)
    assert exact[mf.WEIGHTS_FIT].status == mf.FAIL
    # NVML's measured total (81559 MiB) is the budget's exact side
    nvml = mf.Gpu("NVIDIA H100 80GB HBM3", 81559 << 20, 90, "NVML")
    assert run_time(_llama70b_index(141 * 10**9), mf.Serving(), nvml)[mf.WEIGHTS_FIT].status == (
        mf.FAIL
    )


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (mf.Serving(quantization="fp8"), "--quantization quantizes at load"),
        (mf.Serving(cpu_offload_gb="80"), "80 GiB of weights per GPU stay in CPU memory"),
        (mf.Serving(load_format="bitsandbytes"), "bitsandbytes changes what is loaded"),
        (mf.Serving(tp=2), "two GPUs share the weights"),
        (mf.Serving(hf_overrides=True), "--hf-overrides may rewrite the config"),
    ],
)
def test_what_lowers_the_loaded_weights_lifts_the_floor_fail(args: mf.Serving, why: str) -> None:
    h100 = mf.gpu_from_product("NVIDIA H100 80GB HBM3")
    got = run_time(_llama70b_index(141 * 10**9), args, h100)[mf.WEIGHTS_FIT]
    assert got.status != mf.FAIL, (why, got.message)


def test_expert_parallel_divides_the_floor_over_data_parallel_ranks_too() -> None:
    # DeepSeek-R1 (671B, FP8): the floor is 414 GiB (445B parameters x 8 bits); over TP 4
    # it is 104 GiB per H200 (fits the 139.6 GiB an H200 may offer), over TP 2 207 GiB
    # (fails); with -dp 2 -ep the experts spread over 4 ranks: no FAIL
    h200 = mf.gpu_from_product("NVIDIA H200")
    files = files_of("deepseek-ai/DeepSeek-R1")
    assert run_time(files, mf.Serving(tp=4), h200)[mf.WEIGHTS_FIT].status != mf.FAIL
    assert run_time(files, mf.Serving(tp=2), h200)[mf.WEIGHTS_FIT].status == mf.FAIL
    spread = mf.Serving(tp=2, dp=2, enable_expert_parallel=True)
    assert run_time(files, spread, h200)[mf.WEIGHTS_FIT].status != mf.FAIL


def test_online_quantization_makes_the_checkpoint_size_an_estimate() -> None:
    # --quantization fp8 on a bf16 checkpoint halves the linear layers at load: the
    # checkpoint's own size no longer is the loaded size
    res = admit(_llama70b_index(141 * 10**9), "--quantization", "fp8", gpus=1, **H100)
    fit = found(res)["model-weights-fit"]
    assert fit.severity == "warn"
    assert "--quantization fp8 quantizes at load" in fit.message


def test_the_real_index_total_size_is_exact_and_float32_is_halved() -> None:
    got = facts_of(files_of("ibm-granite/granite-3.1-1b-a400m-instruct"))
    assert got.weight_bytes == 5338513408 // 2
    assert got.fact("weight_bytes").certainty == mf.EXACT
    stored = mf.checkpoint_bytes(files_of("ibm-granite/granite-3.1-1b-a400m-instruct"))
    assert (stored.value, stored.certainty) == (5338513408, mf.EXACT)


def _safetensors(path: Path, tensor_bytes: int, header: bytes = b'{"__metadata__":{}}') -> None:
    """A safetensors file: 8-byte header length, the JSON header, the tensors (sparse)."""
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(header)) + header)
        handle.truncate(8 + len(header) + tensor_bytes)


def test_safetensors_files_on_a_mounted_volume_are_exact(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config_of("meta-llama/Meta-Llama-3.1-70B")))
    _safetensors(tmp_path / "model-00001-of-00002.safetensors", 100 * 10**9)
    _safetensors(tmp_path / "model-00002-of-00002.safetensors", 41 * 10**9)
    files, _ = read_model_dir(str(tmp_path))
    assert files is not None
    stored = mf.checkpoint_bytes(files)
    assert (stored.value, stored.certainty) == (141 * 10**9, mf.EXACT)  # headers left out
    assert "2 *.safetensors file(s)" in stored.source
    res = admit(files, gpus=1, **H100)
    assert found(res)["model-weights-fit"].severity == "fail"


def test_a_shard_missing_from_the_index_is_not_exact(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config_of("meta-llama/Meta-Llama-3.1-8B")))
    index = {
        "weight_map": {
            "a": "model-00001-of-00002.safetensors",
            "b": "model-00002-of-00002.safetensors",
        }
    }
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    _safetensors(tmp_path / "model-00001-of-00002.safetensors", 10**9)
    # a stray file vLLM would not load (not in the weight_map) is not counted either
    _safetensors(tmp_path / "consolidated.safetensors", 16 * 10**9)
    files, _ = read_model_dir(str(tmp_path))
    assert files is not None
    sizes = files[mf.SAFETENSORS_SIZES]
    assert sizes["complete"] is False
    assert list(sizes["files"]) == ["model-00001-of-00002.safetensors"]
    assert mf.checkpoint_bytes(files).value is None
    assert facts_of(files).fact("weight_bytes").certainty == mf.ESTIMATED


def test_the_hubs_parameter_counts_are_exact() -> None:
    files = {
        mf.CONFIG: config_of("meta-llama/Meta-Llama-3.1-8B"),
        mf.HUB_SAFETENSORS: {"parameters": {"BF16": 8030261248}, "total": 8030261248},
    }
    stored = mf.checkpoint_bytes(files)
    assert (stored.value, stored.certainty) == (2 * 8030261248, mf.EXACT)
    odd = {mf.CONFIG: files[mf.CONFIG], mf.HUB_SAFETENSORS: {"parameters": {"F4_X": 10}}}
    assert mf.checkpoint_bytes(odd).value is None  # a dtype of unknown width: not exact


# -- interleaved MoE: count MoE layers as the model code does ------------------------------


def _maverick_fp8() -> dict[str, Any]:
    # the FP8 checkpoint vLLM's published recipe serves is Meta's BF16 config plus its
    # fbgemm_fp8 quantization_config (not in the corpus verbatim: added here)
    config = copy.deepcopy(config_of("meta-llama/Llama-4-Maverick-17B-128E-Instruct"))
    config["quantization_config"] = {"quant_method": "fbgemm_fp8"}
    return {mf.CONFIG: config}


def test_maverick_counts_24_moe_layers_of_48() -> None:
    # vllm/model_executor/models/llama4.py: a layer is MoE when (i + 1) %
    # interleave_moe_layer_step == 0; Maverick's step is 2
    text = mf.text_config(config_of("meta-llama/Llama-4-Maverick-17B-128E-Instruct"))
    assert sum(mf.moe_layer_flags(text, 48)) == 24
    got = facts_of(files_of("meta-llama/Llama-4-Maverick-17B-128E-Instruct"))
    assert "estimated: 401B parameters" in got.weight_text  # Meta: ~400B


def test_vllms_published_maverick_recipe_is_not_failed() -> None:
    # vLLM's Llama 4 post (blog.vllm.ai/2025/04/05/llama4.html): on 8x H100, "vllm serve
    # meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8 --tensor-parallel-size 8
    # --max-model-len 430000". Counting experts on every layer doubled it (~790B).
    serving = mf.Serving(tp=8, max_model_len=430000)
    verdicts = run_time(_maverick_fp8(), serving, mf.gpu_from_product("NVIDIA H100 80GB HBM3"))
    assert verdicts[mf.WEIGHTS_FIT].status == mf.PASS, verdicts[mf.WEIGHTS_FIT].message
    res = admit(_maverick_fp8(), "-tp", "8", "--max-model-len", "430000", gpus=8, **H100)
    assert "model-weights-fit" not in found(res)


def test_deepseek_and_qwen_moe_layer_keys() -> None:
    # deepseek_v2.py: i >= first_k_dense_replace and i % moe_layer_freq == 0
    assert mf.moe_layer_flags({"first_k_dense_replace": 3, "moe_layer_freq": 1}, 8) == [
        False, False, False, True, True, True, True, True,
    ]  # fmt: skip
    assert sum(mf.moe_layer_flags({"moe_layer_freq": 2}, 8)) == 4
    # qwen2_moe.py: i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0
    assert mf.moe_layer_flags({"decoder_sparse_step": 2, "mlp_only_layers": [3]}, 6) == [
        False, True, False, False, False, True,
    ]  # fmt: skip
    assert not any(mf.moe_layer_flags({"interleave_moe_layer_step": 0}, 4))


# -- per-layer (NAS) block configs ---------------------------------------------------------

SUPER = "nvidia/Llama-3_3-Nemotron-Super-49B-v1"


def test_nas_blocks_give_weights_and_kv_heads_per_layer() -> None:
    got = facts_of(files_of(SUPER))
    # vLLM's NemotronNasModelArchConfigConvertor: the first attention block's KV heads
    assert got.num_kv_heads == 8
    assert got.kv_heads_per_layer == (8,)
    assert "estimated: 49.9B parameters" in got.weight_text  # NVIDIA: 49.9B
    # 49 attention layers of the 80 (31 are no-ops), 8 KV heads of 128: 2 x 49 x 8 x 128 x 2
    assert got.kv_bytes_per_token == 2 * 49 * 8 * 128 * 2


def test_a_nas_model_that_fits_one_h200_is_not_failed() -> None:
    # read as uniform: 80 layers x (64 KV heads + a 4 x hidden MLP) = 87B parameters, 162
    # GiB: a fail on one H200; per layer it is 49.9B, 93 GiB, and 128k tokens of KV fit
    verdicts = run_time(files_of(SUPER), mf.Serving(), mf.gpu_from_product("NVIDIA H200"))
    assert verdicts[mf.WEIGHTS_FIT].status == mf.PASS, verdicts[mf.WEIGHTS_FIT].message
    res = admit(files_of(SUPER), gpus=1, **H200)
    assert "model-weights-fit" not in found(res)


# -- Mamba-2 groups vs TP ------------------------------------------------------------------

NEMOTRON_H = "nvidia/Nemotron-H-56B-Base-8K"


@pytest.mark.parametrize(
    ("tp", "status"), [(1, mf.PASS), (4, mf.PASS), (8, mf.PASS), (16, mf.FAIL)]
)
def test_mamba2_groups_must_split_over_tp(tp: int, status: str) -> None:
    # mamba_mixer2.py MambaMixer2: assert n_groups % tp == 0 or n_groups == 1; Nemotron-H
    # 56B has n_groups 8 and 256 Mamba heads
    verdict = run_time(files_of(NEMOTRON_H), mf.Serving(tp=tp))[mf.MAMBA_GROUPS]
    assert verdict.status == status, verdict.message
    if status == mf.FAIL:
        assert "then num_groups must equal 1" in verdict.message
        assert "(1, 2, 4, 8)" in verdict.fix


def test_mamba2_tp_16_is_denied_at_admission() -> None:
    res = admit(files_of(NEMOTRON_H), "-tp", "16", gpus=16)
    got = found(res)["model-tp-mamba-groups"]
    assert got.severity == "fail"
    assert got.field == "spec.template.spec.containers[0].args[1]"  # -tp


def test_one_mamba2_group_is_replicated_to_any_tp() -> None:
    config = config_of(NEMOTRON_H)
    config["n_groups"] = 1
    verdict = run_time({mf.CONFIG: config}, mf.Serving(tp=16))[mf.MAMBA_GROUPS]
    assert verdict.status == mf.PASS
    config["mamba_num_heads"] = 24  # 24 heads do not divide over 16
    verdict = run_time({mf.CONFIG: config}, mf.Serving(tp=16))[mf.MAMBA_GROUPS]
    assert verdict.status == mf.FAIL
    assert "must divide num heads" in verdict.message


def test_the_nemotron_nano_hybrid_and_a_model_without_mamba() -> None:
    nano = run_time(files_of("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"), mf.Serving(tp=16))
    assert nano[mf.MAMBA_GROUPS].status == mf.FAIL  # n_groups 8
    dense = run_time(files_of("meta-llama/Meta-Llama-3.1-8B"), mf.Serving(tp=16))
    assert dense[mf.MAMBA_GROUPS].status == mf.PASS


def test_a_hybrid_counts_kv_cache_only_on_its_attention_layers() -> None:
    got = facts_of(files_of(NEMOTRON_H))
    assert got.kv_bytes_per_token == 2 * 10 * 8 * 128 * 2  # 10 of 118 layers are attention
    assert "estimated: 56.3B parameters" in got.weight_text  # NVIDIA: 56B


# -- architectures vLLM does not register --------------------------------------------------


@pytest.mark.parametrize(
    ("archs", "status", "text"),
    [
        (["DeciLMForCausalLM"], mf.PASS, ""),
        (["Qwen3ForSequenceClassification"], mf.PASS, ""),  # _normalize_arch's suffixes
        (["MPTForCausalLM"], mf.WARN, "removed from vLLM after v0.28.0"),
        (["NotAModelForCausalLM"], mf.WARN, "is not registered in vLLM 0.33.0"),
        ([], mf.UNKNOWN, ""),
    ],
)
def test_unregistered_architectures_warn(archs: list[str], status: str, text: str) -> None:
    config = {**config_of("meta-llama/Meta-Llama-3.1-8B"), "architectures": archs}
    verdict = run_time({mf.CONFIG: config}, mf.Serving())[mf.ARCH_UNREGISTERED]
    assert verdict.status == status
    assert text in verdict.message


def test_an_unregistered_architecture_is_a_warning_at_admission() -> None:
    config = {
        **config_of("meta-llama/Meta-Llama-3.1-8B"),
        "architectures": ["NotAModelForCausalLM"],
    }
    res = admit({mf.CONFIG: config}, gpus=1)
    assert found(res)["model-arch-unregistered"].severity == "warn"
    assert res.verdict == "warn"


def test_every_corpus_architecture_is_registered() -> None:
    for config in CORPUS.glob("*/*/config.json"):
        files = {mf.CONFIG: json.loads(config.read_text())}
        verdict = run_time(files, mf.Serving())[mf.ARCH_UNREGISTERED]
        assert verdict.status == mf.PASS, (config, verdict.message)
