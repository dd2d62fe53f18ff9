"""`lint --format sarif` read by sarif-tools (issue 40 item 4), the reader CI gates and
reports are built with (`sarif summary`, `sarif csv`, `sarif diff`, `sarif --check`), besides
the OASIS schema (test_lint_sarif.py). It reads our documents as GitHub code scanning does:
a rule id per result, its level, its message, the artifact and the line.

sarif-tools is the dev extra's (pyproject.toml); it runs as its own console script, as a
pipeline would run it.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "data" / "manifests" / "bad-tp4-deployment.yaml"
SARIF = shutil.which("sarif", path=str(Path(sys.executable).parent))


def lint_to(manifest: Path, out: Path) -> Path:
    """Lint as a pipeline does, from the directory the paths are relative to."""
    done = subprocess.run(
        [sys.executable, "-m", "preflight_operator.cli", "lint", "--format", "sarif",
         manifest.name], cwd=manifest.parent, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    out.write_text(done.stdout)
    return out


def sarif(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert SARIF is not None, "sarif-tools is missing: `make venv` installs the dev extra"
    return subprocess.run(
        [SARIF, *argv], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_summary_counts_the_findings_by_level(tmp_path: Path) -> None:
    manifest = tmp_path / "bad.yaml"
    shutil.copy(BAD, manifest)
    lint_to(manifest, tmp_path / "bad.sarif")
    done = sarif("summary", "bad.sarif", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "error: 2" in done.stdout
    assert "gpu-count-too-low" in done.stdout
    assert "shm-missing" in done.stdout
    assert "warning: 0" in done.stdout


def test_csv_places_each_finding_at_its_file_and_line(tmp_path: Path) -> None:
    manifest = tmp_path / "bad.yaml"
    shutil.copy(BAD, manifest)
    lint_to(manifest, tmp_path / "bad.sarif")
    done = sarif("csv", "-o", "out.csv", "bad.sarif", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with (tmp_path / "out.csv").open(newline="") as handle:
        rows = {row["Code"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"gpu-count-too-low", "shm-missing"}
    low = rows["gpu-count-too-low"]
    where = (low["Tool"], low["Severity"], low["Location"])
    assert where == ("vllm-preflight", "error", "bad.yaml")
    # the line of the field the finding names: the container's GPU limit
    assert int(low["Line"]) == line_of(manifest, "nvidia.com/gpu")
    assert "\nFix: request 4 GPUs" in low["Description"]


def test_check_gates_a_pipeline_on_errors_and_passes_a_good_manifest(tmp_path: Path) -> None:
    manifest = tmp_path / "bad.yaml"
    shutil.copy(BAD, manifest)
    lint_to(manifest, tmp_path / "bad.sarif")
    assert sarif("--check", "error", "summary", "bad.sarif", cwd=tmp_path).returncode == 2
    good = tmp_path / "good.yaml"
    good.write_text(BAD.read_text().replace("nvidia.com/gpu: 2", "nvidia.com/gpu: 4"))
    assert good.read_text() != BAD.read_text()
    doc = json.loads(lint_to(good, tmp_path / "good.sarif").read_text())
    codes = {r["ruleId"] for r in doc["runs"][0]["results"]}
    assert "gpu-count-too-low" not in codes
    diff = sarif("diff", "-o", "diff.json", "bad.sarif", "good.sarif", cwd=tmp_path)
    assert diff.returncode == 0, diff.stderr
    change = json.loads((tmp_path / "diff.json").read_text())
    assert change["error"]["-"] >= 1
    assert change["error"]["+"] == 0
