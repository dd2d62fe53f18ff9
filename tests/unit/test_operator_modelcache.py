"""The operator's model configs: the modelConfigs ConfigMap, the background fetch (a local
Hub stand-in on 127.0.0.1), the disk cache, and that the request path never waits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from preflight_dev.hubserver import CORPUS, HubServer
from preflight_operator.core.modelcache import (
    ModelCache,
    ModelSources,
    files_from_config_map,
    load_model_sources,
    parse_model_sources,
)
from preflight_operator.core.operatorconfig import ConfigError
from preflight_operator.core.rules import ClusterLookup, check_objects

QWEN = "Qwen/Qwen2.5-0.5B-Instruct"


def config_map(*models: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    data = {
        m.replace("/", "--") + ".json": (CORPUS / m / "config.json").read_text() for m in models
    }
    data.update(extra or {})
    return {"metadata": {"name": "model-configs", "resourceVersion": "1"}, "data": data}


def test_config_map_keys_name_the_model_and_the_file() -> None:
    quant = (CORPUS / "nvidia/Llama-3.1-70B-Instruct-FP8/hf_quant_config.json").read_text()
    data = config_map(
        "Qwen/Qwen2.5-0.5B-Instruct",
        "nvidia/Llama-3.1-70B-Instruct-FP8",
        extra={"nvidia--Llama-3.1-70B-Instruct-FP8.hf_quant_config.json": quant,
               "broken--model.json": "{not json", "no-separator.json": "{}"},
    )["data"]  # fmt: skip
    models = files_from_config_map(data)
    assert sorted(models) == ["Qwen/Qwen2.5-0.5B-Instruct", "nvidia/Llama-3.1-70B-Instruct-FP8"]
    assert set(models["nvidia/Llama-3.1-70B-Instruct-FP8"]) == {
        "config.json",
        "hf_quant_config.json",
    }


def test_lookup_from_the_config_map_feeds_the_rules() -> None:
    cache = ModelCache(ModelSources(), lambda: [config_map(QWEN)])
    assert cache.lookup(QWEN) is not None
    assert cache.lookup("meta-llama/Meta-Llama-3.1-8B") is None
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "q", "namespace": "ns"},
        "spec": {"template": {"spec": {"containers": [{
            "name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
            "command": ["vllm", "serve", QWEN, "-tp", "4"],
            "resources": {"limits": {"nvidia.com/gpu": 4}},
            "volumeMounts": [{"name": "d", "mountPath": "/dev/shm"}]}],
            "volumes": [{"name": "d", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]}}},
    }  # fmt: skip
    (result,) = check_objects([obj], lookup=ClusterLookup(model=cache.lookup))
    assert "model-tp-heads" in [f.id for f in result.failures]


def test_the_hubs_parameter_counts_in_the_config_map_make_the_size_exact() -> None:
    # 70B on one H100: from the Hub's counts the size is exact, so the fail stands (from
    # config.json alone it would be an estimate, and a warning)
    model = "meta-llama/Meta-Llama-3.1-70B"
    counts = '{"parameters": {"BF16": 70553706496}, "total": 70553706496}'
    extra = {"meta-llama--Meta-Llama-3.1-70B.hub-safetensors.json": counts}
    cache = ModelCache(ModelSources(), lambda: [config_map(model, extra=extra)])
    files = cache.lookup(model)
    assert files is not None
    assert set(files) == {"config.json", "hub-safetensors.json"}
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "q", "namespace": "ns"},
        "spec": {"template": {"spec": {
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            "containers": [{
                "name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                "command": ["vllm", "serve", model],
                "resources": {"limits": {"nvidia.com/gpu": 1}},
                "volumeMounts": [{"name": "d", "mountPath": "/dev/shm"}]}],
            "volumes": [{"name": "d", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]}}},
    }  # fmt: skip
    (result,) = check_objects([obj], lookup=ClusterLookup(model=cache.lookup))
    fit = {f.id: f for f in result.findings}["model-weights-fit"]
    assert fit.severity == "fail"
    assert "the Hub's parameter counts (BF16)" in fit.message


def test_fetch_is_off_by_default() -> None:
    with HubServer() as hub:
        cache = ModelCache(ModelSources(endpoint=hub.url))
        assert cache.lookup(QWEN) is None
        assert cache.wait_idle(1)  # nothing was scheduled
        assert hub.requests == []


def test_a_miss_schedules_a_fetch_and_never_waits(tmp_path: Path) -> None:
    with HubServer(token="tok") as hub:
        hub.release.clear()  # the Hub answers nothing until released below
        sources = ModelSources(fetch=True, endpoint=hub.url, cache_dir=str(tmp_path))
        cache = ModelCache(sources, environ={"HF_TOKEN": "tok"})
        # a lookup that waited for the fetch would get the files (after the release)
        assert cache.lookup(QWEN) is None
        assert cache.lookup(QWEN) is None  # one fetch in flight, not two
        assert not cache.wait_idle(0)  # returned while the fetch is still held at the Hub
        hub.release.set()
        assert cache.wait_idle(15)
        files = cache.lookup(QWEN)
    assert files is not None
    assert files["config.json"]["num_attention_heads"] == 14
    assert sum(r.endswith("/config.json") for r in hub.requests) == 1
    # written through to the disk cache: a restarted operator knows it without the Hub
    saved = json.loads((tmp_path / QWEN / "config.json").read_text())
    assert saved["num_attention_heads"] == 14
    restarted = ModelCache(ModelSources(fetch=False, cache_dir=str(tmp_path)))
    assert restarted.lookup(QWEN) is not None


def test_a_failed_fetch_is_not_retried_before_retry_seconds() -> None:
    with HubServer() as hub:
        cache = ModelCache(ModelSources(fetch=True, endpoint=hub.url, retry_seconds=600))
        assert cache.lookup("nobody/nothing") is None
        assert cache.wait_idle(10)
        assert cache.lookup("nobody/nothing") is None
        assert cache.wait_idle(10)
        assert sum("nobody/nothing" in r for r in hub.requests) == 1


def test_paths_are_never_fetched() -> None:
    with HubServer() as hub:
        cache = ModelCache(ModelSources(fetch=True, endpoint=hub.url))
        assert cache.lookup("/models/llama") is None
        assert cache.wait_idle(5)
        assert hub.requests == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"fetch": "yes"}, "models.fetch"),
        ({"timeoutSeconds": 0}, "models.timeoutSeconds"),
        ({"endpoint": "ftp://x"}, "models.endpoint"),
        ({"configmap": "x"}, "unknown field"),
        ([], "expected a mapping"),
    ],
)
def test_bad_settings_name_the_field(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_model_sources(value)


def test_load_from_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("models:\n  configMap: model-configs\n  fetch: true\n")
    sources = load_model_sources(path)
    assert (sources.config_map, sources.fetch) == ("model-configs", True)
    path.write_text("models:\n  fetch: 3\n")
    with pytest.raises(ConfigError, match=r"models\.fetch"):
        load_model_sources(path)
