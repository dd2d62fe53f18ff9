"""One positional word given to `python -m vllm.entrypoints.openai.api_server`: vLLM up to
0.11 exits ("unrecognized arguments"); newer vLLM takes it as the module's optional
model_tag and ignores it (vLLM 0.33.0 vllm/entrypoints/common/cli_args.py make_arg_parser).
A failure needs the image to say its vLLM; otherwise it is a warning (issue 24: a FAIL
rests on exact inputs)."""

from __future__ import annotations

import pytest
from test_rules_support import deployment, finding, ids, one, pod_spec, vllm

from preflight_contract.vllm_args import API_SERVER_POSITIONAL, parse_vllm_args
from preflight_operator.core.rules.ruleset.args import image_vllm_version

API = ["python3", "-m", "vllm.entrypoints.openai.api_server"]


def test_one_word_is_a_warning_of_the_parser_two_are_a_problem() -> None:
    one_word = parse_vllm_args([*API, "--model", "m", "extra"])
    assert not [p for p in one_word.problems if p.dest == "positional"]
    assert [w.value for w in one_word.warnings if w.dest == API_SERVER_POSITIONAL] == ["extra"]
    two = parse_vllm_args([*API, "--model", "m", "a", "b"])
    assert [p.value for p in two.problems if p.dest == "positional"] == ["b"]


@pytest.mark.parametrize(
    ("image", "rule", "severity"),
    [
        ("vllm/vllm-openai:v0.11.0", "vllm-args-invalid", "fail"),
        ("vllm/vllm-openai:v0.6.6.post1", "vllm-args-invalid", "fail"),
        ("vllm/vllm-openai:v0.12.0", "vllm-args-ignored", "warn"),
        ("vllm/vllm-openai:latest", "vllm-args-ignored", "warn"),
        ("registry.example.com/team/llm-server:2", "vllm-args-ignored", "warn"),
    ],
)
def test_the_image_decides(image: str, rule: str, severity: str) -> None:
    container = vllm(
        "--model", "m", "--quantization bitsandbytes", gpus=1, command=API, image=image
    )
    result = one(deployment(pod_spec(container)))
    found = finding(result, rule)
    assert found.severity == severity
    other = {"vllm-args-invalid", "vllm-args-ignored"} - {rule}
    assert not other & set(ids(result))


def test_the_version_is_read_from_vllms_own_images_only() -> None:
    assert image_vllm_version("vllm/vllm-openai:v0.10.1.1") == (0, 10, 1)
    assert image_vllm_version("docker.io/vllm/vllm-openai-cpu:v0.9.0") == (0, 9, 0)
    assert image_vllm_version("vllm/vllm-openai:latest") is None
    assert image_vllm_version("vllm/vllm-openai@sha256:" + "a" * 64) is None
    assert image_vllm_version("someone/vllm-openai-fork:0.3") is None
