"""`make cluster`: the local control plane in the foreground.

    python -m preflight_dev.testing.cluster [--keep-workdir]

prints the kubeconfig path and the start time, then runs until Ctrl-C or SIGTERM (or until
a component dies) and stops everything it started. It always starts a local cluster;
VLLM_PREFLIGHT_KUBECONFIG only concerns the tests (selection.py).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence

from preflight_dev.testing.binaries import BinariesNotFound
from preflight_dev.testing.local import ComponentError, LocalCluster
from preflight_dev.testing.process import signals_as_keyboard_interrupt


def _say(line: str) -> None:
    print(line, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m preflight_dev.testing.cluster",
        description="Run the local control plane (etcd, kube-apiserver, "
        "kube-controller-manager) in the foreground until Ctrl-C or SIGTERM.",
    )
    parser.add_argument(
        "--keep-workdir",
        action="store_true",
        help="keep certificates, etcd data and logs after stopping",
    )
    args = parser.parse_args(argv)
    cluster = LocalCluster()
    code = 0
    with signals_as_keyboard_interrupt():
        try:
            cluster.start()
            _say(f"kubeconfig: {cluster.kubeconfig}")
            steps = ", ".join(f"{name} {t:.1f} s" for name, t in cluster.ready_after.items())
            _say(
                f"control plane {cluster.version} ready at {cluster.server} in "
                f"{cluster.startup_seconds:.1f} s ({steps}); logs in {cluster.logs_dir}"
            )
            _say(f"try: export KUBECONFIG={cluster.kubeconfig} PATH={cluster.bin_dir}:$PATH")
            _say("Ctrl-C stops it.")
            while True:
                time.sleep(0.5)
                cluster.check_alive()
        except KeyboardInterrupt:
            pass
        except (ComponentError, BinariesNotFound) as err:
            print(f"error: {err}", file=sys.stderr, flush=True)
            code = 1
        finally:
            # A second Ctrl-C must not abandon the components half-stopped.
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(signum, signal.SIG_IGN)
            t0 = time.monotonic()
            workdir = cluster.workdir if cluster.is_started else None
            cluster.stop(keep_workdir=True if args.keep_workdir else None)
            if workdir is not None:
                kept = f"; kept {workdir}" if workdir.exists() else ""
                _say(f"stopped in {time.monotonic() - t0:.1f} s{kept}")
    return code


if __name__ == "__main__":
    sys.exit(main())
