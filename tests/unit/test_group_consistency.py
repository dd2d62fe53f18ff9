"""Member consistency (issue 26 item 2): the members of a group agree on the plan, vLLM,
the image, driver and CUDA (driver and runtime), NCCL and the GPU model; a difference names
every member with its value."""

from __future__ import annotations

import pytest
from test_check_group_protocol import config, facts
from test_inject_group import check_env, lws_pod

from preflight_check.group import judge


@pytest.mark.parametrize(
    ("key", "label", "leader", "worker"),
    [
        ("image", "the vLLM image", "vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.10.2"),
        ("cuda_runtime", "the image's CUDA runtime", "12.8", "12.4"),
        ("cuda_driver", "CUDA driver version", "13.0", "12.8"),
        ("driver", "NVIDIA driver", "580.95.05", "570.86.15"),
        ("nccl", "NCCL", "nvidia-nccl-cu12 2.27.3", "nvidia-nccl-cu12 2.21.5"),
        ("vllm", "vLLM", "0.11.0", "0.10.2"),
    ],
)
def test_a_difference_names_the_member_and_both_values(
    key: str, label: str, leader: str, worker: str
) -> None:
    members = {
        0: facts("n0", **{key: leader}),
        1: facts("n1", **{key: worker}),
        2: facts("n2", **{key: leader}),
    }
    verdict = judge(config(), members, waited_s=1.0)
    assert verdict.status == "warn", verdict.message
    assert f"{label} differs across the group" in verdict.message
    assert f"worker 1 (n1) {worker}" in verdict.message
    assert f"leader (n0) {leader}" in verdict.message


def test_the_plan_and_the_gpu_model() -> None:
    members = {0: facts("n0"), 1: facts("n1", args={"model": "m", "tp": "8", "pp": "2"})}
    members[2] = facts("n2", gpu_names=["NVIDIA H100 80GB HBM3"])
    verdict = judge(config(), members, waited_s=1.0)
    assert verdict.status == "fail"
    assert "worker 1 (n1) runs vLLM with other engine arguments than leader (n0): pp 3 vs 2" in (
        verdict.message
    )
    assert "GPU models differ across the group" in verdict.message
    assert "worker 2 (n2) NVIDIA H100 80GB HBM3" in verdict.message


def test_same_everything_passes() -> None:
    same = {"image": "vllm/vllm-openai:v0.11.0", "cuda_runtime": "12.8"}
    members = {i: facts(f"n{i}", **same) for i in range(3)}
    assert judge(config(), members, waited_s=1.0).status == "pass"


def test_hostile_image_text_is_bounded() -> None:
    assert len(facts("n0", image="x" * 100_000)["image"]) == 256


def test_the_injector_hands_the_check_the_vllm_image() -> None:
    env = check_env(lws_pod())
    assert env["PREFLIGHT_GROUP_IMAGE"]
    assert "$(" not in env["PREFLIGHT_GROUP_IMAGE"]
