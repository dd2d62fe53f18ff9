"""Issue 38 item 1 at run time: the checker reads the installed vLLM's version from its
distribution metadata (never importing vLLM), puts it in the report's plan, and the
operator's GPUValidation shows it per pod."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_builders_status import inputs
from test_gpuval_plan_unknown import PLANLESS, checked_pod
from test_loadtime import crd_schema, undeclared

from preflight_check.checks.model import _serving
from preflight_check.environment import (
    installed_vllm_release,
    installed_vllm_version,
    vllm_version_field,
)
from preflight_check.facts import Facts
from preflight_check.host import Host
from preflight_check.options import Options
from preflight_check.plan import Plan
from preflight_contract import modelfacts as mf
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


def _plugin(site: Path, group: str) -> None:
    info = site / "acme_models-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-models\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\nacme = acme_models:register\n")


@pytest.mark.parametrize(
    ("version", "release"),
    [
        ("0.6.3", "0.6.3"),
        ("0.6.3.post1", "0.6.3.post1"),
        ("0.6.3+cu124", "0.6.3"),  # a local build of the release
        ("0.11.1.dev42+g1234abc", None),  # a dev build: no generated release is it
        ("0.10.0rc1", None),
    ],
)
def test_the_checker_judges_models_by_the_release_installed_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, release: str | None
) -> None:
    monkeypatch.syspath_prepend(str(_site(tmp_path, version)))
    assert installed_vllm_release() == release
    # read once, by the collection (Host.vllm_release), into the facts the checks judge
    assert Host(environ={}).vllm_release() == release
    serving = _serving(Facts(plan=Plan(), vllm_release=installed_vllm_release()), Options())
    assert serving.vllm_release == release


def test_a_plugin_that_may_register_models_leaves_the_release_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _site(tmp_path, "0.6.3")
    _plugin(site, "vllm.general_plugins")
    monkeypatch.syspath_prepend(str(site))
    assert installed_vllm_release() is None


def test_other_entry_points_do_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = _site(tmp_path, "0.6.3")
    _plugin(site, "console_scripts")
    monkeypatch.syspath_prepend(str(site))
    assert installed_vllm_release() == "0.6.3"


def test_no_vllm_installed_judges_by_the_table_as_before() -> None:
    # the suite's own environment holds no vLLM distribution
    assert installed_vllm_version() == ""
    assert installed_vllm_release() is None


def test_qwen3_fails_at_run_time_in_an_image_holding_0_6_3() -> None:
    """The same verdict as lint's on the tag (test_arch_by_release), now from the release
    the image holds: Qwen3 is registered since 0.8.5, and 0.6.3 has no Transformers
    backend."""
    facts = mf.ModelFacts(architectures=("Qwen3ForCausalLM",))
    verdict = mf.rule_arch_registered(facts, None, mf.Serving(vllm_release="0.6.3"))
    assert verdict.status == mf.FAIL
    assert "since 0.8.5" in verdict.message
