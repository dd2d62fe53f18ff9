"""Issue 38 item 3: an architecture is judged by the release that loads it.

Which release registers which architecture is generated from each release's own registry
(``_VLLM_MODELS``, before 0.6.3 ``_MODELS``; hack/vllm/gen_versions.py); whether an
unregistered one falls back to the Transformers backend (0.7.3 on) from the text of
``model_loader/utils.py``. Only vLLM's own image with a release tag names the release. The
config.json files are the verbatim corpus of tests/data/models (SOURCES.md).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_contract import vllm_registry, vllm_release, vllm_versions
from preflight_operator.cli import lint

MODELS = Path(__file__).parents[1] / "data" / "models"
RULE = "model-arch-unregistered"


def findings(tmp_path: Path, image: str, *args: str) -> list[dict[str, Any]]:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "m"},
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": image,
                    "command": ["vllm", "serve", *args],
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ]
        },
    }
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod))
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        lint.main(["--format", "json", "--model-config", str(MODELS), str(path)])
    results = json.loads(out.getvalue())["results"]
    return [f for r in results for f in r["findings"] if f["id"] == RULE]


def test_qwen3_on_a_release_before_it_fails_naming_the_first_that_has_it(tmp_path: Path) -> None:
    # Qwen3ForCausalLM: registered since 0.8.5 of the generated releases; 0.6.3 has no
    # Transformers backend, so vLLM 0.6.3 exits before loading anything
    [found] = findings(tmp_path, "vllm/vllm-openai:v0.6.3", "Qwen/Qwen3-0.6B")
    assert found["severity"] == "fail"
    assert "not registered in vLLM 0.6.3" in found["message"]
    assert "since 0.8.5" in found["message"]
    assert "are not supported for now" in found["message"]
    assert "0.8.5" in found["fix"]


@pytest.mark.parametrize(
    "image",
    [
        "vllm/vllm-openai:v0.9.2",  # registers it
        "vllm/vllm-openai:latest",  # the newest: judged by the 0.33.0 registry, which has it
        "registry.example/team/vllm:v0.6.3",  # a custom image may hold any vLLM
        "vllm/vllm-openai:v0.8.4",  # between 0.8.3 (lacks it) and 0.8.5 (has it): not known
    ],
)
def test_where_the_release_has_it_or_is_not_known_nothing_fails(tmp_path: Path, image: str) -> None:
    assert findings(tmp_path, image, "Qwen/Qwen3-0.6B") == []


def test_a_release_with_the_transformers_backend_only_warns(tmp_path: Path) -> None:
    # 0.7.3 registers no Qwen3 but sends it to its Transformers backend
    [found] = findings(tmp_path, "vllm/vllm-openai:v0.7.3", "Qwen/Qwen3-0.6B")
    assert found["severity"] == "warn"
    assert "Transformers backend" in found["message"]


def test_hf_overrides_may_name_another_architecture_so_it_warns(tmp_path: Path) -> None:
    over = '{"architectures": ["Qwen2ForCausalLM"]}'
    [found] = findings(
        tmp_path, "vllm/vllm-openai:v0.6.3", "Qwen/Qwen3-0.6B", "--hf-overrides", over
    )
    assert found["severity"] == "warn"


def test_a_model_every_release_registers_passes_on_the_oldest(tmp_path: Path) -> None:
    assert findings(tmp_path, "vllm/vllm-openai:v0.4.1", "Qwen/Qwen2.5-0.5B-Instruct") == []


def test_the_generated_registry_of_0_33_is_the_model_tables_registry() -> None:
    """Two generators read the same registry of 0.33.0 in different ways: they agree."""
    at = {a for a in vllm_versions.ARCHITECTURES if vllm_release.registers(a, "0.33.0")}
    assert at == set(vllm_registry.ARCHITECTURES)


def test_the_fallback_starts_at_0_7_3_of_the_generated_releases() -> None:
    assert vllm_release.falls_back_to_transformers("0.7.1") is False
    assert vllm_release.falls_back_to_transformers("0.7.3") is True
    assert vllm_release.falls_back_to_transformers("0.7.2") is None  # not generated
    assert vllm_release.registers("LlamaForCausalLM", "0.4.1") is True
    assert vllm_release.first_registering("Qwen3ForCausalLM") == "0.8.5"
