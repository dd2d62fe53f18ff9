"""Reliability: the operator's event loop under YAML bombs embedded in objects (issue 23).

    .venv/bin/python hack/reliability/loopstall.py [--rayservices 20] [--json OUT]

On the local control plane, an operator serving both webhooks (failurePolicy Fail, 10 s
timeout, as localsetup configures them) and an opted-in namespace under Enforce (the
default policy). Every case of tests/data/hostile/corpus.py ``embedded_cases`` (20
RayServices whose serveConfigV2 is 1,200 nested ``[``, the tester's shape; deep block
YAML, ``- - - x`` chains, alias bombs and a 30 KB flow sequence, in serveConfigV2 and in a
``--config`` ConfigMap) is applied at once, one ``kubectl apply`` each, while

- a thread asks /healthz every 0.1 s and keeps the longest answer time (the chart's
  liveness probe times out after 5 s);
- a broken Deployment (TP=4 on 2 GPUs, tests/data/manifests/bad-tp4-deployment.yaml) is
  applied: under Enforce it must be denied, not admitted by a webhook timeout.

Then, once the controller has seen every object: the operator's own measure of its loop
over that window (metrics.py: a task due every 25 ms; ``lag``, how late it ran, and
``busy``, the part of that lag the loop's thread spent on a CPU, i.e. work holding the
loop rather than a loaded machine not scheduling the process), how many of the bombs were
admitted, the broken Deployment's answer, and whether the operator is alive. First, the
same objects go through the operator's rules pool in this process, without a control
plane (``in_process``). Exits 1 when the broken Deployment was not denied, the operator
died, or the loop was held (busy) longer than ``--max-stall`` seconds (0.1 by default,
issue 23's target).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [
    str(REPO / "operator"),
    str(REPO / "initcontainer"),
    str(REPO / "dev"),
    str(REPO / "tests" / "data" / "hostile"),
]

import corpus  # noqa: E402
import yaml  # noqa: E402

from preflight_dev import localoperator, localsetup  # noqa: E402
from preflight_dev.localoperator import OperatorProcess  # noqa: E402
from preflight_dev.testing import LocalCluster  # noqa: E402
from preflight_dev.testing.base import Cluster  # noqa: E402
from preflight_operator.core import constants  # noqa: E402

LAG = "vllm_preflight_event_loop_lag_max_seconds"
LAG_BUCKET = "vllm_preflight_event_loop_lag_seconds_bucket"
BUSY_BUCKET = "vllm_preflight_event_loop_busy_seconds_bucket"


def lag_buckets(op: OperatorProcess, name: str = LAG_BUCKET) -> dict[float, float]:
    """le -> the cumulative count of a histogram."""
    out = {}
    for line in op.metrics().splitlines():
        if line.startswith(name + "{"):
            head, _, value = line.rpartition(" ")
            le = head.split('le="', 1)[1].split('"', 1)[0]
            out[float(le)] = float(value)
    return out


def window_bound(before: dict[float, float], after: dict[float, float]) -> float:
    """The smallest bucket bound that holds every lag observed between the two scrapes."""
    total = after[float("inf")] - before.get(float("inf"), 0.0)
    for le in sorted(after):
        if after[le] - before.get(le, 0.0) >= total:
            return le
    return float("inf")


def in_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "namespace": namespace}}


def broken_deployment(namespace: str) -> dict[str, Any]:
    text = (REPO / "tests" / "data" / "manifests" / "bad-tp4-deployment.yaml").read_text()
    doc = next(d for d in yaml.safe_load_all(text) if d and d["kind"] == "Deployment")
    return in_namespace(doc, namespace)


class HealthProbe(threading.Thread):
    """/healthz every ``interval`` s; the longest answer time (a failure counts its wait)."""

    def __init__(self, port: int, interval: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.url = f"http://127.0.0.1:{port}/healthz"
        self.interval = interval
        self.longest = 0.0
        self.failures = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            started = time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=30) as response:
                    ok = response.status == 200
            except OSError:
                ok = False
            took = time.monotonic() - started
            self.longest = max(self.longest, took)
            self.failures += 0 if ok else 1
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(timeout=35)


def apply(cluster: Cluster, objects: list[dict[str, Any]]) -> tuple[int, str, float]:
    doc = {"apiVersion": "v1", "kind": "List", "items": objects}
    started = time.monotonic()
    result = cluster.kubectl("apply", "-f", "-", input=json.dumps(doc), check=False)
    return result.returncode, result.stderr, time.monotonic() - started


def run(cluster: Cluster, workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    op: OperatorProcess = localoperator.start_with_webhooks(cluster, workdir / "op")
    namespace = cluster.create_namespace("loop", labels={constants.LABEL_INJECT: "enabled"})
    cases = list(corpus.embedded_cases(args.rayservices))
    probe = HealthProbe(op.health_port)
    try:
        # the webhook configuration points at this operator once a dry run is judged
        deadline = time.monotonic() + 60
        while "cannot run on the GPUs" not in _dry_run_broken(cluster, namespace)[1]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the operator does not judge:\n{op.log_tail()}")
            time.sleep(0.5)
        lag_before, buckets_before = op.metric(LAG), lag_buckets(op)
        busy_before = lag_buckets(op, BUSY_BUCKET)
        probe.start()
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(cases) + 1) as pool:
            bombs = {
                name: pool.submit(apply, cluster, [in_namespace(o, namespace) for o in objs])
                for name, _, objs in cases
            }
            time.sleep(0.5)  # the bombs are in flight
            broken = pool.submit(apply, cluster, [broken_deployment(namespace)]).result()
            answers = {name: future.result() for name, future in bombs.items()}
        # the controller observes the stored bombs (and the workers judge them) after
        # admission: give it time, with the probe still running
        settle_until = time.monotonic() + args.settle
        while time.monotonic() < settle_until and op.running():
            time.sleep(0.5)
        probe.stop()
        alive = op.running() and op.healthy()
        lag = op.metric(LAG) if alive else float("nan")
        busy = window_bound(busy_before, lag_buckets(op, BUSY_BUCKET)) if alive else float("nan")
        bound = window_bound(buckets_before, lag_buckets(op)) if alive else float("nan")
        report = {
            "rayservices": args.rayservices,
            "cases": len(cases),
            "admitted": sum(1 for code, _, _ in answers.values() if code == 0),
            "warned_unread": sum(1 for _, err, _ in answers.values() if "not read" in err),
            "slowest_apply_s": round(max(t for _, _, t in answers.values()), 3),
            "broken_denied": broken[0] != 0 and "cannot run on the GPUs" in broken[1],
            "broken_answer_s": round(broken[2], 3),
            "healthz_longest_s": round(probe.longest, 3),
            "healthz_failures": probe.failures,
            # the largest lag while the bombs were applied and judged: the gauge when it
            # grew in that window, else the histogram's bucket bound (start-up is excluded)
            "loop_lag_max_s": round(lag if lag > lag_before else min(bound, lag), 4),
            "loop_lag_bucket_bound_s": bound,
            "loop_lag_max_since_start_s": round(lag, 4),
            # the same, counting only the loop thread's CPU time in a late interval: the
            # histogram's bucket bound over the window
            "loop_busy_bucket_bound_s": busy,
            "operator_alive": alive,
        }
        report["refused"] = {
            name: err.strip().splitlines()[-1][:300] for name, (code, err, _) in answers.items()
            if code != 0
        }  # fmt: skip
        if not report["broken_denied"]:
            report["broken_stderr"] = broken[1][-500:]
        return report
    finally:
        probe.stop()
        cluster.delete_namespace(namespace)
        localoperator.remove_webhooks(cluster)
        op.stop()
        if args.keep_log:
            shutil.copyfile(op.log_path, args.keep_log)


def _dry_run_broken(cluster: Cluster, namespace: str) -> tuple[int, str, float]:
    doc = broken_deployment(namespace)
    started = time.monotonic()
    result = cluster.kubectl(
        "apply", "--dry-run=server", "-f", "-", input=json.dumps(doc), check=False
    )
    return result.returncode, result.stderr, time.monotonic() - started


def in_process(rayservices: int) -> dict[str, Any]:
    """The same objects through the operator's own rules pool (two budgeted workers, the
    in-process path for plain objects) in one event loop with a probe due every 5 ms, no
    control plane: our code's stall, apart from a loaded machine's scheduling. ``busy``
    is the loop thread's CPU time in the probe's late interval (a stall caused by a
    callback holding the loop costs CPU; a process waiting for a CPU does not)."""
    import asyncio  # noqa: PLC0415

    from preflight_operator.core import rules  # noqa: PLC0415
    from preflight_operator.core.analysis import RulesAnalyser  # noqa: PLC0415
    from preflight_operator.core.operatorconfig import PolicySpec  # noqa: PLC0415
    from preflight_operator.runtime.rulesworker import RulesPool, RulesWorker  # noqa: PLC0415

    cases = list(corpus.embedded_cases(rayservices))
    maps = {
        o["metadata"]["name"]: o for _, _, objs in cases for o in objs if o["kind"] == "ConfigMap"
    }
    lookup = rules.ClusterLookup(config_map=lambda _ns, name: maps.get(name))
    pool = RulesPool([RulesWorker(lookup) for _ in range(2)], 3.0, RulesAnalyser(lookup))
    pool.start()

    async def measure() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        await pool.analyse_async(corpus.ray_service("warm", "a: 1"), PolicySpec())
        worst = {"wall": 0.0, "busy": 0.0}

        async def probe() -> None:
            while True:
                due, cpu = loop.time() + 0.005, time.thread_time()
                await asyncio.sleep(0.005)
                lag = max(0.0, loop.time() - due)
                worst["wall"] = max(worst["wall"], lag)
                worst["busy"] = max(worst["busy"], min(lag, time.thread_time() - cpu))

        task = asyncio.create_task(probe())
        started = time.monotonic()
        objs = [o for _, _, group in cases for o in group if o["kind"] != "ConfigMap"]
        verdicts = await asyncio.gather(*(pool.analyse_async(o, PolicySpec()) for o in objs))
        took = time.monotonic() - started
        await asyncio.sleep(0.02)  # the probe's last wake-up: a stall at the end counts
        task.cancel()
        return {
            "objects": len(objs),
            "all_judged_s": round(took, 3),
            "verdicts": sorted({v.verdict for v in verdicts}),
            "loop_lag_max_ms": round(worst["wall"] * 1000, 1),
            "loop_busy_max_ms": round(worst["busy"] * 1000, 1),
        }

    try:
        return asyncio.run(measure())
    finally:
        pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rayservices", type=int, default=20)
    parser.add_argument("--settle", type=float, default=15.0)
    parser.add_argument("--max-stall", type=float, default=0.1)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--keep-log", type=Path, help="copy the operator's log here (with PYTHONASYNCIODEBUG=1 "
        "it names every callback that held the loop over 0.1 s)",
    )  # fmt: skip
    parser.add_argument("--workdir", type=Path, help="where the operator's log goes (a temp dir)")
    args = parser.parse_args()
    local = in_process(args.rayservices)
    print(json.dumps({"in_process": local}), flush=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp, LocalCluster() as cluster:
        localsetup.install_crds(cluster, wrappers=True)
        report = run(cluster, Path(tmp), args)
    report["in_process"] = local
    print(json.dumps(report), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if (
        not report["broken_denied"]
        or not report["operator_alive"]
        or not report["loop_busy_bucket_bound_s"] <= args.max_stall
    ):
        sys.exit(1)


if __name__ == "__main__":
    main()
