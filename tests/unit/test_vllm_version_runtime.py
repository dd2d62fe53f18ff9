"""Issue 38 item 1 at run time: the checker reads the installed vLLM's version from its
distribution metadata (never importing vLLM), puts it in the report's plan, and the
operator's GPUValidation shows it per pod."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_builders_status import inputs
from test_gpuval_plan_unknown import PLANLESS, checked_pod
from test_loadtime import crd_schema, undeclared

from preflight_check.environment import installed_vllm_version, vllm_version_field
from preflight_contract.report import CheckResult, Report
from preflight_operator.core.gpuvalidation import build_status
from preflight_operator.core.podresults import pod_result, report_vllm_version, vllm_version_note
from preflight_operator.core.rules.vllmversion import image_version


def _site(tmp_path: Path, version: str) -> Path:
    info = tmp_path / f"vllm-{version.replace('/', '_')}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    return tmp_path


def test_the_checker_reads_the_installed_version_without_importing_vllm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path, "0.6.3.post1")))
    assert installed_vllm_version() == "0.6.3.post1"
    assert vllm_version_field() == {"vllm_version": "0.6.3.post1"}


def test_a_hostile_version_is_not_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path, "0.6.3 $(rm -rf /)")))
    assert installed_vllm_version() == ""
    assert vllm_version_field() == {}


def test_the_operator_shows_the_version_per_pod() -> None:
    report = Report(
        checks=[CheckResult("context-ranks", "pass", "2 ranks bound")],
        action="Enforce",
        plan={"tp": 2, "pp": 1, "dp_local": 1, "gpus_needed": 2, "vllm_version": "0.9.2"},
    )
    found = pod_result(checked_pod(report))
    assert found is not None
    assert found.vllm_version == "0.9.2"
    status = build_status(inputs(static=PLANLESS, live_results=[found]))
    assert status["runtime"]["pods"][0]["vllmVersion"] == "0.9.2"
    assert not undeclared(
        status, crd_schema("gpuvalidations.vllm-preflight.io.yaml")["properties"]["status"]
    )
    assert report_vllm_version({"vllm_version": "x" * 65}) == ""
    assert report_vllm_version({"vllm_version": 9}) == ""


def _checked_in(image: str, found: str) -> dict[str, object]:
    pod = checked_pod(
        Report(
            checks=[CheckResult("context-ranks", "pass", "1 rank bound")],
            action="Enforce",
            plan={"tp": 1, "pp": 1, "dp_local": 1, "gpus_needed": 1, "vllm_version": found},
        )
    )
    pod["spec"]["initContainers"] = [{"name": "preflight-check", "image": image}]  # type: ignore[index]
    return pod


@pytest.mark.parametrize(
    ("image", "found", "noted"),
    [
        # the tag says 0.9.2, the image holds 0.11.2: the rules judged the wrong release
        ("vllm/vllm-openai:v0.9.2", "0.11.2", True),
        ("docker.io/vllm/vllm-openai:v0.6.3-cu124", "0.6.3.post1", True),
        # the same release: a local build suffix is the same release
        ("vllm/vllm-openai:v0.11.2", "0.11.2+cu129", False),
        ("vllm/vllm-openai:v0.6.3.post1", "0.6.3.post1", False),
        # no exact assumption to compare with (moving tag, custom image), or a dev build
        ("vllm/vllm-openai:latest", "0.11.2", False),
        ("registry.example/team/vllm:v0.9.2", "0.11.2", False),
        ("vllm/vllm-openai:v0.9.2", "0.11.3.dev42+g1234abc", False),
    ],
)
def test_a_static_assumption_that_differs_from_the_image_is_reported(
    image: str, found: str, noted: bool
) -> None:
    result = pod_result(_checked_in(image, found))
    assert result is not None
    assert result.vllm_version == found
    note = result.to_status().get("vllmVersionNote", "")
    assert bool(note) == noted, note
    if noted:
        assert vllm_version_note(image, found) == note
        assert found in note
        assert image_version(image).release in note
    status = build_status(inputs(static=PLANLESS, live_results=[result]))
    assert not undeclared(
        status, crd_schema("gpuvalidations.vllm-preflight.io.yaml")["properties"]["status"]
    )
