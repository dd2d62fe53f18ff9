"""The zipapp as shipped: built by hack/build_zipapp.py, run by a bare python3 (-I: no
site-packages, no environment) the way the init container runs it."""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
HAS_DRIVER = ctypes.util.find_library("cuda") is not None


@pytest.fixture(scope="module")
def zipapp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("dist") / "vllm-preflight.pyz"
    subprocess.run(
        [sys.executable, str(REPO / "hack" / "build_zipapp.py"), "--output", str(output)],
        check=True,
        capture_output=True,
    )
    return output


def _run(zipapp: Path, tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-I", str(zipapp), *args, "--json", str(report)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ.get("PATH", "")},
        check=False,
    )
    return done.returncode, json.loads(report.read_text()), done.stdout + done.stderr


def test_zipapp_holds_the_packages_and_pynvml_and_is_reproducible(
    zipapp: Path, tmp_path: Path
) -> None:
    import zipfile

    names = zipfile.ZipFile(zipapp).namelist()
    assert "__main__.py" in names
    assert "src/pynvml.py" in names
    assert "src/preflight_check/rank_probe.py" in names
    # The contract package the checker stands on, sources and bytecode alike.
    assert "src/preflight_contract/report.py" in names
    assert "src/preflight_contract/py.typed" in names
    tag = f"cpython-{sys.version_info[0]}{sys.version_info[1]}"
    assert f"pyc/{tag}/preflight_check/rank_probe.pyc" in names
    assert f"pyc/{tag}/preflight_contract/report.pyc" in names
    assert f"pyc/{tag}/pynvml.pyc" in names
    again = tmp_path / "again.pyz"
    subprocess.run(
        [sys.executable, str(REPO / "hack" / "build_zipapp.py"), "--output", str(again)],
        check=True,
        capture_output=True,
    )
    assert again.read_bytes() == zipapp.read_bytes()


@pytest.mark.skipif(HAS_DRIVER, reason="this machine has a CUDA driver")
def test_without_a_driver_the_verdict_is_clear_and_exit_follows_the_action(
    zipapp: Path, tmp_path: Path
) -> None:
    code, report, output = _run(zipapp, tmp_path, "check", "--tp", "2")
    assert code == 1
    driver = next(c for c in report["checks"] if c["id"] == "driver")
    assert driver["message"].startswith("no NVIDIA driver: libcuda.so.1 not found")
    assert "Traceback" not in output
    code, _, _ = _run(zipapp, tmp_path, "--tp", "2", "--action", "Audit")
    assert code == 0


def test_usage_error_from_the_zipapp(zipapp: Path, tmp_path: Path) -> None:
    code, report, output = _run(zipapp, tmp_path, "--tp", "four")
    assert code == 2
    assert report["verdict"] == "error"
    assert "--tp='four'" in output


def _modules_loaded(python: str, zipapp: Path) -> str:
    """The zipapp's import trace (python -v) when it lists its checks."""
    done = subprocess.run(
        [python, "-I", "-v", str(zipapp), "--list-checks"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stderr


def _imports_of_cli(trace: str) -> list[str]:
    # "import 'preflight_check.cli' # <zipimporter ...>" (3.10+) or
    # "import preflight_check.cli # loaded from Zip ..." (3.9)
    return [
        line
        for line in trace.splitlines()
        if line.startswith("import ") and line.split()[1].strip("'") == "preflight_check.cli"
    ]


def test_each_interpreter_runs_the_bytecode_built_for_it(zipapp: Path) -> None:
    # The archive's point: no module is compiled at run time (docs/PERFORMANCE.md).
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_zipapp", REPO / "hack/build_zipapp.py")
    assert spec is not None
    assert spec.loader is not None
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    for python in builder.find_interpreters():
        trace = _modules_loaded(python, zipapp)
        loaded = _imports_of_cli(trace)
        assert loaded, trace[-2000:]
        assert all("/pyc/cpython-3" in line for line in loaded), (python, loaded)


def test_sources_only_archive_still_runs(tmp_path: Path) -> None:
    output = tmp_path / "sources.pyz"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "hack" / "build_zipapp.py"),
            "--no-bytecode",
            "--output",
            str(output),
        ],
        check=True,
        capture_output=True,
    )
    import zipfile

    assert not [n for n in zipfile.ZipFile(output).namelist() if n.startswith("pyc/")]
    trace = _modules_loaded(sys.executable, output)
    loaded = _imports_of_cli(trace)
    assert loaded
    assert all("/src/preflight_check/" in line for line in loaded), loaded
