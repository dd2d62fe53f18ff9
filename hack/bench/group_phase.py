"""What the group phase adds to a group's check, on localhost.

Starts the members of a group as the injected check runs them in the e2e test: the real
checker (``preflight_dev.demo.fakecheck``: the whole CLI over the fake GPU driver),
one process per pod, meeting on 127.0.0.1. In each run one member is made the slowest by
starting it ``--delay`` seconds after the others (the leader in half the runs, a worker in
the other half). From the reports of that same run:

* ``local``: the local check alone of the member that ends it last (``local_ms``: from
  its check's start to the start of its group phase);
* ``added``: what the group phase adds to it: from the end of that local check
  (``phase_started_at``) to the moment the last member has the group verdict
  (``phase_ended_at``, wall clock of the same machine).

    python hack/bench/group_phase.py [--members 3] [--runs 10] [--delay 1.0]

Prints one line per run and the worst case; exits 1 when ``added`` exceeds --budget (0.3 s).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def member(index: int, size: int, port: int, workdir: Path) -> tuple[list[str], dict[str, str]]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join(str(REPO / d) for d in ("initcontainer", "operator", "dev")),
        "LWS_LEADER_ADDRESS": "127.0.0.1",
        "LWS_GROUP_SIZE": str(size),
        "LWS_WORKER_INDEX": str(index),
        "PREFLIGHT_GROUP_PORT": str(port),
        "PREFLIGHT_GROUP_BIND": "127.0.0.1",
        "PREFLIGHT_VLLM_ARGS": f"vllm serve m -tp 2 -pp {size} --nnodes {size}",
        "PREFLIGHT_NODE_NAME": f"node-{index}",
        "PREFLIGHT_TP": "2",
        "PREFLIGHT_DEADLINE": "30",
    }
    cmd = [sys.executable, "-m", "preflight_dev.demo.fakecheck", "--gpus", "2", "--"]
    cmd += ["--json", str(workdir / f"{index}.json"), "--termination-log", str(workdir / "t")]
    return cmd, env


def one_run(size: int, slow: int, delay: float) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        procs = []
        for index in sorted(range(size), key=lambda i: i == slow):
            if index == slow:
                time.sleep(delay)
            cmd, env = member(index, size, port, workdir)
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL))
        for proc in procs:
            proc.wait(120)
        groups = {}
        for index in range(size):
            report = json.loads((workdir / f"{index}.json").read_text())
            groups[index] = next(c for c in report["checks"] if c["id"] == "group")
    verdicts = {g["status"] for g in groups.values()}
    ready = {i: g["evidence"]["phase_started_at"] for i, g in groups.items()}
    done = max(g["evidence"]["phase_ended_at"] for g in groups.values())
    last = max(ready, key=lambda i: ready[i])  # the member whose local check ended last
    return {
        "slow": slow,
        "last": last,
        "verdicts": sorted(verdicts),
        "local_ms": _local(groups[last]),
        "added_ms": (done - ready[last]) * 1000.0,
        "leader_phase_ms": float(groups[0]["evidence"]["phase_ms"]),
    }


def _local(group: dict[str, Any]) -> float:
    for m in group["evidence"].get("members", []):
        if m["index"] == group["evidence"].get("index") and "local_ms" in m:
            return float(m["local_ms"])
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--budget", type=float, default=0.3)
    args = parser.parse_args()
    worst = 0.0
    for run in range(args.runs):
        slow = 0 if run % 2 == 0 else args.members - 1
        got = one_run(args.members, slow, args.delay)
        worst = max(worst, got["added_ms"])
        print(
            f"run {run}: member {got['last']} ended its local check last (started "
            f"{args.delay:g} s late), "
            f"local check {got['local_ms']:.0f} ms, group phase added {got['added_ms']:.1f} ms"
            f" (leader's phase {got['leader_phase_ms']:.0f} ms), verdicts {got['verdicts']}",
            flush=True,
        )
    print(f"worst added: {worst:.1f} ms (budget {args.budget * 1000:.0f} ms)")
    return 0 if worst <= args.budget * 1000 else 1


if __name__ == "__main__":
    sys.exit(main())
