"""Check 'model-source': will vLLM find the weights? Real directories (complete, a shard
missing, a shard truncated, no config, no tokenizer, a cache) and a local Hub that
answers as the real one does (preflight_dev.fakehub: gated 401/403, missing repo and
revision, file sizes, a slow Hub)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from preflight_contract import modelsource as ms
from preflight_contract.modelsource import source_check
from preflight_dev.fakehub import COMMIT, FakeHub, FakeRepo

REPO = "acme/tiny"


def safetensors(path: Path, floats: int) -> int:
    """A real safetensors file of ``floats`` float16 values; its size."""
    header = json.dumps(
        {"w": {"dtype": "F16", "shape": [floats], "data_offsets": [0, 2 * floats]}}
    ).encode()
    header += b" " * (-len(header) % 8)
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * (2 * floats))
    return path.stat().st_size


def model_dir(root: Path, shards: int = 3, tokenizer: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text('{"model_type": "llama"}')
    names = [f"model-{i + 1:05d}-of-{shards:05d}.safetensors" for i in range(shards)]
    for name in names:
        safetensors(root / name, 1000)
    index = {
        "metadata": {"total_size": 2000 * shards},
        "weight_map": {f"t{i}": n for i, n in enumerate(names)},
    }
    (root / ms.INDEX).write_text(json.dumps(index))
    if tokenizer:
        (root / "tokenizer.json").write_text("{}")
    return root


def test_a_complete_directory_passes(tmp_path: Path) -> None:
    ready = ms.check_source(str(model_dir(tmp_path / "m")), {})
    assert ready.status == "pass", ready.message
    assert "all 3 weight files at their full size" in ready.message


def test_a_missing_shard_fails_and_names_it(tmp_path: Path) -> None:
    path = model_dir(tmp_path / "m")
    (path / "model-00002-of-00003.safetensors").unlink()
    ready = ms.check_source(str(path), {})
    assert ready.status == "fail"
    assert "model-00002-of-00003.safetensors" in ready.message
    assert str(path) in ready.fix


def test_a_truncated_shard_fails_with_its_sizes(tmp_path: Path) -> None:
    path = model_dir(tmp_path / "m")
    shard = path / "model-00003-of-00003.safetensors"
    full = shard.stat().st_size
    with shard.open("r+b") as handle:
        handle.truncate(full - 100)
    ready = ms.check_source(str(path), {})
    assert ready.status == "fail"
    assert f"({full - 100} of {full} bytes)" in ready.message


def test_a_wrong_total_size_is_no_failure_and_no_total_size_still_finds_a_short_shard(
    tmp_path: Path,
) -> None:
    path = model_dir(tmp_path / "m")
    index = json.loads((path / ms.INDEX).read_text())
    index["metadata"]["total_size"] *= 10  # overstated: every header is then read
    (path / ms.INDEX).write_text(json.dumps(index))
    assert ms.check_source(str(path), {}).status == "pass"
    del index["metadata"]
    (path / ms.INDEX).write_text(json.dumps(index))
    with (path / "model-00001-of-00003.safetensors").open("r+b") as handle:
        handle.truncate(100)
    ready = ms.check_source(str(path), {})
    assert ready.status == "fail"
    assert "model-00001-of-00003.safetensors (100 of " in ready.message
    with (path / "model-00002-of-00003.safetensors").open("r+b") as handle:
        handle.truncate(20)  # inside its header
    assert "truncated inside its header" in ms.check_source(str(path), {}).message


def test_no_config_fails_no_tokenizer_warns(tmp_path: Path) -> None:
    path = model_dir(tmp_path / "m", tokenizer=False)
    ready = ms.check_source(str(path), {})
    assert ready.status == "warn"
    assert "no tokenizer" in ready.message
    assert ms.check_source(str(path), {}, tokenizer="other/tok").status == "pass"
    (path / "config.json").unlink()
    ready = ms.check_source(str(path), {})
    assert ready.status == "fail"
    assert "no config.json" in ready.message
    empty = tmp_path / "empty"
    empty.mkdir()  # perhaps filled by a later init container: not a failure
    assert ms.check_source(str(empty), {}).status == "warn"


def test_a_storage_uri_is_recognised_and_not_checked() -> None:
    for uri in ("s3://bucket/llama", "gs://b/m", "pvc://models/llama"):
        ready = ms.check_source(uri, {})
        assert ready.status == "skip"
        assert "not checked" in ready.message


def test_a_missing_path_warns_on_a_volume_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # outside any volume the path may be inside vLLM's own image: not judged
    monkeypatch.setattr(source_check, "on_volume", lambda path: False)
    assert ms.check_source("/models/nowhere/llama", {}).status == "skip"
    monkeypatch.setattr(source_check, "on_volume", lambda path: True)
    ready = ms.check_source("/models/nowhere/llama", {})
    # a warning: an init container running after the check may create it
    assert ready.status == "warn"
    assert "volumeMounts" in ready.fix


def cache_with(tmp_path: Path, complete: bool) -> dict[str, str]:
    repo = tmp_path / "hub" / ("models--" + REPO.replace("/", "--"))
    snapshot = model_dir(repo / "snapshots" / COMMIT)
    if not complete:
        (snapshot / "model-00001-of-00003.safetensors").unlink()
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    return {"HF_HUB_CACHE": str(tmp_path / "hub")}


def test_offline_with_a_complete_cache_passes_without_the_network(tmp_path: Path) -> None:
    env = cache_with(tmp_path, complete=True)
    env.update(HF_HUB_OFFLINE="1", HF_ENDPOINT="http://127.0.0.1:9")  # nothing listens
    ready = ms.check_source(REPO, env)
    assert ready.status == "pass"
    assert "complete cached copy" in ready.message


def test_offline_with_an_incomplete_cache_fails_naming_the_env(tmp_path: Path) -> None:
    env = cache_with(tmp_path, complete=False)
    env["HF_HUB_OFFLINE"] = "1"
    ready = ms.check_source(REPO, env)
    assert ready.status == "fail"
    assert "HF_HUB_OFFLINE" in ready.message
    assert "model-00001" in ready.message
    assert "unset HF_HUB_OFFLINE" in ready.fix


def test_offline_with_no_cache_fails_on_a_volume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path / "empty"), "HF_HUB_OFFLINE": "1"}
    monkeypatch.setattr(source_check, "on_volume", lambda path: True)
    assert ms.check_source(REPO, env).status == "fail"
    monkeypatch.setattr(source_check, "on_volume", lambda path: False)  # may be in vLLM's image
    assert ms.check_source(REPO, env).status == "warn"


def tiny(**kwargs: object) -> FakeRepo:
    files: dict[str, bytes | int] = {
        "config.json": b'{"model_type": "llama"}',
        "model.safetensors": 3_000_000,
        "tokenizer.json": b"{}",
    }
    return FakeRepo(files, **kwargs)  # type: ignore[arg-type]


def hub_env(hub: FakeHub, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), **extra}


def test_an_open_repo_on_the_hub_passes_with_the_download_size(tmp_path: Path) -> None:
    with FakeHub({REPO: tiny()}) as hub:
        ready = ms.check_source(REPO, hub_env(hub, tmp_path))
    assert ready.status == "pass", ready.message
    assert ready.evidence["download_bytes"] == 3_000_000 + len(b'{"model_type": "llama"}') + 2


def test_a_gated_repo_without_a_token_fails_naming_hf_token(tmp_path: Path) -> None:
    with FakeHub({REPO: tiny(gated="manual", tokens=frozenset({"good"}))}) as hub:
        ready = ms.check_source(REPO, hub_env(hub, tmp_path))
        assert ready.status == "fail"
        assert "gated" in ready.message
        assert "HF_TOKEN is not set" in ready.message
        assert "HF_TOKEN" in ready.fix
        assert "secretKeyRef" in ready.fix
        assert ms.check_source(REPO, hub_env(hub, tmp_path, HF_TOKEN="good")).status == "pass"


def test_a_gated_repo_with_a_token_without_access_fails_403(tmp_path: Path) -> None:
    hub_tokens = frozenset({"other-account"})
    with FakeHub(
        {REPO: tiny(gated="auto", tokens=frozenset({"good"}))}, valid_tokens=hub_tokens
    ) as hub:
        ready = ms.check_source(REPO, hub_env(hub, tmp_path, HF_TOKEN="other-account"))
    assert ready.status == "fail"
    assert "HTTP 403" in ready.message
    assert "HF_TOKEN" in ready.message
    assert "request access" in ready.fix


def test_a_missing_repo_an_invalid_token_and_a_missing_revision_fail(tmp_path: Path) -> None:
    with FakeHub({REPO: tiny()}) as hub:
        missing = ms.check_source("acme/nothing", hub_env(hub, tmp_path))
        invalid = ms.check_source(REPO, hub_env(hub, tmp_path, HF_TOKEN="forged"))
        revision = ms.check_source(REPO, hub_env(hub, tmp_path), revision="v9")
    assert missing.status == "fail"
    assert "HTTP 401" in missing.message
    assert invalid.status == "fail"
    assert "HF_TOKEN" in invalid.message
    assert revision.status == "fail"
    assert "revision 'v9'" in revision.message
    assert "--revision" in revision.fix


def test_a_cache_too_small_for_the_download_fails(tmp_path: Path) -> None:
    # 1 PB of weights against the real free space of this filesystem (honest: no mount)
    repo = FakeRepo({"config.json": b"{}", "model.safetensors": 10**15})
    with FakeHub({REPO: repo}) as hub:
        ready = ms.check_source(REPO, hub_env(hub, tmp_path))
    assert ready.status == "fail"
    assert "GB free" in ready.message
    assert "HF_HOME" in ready.message


def test_a_slow_hub_is_a_warning_within_the_timeout(tmp_path: Path) -> None:
    with FakeHub({REPO: tiny()}, delay_s=60.0) as hub:
        ready = ms.check_source(REPO, hub_env(hub, tmp_path), timeout_s=0.5)
    # the Hub answers after 60 s, with the files: a warning can only come from the timeout
    assert ready.status == "warn"
    assert "did not answer" in ready.message


def test_a_hub_answer_without_the_hubs_error_code_is_unknown_not_a_failure(tmp_path: Path) -> None:
    with FakeHub({}) as hub:
        # a server that is not the Hub (a bare 404 with no X-Error-Code) settles nothing
        ready = ms.check_source(REPO, hub_env(hub, tmp_path, HF_ENDPOINT=hub.url + "/not-the-api"))
    assert ready.status == "warn"
