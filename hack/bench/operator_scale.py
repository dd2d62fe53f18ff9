"""Benchmark: the operator with 1,000 vLLM Deployments and 5,000 injected pods.

    .venv/bin/python hack/bench/operator_scale.py [--deployments 1000] [--pods-per 5]
        [--rate 50] [--unrelated 5000] [--profile operator.prof]

Measures, on the local control plane:
- the time from a pod's check result (its status write, as the kubelet makes it) to the
  GPUValidation status that shows it, seen by a watch in this process (p50/p95/max), for
  every pod, while results arrive at a steady ``--rate`` per second;
- the operator's peak RSS against a floor run alongside it: a bare kopf operator that
  watches the same pods the same way (floor_operator.py);
- the RSS of both before and after ``--unrelated`` pods without the injected label appear
  in another namespace (the pod watch is label-selected on the server: it should not grow);
- per reconcile of the results phase, the operator's API requests (by verb, from its own
  ``api_request_duration_seconds`` counts) and its CPU seconds, against the floor's;
- with ``--profile``, the operator runs under cProfile (profiled.py; slower: use the
  profile for where the time goes, not the latency figures of that run).

This plays the controllers: the control plane's controller-manager is stopped once the
namespaces are ready, and this script creates the Deployments, their ReplicaSets and the
pods itself (the controller-manager's client is limited to 20 requests/s: 5,000 pods
would take minutes). Pods are created already injected, with the init containers the
mutating webhook would add (same builder), so the webhook is not on this path; the
webhook has its own benchmark (webhook_latency.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "operator"), str(REPO / "initcontainer"), str(REPO / "dev")]

from preflight_contract.report import CheckResult, GPUEntry, Report  # noqa: E402
from preflight_dev import fakekubelet, localsetup  # noqa: E402
from preflight_dev.localoperator import OperatorProcess  # noqa: E402
from preflight_dev.testing import LocalCluster  # noqa: E402
from preflight_dev.testing.process import Component  # noqa: E402
from preflight_operator.core import constants  # noqa: E402
from preflight_operator.core.injection import Injection, plan_injection  # noqa: E402
from preflight_operator.core.operatorconfig import InjectionConfig, PolicySpec  # noqa: E402
from preflight_operator.core.static import Plan  # noqa: E402
from preflight_operator.runtime.api import KubeApi  # noqa: E402
from preflight_operator.runtime.credentials import credentials_from_kubeconfig  # noqa: E402

NAMESPACE = "bench"
UNRELATED = "unrelated"
PASSED = Report(
    checks=[CheckResult("gpu-count", "pass", "CUDA sees 2 GPUs")],
    gpus=[GPUEntry(0, "GPU-a", "0000:06:00.0"), GPUEntry(1, "GPU-b", "0000:07:00.0")],
).to_termination_message()


def memory_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields["VmRSS"], fields["VmHWM"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Sampler(threading.Thread):
    """Peak RSS of some processes, sampled every 0.2 s (VmHWM is the kernel's own peak)."""

    def __init__(self, pids: dict[str, int]) -> None:
        super().__init__(daemon=True)
        self.pids = pids
        self.peak = dict.fromkeys(pids, 0)
        self.stop_flag = threading.Event()

    def run(self) -> None:
        while not self.stop_flag.wait(0.2):
            for name, pid in self.pids.items():
                self.peak[name] = max(self.peak[name], memory_kib(pid)[0])


def deployment(i: int) -> dict[str, Any]:
    name = f"vllm-{i:04d}"
    labels = {"app": name}
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "command": ["vllm", "serve"],
        "args": [f"org/model-{i % 13}", "--tensor-parallel-size=2", "--port=8000"],
        "env": [{"name": "HF_HOME", "value": "/models"}],
        "resources": {"limits": {"nvidia.com/gpu": 2}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "replicas": 5,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [container],
                    "volumes": [{"name": "dshm",
                                 "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}],
                },
            },
        },
    }  # fmt: skip


def replicaset(deploy: dict[str, Any], uid: str) -> dict[str, Any]:
    name = deploy["metadata"]["name"]
    labels = {**deploy["spec"]["template"]["metadata"]["labels"], "pod-template-hash": "h1"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{name}-h1", "namespace": NAMESPACE, "labels": labels,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                 "uid": uid, "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {
            "replicas": deploy["spec"]["replicas"],
            "selector": {"matchLabels": labels},
            "template": {**deploy["spec"]["template"], "metadata": {"labels": labels}},
        },
    }  # fmt: skip


def injected_pod(rs: dict[str, Any], uid: str, j: int) -> dict[str, Any]:
    """A pod as the ReplicaSet controller would make it, after the mutating webhook."""
    template = rs["spec"]["template"]
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{rs['metadata']['name']}-{j}",
            "namespace": NAMESPACE,
            "labels": dict(template["metadata"]["labels"]),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": rs["metadata"]["name"], "uid": uid,
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": json.loads(json.dumps(template["spec"])),
    }  # fmt: skip
    plan = Plan(tp=2, pp=1, dp=1, dp_local=1, gpus_needed=2, container="vllm")
    injection = plan_injection(
        pod, container="vllm", plan=plan, policy=PolicySpec(), config=InjectionConfig(),
        workload_label=f"deployment.{rs['metadata']['name'][:-3]}",
    )  # fmt: skip
    assert isinstance(injection, Injection)
    pod["spec"]["initContainers"] = injection.init_containers
    pod["spec"]["volumes"] = injection.volumes
    pod["metadata"]["labels"].update(injection.labels)
    return pod


def unrelated_pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"web-{i:05d}", "namespace": UNRELATED, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                 "env": [{"name": "X", "value": "y" * 200}]}]},
    }  # fmt: skip


async def create_all(api: KubeApi, path: str, objects: Iterable[dict[str, Any]],
                     concurrency: int = 24) -> list[dict[str, Any]]:  # fmt: skip
    queue = list(objects)
    created: list[dict[str, Any]] = [{}] * len(queue)
    index = 0

    async def worker() -> None:
        nonlocal index
        while index < len(queue):
            i, index = index, index + 1
            created[i] = await api.request("POST", path, body=queue[i])

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return created


async def count_settled(api: KubeApi, want: int) -> int:
    settled = 0
    async for items, _ in api.list_pages(f"/apis/{constants.API_VERSION}/namespaces/"
                                         f"{NAMESPACE}/gpuvalidations"):  # fmt: skip
        settled += sum(1 for i in items if (i.get("status") or {}).get("runtimeVerdict"))
    return settled


async def results_phase(api: KubeApi, pods: list[dict[str, Any]], rate: float,
                        timeout: float) -> dict[str, Any]:  # fmt: skip
    """Writes every pod's result at ``rate``/s; returns the result-to-status latencies."""
    written: dict[str, float] = {}
    seen: dict[str, float] = {}
    path = f"/apis/{constants.API_VERSION}/namespaces/{NAMESPACE}/gpuvalidations"
    version = ""
    async for _, page_version in api.list_pages(path):
        version = page_version

    def note(obj: dict[str, Any], now: float) -> None:
        for entry in ((obj.get("status") or {}).get("runtime") or {}).get("pods") or []:
            if entry.get("verdict") == "pass" and entry["pod"] in written:
                seen.setdefault(entry["pod"], now)

    async def watch() -> None:
        nonlocal version
        while len(seen) < len(pods):
            try:
                async for event in api.watch(path, version):
                    obj = event.get("object") or {}
                    version = (obj.get("metadata") or {}).get("resourceVersion", version)
                    note(obj, time.monotonic())
            except Exception as exc:  # a broken watch: list (late but never lost), rewatch
                print(f"bench watch restarted: {exc!r}", flush=True)
                async for items, page_version in api.list_pages(path):
                    version = page_version
                    for obj in items:
                        note(obj, time.monotonic())

    write_times: list[float] = []

    async def write(pod: dict[str, Any]) -> None:
        status = fakekubelet.pod_status(pod, exit_code=0, message=PASSED)
        name = pod["metadata"]["name"]
        sent = time.monotonic()
        await fakekubelet.write_status(api, NAMESPACE, name, status)
        written[name] = time.monotonic()
        write_times.append(written[name] - sent)

    watcher = asyncio.create_task(watch())
    started = time.monotonic()
    writers = []
    for i, pod in enumerate(pods):
        delay = started + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        writers.append(asyncio.create_task(write(pod)))
    await asyncio.gather(*writers)
    deadline = time.monotonic() + timeout
    while len(seen) < len(pods) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    watcher.cancel()
    missing = sorted(set(written) - set(seen))
    if missing:  # say where they are: not in any status, or with another verdict
        found: dict[str, Any] = {}
        async for items, _ in api.list_pages(path):
            for obj in items:
                for entry in ((obj.get("status") or {}).get("runtime") or {}).get("pods") or []:
                    if entry["pod"] in missing:
                        found[entry["pod"]] = entry.get("verdict")
        print(f"not seen: {missing[:10]}; in the statuses now: {found}", flush=True)
    latencies = sorted(max(0.0, seen[p] - written[p]) for p in seen)
    return {
        "results": len(pods),
        "recorded": len(seen),
        "rate_per_s": rate,
        "write_seconds": round(time.monotonic() - started, 1),
        "p50_s": round(statistics.median(latencies), 3) if latencies else None,
        "p95_s": round(latencies[int(0.95 * (len(latencies) - 1))], 3) if latencies else None,
        "max_s": round(latencies[-1], 3) if latencies else None,
        # the pod status writes themselves (the API server's own latency under this load)
        "status_write_p95_s": round(sorted(write_times)[int(0.95 * (len(write_times) - 1))], 3),
        "status_write_max_s": round(max(write_times), 3),
    }


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def counts(operator: OperatorProcess) -> dict[str, float]:
    """The operator's request counts by verb, its reconciles and status writes, so far."""
    out: dict[str, float] = {}
    for line in operator.metrics().splitlines():
        head, _, value = line.rpartition(" ")
        if head.startswith("vllm_preflight_api_request_duration_seconds_count{"):
            out["api_" + head.split('verb="', 1)[1].split('"', 1)[0]] = float(value)
        elif head == "vllm_preflight_reconcile_duration_seconds_count":
            out["reconciles"] = float(value)
        elif head == "vllm_preflight_status_writes_total":
            out["status_writes"] = float(value)
    return out


def per_reconcile(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """What the results phase cost, per reconcile."""
    delta = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    reconciles = delta.get("reconciles", 0.0) or 1.0
    api = {k[4:]: v for k, v in delta.items() if k.startswith("api_") and v}
    return {
        "reconciles": int(delta.get("reconciles", 0)),
        "status_writes": int(delta.get("status_writes", 0)),
        "api_requests": {k: int(v) for k, v in sorted(api.items())},
        "api_requests_per_reconcile": round(sum(api.values()) / reconciles, 2),
    }


async def scenario(
    kubeconfig: Path,
    args: argparse.Namespace,
    report: dict[str, Any],
    pids: dict[str, int],
    operator: OperatorProcess,
) -> None:
    """Create the workloads, wait until they settle, play the results, then add noise."""
    # a loaded 2-core control plane answers slowly: wait rather than fail the run
    creds = credentials_from_kubeconfig(kubeconfig)
    async with KubeApi(creds, max_connections=32, timeout=120.0) as api:
        pods = await create_workloads(api, args.deployments, args.pods_per)
        t1 = time.monotonic()
        while await count_settled(api, args.deployments) < args.deployments:
            await asyncio.sleep(1)
        report["settle_s"] = round(time.monotonic() - t1, 1)
        say(f"{args.deployments} GPUValidations pending after {report['settle_s']} s")
        report["rss_loaded_mib"] = {k: memory_kib(p)[0] // 1024 for k, p in pids.items()}
        cpu_before = {k: cpu_seconds(p) for k, p in pids.items()}
        counted = counts(operator)
        report["latency"] = await results_phase(api, pods, args.rate, timeout=args.timeout)
        report["cpu_s_during_results"] = {
            k: round(cpu_seconds(p) - cpu_before[k], 1) for k, p in pids.items()
        }
        report["results_phase"] = per_reconcile(counted, counts(operator))
        report["load_after_results"] = os.getloadavg()
        say(f"results: {report['latency']}")
        report["rss_after_results_mib"] = {k: memory_kib(p)[0] // 1024 for k, p in pids.items()}
        if args.unrelated:
            t2 = time.monotonic()
            await create_all(
                api,
                f"/api/v1/namespaces/{UNRELATED}/pods",
                [unrelated_pod(i) for i in range(args.unrelated)],
            )
            say(f"created {args.unrelated} unrelated pods in {time.monotonic() - t2:.0f} s")
            await asyncio.sleep(10)
            report["rss_with_unrelated_mib"] = {
                k: memory_kib(p)[0] // 1024 for k, p in pids.items()
            }


async def create_workloads(api: KubeApi, deployments: int, pods_per: int) -> list[dict[str, Any]]:
    """Deployments, their ReplicaSets and injected pods, as the controllers would make them."""
    t0 = time.monotonic()
    deploys = [deployment(i) for i in range(deployments)]
    made = await create_all(api, f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments", deploys)
    sets = [replicaset(d, m["metadata"]["uid"]) for d, m in zip(deploys, made)]
    made_sets = await create_all(api, f"/apis/apps/v1/namespaces/{NAMESPACE}/replicasets", sets)
    pods = [
        injected_pod(rs, m["metadata"]["uid"], j)
        for rs, m in zip(sets, made_sets)
        for j in range(pods_per)
    ]
    await create_all(api, f"/api/v1/namespaces/{NAMESPACE}/pods", pods)
    say(
        f"created {len(deploys)} Deployments, {len(sets)} ReplicaSets, "
        f"{len(pods)} pods in {time.monotonic() - t0:.0f} s"
    )
    return pods


def operator_figures(operator: OperatorProcess) -> dict[str, Any]:
    """The operator's counters and its own view (cumulative buckets): pod event received
    -> status written; one reconcile; its API calls."""
    figures: dict[str, Any] = {
        "operator_status_writes": operator.metric("vllm_preflight_status_writes_total"),
        "operator_reconcile_errors": operator.metric("vllm_preflight_reconcile_errors_total"),
    }
    text = operator.metrics()
    for metric in (
        "result_to_status_seconds",
        "reconcile_duration_seconds",
        "api_request_duration_seconds",
    ):
        figures[f"operator_{metric}"] = {
            line.split("{", 1)[1].split("}")[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(f"vllm_preflight_{metric}_bucket")
        }
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--pods-per", type=int, default=5)
    parser.add_argument("--rate", type=float, default=50.0, help="results per second")
    parser.add_argument("--unrelated", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=4, help="the operator's --workers")
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for the last results to show"
    )
    parser.add_argument("--profile", type=Path, help="run the operator under cProfile")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report: dict[str, Any] = {"cpus": os.cpu_count(), "deployments": args.deployments,
                              "pods": args.deployments * args.pods_per,
                              "workers": args.workers,
                              "load_at_start": os.getloadavg()}  # fmt: skip

    with tempfile.TemporaryDirectory() as tmp, LocalCluster() as cluster:
        localsetup.install_crds(cluster, lws=False)
        for namespace, labels in ((NAMESPACE, {constants.LABEL_INJECT: "enabled"}),
                                  (UNRELATED, {})):  # fmt: skip
            cluster.apply({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": namespace, "labels": labels}})  # fmt: skip
            cluster.wait_namespace_ready(namespace)
        # From here on this script is the deployment and replicaset controllers.
        os.kill(cluster.pids["kube-controller-manager"], signal.SIGTERM)
        cert = cluster.issue_serving_cert()
        operator = OperatorProcess(
            kubeconfig=cluster.kubeconfig, cert_path=cert.cert_path, key_path=cert.key_path,
            workdir=Path(tmp), identity="bench-operator", env=cluster.env(),
            extra_args=["--workers", str(args.workers)],
        )  # fmt: skip
        if args.profile:
            at = operator._args.index("-m")
            operator._args[at:at] = [
                str(Path(__file__).with_name("profiled.py")),
                str(args.profile.resolve()),
            ]
        floor = Component(
            "floor-operator",
            [sys.executable, str(Path(__file__).with_name("floor_operator.py")),
             "--kubeconfig", str(cluster.kubeconfig)],
            Path(tmp) / "floor.log", env=cluster.env(),
        )  # fmt: skip
        with operator:
            floor.start()
            time.sleep(3)
            pids = {"operator": operator.pid, "floor": floor.pid}
            report["rss_start_mib"] = {k: memory_kib(p)[0] // 1024 for k, p in pids.items()}
            sampler = Sampler(pids)
            sampler.start()

            asyncio.run(scenario(cluster.kubeconfig, args, report, pids, operator))
            sampler.stop_flag.set()
            sampler.join()
            report["cpu_s_total"] = {k: round(cpu_seconds(p), 1) for k, p in pids.items()}
            report["peak_rss_mib"] = {k: memory_kib(p)[1] // 1024 for k, p in pids.items()}
            report["peak_ratio"] = round(
                report["peak_rss_mib"]["operator"] / report["peak_rss_mib"]["floor"], 2
            )
            # what each 1,000 watched objects (Deployments and injected pods) add
            watched = (args.deployments * (1 + args.pods_per)) / 1000
            report["rss_per_1000_watched_mib"] = {
                k: round((report["rss_loaded_mib"][k] - report["rss_start_mib"][k]) / watched, 1)
                for k in pids
            }
            report.update(operator_figures(operator))
            if args.profile:
                os.kill(operator.pid, signal.SIGUSR2)
                time.sleep(5)
            floor.stop()
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
