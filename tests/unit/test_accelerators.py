"""Accelerator semantics (issue 24 item 5): how many devices vLLM counts per resource unit,
by accelerator and generation, and each platform's own failure text.

The reported false denial: TP=8 on `google.com/tpu: 4` FAILed with CUDA's 'World size ...
available GPUs' although a TPU v3 chip is two JAX devices (what vLLM's TPU backend counts),
and although nothing in the pod said which generation it runs on.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_rules_support import check, deployment, finding, ids, one, pod_spec, vllm

from preflight_contract.verdicts import FAIL, PASS, WARN
from preflight_operator.core.rules.accelerators import (
    ACCELERATORS,
    TPU_GENERATIONS,
    accelerator,
    tpu_generation,
)

GKE_LABEL = "cloud.google.com/gke-tpu-accelerator"


def tpu_pod(tp: int, chips: int, label: str | None) -> dict[str, Any]:
    container = vllm("m", "-tp", str(tp), image="vllm/vllm-tpu:nightly", mounts=())
    container["resources"] = {"limits": {"google.com/tpu": chips}}
    spec = pod_spec(container, volumes=())
    if label is not None:
        spec["nodeSelector"] = {GKE_LABEL: label, "cloud.google.com/gke-tpu-topology": "2x2"}
    return deployment(spec)


def _no_cuda_words(text: str) -> None:
    for word in ("CUDA", "GPUs", "nvidia.com/gpu", "World size"):
        assert word not in text, text


@pytest.mark.parametrize("label", [None, "tpu-v3-slice", "tpu-v3-device"])
def test_reported_tp8_on_four_chips_is_never_a_failure(label: str | None) -> None:
    """Unknown generation: a warning naming the missing label; v3: 8 JAX devices, a pass."""
    result = one(tpu_pod(8, 4, label))
    assert result.verdict != FAIL, [(f.id, f.message) for f in result.findings]
    if label is None:
        assert ids(result) == ["plan-unresolved"]
        message = finding(result, "plan-unresolved").message
        assert GKE_LABEL in message
        _no_cuda_words(message)
    else:
        assert result.verdict == PASS, ids(result)
        assert (result.gpus_needed, result.gpus_requested) == (8, 8)


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("tpu-v5-lite-podslice", "v5e"),
        ("tpu-v5-lite-device", "v5e"),
        ("tpu-v6e-slice", "v6e"),
        ("tpu-v5p-slice", "v5p"),
        ("tpu-v4-podslice", "v4"),
    ],
)
def test_short_request_on_a_one_device_per_chip_generation_fails_in_tpu_words(
    label: str, name: str
) -> None:
    f = finding(one(tpu_pod(8, 4, label)), "gpu-count-too-low")
    assert f.severity == FAIL
    assert "Insufficient devices for 2D mesh: found 4, expected 8" in f.message
    assert "vLLM's TPU backend" in f.message
    _no_cuda_words(f.message + f.fix)
    assert "google.com/tpu" in f.fix
    assert 'limits["google.com/tpu"]' in f.field


def test_short_request_on_a_two_device_chip_counts_chips_times_two() -> None:
    f = finding(one(tpu_pod(16, 4, "tpu-v3-slice")), "gpu-count-too-low")
    assert "4 TPU v3 chips = 8 JAX devices" in f.message
    assert "found 8, expected 16" in f.message
    assert "request 8 x google.com/tpu" in f.fix  # 8 chips = 16 devices


def test_right_count_on_each_known_generation_passes() -> None:
    for generation in TPU_GENERATIONS:
        per_chip = generation.devices_per_chip
        assert per_chip is not None
        result = one(tpu_pod(4 * per_chip, 4, generation.gke_accelerators[0]))
        assert result.verdict == PASS, (generation.name, ids(result))


def test_an_unknown_generation_label_is_unknown() -> None:
    result = one(tpu_pod(8, 4, "tpu-v99-future"))
    assert result.verdict == WARN
    assert ids(result) == ["plan-unresolved"]


def test_tpu_without_a_request_is_told_in_tpu_words() -> None:
    container = vllm("m", "-tp", "4", image="vllm/vllm-tpu:nightly", mounts=())
    spec = pod_spec(container, volumes=())
    spec["nodeSelector"] = {GKE_LABEL: "tpu-v6e-slice"}
    f = finding(one(deployment(spec)), "gpu-request-missing")
    assert "Insufficient devices for 2D mesh" in f.message
    _no_cuda_words(f.message + f.fix)


def test_cuda_keeps_cudas_words() -> None:
    [result] = check(deployment(pod_spec(vllm("m", "-tp", "4", gpus=2))))
    f = finding(result, "gpu-count-too-low")
    assert "World size (4) is larger than the number of available GPUs (2)" in f.message


def test_every_row_cites_its_source() -> None:
    for entry in ACCELERATORS:
        assert entry.source, entry.resource
    for generation in TPU_GENERATIONS:
        assert generation.source, generation.name
        per_chip = generation.devices_per_chip
        assert per_chip is None or 1 <= per_chip <= generation.tensor_cores
        assert not generation.megacore or per_chip == 1


def test_generation_lookup() -> None:
    v5e = tpu_generation({"nodeSelector": {GKE_LABEL: "tpu-v5-lite-podslice"}})
    assert v5e is not None
    assert v5e.name == "v5e"
    v7x = tpu_generation({"nodeSelector": {GKE_LABEL: "tpu7x"}})
    assert v7x is not None
    assert v7x.devices_per_chip == 2
    assert tpu_generation({"nodeSelector": {GKE_LABEL: 5}}) is None
    assert tpu_generation({}) is None
    tpu = accelerator("google.com/tpu")
    assert tpu is not None
    assert tpu.ranks_per_unit is None
