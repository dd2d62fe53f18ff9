"""Issue 8 on real GPUs: an LD_PRELOAD shim in front of NVIDIA's libcuda mistreats threads
without a context (abort, garbage id, hang, other error). The check must catch each one,
name the call, and pass when there is no shim. The shim is compiled here from
tests/gpu/shim/ctxshim.c (skipped without a C compiler)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Iterator

import pytest
from tests.gpu.gpuhelp import GPU_COUNT, needs_gpus, run_check

pytestmark = [pytest.mark.gpu, needs_gpus]
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim", "ctxshim.c")
TP = str(min(2, GPU_COUNT) or 1)


@pytest.fixture(scope="module")
def shim() -> Iterator[str]:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the shim")
    with tempfile.TemporaryDirectory() as tmp:
        library = os.path.join(tmp, "libctxshim.so")
        subprocess.run(
            [compiler, "-shared", "-fPIC", "-O2", "-o", library, SOURCE, "-ldl"], check=True
        )
        yield library


def test_no_shim_passes() -> None:
    run = run_check(["--tp", TP], unset=["LD_PRELOAD"], label="no-shim")
    assert run.check("thread-discipline")["status"] == "pass"
    assert run.check("cuda-library")["message"].startswith("NVIDIA's driver")


def test_shim_that_behaves_is_named_but_passes(shim: str) -> None:
    run = run_check(["--tp", TP], env={"LD_PRELOAD": shim}, label="shim-passthrough")
    library = run.check("cuda-library")
    assert "libctxshim.so" in library["message"]
    assert "cuCtxGetDevice" in library["message"]
    assert run.check("thread-discipline")["status"] == "pass"


@pytest.mark.parametrize(
    ("mode", "evidence"),
    [
        ("abort", "crashed the process (SIGABRT)"),
        ("garbage", "device id 850725928"),
        ("hang", "did not return within"),
        ("error", "instead of CUDA_ERROR_INVALID_CONTEXT"),
    ],
)
def test_misbehaving_shim_is_caught(shim: str, mode: str, evidence: str) -> None:
    run = run_check(
        ["--tp", TP, "--timeout", "6"],
        env={"LD_PRELOAD": shim, "CTXSHIM_MODE": mode},
        label=f"shim-{mode}",
    )
    check = run.check("thread-discipline")
    expected = "fail" if int(TP) > 1 else "warn"
    assert check["status"] == expected, check
    assert "cuCtxGetDevice in a fresh thread without a context" in check["message"]
    assert evidence in check["message"]
    # Binding from the rank's own thread is untouched by the shim.
    assert run.check("context-ranks")["status"] == "pass"
