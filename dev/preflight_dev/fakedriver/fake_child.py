"""A checker child process over the fake driver: what `Host.command_for` runs in tests.

Usage: python fake_child.py rank_probe|deep_worker '<request JSON>'
The machine comes from PREFLIGHT_FAKE_MACHINE (FakeMachine JSON). The rank probe runs the
real preflight_check.rank_probe code; the deep worker is simulated (no torch) from
PREFLIGHT_FAKE_DEEP, e.g. {"hang": [1, "all_reduce(tp group)"]}, to exercise the
parent's handling of crashes and hangs. {"import_forever": true} holds every worker in its
"torch import", before its gate, where a real worker spends seconds (docs/GPU_RUNS.md, run
19): only a signal ends it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Dict

HERE = os.path.dirname(os.path.abspath(__file__))  # dev/preflight_dev/fakedriver
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
# Run as a script (harness.FAKE_CHILD): the checker and this package from the checkout.
sys.path[:0] = [os.path.join(REPO, "initcontainer"), os.path.join(REPO, "dev")]

from preflight_check import deep_worker, rank_probe  # noqa: E402
from preflight_check.driver.basics import DriverUnavailable  # noqa: E402
from preflight_dev.fakedriver.fake import FakeCudaDriver, FakeMachine  # noqa: E402
from preflight_dev.fakedriver.harness import NO_DRIVER  # noqa: E402


def fake_deep(request: Dict[str, str], log: rank_probe.JsonLinesLog) -> int:
    plan = json.loads(os.environ.get("PREFLIGHT_FAKE_DEEP", "{}"))
    rank = int(request["rank"])
    hang = plan.get("hang") or [None, None]
    crash = plan.get("crash") or [None, None]
    steps = [
        deep_worker.STEP_IMPORT,
        deep_worker.STEP_SET_DEVICE,
        deep_worker.STEP_ALLOCATE,
        deep_worker.STEP_INIT,
        deep_worker.STEP_ALL_REDUCE,
    ]
    if int(request["tp"]) > 1:
        steps.append(deep_worker.STEP_PEER_COPY)
    if plan.get("import_forever"):
        time.sleep(3600)  # the import never ends: only a signal ends this worker
    log.emit({"note": "torch", "v": "fake"})
    for step in steps:
        if step == deep_worker.STEP_SET_DEVICE and not rank_probe.gate_from_stdin():
            log.emit({"note": "stopped", "v": "stopped"})
            log.emit({"done": True})
            return 0
        log.begin(step, "torch")
        if hang[0] == rank and hang[1] == step:
            time.sleep(3600)
        if crash[0] == rank and crash[1] == step:
            os.abort()
        log.emit({"e": step, "th": "torch", "c": 0, "n": "ok", "ms": 1.0})
    log.emit({"done": True})
    return 0


def main() -> None:
    module, request = sys.argv[1], rank_probe.parse_request(sys.argv[2:])
    machine = FakeMachine.from_json(os.environ["PREFLIGHT_FAKE_MACHINE"])
    log = rank_probe.JsonLinesLog(rank_probe.write_stdout)
    if module == "rank_probe":

        def load() -> FakeCudaDriver:
            if os.environ.get("PREFLIGHT_FAKE_NO_DRIVER"):
                raise DriverUnavailable(NO_DRIVER)
            return FakeCudaDriver(machine, os.environ)

        code = rank_probe.run_probe(load, request, log, rank_probe.gate_from_stdin)
    else:
        code = fake_deep(request, log)
    os._exit(code)


if __name__ == "__main__":
    main()
