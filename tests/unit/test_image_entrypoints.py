"""The ENTRYPOINT the rules put before a container's ``args`` on vLLM's own images
(``command.image_entrypoint``) against what each release's Dockerfiles say
(tests/data/vllm_images/entrypoints.json, read from the sdists pinned in
hack/vllm/sources.json by hack/vllm/image_entrypoints.py).

Until this file the rules took every vllm/vllm-openai image as `vllm serve`; the Dockerfiles
say `python3 -m vllm.entrypoints.openai.api_server` up to 0.11.0. The difference decides
verdicts: that module refuses a positional model before 0.12, and reads `--config=FILE` as
`--config-format` before 0.10."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from preflight_contract.vllm_release import version_key
from preflight_operator.core.rules import vllmversion
from preflight_operator.core.rules.command import (
    API_SERVER_ENTRYPOINT,
    SERVE_ENTRYPOINT,
    SERVE_ENTRYPOINT_SINCE,
    image_entrypoint,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "vllm_images" / "entrypoints.json"
RECORDS = json.loads(DATA.read_text())["records"]
# Dockerfile -> the image vLLM publishes from it (the suffix of vllm/vllm-openai)
IMAGES = {
    "docker/Dockerfile": "vllm/vllm-openai",
    "Dockerfile": "vllm/vllm-openai",
    "docker/Dockerfile.cpu": "vllm/vllm-openai-cpu",
    "Dockerfile.cpu": "vllm/vllm-openai-cpu",
    "docker/Dockerfile.xpu": "vllm/vllm-openai-xpu",
    "Dockerfile.xpu": "vllm/vllm-openai-xpu",
    "docker/Dockerfile.rocm": "vllm/vllm-openai-rocm",
    "Dockerfile.rocm": "vllm/vllm-openai-rocm",
}


def kind(entrypoint: list[str]) -> str:
    if entrypoint == list(SERVE_ENTRYPOINT):
        return "serve"
    if entrypoint[1:] == list(API_SERVER_ENTRYPOINT[1:]) and entrypoint[0] in ("python", "python3"):
        return "api_server"
    return "other"


CASES = [
    (record["release"], dockerfile, IMAGES[dockerfile], json.loads(line.split(None, 1)[1]))
    for record in RECORDS
    for dockerfile, line in record["entrypoints"].items()
    if dockerfile in IMAGES
]


def test_the_data_covers_both_eras() -> None:
    kinds = {kind(entry) for _, _, _, entry in CASES}
    assert kinds == {"serve", "api_server"}, kinds
    assert len({release for release, *_ in CASES}) >= 40


@pytest.mark.parametrize(("release", "dockerfile", "image", "entrypoint"), CASES)
def test_the_rules_entrypoint_is_the_dockerfiles(
    release: str, dockerfile: str, image: str, entrypoint: list[str]
) -> None:
    assert kind(entrypoint) != "other", (release, dockerfile, entrypoint)
    got = image_entrypoint(f"{image}:v{release}")
    assert kind(list(got)) == kind(entrypoint), (release, dockerfile, entrypoint, got)


def test_an_image_whose_release_is_unknown_runs_serve_as_every_recent_release_does() -> None:
    """Unknown (``latest``, a digest, another registry's copy) is `vllm serve`: the image is
    taken as one of the year's releases (vllmversion.RECENT), all from 0.11.1 on."""
    for image in (
        "vllm/vllm-openai:latest",
        "vllm/vllm-openai@sha256:" + "a" * 64,
        "registry.example.com/mirror/vllm-openai:v0.8.5",
    ):
        assert image_entrypoint(image) == SERVE_ENTRYPOINT
    for index in vllmversion.RECENT:
        release = vllmversion.facts.RELEASES[index]
        assert version_key(release) >= version_key(SERVE_ENTRYPOINT_SINCE), release


def test_releases_before_the_first_dockerfile_run_the_api_server_module() -> None:
    """0.4.1-0.6.1.post2 ship no Dockerfile in their sdist; the repository's of that time
    (vllm-project/vllm Dockerfile at 01da4491562a) has the api_server ENTRYPOINT."""
    without = [r["release"] for r in RECORDS if not r["entrypoints"]]
    assert without
    assert all(version_key(v) < version_key("0.6.2") for v in without)
    for release in without:
        assert image_entrypoint(f"vllm/vllm-openai:v{release}") == API_SERVER_ENTRYPOINT
