"""A virtualenv holding torch, for the deep tier's torch code that needs no GPU.

The suite's own virtualenv has no torch: the fast tier must work without it (the product's
``deep`` extra is optional), and the fake driver's tests run the checker as a pod without
torch would. But the group all-reduce over gloo (``preflight_check.group_allreduce``, the
deep tier's check across the members of a group) runs on CPU, and without torch its test
was skipped on every machine but the device one, where it never ran either (issue 40
item 7: only a GPU or a missing root may skip a test).

So the worker ranks of that test run with the python of a virtualenv of their own, made once
by ``hack/prepare_tests.sh`` (``python -m preflight_dev.testing.torchenv``) from
``hack/torch/requirements.txt`` under ``constraints.txt``, in
``$VLLM_PREFLIGHT_CACHE/torch-<key>`` (the key hashes both files and the Python version, so
a changed pin makes a new one). Measured: the first install downloads about 3.5 GB (torch
and the CUDA libraries PyPI's wheel requires) in about 2 minutes; a second run checks a
stamp and installs nothing.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

from preflight_dev.testing.binaries import REPO_ROOT
from preflight_dev.testing.images import cache_dir

REQUIREMENTS = REPO_ROOT / "hack" / "torch" / "requirements.txt"
CONSTRAINTS = REPO_ROOT / "constraints.txt"
STAMP = ".installed"


def key() -> str:
    digest = hashlib.sha256()
    for path in (REQUIREMENTS, CONSTRAINTS):
        digest.update(path.read_bytes())
    digest.update(f"{sys.version_info[0]}.{sys.version_info[1]}".encode())
    return digest.hexdigest()[:12]


def venv_dir() -> Path:
    return cache_dir() / f"torch-{key()}"


def python() -> Path | None:
    """The prepared virtualenv's python, or None where it has not been made."""
    venv = venv_dir()
    interpreter = venv / "bin" / "python"
    return interpreter if (venv / STAMP).is_file() and interpreter.exists() else None


def ensure() -> Path:
    """Make the virtualenv unless it is there; return its python."""
    found = python()
    if found is not None:
        return found
    venv = venv_dir()
    shutil.rmtree(venv, ignore_errors=True)  # a half-made one from an interrupted run
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    interpreter = venv / "bin" / "python"
    subprocess.run(
        [str(interpreter), "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS),
         "-r", str(REQUIREMENTS)],
        check=True,
    )  # fmt: skip
    subprocess.run([str(interpreter), "-c", "import torch.distributed"], check=True)
    (venv / STAMP).write_text("")
    return interpreter


if __name__ == "__main__":
    t0 = time.monotonic()
    print(f"{ensure()} ({time.monotonic() - t0:.0f} s)")
