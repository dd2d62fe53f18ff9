"""`--config FILE` on the api_server module of vLLM 0.6.0-0.10.1.1: the file's options go
right after argv's first word, so a first option that takes a value loses it and argparse
exits (vllm-project/vllm#23944, fixed in 0.10.2; vLLM 0.8.5 and 0.10.1.1's own parsers in
tests/data/vllm_oracle, "config_cases", which test_vllm_oracle.py compares with the rules).

A FAIL rests on exact inputs: the image's release, the command line, the file's content.
Rewrites a user would call the same keep the verdict; any input not known is no failure.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_rules_support import (
    SHM_MOUNT,
    SHM_VOLUME,
    config_map,
    deployment,
    ids,
    one,
    pod_spec,
    vllm,
)

from preflight_operator.core.rules import ContainerResult

API = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
FILE = "/etc/vllm/config.yaml"
MOUNT = {"name": "config", "mountPath": "/etc/vllm"}
VOLUME = {"name": "config", "configMap": {"name": "vllm-config"}}
SETTINGS = "max-model-len: 4096\ntensor-parallel-size: 1\n"


def judged(
    *args: str,
    image: str = "vllm/vllm-openai:v0.9.2",
    command: list[str] | None = API,
    settings: str | None = SETTINGS,
) -> ContainerResult:
    container = vllm(*args, gpus=1, command=command, image=image, mounts=(SHM_MOUNT, MOUNT))
    objects: list[dict[str, Any]] = [deployment(pod_spec(container, volumes=(SHM_VOLUME, VOLUME)))]
    if settings is not None:
        objects.append(config_map("vllm-config", {"config.yaml": settings}))
    return one(*objects)


def fails(result: ContainerResult) -> bool:
    return "vllm-args-invalid" in ids(result)


@pytest.mark.parametrize(
    "args",
    [
        ("--model", MODEL, "--config", FILE),
        ("--config", FILE, "--model", MODEL),
        ("--port", "8000", "--model", MODEL, "--config", FILE),
        ("--served-model-name", "a", "--model", MODEL, "--config", FILE),
    ],
)
@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.6.3", "vllm/vllm-openai:v0.10.1.1"])
def test_a_first_option_that_takes_a_value_fails(args: tuple[str, ...], image: str) -> None:
    assert fails(judged(*args, image=image))


def test_the_same_words_are_the_same_verdict_however_they_are_written() -> None:
    """args on the image's ENTRYPOINT (the api_server module up to 0.11.0), the module in
    `command`, and a shell running it give one verdict (metamorphic)."""
    words = ["--model", MODEL, "--config", FILE]
    assert fails(judged(*words))
    assert fails(judged(*words, command=None))
    script = " ".join([*API, *words])
    assert fails(judged(script, command=["/bin/sh", "-c"]))
    assert fails(judged(f"exec {script}", command=["bash", "-c"]))


@pytest.mark.parametrize(
    "args",
    [
        ("--model=" + MODEL, "--config", FILE),  # the fix: the first option in one word
        ("--trust-remote-code", "--model", MODEL, "--config", FILE),  # a switch first
        ("--model", MODEL),  # no file
    ],
)
def test_what_the_release_accepts_passes(args: tuple[str, ...]) -> None:
    assert not fails(judged(*args))


@pytest.mark.parametrize(
    "image",
    [
        "vllm/vllm-openai:v0.10.2",  # fixed there
        "vllm/vllm-openai:v0.5.5",  # no --config at all: vllm-args-unknown says so
        "vllm/vllm-openai:latest",  # the newest release or later
        "registry.example.com/vllm/vllm-openai:v0.9.2",  # a mirror: the release not known
        "registry.example.com/team/llm-server:2",
    ],
)
def test_only_an_exact_release_in_the_range_fails(image: str) -> None:
    result = judged("--model", MODEL, "--config", FILE, image=image)
    assert "vllm-args-invalid" not in ids(result), result.findings


def test_a_file_not_read_or_setting_nothing_is_no_failure() -> None:
    """The file's content decides: a ConfigMap outside the manifest set is not known
    (vllm-config-unresolved warns), and a file of false switches inserts nothing."""
    unknown = judged("--model", MODEL, "--config", FILE, settings=None)
    assert "vllm-args-invalid" not in ids(unknown)
    assert "vllm-config-unresolved" in ids(unknown)
    assert not fails(judged("--model", MODEL, "--config", FILE, settings="enforce-eager: false\n"))


def test_another_first_option_is_not_judged() -> None:
    """Only first words whose failure vLLM's own parsers showed fail: `--host` would too,
    but no oracle case says so yet (a missed failure, never a false one)."""
    assert not fails(judged("--host", "0.0.0.0", "--model", MODEL, "--config", FILE))


def test_the_message_names_the_release_the_word_and_argparse_error() -> None:
    (found,) = [
        f
        for f in judged("--model", MODEL, "--config", FILE).findings
        if f.id == "vllm-args-invalid"
    ]
    assert "vLLM 0.9.2" in found.message
    assert "'error: argument --model: expected one argument'" in found.message
    assert "--max-model-len, --tensor-parallel-size" in found.message
    assert "--model=MODEL" in found.fix
