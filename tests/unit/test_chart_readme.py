"""The chart README is helm-docs' output for the chart as it is: it fails when values.yaml,
its `# --` comments, Chart.yaml or README.md.gotmpl change without regenerating it
(`hack/k8s/chart-readme.sh`), and when a value has no description.

Needs the pinned helm-docs (`hack/k8s/build.sh tools`, cached); skipped without it.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from preflight_dev.testing import BinariesNotFound, find_tools_dir

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "vllm-preflight"
README = CHART / "README.md"
SCRIPT = REPO / "hack" / "k8s" / "chart-readme.sh"
ROW = re.compile(r"^\| (\S+) \| (\w+) \| (.*) \| (.*) \|$")


@functools.cache
def tools() -> Path:
    try:
        return find_tools_dir()
    except BinariesNotFound as err:  # pragma: no cover - depends on the machine
        pytest.skip(f"no helm-docs binary: {err}")


def check(chart: Path = CHART) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VLLM_PREFLIGHT_TOOLS_BIN": str(tools())}
    return subprocess.run(
        [str(SCRIPT), "--check", str(chart)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_readme_is_what_helm_docs_generates() -> None:
    result = check()
    assert result.returncode == 0, (
        "charts/vllm-preflight/README.md is out of date; run hack/k8s/chart-readme.sh:\n"
        + result.stdout[-4000:]
        + result.stderr
    )


def test_drift_is_detected(tmp_path: Path) -> None:
    """The check above can fail: an edited README differs from helm-docs' output."""
    chart = tmp_path / "vllm-preflight"
    shutil.copytree(CHART, chart)
    values = chart / "values.yaml"
    values.write_text(values.read_text().replace("replicaCount: 2", "replicaCount: 3"))
    result = check(chart)
    assert result.returncode == 1
    assert "| replicaCount | int | `3` |" in result.stdout


def _leaf_keys(node: object, prefix: str = "") -> set[str]:
    if isinstance(node, dict) and node:
        out: set[str] = set()
        for key, value in node.items():
            out |= _leaf_keys(value, f"{prefix}{key}.")
        return out
    return {prefix.rstrip(".")}


def test_every_value_is_in_the_table_with_a_description() -> None:
    rows = {}
    for line in README.read_text().splitlines():
        match = ROW.match(line)
        if match and match.group(1) not in {"Key", "Repository"}:
            key, _, _, description = match.groups()
            assert "|" not in description.replace("\\|", ""), f"unescaped | in {key}'s row"
            rows[key] = description
    assert rows, "no values table in the README"
    undocumented = sorted(k for k, d in rows.items() if not d.strip())
    assert not undocumented, f"values without a `# --` comment: {undocumented}"
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for key in _leaf_keys(values):
        # helm-docs documents a commented parent object as one row (resources, probes)
        parts = key.split(".")
        assert any(".".join(parts[:n]) in rows for n in range(1, len(parts) + 1)), key
