"""One positional word given to `python -m vllm.entrypoints.openai.api_server`: vLLM up to
0.11 exits ("unrecognized arguments"); newer vLLM takes it as the module's optional
model_tag and ignores it (vLLM 0.33.0 vllm/entrypoints/common/cli_args.py make_arg_parser).
A failure needs the image to say its vLLM; otherwise it is a warning (issue 24: a FAIL
rests on exact inputs)."""

from __future__ import annotations

import pytest
from test_rules_support import deployment, finding, ids, one, pod_spec, vllm

from preflight_contract.vllm_args import API_SERVER_POSITIONAL, parse_vllm_args
from preflight_operator.core.rules import image_version
from preflight_operator.core.rules.ruleset.args import without_model_tag

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


@pytest.mark.parametrize(
    ("image", "exits"),
    [
        ("vllm/vllm-openai:v0.10.1.1", True),
        ("docker.io/vllm/vllm-openai-cpu:v0.9.0", True),
        ("vllm/vllm-openai:v0.11.0", True),
        ("vllm/vllm-openai:v0.11.1", False),
        ("vllm/vllm-openai:latest", False),  # the newest release or later
        ("vllm/vllm-openai@sha256:" + "a" * 64, None),
        ("someone/vllm-openai-fork:0.3", None),
        # a mirror may hold anything under vLLM's name: one reader, one answer (issue 38)
        ("registry.example.com/vllm/vllm-openai:v0.9.0", None),
    ],
)
def test_the_version_is_read_as_every_version_rule_reads_it(image: str, exits: bool | None) -> None:
    assert without_model_tag(image_version(image)) is exits


def test_a_mirror_of_an_old_image_warns_and_names_why() -> None:
    image = "registry.example.com/vllm/vllm-openai:v0.9.0"
    container = vllm("--model", "m", "extra", gpus=1, command=API, image=image)
    result = one(deployment(pod_spec(container)))
    found = finding(result, "vllm-args-ignored")
    assert "not known here" in found.message
    assert "not vLLM's own image" in found.message
    assert "vllm-args-invalid" not in ids(result)
