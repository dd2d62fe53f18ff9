"""Issue 8 on the fake: an interposer in front of libcuda that mistreats threads without
a context. The probe runs in real child processes, so an abort or a hang there is caught
and reported with the call that caused it."""

from __future__ import annotations

from pathlib import Path

import pytest

from preflight_contract.verdicts import FAIL, PASS, WARN
from preflight_dev.fakedriver.fake import GARBAGE_DEVICE_ID, h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check

pytestmark = pytest.mark.timeout(60)
SHIM = "/opt/vendor/lib/libctxshim.so"


def interposed(mode: str):  # type: ignore[no-untyped-def]
    return h200_machine(2, contextless_get_device=mode, interposed={"cuCtxGetDevice": SHIM})


@pytest.mark.parametrize(
    ("mode", "evidence"),
    [
        ("abort", "crashed the process (SIGABRT)"),
        ("garbage", f"device id {GARBAGE_DEVICE_ID}"),
        ("hang", "did not return within"),
        ("error", "CUDA_ERROR_UNKNOWN instead of CUDA_ERROR_INVALID_CONTEXT"),
    ],
)
def test_misbehaving_interposer_fails_tp_greater_than_one(
    tmp_path: Path, mode: str, evidence: str
) -> None:
    run = run_check(fake_host(interposed(mode)), ["--tp", "2", "--timeout", "4"], tmp_path)
    check = run.check("thread-discipline")
    assert check.status == FAIL
    assert "cuCtxGetDevice in a fresh thread without a context" in check.message
    assert evidence in check.message
    assert "CUDA_ERROR_INVALID_CONTEXT" in check.message
    # The binding itself (done before the probe, from the rank's main thread) still passed.
    assert run.check("context-ranks").status == PASS
    assert run.code == 1


def test_same_misbehaviour_only_warns_with_tp_one(tmp_path: Path) -> None:
    run = run_check(fake_host(interposed("garbage")), ["--tp", "1"], tmp_path)
    assert run.check("thread-discipline").status == WARN
    assert "harmless while TP = 1" in run.check("thread-discipline").message


def test_cuda_library_names_the_interposer_and_the_symbols_it_answers(tmp_path: Path) -> None:
    run = run_check(fake_host(interposed("driver")), ["--tp", "2"], tmp_path)
    library = run.check("cuda-library")
    assert library.status == PASS
    assert SHIM in library.message
    assert "cuCtxGetDevice" in library.message
    # An interposer that behaves like the driver passes the probe.
    assert run.check("thread-discipline").status == PASS


def test_without_interposer_everything_passes(tmp_path: Path) -> None:
    run = run_check(fake_host(h200_machine(2)), ["--tp", "2"], tmp_path)
    assert run.check("cuda-library").message.startswith("NVIDIA's driver 580.159.04")
    assert run.check("thread-discipline").status == PASS
    calls = run.check("thread-discipline").evidence["ranks"][0]["calls"]
    assert {"call": "cuCtxGetDevice", "thread": "fresh-unbound"}.items() <= calls[1].items()
    assert calls[1]["result"] == "CUDA_ERROR_INVALID_CONTEXT"
