"""`make cluster`: the local control plane in the foreground.

    python -m preflight_dev.testing.cluster [--keep-workdir] [--node=auto|yes|no]

prints the kubeconfig path and the start time, starts a real node (realnode.py: containerd,
runc, kubelet) where the machine allows it (``auto`` says why not and goes on without;
``yes`` fails instead), then runs until Ctrl-C or SIGTERM (or until
a component dies) and stops everything it started. It always starts a local cluster;
VLLM_PREFLIGHT_KUBECONFIG only concerns the tests (selection.py).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence

from preflight_dev.testing import images, realnode
from preflight_dev.testing.local import LocalCluster
from preflight_dev.testing.process import signals_as_keyboard_interrupt
from preflight_dev.testing.realnode import RealNode


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
    parser.add_argument(
        "--node",
        choices=("auto", "yes", "no"),
        default="auto",
        help="a real node (containerd, runc, kubelet): auto starts one where the machine "
        "allows it and says why not otherwise",
    )
    args = parser.parse_args(argv)
    cluster = LocalCluster()
    node: RealNode | None = None
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
            reason = realnode.unsupported() if args.node != "no" else "--node=no"
            if reason and args.node == "yes":
                raise RuntimeError(f"no real node: {reason}")
            if reason:
                _say(f"no real node ({reason}); pods stay Pending")
            else:
                node = RealNode(cluster).start()
                steps = ", ".join(f"{name} {t:.1f} s" for name, t in node.ready_after.items())
                _say(
                    f"real node {node.name} Ready with {node.gpus} {realnode.GPU_RESOURCE} "
                    f"(advertised, no device) in {node.startup_seconds:.1f} s ({steps}); "
                    f"images: {images.WORKLOAD_IMAGE}, {images.INSTALLER_IMAGE}"
                )
            _say(f"try: export KUBECONFIG={cluster.kubeconfig} PATH={cluster.bin_dir}:$PATH")
            _say("Ctrl-C stops it.")
            while True:
                time.sleep(0.5)
                cluster.check_alive()
                if node is not None:
                    node.check_alive()
        except KeyboardInterrupt:
            pass
        except RuntimeError as err:  # ComponentError, BinariesNotFound, the real node's
            print(f"error: {err}", file=sys.stderr, flush=True)
            code = 1
        finally:
            # A second Ctrl-C must not abandon the components half-stopped.
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(signum, signal.SIG_IGN)
            t0 = time.monotonic()
            workdir = cluster.workdir if cluster.is_started else None
            if node is not None:
                node.stop()
            cluster.stop(keep_workdir=True if args.keep_workdir else None)
            if workdir is not None:
                kept = f"; kept {workdir}" if workdir.exists() else ""
                _say(f"stopped in {time.monotonic() - t0:.1f} s{kept}")
    return code


if __name__ == "__main__":
    sys.exit(main())
