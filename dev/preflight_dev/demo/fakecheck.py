"""Runs the real checker (``preflight_check.cli.main``, as the injected container does)
over the fake GPU driver of the checker's tests, for the demo's pods.

    python -m preflight_dev.demo.fakecheck --gpus N -- [check options]

The environment is the pod's preflight-check container env (PREFLIGHT_TP, ...,
CUDA_VISIBLE_DEVICES); ``--gpus`` is how many GPUs the device plugin handed the pod.

FAKE GPU VIEW: the fake driver is the checker tests' own (preflight_dev.fakedriver: a
FakeMachine of H200s behaving as docs/GPU_FACTS.md says) and is plugged in through the
checker's Host; the checker has no switch (such as an environment variable) that selects
it from ``python -m preflight_check``, so this runs where preflight_dev is installed
(``make venv``), never in the product.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fakecheck")
    parser.add_argument("--gpus", type=int, required=True, help="GPUs the pod was given")
    parser.add_argument(
        "--shm-bytes", type=int, default=None, help="size of the pod's /dev/shm (default: large)"
    )
    parser.add_argument(
        "--ecc-uncorrectable",
        type=int,
        default=0,
        help="volatile uncorrectable ECC errors on GPU 0 (a broken GPU; default 0)",
    )
    parser.add_argument("check_args", nargs="*", help="options of `vllm-preflight check`")
    args = parser.parse_args(argv)
    from preflight_check.cli import main as check_main  # noqa: PLC0415

    machine = h200_machine(max(0, args.gpus))
    if args.ecc_uncorrectable and machine.gpus:
        machine.gpus[0].ecc_uncorrectable = args.ecc_uncorrectable
    if args.shm_bytes is None:
        host = fake_host(machine, dict(os.environ))
    else:
        host = fake_host(machine, dict(os.environ), shm_size=args.shm_bytes)
    return check_main(["check", *args.check_args], host=host)


if __name__ == "__main__":
    sys.exit(main())
