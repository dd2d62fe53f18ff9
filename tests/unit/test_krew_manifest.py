"""The Krew manifest of `kubectl vllm-preflight`: its archive is the one hack/krew/build.py
builds (same sha256, reproducibly), it has the fields Krew requires, and the launcher in
the archive runs the plugin, or says how to install it when the package is missing."""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import yaml

from preflight_operator import __version__

REPO = Path(__file__).resolve().parents[2]
KREW = REPO / "hack" / "krew"
sys.path.insert(0, str(KREW))
import build as krew_build  # noqa: E402


def manifest() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((KREW / "vllm-preflight.yaml").read_text())
    return doc


def test_manifest_has_what_krew_requires() -> None:
    doc = manifest()
    assert doc["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert doc["kind"] == "Plugin"
    assert doc["metadata"]["name"] == "vllm-preflight"  # `kubectl vllm-preflight`
    spec = doc["spec"]
    assert spec["version"] == f"v{__version__}"
    assert re.fullmatch(r"v\d+\.\d+\.\d+", spec["version"])
    assert 0 < len(spec["shortDescription"]) < 50
    for platform in spec["platforms"]:
        assert platform["bin"] == "kubectl-vllm_preflight"
        assert f"/download/{spec['version']}/" in platform["uri"]
        assert platform["selector"]["matchExpressions"]


def test_sha256_is_the_reproducible_archive() -> None:
    first, second = krew_build.archive_bytes(), krew_build.archive_bytes()
    assert first == second
    digest = hashlib.sha256(first).hexdigest()
    for platform in manifest()["spec"]["platforms"]:
        assert platform["sha256"] == digest, "run python3 hack/krew/build.py --update-manifest"


def _extract(tmp_path: Path) -> Path:
    with tarfile.open(fileobj=io.BytesIO(krew_build.archive_bytes())) as tar:
        assert tar.getnames() == ["kubectl-vllm_preflight"]
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "kubectl-vllm_preflight"


def test_launcher_runs_the_installed_plugin(tmp_path: Path) -> None:
    launcher = _extract(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "VLLM_PREFLIGHT_PYTHON": sys.executable}
    result = subprocess.run(
        [str(launcher), "--version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"kubectl vllm-preflight {__version__}"


def test_launcher_without_the_package_says_how_to_install_it(tmp_path: Path) -> None:
    launcher = _extract(tmp_path)
    env = {
        "PATH": "/usr/bin:/bin",
        "VLLM_PREFLIGHT_PYTHON": "/usr/bin/python3",
        "PYTHONNOUSERSITE": "1",
    }
    result = subprocess.run(
        [str(launcher), "status"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert result.returncode == 2
    assert "pip install vllm-preflight" in result.stderr
    missing = subprocess.run(
        [str(launcher)], capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "VLLM_PREFLIGHT_PYTHON": "no-such-python"},
    )  # fmt: skip
    assert missing.returncode == 2
    assert "VLLM_PREFLIGHT_PYTHON" in missing.stderr
