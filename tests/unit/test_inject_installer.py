"""preflight-install: copies the zipapp into the shared emptyDir, whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from preflight_operator.cli import install


def test_copies_the_zipapp_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "image" / "vllm-preflight.pyz"
    source.parent.mkdir()
    source.write_bytes(b"PK\x03\x04zipapp")
    monkeypatch.setenv(install.SOURCE_ENV, str(source))
    dest = tmp_path / "preflight" / "vllm-preflight.pyz"
    assert install.main([str(dest)]) == 0
    assert dest.read_bytes() == source.read_bytes()
    assert dest.stat().st_mode & 0o111
    assert not list(dest.parent.glob(".*partial"))


def test_a_missing_zipapp_fails_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(install.SOURCE_ENV, str(tmp_path / "missing.pyz"))
    dest = tmp_path / "preflight" / "vllm-preflight.pyz"
    assert install.main([str(dest)]) == 2
    assert "cannot copy" in capsys.readouterr().err
    assert not dest.exists()


def test_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert install.main([]) == 2
    assert "usage" in capsys.readouterr().err
