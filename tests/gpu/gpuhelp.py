"""Helpers for the real-GPU tests (no conftest: these tests also run where the repo's
tests/conftest.py cannot be imported, e.g. on a GPU machine without the operator's deps).

The checker runs as users run it: a subprocess, `python -m preflight_check` with the
package on PYTHONPATH, or the zipapp when PREFLIGHT_ZIPAPP names one. Reports of every
run are copied to PREFLIGHT_GPU_EVIDENCE (a directory) when set, for docs/GPU_RUNS.md.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INITCONTAINER = os.path.join(REPO, "initcontainer")


def cuda_gpu_count() -> int:
    """GPUs CUDA sees with the test process's environment; 0 without a driver."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    if cuda.cuInit(0) != 0:
        return 0
    count = ctypes.c_int(0)
    return count.value if cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 else 0


GPU_COUNT = cuda_gpu_count()
needs_gpus = pytest.mark.skipif(GPU_COUNT == 0, reason="no NVIDIA driver or GPU")
needs_two = pytest.mark.skipif(GPU_COUNT < 2, reason="needs at least 2 GPUs")


@dataclass
class CheckRun:
    code: int
    report: Dict[str, Any]
    stdout: str
    stderr: str

    def check(self, check_id: str) -> Dict[str, Any]:
        for item in self.report["checks"]:
            if item["id"] == check_id:
                return dict(item)
        raise AssertionError(f"no {check_id} in {[c['id'] for c in self.report['checks']]}")


def run_check(
    args: List[str],
    env: Optional[Dict[str, str]] = None,
    unset: Optional[List[str]] = None,
    label: str = "",
    timeout: float = 300.0,
) -> CheckRun:
    environ = dict(os.environ)
    for name in unset or []:
        environ.pop(name, None)
    environ.update(env or {})
    environ["PYTHONPATH"] = INITCONTAINER + os.pathsep + environ.get("PYTHONPATH", "")
    zipapp = os.environ.get("PREFLIGHT_ZIPAPP")
    program = [sys.executable, zipapp] if zipapp else [sys.executable, "-m", "preflight_check"]
    with tempfile.TemporaryDirectory() as tmp:
        report_path = os.path.join(tmp, "report.json")
        done = subprocess.run(
            [*program, *args, "--json", report_path, "--termination-log", os.path.join(tmp, "t")],
            env=environ,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        with open(report_path, encoding="utf-8") as handle:
            report = json.load(handle)
    evidence = os.environ.get("PREFLIGHT_GPU_EVIDENCE")
    if evidence and label:
        os.makedirs(evidence, exist_ok=True)
        with open(os.path.join(evidence, "runs.jsonl"), "a", encoding="utf-8") as handle:
            shown = {k: v for k, v in (env or {}).items() if not k.startswith("NCCL")}
            handle.write(
                json.dumps(
                    {
                        "label": label,
                        "args": args,
                        "env": shown,
                        "exit": done.returncode,
                        "verdict": report.get("verdict"),
                        "duration_ms": report.get("duration_ms"),
                        "checks": [
                            {"id": c["id"], "status": c["status"], "message": c["message"]}
                            for c in report["checks"]
                            if c["status"] != "pass"
                        ],
                    }
                )
                + "\n"
            )
    return CheckRun(done.returncode, report, done.stdout, done.stderr)
