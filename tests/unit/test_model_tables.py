"""The generated model tables (preflight_contract.model_defaults, .vllm_registry) against
their sources, regenerated and compared on every `make test` (issue 37 item 5: FAILs rest
on these tables, and the drift tests used to skip everywhere). The sources are the exact
releases the tables name: transformers from the dev extra (pinned), vLLM's sdist fetched by
hack/prepare_tests.sh (hack/vllm/fetch_source.py: its .py files, read as text). Neither is
a dependency of the product. A missing source fails, naming the command that prepares it:
a skip here would hide a stale table."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from preflight_contract import model_defaults, vllm_registry

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "hack" / "models"))
sys.path.insert(0, str(ROOT / "hack" / "vllm"))


def test_the_defaults_table_matches_the_installed_transformers() -> None:
    if importlib.util.find_spec("transformers") is None:
        pytest.fail(
            f"transformers is not installed: `make venv` installs "
            f"{model_defaults.TRANSFORMERS_VERSION} (the dev extra)"
        )
    import gen_model_defaults
    import transformers

    assert transformers.__version__ == model_defaults.TRANSFORMERS_VERSION, (
        "the dev extra pins the transformers the table was generated from: move both "
        "together (hack/models/gen_model_defaults.py)"
    )
    fresh = gen_model_defaults.table()
    assert fresh["models"] == model_defaults.MODELS, "run hack/models/gen_model_defaults.py"


def _vllm_source() -> Path | None:
    """A vLLM source tree: VLLM_SOURCE, else the fetched sdist of the table's release."""
    if os.environ.get("VLLM_SOURCE"):
        return Path(os.environ["VLLM_SOURCE"])
    import fetch_source

    fetched = fetch_source.source_dir(vllm_registry.VLLM_VERSION)
    return fetched if (fetched / "vllm" / "__init__.py").is_file() else None


def test_the_registry_table_matches_vllm() -> None:
    source = _vllm_source()
    if source is None:
        pytest.fail(
            f"no vLLM {vllm_registry.VLLM_VERSION} source: run hack/prepare_tests.sh "
            f"(`make test` does), or `python3 hack/vllm/fetch_source.py "
            f"{vllm_registry.VLLM_VERSION}`"
        )
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
