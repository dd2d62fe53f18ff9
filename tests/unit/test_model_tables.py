"""The generated model tables (preflight_contract.model_defaults, .vllm_registry) against
their sources: regenerated and compared when the source is here, skipped (saying why)
when it is not. transformers and vLLM are not dependencies of the product."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from preflight_contract import model_defaults, vllm_registry

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "hack" / "models"))


def test_the_defaults_table_matches_the_installed_transformers() -> None:
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed here (dev only: pip install transformers)")
    import gen_model_defaults
    import transformers

    if transformers.__version__ != model_defaults.TRANSFORMERS_VERSION:
        pytest.skip(
            f"transformers {transformers.__version__} here, the table is from "
            f"{model_defaults.TRANSFORMERS_VERSION}: regenerate with "
            "hack/models/gen_model_defaults.py when moving"
        )
    fresh = gen_model_defaults.table()
    assert fresh["models"] == model_defaults.MODELS, "run hack/models/gen_model_defaults.py"


def _vllm_source() -> Path | None:
    """A vLLM source tree: VLLM_SOURCE, else an importable vllm package's parent."""
    if os.environ.get("VLLM_SOURCE"):
        return Path(os.environ["VLLM_SOURCE"])
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parents[1]


def test_the_registry_table_matches_vllm() -> None:
    source = _vllm_source()
    if source is None:
        pytest.skip("no vLLM source here (set VLLM_SOURCE to a vLLM tree, or install vllm)")
    import gen_vllm_registry

    fresh = gen_vllm_registry.read(source)
    assert fresh["architectures"] == list(vllm_registry.ARCHITECTURES)
    assert fresh["previously_supported"] == vllm_registry.PREVIOUSLY_SUPPORTED
    assert fresh["suffixes"] == list(vllm_registry.SUFFIXES)
    assert fresh["config_classes"] == list(vllm_registry.CONFIG_CLASSES)


def test_the_tables_are_the_versions_the_rules_name() -> None:
    assert vllm_registry.VLLM_VERSION == "0.33.0"
    assert len(vllm_registry.ARCHITECTURES) > 300
    assert "LlamaForCausalLM" in vllm_registry.ARCHITECTURES
    assert model_defaults.TRANSFORMERS_VERSION
    qwen3_moe = model_defaults.MODELS["qwen3_moe"]
    assert qwen3_moe["aliases"]["num_experts"] == "num_local_experts"
    assert qwen3_moe["defaults"]["num_local_experts"] == 128
    assert "chatglm" in vllm_registry.CONFIG_CLASSES  # vLLM's own class: not in the table
    assert "chatglm" not in model_defaults.MODELS


def test_the_vllm_generator_renders_what_it_reads(tmp_path: Path) -> None:
    import gen_vllm_registry

    data = {
        "architectures": ["AForCausalLM"],
        "previously_supported": {"B": "0.1.0"},
        "suffixes": ["ForCausalLM"],
        "config_classes": ["c"],
    }
    text = gen_vllm_registry.render(data, "9.9.9", "abc")
    namespace: dict[str, object] = {}
    exec(compile(text, "vllm_registry", "exec"), namespace)
    assert namespace["ARCHITECTURES"] == ("AForCausalLM",)
    assert namespace["PREVIOUSLY_SUPPORTED"] == {"B": "0.1.0"}
