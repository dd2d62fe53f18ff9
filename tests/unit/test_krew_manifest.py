"""The Krew manifest of `kubectl vllm-preflight` and its archives (hack/krew/build.py).

The manifest `make release-artifacts` writes into dist/ names each platform's archive with
its real sha256 and the version of pyproject.toml; it has the fields Krew requires; the
archives are reproducible and hold the two launchers and LICENSE; the launcher runs the
plugin, or says how to install it (no index named: the package is not on PyPI).
Krew itself installs from these files in tests/e2e/test_install_paths.py."""

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


def built(tmp_path: Path) -> tuple[dict[str, Any], list[Path]]:
    paths = krew_build.build(tmp_path)
    manifest = tmp_path / "vllm-preflight.yaml"
    assert manifest in paths
    doc: dict[str, Any] = yaml.safe_load(manifest.read_text())
    return doc, [p for p in paths if p.name.endswith(".tar.gz")]


def test_the_version_is_pyprojects() -> None:
    assert krew_build.version() == __version__


def test_manifest_has_what_krew_requires(tmp_path: Path) -> None:
    doc, archives = built(tmp_path)
    assert doc["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert doc["kind"] == "Plugin"
    assert doc["metadata"]["name"] == "vllm-preflight"  # `kubectl vllm-preflight`
    spec = doc["spec"]
    assert spec["version"] == f"v{__version__}"
    assert 0 < len(spec["shortDescription"]) < 50
    assert {p["selector"]["matchLabels"]["os"] for p in spec["platforms"]} == {"linux", "darwin"}
    names = {a.name for a in archives}
    for platform in spec["platforms"]:
        assert platform["bin"] == "kubectl-vllm_preflight"
        assert f"/download/v{__version__}/" in platform["uri"]
        assert platform["uri"].rsplit("/", 1)[1] in names
        assert {f["from"] for f in platform["files"]} == {
            "kubectl-vllm_preflight", "kubectl_complete-vllm_preflight", "LICENSE",
        }  # fmt: skip
    assert "@" not in yaml.safe_dump(doc).replace("@v", "")  # no placeholder left


def test_each_sha256_is_its_archives(tmp_path: Path) -> None:
    doc, archives = built(tmp_path)
    by_name = {a.name: hashlib.sha256(a.read_bytes()).hexdigest() for a in archives}
    for platform in doc["spec"]["platforms"]:
        assert platform["sha256"] == by_name[platform["uri"].rsplit("/", 1)[1]]
    assert krew_build.archive_bytes() == krew_build.archive_bytes()  # reproducible


def test_the_caveat_names_no_index_and_this_releases_wheel(tmp_path: Path) -> None:
    doc, _ = built(tmp_path)
    caveats = doc["spec"]["caveats"]
    assert "not on PyPI" in caveats
    assert not re.search(r"pip install vllm-preflight\b", caveats)
    assert (
        f"/releases/download/v{__version__}/vllm_preflight-{__version__}-py3-none-any.whl"
        in caveats
    )


def test_a_platform_without_an_archive_is_refused() -> None:
    import pytest

    with pytest.raises(SystemExit, match="no archive"):
        krew_build.render_manifest("1.0.0", {"linux": "0" * 64})


def _extract(tmp_path: Path) -> Path:
    with tarfile.open(fileobj=io.BytesIO(krew_build.archive_bytes())) as tar:
        assert tar.getnames() == [
            "kubectl-vllm_preflight", "kubectl_complete-vllm_preflight", "LICENSE",
        ]  # fmt: skip
        tar.extractall(tmp_path, filter="data")
    assert (tmp_path / "LICENSE").read_bytes() == (REPO / "LICENSE").read_bytes()
    return tmp_path / "kubectl-vllm_preflight"


def test_launcher_runs_the_installed_plugin(tmp_path: Path) -> None:
    launcher = _extract(tmp_path)
    env = {
        "PATH": "/usr/bin:/bin",
        "VLLM_PREFLIGHT_PYTHON": sys.executable,
        "PYTHONPATH": f"{REPO / 'operator'}:{REPO / 'initcontainer'}",  # this tree's code
    }
    result = subprocess.run(
        [str(launcher), "--version"], capture_output=True, text=True, env=env, timeout=60,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"kubectl vllm-preflight {__version__}"
    completer = tmp_path / "kubectl_complete-vllm_preflight"
    result = subprocess.run(
        [str(completer), "sta"], capture_output=True, text=True, env=env, timeout=60,
        check=False,
    )  # fmt: skip
    assert result.stdout.splitlines() == ["status", ":4"]


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
    assert "not on PyPI" in result.stderr
    assert f"vllm_preflight-{__version__}-py3-none-any.whl" in result.stderr
    missing = subprocess.run(
        [str(launcher)], capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "VLLM_PREFLIGHT_PYTHON": "no-such-python"},
    )  # fmt: skip
    assert missing.returncode == 2
    assert "VLLM_PREFLIGHT_PYTHON" in missing.stderr
    # the completer without the package: no candidates, the shell's default
    completer = tmp_path / "kubectl_complete-vllm_preflight"
    result = subprocess.run(
        [str(completer), "sta"], capture_output=True, text=True, env=env, timeout=60,
        check=False,
    )  # fmt: skip
    assert result.stdout.splitlines() == [":0"]
