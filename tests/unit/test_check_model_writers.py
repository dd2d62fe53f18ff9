"""Check 'model-source' when an init container of the pod writes the model's volume after
the check (PREFLIGHT_MODEL_WRITERS, named by the injector): what the check sees is not the
final copy, so a partial one is a warning naming the writers, never a failure; without
the variable the same directory fails, as before. A value that is not a list of container
names is ignored with a note, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from preflight_check.checks.modelready import model_source
from preflight_check.facts import Facts
from preflight_check.options import Options
from preflight_check.plan import Plan
from preflight_contract import envnames
from preflight_contract.modelsource import (
    MAX_MODEL_WRITERS,
    collect_model,
    parse_model_writers,
)
from preflight_contract.report import CheckResult
from preflight_contract.verdicts import FAIL, PASS, WARN

WRITERS = envnames.MODEL_WRITERS


def shard(data_bytes: int, written: int) -> bytes:
    """A safetensors file whose header says ``data_bytes``, cut after ``written`` of them."""
    header = json.dumps({"w": {"dtype": "U8", "shape": [data_bytes],
                               "data_offsets": [0, data_bytes]}}).encode()  # fmt: skip
    return len(header).to_bytes(8, "little") + header + bytes(written)


def partial_model(root: Path) -> str:
    """A copy stopped part way: shard 1 of 2 cut short, shard 2 not there yet."""
    path = root / "models" / "llama"
    path.mkdir(parents=True)
    (path / "config.json").write_text('{"model_type": "llama"}')
    (path / "tokenizer.json").write_text("{}")
    index = {"metadata": {"total_size": 32},
             "weight_map": {"a": "model-00001-of-00002.safetensors",
                            "b": "model-00002-of-00002.safetensors"}}  # fmt: skip
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    (path / "model-00001-of-00002.safetensors").write_bytes(shard(16, 5))
    return str(path)


def judged(path: str, environ: dict[str, str]) -> CheckResult:
    facts = Facts(plan=Plan(), environ=environ)
    facts.model = collect_model(path, environ, 5.0, source={})
    options = Options()
    options.model_args = {"model": path}
    (result,) = model_source(facts, options)
    return result


def test_a_partial_copy_fails_without_writers_and_warns_with_them(tmp_path: Path) -> None:
    path = partial_model(tmp_path)
    before = judged(path, {})
    assert before.status == FAIL
    assert "1 of the 2 weight files" in before.message
    after = judged(path, {WRITERS: "model-downloader"})
    assert after.status == WARN, after.message
    assert "model-downloader" in after.message
    assert "after this check" in after.message
    assert "1 of the 2 weight files" in after.message  # what was seen, still said
    assert after.evidence["writers"] == ["model-downloader"]
    assert after.evidence["missing"] == ["model-00002-of-00002.safetensors"]


def test_every_file_state_fail_is_not_final_under_a_writer(tmp_path: Path) -> None:
    """No config.json yet, an index half written: each fails alone, warns with a writer."""
    no_config = tmp_path / "no-config"
    no_config.mkdir()
    (no_config / "model-00001-of-00002.safetensors").write_bytes(shard(16, 16))
    half_index = tmp_path / "half-index"
    half_index.mkdir()
    (half_index / "config.json").write_text("{}")
    (half_index / "model.safetensors.index.json").write_text('{"weight_map": {"a": "x.saf')
    for path in (str(no_config), str(half_index)):
        assert judged(path, {}).status == FAIL, path
        assert judged(path, {WRITERS: "copy-weights,fetch"}).status == WARN, path


def test_a_complete_copy_still_passes_with_a_writer(tmp_path: Path) -> None:
    path = partial_model(tmp_path)
    Path(path, "model-00001-of-00002.safetensors").write_bytes(shard(16, 16))
    Path(path, "model-00002-of-00002.safetensors").write_bytes(shard(16, 16))
    assert judged(path, {}).status == PASS
    assert judged(path, {WRITERS: "model-downloader"}).status == PASS


@pytest.mark.parametrize(
    "value",
    [
        "x" * 1_000_000,
        "a,b;rm -rf /",
        "Model-Downloader",
        "ok,\x00bad",
        "a\nb",
        "-lead",
        ",".join(f"w{i}" for i in range(MAX_MODEL_WRITERS + 1)),
        "é",
    ],
)
def test_a_value_that_is_no_list_of_names_is_ignored_with_a_note(
    tmp_path: Path, value: str
) -> None:
    path = partial_model(tmp_path)
    result = judged(path, {WRITERS: value})
    assert result.status == FAIL  # ignored: the verdict is the one without it
    assert f"{WRITERS} ignored" in result.message
    assert len(result.message) < 2000  # never echoed whole
    assert "\x00" not in result.message
    assert "\n" not in result.message
    names, problem = parse_model_writers(value)
    assert names == []
    assert problem


def test_an_empty_value_is_no_writer_and_no_note() -> None:
    assert parse_model_writers("") == ([], "")
    assert parse_model_writers(" a , b ") == (["a", "b"], "")
