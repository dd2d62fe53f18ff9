"""OME runtimes (ome.io, issue 35 item 4): the engine's container is
spec.engineConfig.runner (and decoderConfig, leader/worker), read as OME builds the pod."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from test_rules_support import check, finding, ids

from preflight_operator.core.rules import FAIL, PASS
from preflight_operator.core.rules.kinds import kind_spec

CORPUS = Path(__file__).parents[1] / "data" / "realworld" / "ome"


def runtime(name: str = "clusterservingruntime-vllm-llama-3-2-1b-instruct-rt.yaml") -> Any:
    found: dict[str, Any] = yaml.safe_load((CORPUS / name).read_text())
    return copy.deepcopy(found)


def runner(obj: dict[str, Any], part: str = "engineConfig") -> dict[str, Any]:
    found: dict[str, Any] = obj["spec"][part]["runner"]
    return found


def test_ome_runtimes_are_known_kinds_not_kserves() -> None:
    spec = kind_spec(runtime())
    assert spec is not None
    assert (spec.group, spec.family) == ("ome.io", "ome")


def test_the_runner_is_the_engine_container() -> None:
    (ok,) = check(runtime())
    assert (ok.container, ok.verdict) == ("engine/ome-container", PASS)
    obj = runtime()
    command = runner(obj)["command"]
    command[command.index("--tensor-parallel-size") + 1] = "4"
    (bad,) = check(obj)
    f = finding(bad, "gpu-count-too-low")
    assert f.severity == FAIL
    assert "spec.engineConfig" in f.field


def test_no_gpu_in_a_runtime_is_normal() -> None:
    obj = runtime()
    del runner(obj)["resources"]
    (result,) = check(obj)
    assert "gpu-request-none" not in ids(result)


def test_the_runner_is_merged_onto_the_container_of_its_name() -> None:
    obj = runtime()
    part = obj["spec"]["engineConfig"]
    part["containers"] = [
        {"name": "ome-container", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    ]
    del runner(obj)["resources"]  # the PodSpec's container keeps its GPU count
    command = runner(obj)["command"]
    command[command.index("--tensor-parallel-size") + 1] = "2"
    (bad,) = check(obj)
    assert "gpu-count-too-low" in ids(bad)


def test_a_decoder_and_a_multi_node_engine() -> None:
    obj = runtime()
    engine = obj["spec"]["engineConfig"]
    obj["spec"]["decoderConfig"] = copy.deepcopy(engine)
    command = runner(obj)["command"]
    command[command.index("--tensor-parallel-size") + 1] = "2"
    engine["worker"] = {"size": 1, "containers": []}  # leader + 1 worker, 1 GPU each
    results = {r.container: r for r in check(obj)}
    assert results["engine-leader/ome-container"].verdict == PASS, results
    assert results["decoder/ome-container"].verdict == PASS
    engine["worker"]["size"] = 0  # alone: TP 2 on one GPU
    results = {r.container: r for r in check(obj)}
    assert results["engine-leader/ome-container"].verdict == FAIL
