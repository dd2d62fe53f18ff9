"""`check` on hostile options and broken PREFLIGHT_* env, over the fake driver (issue 19
items 2, 7 and 8): exit 2 with a clean message and the report and termination message
written; under Warn/Audit a bad PREFLIGHT_* value is a warning and the pod starts; the rank
probes are capped when there are no device nodes to count."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from preflight_contract.verdicts import ERROR, PASS, WARN
from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--tp", "1" * 5000], "(5000 characters) is more than 1024 GPUs per pod"),
        (["--shm-min", "1" + "0" * 400], "is larger than any size Kubernetes stores"),
        (["--dp-local", "9" * 300], "is more than 1024 GPUs per pod"),
        (["--vllm-args", "serve m -tp " + "1" * 5000], "(5000 characters)"),
    ],
)
def test_huge_numbers_are_usage_errors_with_the_report_written(
    tmp_path: Path, argv: list[str], needle: str
) -> None:
    run = run_check(fake_host(h200_machine(2)), argv, tmp_path)
    assert run.code == 2
    assert needle in run.stderr
    assert "Traceback" not in run.stderr
    assert run.check("usage").status == ERROR
    assert run.compact is not None  # the termination message
    assert len(run.check("usage").message) < 400  # not 5,000 digits


@pytest.mark.parametrize("size", ["1Pi", "1E", "1Ei"])
def test_every_kubernetes_suffix_is_a_size(tmp_path: Path, size: str) -> None:
    run = run_check(fake_host(h200_machine(2)), ["--tp", "2", "--shm-min", size], tmp_path)
    assert run.code == 1  # read; /dev/shm is smaller than that
    assert run.check("shm").status != ERROR


@pytest.mark.parametrize("action", ["Warn", "Audit"])
@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("PREFLIGHT_SHM_MIN", "abc"),
        ("PREFLIGHT_GPU_MEMORY_UTILIZATION", "0"),
        ("PREFLIGHT_TP", "two"),
        ("PREFLIGHT_TIER", "fastest"),
        ("PREFLIGHT_SKIP", "no-such-check"),
        ("PREFLIGHT_DEADLINE", "-1"),
    ],
)
def test_bad_env_under_warn_or_audit_is_a_finding_and_exit_0(
    tmp_path: Path, action: str, variable: str, value: str
) -> None:
    host = fake_host(h200_machine(2), {variable: value, "PREFLIGHT_ACTION": action})
    run = run_check(host, [], tmp_path)
    assert run.code == 0, run.stderr
    settings = run.check("settings")
    assert settings.status == WARN
    assert variable in settings.message
    assert variable in settings.remediation
    assert settings.evidence["variables"] == [variable]


def test_bad_env_under_enforce_names_the_variable_and_the_fix(tmp_path: Path) -> None:
    host = fake_host(h200_machine(2), {"PREFLIGHT_SHM_MIN": "1Zi"})
    run = run_check(host, [], tmp_path)
    assert run.code == 2
    message = run.check("usage").message
    assert "PREFLIGHT_SHM_MIN='1Zi' is not a size" in message
    assert "spec.thresholds.shmMin" in message
    assert run.compact is not None


def test_good_env_passes_the_settings_check(tmp_path: Path) -> None:
    host = fake_host(h200_machine(2), {"PREFLIGHT_SHM_MIN": "1Pi", "PREFLIGHT_ACTION": "Warn"})
    run = run_check(host, [], tmp_path)
    assert run.check("settings").status == PASS


def test_probes_are_capped_without_device_nodes(tmp_path: Path) -> None:
    started = time.perf_counter()
    run = run_check(fake_host(h200_machine(2), no_driver=True), ["--tp", "1024"], tmp_path)
    assert time.perf_counter() - started < 6  # 12.8 s with a probe per rank
    assert run.code == 1
    run = run_check(fake_host(h200_machine(2)), ["--tp", "16"], tmp_path)
    ranks = run.check("context-ranks").evidence
    assert len(ranks["ranks"]) <= 8
    assert ranks["not_probed"] == list(range(8, 16))
