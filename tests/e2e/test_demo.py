"""`make demo` end to end: its own control plane, the real checker over a fake GPU view,
one passing and one failing workload with the reason, and nothing left running."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def processes_mentioning(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


@pytest.mark.slow
def test_make_demo_shows_one_passing_and_one_failing_workload() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "preflight_dev.demo"],
        cwd=REPO, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    out = result.stdout
    assert result.returncode == 0, f"{out[-3000:]}\n{result.stderr[-3000:]}"
    assert "denied the request" in out
    assert "Warning: vllm-preflight fail: gpu-count-too-low" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith("deployment-vllm-")}  # fmt: skip
    assert rows["deployment-vllm-good"][1:6] == ["Deployment/vllm-good", "2", "2/2", "pass", "pass"]
    assert rows["deployment-vllm-bad"][1:7] == [
        "Deployment/vllm-bad", "4", "2/4", "fail", "fail", "gpu-count"]  # fmt: skip
    assert "PreflightCheckFailed" in out
    elapsed = re.search(r"demo finished in (\d+) s", out)
    assert elapsed is not None  # the figure is reported (README's is measured, not asserted)
    workdir = re.search(r"Kubernetes \S+, in (\S+)", out)
    assert workdir is not None
    assert processes_mentioning(workdir.group(1)) == []
    assert processes_mentioning("vllm-preflight-demo-") == []
