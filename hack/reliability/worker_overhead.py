"""What running the rules in their budgeted child process (rulesworker.py) costs per call.

    .venv/bin/python hack/reliability/worker_overhead.py [--calls 2000]

Analyses the same Deployment (tests/data/manifests/bad-tp4-deployment.yaml) in-process,
through one worker, and as the webhooks do (the pool of 2 workers, from the event loop),
and prints the mean time per call of each, plus the operator-side and worker-side peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "operator"), str(REPO / "initcontainer")]

import yaml  # noqa: E402

from preflight_operator.core.analysis import RulesAnalyser  # noqa: E402
from preflight_operator.core.operatorconfig import PolicySpec  # noqa: E402
from preflight_operator.runtime.rulesworker import RulesPool, RulesWorker  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    manifest = REPO / "tests" / "data" / "manifests" / "bad-tp4-deployment.yaml"
    body = next(d for d in yaml.safe_load_all(manifest.read_text()) if d["kind"] == "Deployment")
    policy = PolicySpec()
    local = RulesAnalyser()
    worker = RulesWorker()
    worker.start()
    assert worker.analyse(body, policy) == local.analyse(body, policy)
    pool = RulesPool([RulesWorker(), RulesWorker()], budget=3.0)
    pool.start()

    async def from_the_loop(calls: int) -> float:
        await pool.analyse_async(body, policy)  # started and warm
        started = time.perf_counter()
        for _ in range(calls):
            await pool.analyse_async(body, policy)
        return (time.perf_counter() - started) / calls * 1000

    timings = {}
    for name, analyse in (("in-process", local.analyse), ("worker", worker.analyse)):
        started = time.perf_counter()
        for _ in range(args.calls):
            analyse(body, policy)
        timings[name] = (time.perf_counter() - started) / args.calls * 1000
    timings["pool, async"] = asyncio.run(from_the_loop(args.calls))
    pid = worker.pid
    hwm = next(
        line.split()[1]
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmHWM:")
    )
    worker.close()
    pool.close()
    for name, ms in timings.items():
        print(f"{name:>11}: {ms:.3f} ms per call ({args.calls} calls)")
    print(f"parent peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB,"
          f" worker peak RSS {int(hwm) / 1024:.0f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
