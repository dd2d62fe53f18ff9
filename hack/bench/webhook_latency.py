"""Benchmark: the validating webhook under steady load vs a do-nothing TLS floor.

    .venv/bin/python hack/bench/webhook_latency.py [--rate 200] [--seconds 20] [--rounds 2]

What runs: a local control plane (the operator's kopf needs an API server to start), the
operator as in production (`vllm-preflight operator`, its kopf webhook server, the rules
engine, policies from the API), and the floor (floor_webhook.py: same aiohttp, same TLS
certificate, answers "allowed" without reading the object). A load generator in this
process POSTs AdmissionReview requests straight to each server (not through the API
server, whose own latency would hide the webhook's) over keep-alive TLS connections, as
the API server does: an open loop at a fixed rate (latency under steady load), then a
closed loop at fixed concurrency (throughput). The floor and the operator alternate
within one run, so both see the same machine.

Requests carry realistic vLLM Deployments (TP 1-8, env, /dev/shm volumes, probes,
sidecars); one in ten fails the rules and is sent as a dry run (as `kubectl apply
--dry-run=server` in CI does), so the denial path is measured without an Event per request.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import ssl
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "operator"), str(REPO / "initcontainer"), str(REPO / "dev")]

from preflight_dev import localsetup  # noqa: E402
from preflight_dev.localoperator import OperatorProcess  # noqa: E402
from preflight_dev.testing import LocalCluster  # noqa: E402
from preflight_dev.testing.process import Component, free_ports, port_is_listening  # noqa: E402

MANIFESTS = REPO / "tests" / "data" / "manifests"


def deployments(count: int) -> list[dict[str, Any]]:
    """``count`` distinct vLLM Deployments; every tenth one fails (TP > GPUs)."""
    good = next(
        d for d in yaml.safe_load_all((MANIFESTS / "good-tp2-deployment.yaml").read_text())
        if d["kind"] == "Deployment"
    )  # fmt: skip
    out = []
    for i in range(count):
        doc = copy.deepcopy(good)
        tp = [1, 2, 4, 8][i % 4]
        name = f"vllm-{i}"
        doc["metadata"] = {"name": name, "namespace": "bench", "uid": str(uuid.uuid4()),
                           "labels": {"app": name, "team": f"t{i % 7}"}}  # fmt: skip
        doc["spec"]["selector"] = {"matchLabels": {"app": name}}
        pod = doc["spec"]["template"]
        pod["metadata"] = {"labels": {"app": name}}
        container = pod["spec"]["containers"][0]
        container["args"] = [f"org/model-{i % 13}", f"--tensor-parallel-size={tp}",
                             "--gpu-memory-utilization=0.90", "--max-model-len=32768",
                             "--port=8000"]  # fmt: skip
        container["env"] = [
            {"name": "HF_HOME", "value": "/models"},
            {"name": "NCCL_DEBUG", "value": "WARN"},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        ]
        container["readinessProbe"] = {"httpGet": {"path": "/health", "port": 8000}}
        gpus = tp if i % 10 else tp // 2 or 1  # every tenth: too few GPUs
        if i % 10 == 0 and tp == 1:
            container["args"][1] = "--tensor-parallel-size=2"
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus, "memory": "64Gi"},
                                  "requests": {"cpu": "8", "memory": "64Gi"}}  # fmt: skip
        pod["spec"]["containers"].append(
            {"name": "metrics", "image": "prom/statsd-exporter:v0.26.0",
             "ports": [{"containerPort": 9102}]}
        )  # fmt: skip
        out.append(doc)
    return out


def review(obj: dict[str, Any]) -> bytes:
    failing = obj["metadata"]["name"].endswith("0")
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
            "requestKind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "requestResource": {"group": "apps", "version": "v1", "resource": "deployments"},
            "name": obj["metadata"]["name"],
            "namespace": "bench",
            "operation": "CREATE",
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
            "object": obj,
            "oldObject": None,
            "dryRun": failing,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }
    return json.dumps(body).encode()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def open_loop(url: str, bodies: list[bytes], ctx: ssl.SSLContext, rate: float,
                    seconds: float) -> dict[str, float]:  # fmt: skip
    """Requests sent at a fixed rate whatever the answers do (no coordinated omission)."""
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(ssl=ctx, limit=64)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(body: bytes) -> None:
            nonlocal errors
            started = time.perf_counter()
            try:
                async with session.post(
                    url, data=body, headers={"Content-Type": "application/json"}
                ) as rsp:
                    await rsp.read()
                    if rsp.status != 200:
                        errors += 1
            except aiohttp.ClientError:
                errors += 1
            latencies.append(time.perf_counter() - started)

        for body in bodies[:8]:  # warm the connections and the server
            await one(body)
        latencies.clear()
        tasks = []
        start = time.perf_counter()
        total = int(rate * seconds)
        for i in range(total):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(bodies[i % len(bodies)])))
        await asyncio.gather(*tasks)
    return {
        "requests": len(latencies),
        "errors": errors,
        "p50_ms": 1000 * percentile(latencies, 0.50),
        "p99_ms": 1000 * percentile(latencies, 0.99),
        "mean_ms": 1000 * statistics.fmean(latencies),
    }


async def closed_loop(url: str, bodies: list[bytes], ctx: ssl.SSLContext, concurrency: int,
                      seconds: float) -> float:  # fmt: skip
    """Requests per second with ``concurrency`` requests always in flight."""
    done = 0
    connector = aiohttp.TCPConnector(ssl=ctx, limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        deadline = time.perf_counter() + seconds

        async def worker(offset: int) -> None:
            nonlocal done
            i = offset
            while time.perf_counter() < deadline:
                async with session.post(
                    url, data=bodies[i % len(bodies)], headers={"Content-Type": "application/json"}
                ) as rsp:
                    await rsp.read()
                done += 1
                i += concurrency

        started = time.perf_counter()
        await asyncio.gather(*(worker(k) for k in range(concurrency)))
        return done / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0, help="requests/s, open loop")
    parser.add_argument("--seconds", type=float, default=20.0, help="per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="floor/operator alternations")
    parser.add_argument("--concurrency", type=int, default=8, help="closed loop")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    bodies = [review(d) for d in deployments(200)]
    results: dict[str, Any] = {"rate": args.rate, "seconds": args.seconds,
                               "cpus": os.cpu_count(), "floor": [], "operator": []}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, LocalCluster() as cluster:
        localsetup.install_crds(cluster, lws=False)
        cert = cluster.issue_serving_cert()
        operator = OperatorProcess(
            kubeconfig=cluster.kubeconfig, cert_path=cert.cert_path, key_path=cert.key_path,
            workdir=Path(tmp), identity="bench-operator", env=cluster.env(),
        )  # fmt: skip
        (floor_port,) = free_ports(1)
        floor = Component(
            "floor-webhook",
            [sys.executable, str(Path(__file__).with_name("floor_webhook.py")),
             "--port", str(floor_port), "--cert", str(cert.cert_path),
             "--key", str(cert.key_path)],
            Path(tmp) / "floor.log",
        )  # fmt: skip
        with operator:
            floor.start()
            try:
                while not port_is_listening(floor_port):
                    time.sleep(0.1)
                ctx = ssl.create_default_context(cadata=cert.ca_pem.decode())
                targets = {
                    "floor": f"https://127.0.0.1:{floor_port}/validate?timeout=10s",
                    "operator": f"https://127.0.0.1:{operator.webhook_port}/validate?timeout=10s",
                }
                for round_ in range(args.rounds):
                    for name, url in targets.items():
                        stats = asyncio.run(open_loop(url, bodies, ctx, args.rate, args.seconds))
                        stats["throughput_rps"] = asyncio.run(
                            closed_loop(url, bodies, ctx, args.concurrency, args.seconds / 2)
                        )
                        results[name].append(stats)
                        print(f"round {round_ + 1} {name:8} " + "  ".join(
                            f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in stats.items()), flush=True)  # fmt: skip
                # the operator counted what it answered: proof the load reached the rules
                results["operator_reviews_counted"] = operator.metric(
                    "vllm_preflight_admission_reviews_total"
                )
            finally:
                floor.stop()

    # Each round measured the floor and the operator back to back: compare within a round,
    # then take the median round (one noisy round on a shared machine does not decide).
    pairs = list(zip(results["floor"], results["operator"]))
    ratios = sorted(op["p99_ms"] / floor["p99_ms"] for floor, op in pairs)
    summary = {
        "floor_p50_ms": statistics.median(r["p50_ms"] for r in results["floor"]),
        "floor_p99_ms": statistics.median(r["p99_ms"] for r in results["floor"]),
        "operator_p50_ms": statistics.median(r["p50_ms"] for r in results["operator"]),
        "operator_p99_ms": statistics.median(r["p99_ms"] for r in results["operator"]),
        "floor_rps": statistics.median(r["throughput_rps"] for r in results["floor"]),
        "operator_rps": statistics.median(r["throughput_rps"] for r in results["operator"]),
        "p99_ratio_per_round": [round(r, 2) for r in ratios],
        "p99_ratio_median": round(statistics.median(ratios), 2),
    }
    results["summary"] = summary
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
