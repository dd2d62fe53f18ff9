"""The model rules in the rules engine (lint and admission): lookup, GPU product, fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_rules_support import deployment, pod_spec, vllm

from preflight_contract.modelsource import directory_lookup
from preflight_operator.cli import lint
from preflight_operator.core.rules import RULE_INFO, ClusterLookup, check_objects
from preflight_operator.core.rules.ruleset.modelfit import gpu_of

CORPUS = Path(__file__).parents[1] / "data" / "models"
LOOKUP = ClusterLookup(model=directory_lookup(str(CORPUS)))


def result(*args: str, gpus: int = 1, lookup: ClusterLookup = LOOKUP, **spec: Any) -> Any:
    obj = deployment(pod_spec(vllm(*args, gpus=gpus), **spec))
    (only,) = check_objects([obj], lookup=lookup)
    return only


def found(res: Any) -> dict[str, Any]:
    return {f.id: f for f in res.findings}


def test_heads_not_divisible_fails_and_names_the_tp_flag() -> None:
    res = result("Qwen/Qwen2.5-0.5B-Instruct", "-tp", "4", gpus=4)
    finding = found(res)["model-tp-heads"]
    assert finding.severity == "fail"
    assert "Total number of attention heads (14) must be divisible" in finding.message
    assert finding.field == "spec.template.spec.containers[0].args[1]"
    assert res.verdict == "fail"


def test_no_lookup_says_nothing() -> None:
    res = result("Qwen/Qwen2.5-0.5B-Instruct", "-tp", "4", gpus=4, lookup=ClusterLookup())
    assert not any(f.id.startswith("model-") for f in res.findings)


def test_unknown_model_is_said_but_never_changes_the_verdict() -> None:
    res = result("someone/not-in-the-corpus", "-tp", "4", gpus=4)
    assert [f.id for f in res.findings] == ["model-config-unknown"]
    assert res.findings[0].severity == "info"
    assert res.verdict == "pass"


def test_a_crashing_lookup_is_unknown() -> None:
    def broken(model: str) -> None:
        raise OSError("disk on fire")

    res = result("Qwen/Qwen3-8B", lookup=ClusterLookup(model=broken))
    assert [f.id for f in res.findings] == ["model-config-unknown"]


def test_max_len_dtype_quant_and_fit_with_the_gpu_from_the_node_selector() -> None:
    t4 = {"nodeSelector": {"nvidia.com/gpu.product": "Tesla-T4"}}
    res = result("openai/gpt-oss-20b", "--max-model-len", "200k", "--dtype", "bfloat16", **t4)
    got = found(res)
    assert got["model-max-len"].field.endswith("args[1]")
    assert "nvidia.com/gpu.product=Tesla-T4" in got["model-quant-capability"].message
    assert got["model-dtype-capability"].severity == "fail"
    # 12.8 GiB estimated + 2 GiB on a 15 GiB T4 at 0.9: no room, but gpt-oss-20b has no
    # safetensors index here and its certain lower bound fits: a warning (issue 35)
    fit = got["model-weights-fit"]
    assert fit.severity == "warn"
    assert "the weights' certain lower bound" in fit.message


def test_allow_long_max_model_len_env_downgrades_to_warn() -> None:
    env = [{"name": "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "value": "1"}]
    obj = deployment(pod_spec(vllm("Qwen/Qwen3-8B", "--max-model-len", "64k", gpus=1, env=env)))
    (res,) = check_objects([obj], lookup=LOOKUP)
    assert found(res)["model-max-len"].severity == "warn"


def test_expert_parallel_on_a_dense_model() -> None:
    res = result("meta-llama/Meta-Llama-3.1-8B", "-tp", "2", "--enable-expert-parallel", gpus=2)
    assert found(res)["model-ep-experts"].severity == "fail"


def test_model_given_as_a_mounted_path_is_looked_up_by_its_last_parts() -> None:
    res = result("/models/Qwen/Qwen2.5-0.5B-Instruct", "-tp", "4", gpus=4)
    assert "model-tp-heads" in found(res)


def test_a_good_plan_stays_a_pass() -> None:
    h100 = {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}
    res = result(
        "meta-llama/Meta-Llama-3.1-70B", "-tp", "4", "--max-model-len", "32k", gpus=4, **h100
    )
    assert res.verdict == "pass", res.findings


@pytest.mark.parametrize(
    ("spec", "capability"),
    [
        ({"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}, 80),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {
                                            "key": "nvidia.com/gpu.product",
                                            "operator": "In",
                                            "values": ["Tesla-T4"],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            75,
        ),
        (
            {
                "nodeSelector": {
                    "nvidia.com/gpu.compute.major": "7",
                    "nvidia.com/gpu.compute.minor": "0",
                }
            },
            70,
        ),
        ({}, None),
    ],
)
def test_gpu_from_the_placement(spec: dict[str, Any], capability: int | None) -> None:
    gpu = gpu_of(spec)
    assert (gpu.capability if gpu else None) == capability


def test_two_possible_products_are_unknown() -> None:
    term = {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["Tesla-T4", "NVIDIA-L4"]}
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [term]}]
                }
            }
        }
    }
    assert gpu_of(spec) is None


def test_every_model_rule_id_is_registered() -> None:
    for rule in (
        "model-tp-heads",
        "model-tp-kv-heads",
        "model-ep-experts",
        "model-pp-layers",
        "model-max-len",
        "model-weights-fit",
        "model-dtype-capability",
        "model-quant-capability",
        "model-config-unknown",
    ):
        assert rule in RULE_INFO


def test_lint_model_config_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    path = tmp_path / "d.yaml"
    obj = deployment(pod_spec(vllm("Qwen/Qwen2.5-0.5B-Instruct", "-tp", "4", gpus=4)))
    path.write_text(yaml.safe_dump(obj))
    assert lint.main([str(path)]) == lint.EXIT_OK  # no model rules without the flag
    capsys.readouterr()
    assert lint.main(["--model-config", str(CORPUS), str(path)]) == lint.EXIT_FAILED
    assert "model-tp-heads" in capsys.readouterr().out
    assert lint.main(["--model-config", str(tmp_path / "nope"), str(path)]) == lint.EXIT_UNREADABLE


@pytest.mark.parametrize(
    "override",
    [
        ("--hf-overrides", '{"max_position_embeddings": 131072}'),
        ("--hf_overrides.max_position_embeddings=131072",),
    ],
)
def test_hf_overrides_make_the_length_unknown(override: tuple[str, ...]) -> None:
    res = result("Qwen/Qwen3-8B", "--max-model-len", "128k", *override)
    assert "model-max-len" not in found(res)
    res = result("Qwen/Qwen3-8B", "--max-model-len", "128k")
    assert "model-max-len" in found(res)
