"""Check 'model-source' end to end over the fake driver, for a pod shaped like the upstream
example tests/data/realworld/tutorials/k8s-ai-gpt-oss-120b-a100.yaml (seans3/k8s-ai,
commit 9fb7fb32): a `gsutil rsync` init container fills the PVC at /models, on Spot nodes,
so a preempted sync leaves a partial copy there (here of Llama 3.1 8B, whose config is in
tests/data/models). The check runs first: alone it fails the pod (and the rsync that would
finish the copy never runs); with the writer named by the injector
(PREFLIGHT_MODEL_WRITERS) it warns and the pod goes on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from preflight_contract.verdicts import FAIL, WARN
from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check
from preflight_dev.hubserver import CORPUS

pytestmark = pytest.mark.timeout(60)


def shard(data_bytes: int, written: int) -> bytes:
    header = json.dumps(
        {"w": {"dtype": "U8", "shape": [data_bytes], "data_offsets": [0, data_bytes]}}
    ).encode()
    return len(header).to_bytes(8, "little") + header + bytes(written)


def interrupted_sync(root: Path) -> str:
    path = root / "models" / "Meta-Llama-3.1-8B"
    shutil.copytree(CORPUS / "meta-llama" / "Meta-Llama-3.1-8B", path)
    (path / "tokenizer.json").write_text("{}")
    names = [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]
    index = {"metadata": {"total_size": 48}, "weight_map": {str(i): n for i, n in enumerate(names)}}
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    (path / names[0]).write_bytes(shard(16, 16))
    (path / names[1]).write_bytes(shard(16, 3))  # the sync was stopped inside it
    return str(path)


def test_a_partial_copy_fails_alone_and_warns_when_an_init_container_writes_it(
    tmp_path: Path,
) -> None:
    path = interrupted_sync(tmp_path)
    argv = ["--vllm-args", f"vllm serve {path} --max-model-len 8192"]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    alone = run_check(fake_host(h200_machine(1), {}), argv, tmp_path / "a")
    source = alone.check("model-source")
    assert source.status == FAIL, source.message
    assert alone.code == 1
    writers = {"PREFLIGHT_MODEL_WRITERS": "model-downloader"}
    written = run_check(fake_host(h200_machine(1), writers), argv, tmp_path / "b")
    source = written.check("model-source")
    assert source.status == WARN, source.message
    assert "init container model-downloader" in source.message
    assert source.evidence["writers"] == ["model-downloader"]
    assert [(c.id, c.message) for c in written.report.checks if c.status == FAIL] == []
    assert written.code == 0
