"""Reliability: churn of vLLM workloads while the operator is SIGKILLed and once SIGSTOPped.

    .venv/bin/python hack/reliability/churn.py [--workloads 104] [--kill-every 26]
        [--policies Ignore,Fail] [--json OUT]

On the local control plane (the real API server, controller-manager and etcd; this script
plays the kubelet), for each webhook failurePolicy:

1. an opted-in namespace with a Warn PreflightPolicy (so failing workloads are admitted
   and judged), an operator serving both webhooks;
2. ``--workloads`` Deployments created one after another, alternately good (TP=2 on 2
   GPUs) and bad (TP=4 on 2 GPUs); every ``--kill-every`` the operator is SIGKILLed, two
   workloads are created while it is down, and a new operator process starts; half way,
   the operator is SIGSTOPped for 12 s (past the webhooks' 10 s timeout) while one
   workload is created, then SIGCONTinued;
3. every injected pod gets its check result (pass for good, fail for bad) through
   pods/status, as the kubelet would write it;
4. then every GPUValidation is compared with what it must say.

Counted: workloads, operator kills and stops, creates the API server refused (Fail: the
script retries them), pods admitted without the check (Ignore), **lost** statuses (no
GPUValidation status at the end), **wrong** ones (static or runtime verdict not the
expected one, or pods without the check not flagged NotInjected), and the peak RSS of
the operator and its rules worker (sampled every 0.2 s, and each process's VmHWM before it
is killed). The counts go to docs/RELIABILITY.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "operator"), str(REPO / "initcontainer"), str(REPO / "dev")]

from preflight_contract.report import CheckResult, Report  # noqa: E402
from preflight_dev import fakekubelet, localoperator, localsetup  # noqa: E402
from preflight_dev.localoperator import OperatorProcess  # noqa: E402
from preflight_dev.testing import LocalCluster  # noqa: E402
from preflight_dev.testing.base import Cluster  # noqa: E402
from preflight_operator.core import constants  # noqa: E402

PASSED = Report(
    checks=[CheckResult("gpu-count", "pass", "CUDA sees 2 GPUs")]
).to_termination_message()
FAILED = Report(
    checks=[CheckResult("gpu-count", "fail", "CUDA sees 2 GPUs, the plan needs 4", "request 4")],
    action="Warn",
).to_termination_message()


def family_kib(pid: int, field: str) -> int:
    """``field`` (VmRSS or VmHWM) of a process plus its children's, in KiB; 0 if gone."""
    total = 0
    pids = [pid]
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            pids += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        return 0
    for one in pids:
        try:
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith(field + ":"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


class Sampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.pid = 0
        self.peak_kib = 0
        self.stop_flag = threading.Event()

    def run(self) -> None:
        while not self.stop_flag.wait(0.2):
            if self.pid:
                self.peak_kib = max(self.peak_kib, family_kib(self.pid, "VmRSS"))


def deployment(i: int, namespace: str) -> dict[str, Any]:
    name = f"vllm-{i:04d}"
    good = i % 2 == 0
    labels = {"app": name}
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "command": ["vllm", "serve"],
        "args": [f"org/model-{i % 7}", f"--tensor-parallel-size={2 if good else 4}"],
        "resources": {"limits": {"nvidia.com/gpu": 2}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
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


def get_items(cluster: Cluster, *args: str) -> list[dict[str, Any]]:
    out = cluster.kubectl("get", *args, "-o", "json", check=False)
    if out.returncode != 0:
        return []
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return items


class Run:
    """One failure policy's churn."""

    def __init__(self, cluster: Cluster, workdir: Path, policy: str, args: argparse.Namespace):
        self.cluster = cluster
        self.workdir = workdir
        self.policy = policy
        self.args = args
        self.namespace = f"churn-{policy.lower()}"
        self.cert = cluster.issue_serving_cert()
        self.port = 0
        self.generation = 0
        self.operator: OperatorProcess | None = None
        self.sampler = Sampler()
        self.counts = {"workloads": 0, "kills": 0, "stops": 0, "refused_creates": 0}
        self.hwm_kib = 0

    def start_operator(self) -> None:
        op = OperatorProcess(
            kubeconfig=self.cluster.kubeconfig, cert_path=self.cert.cert_path,
            key_path=self.cert.key_path, workdir=self.workdir,
            identity=f"{self.policy.lower()}-{self.generation}",
            webhook_port=self.port or None, env=self.cluster.env(),
        )  # fmt: skip
        self.generation += 1
        op.start()
        self.port = op.webhook_port
        self.operator = op
        self.sampler.pid = op.pid

    def kill_operator(self) -> None:
        assert self.operator is not None
        self.hwm_kib = max(self.hwm_kib, family_kib(self.operator.pid, "VmHWM"))
        self.sampler.pid = 0
        self.operator.kill()
        self.counts["kills"] += 1

    def create(self, i: int) -> None:
        body = json.dumps(deployment(i, self.namespace))
        for _ in range(120):
            result = self.cluster.kubectl("create", "-f", "-", input=body, check=False)
            if result.returncode == 0 or "AlreadyExists" in result.stderr:
                self.counts["workloads"] += 1
                return
            self.counts["refused_creates"] += 1
            if self.operator is None or not self.operator.running():
                self.start_operator()  # Fail: nothing is created while no replica answers
            time.sleep(0.5)
        raise RuntimeError(f"could not create workload {i}: {result.stderr}")

    def play_kubelet(self) -> int:
        """Reports a result for every injected pod that has none; returns how many wait."""
        waiting = 0
        for pod in get_items(self.cluster, "pods", "-n", self.namespace, "-l",
                             constants.INJECTED_POD_SELECTOR):  # fmt: skip
            if (pod.get("status") or {}).get("initContainerStatuses"):
                continue
            waiting += 1
            good = int(pod["metadata"]["labels"]["app"].rsplit("-", 1)[1]) % 2 == 0
            status = fakekubelet.pod_status(pod, exit_code=0, message=PASSED if good else FAILED)
            self.cluster.kubectl(
                "patch", "pod", pod["metadata"]["name"], "-n", self.namespace,
                "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}),
                check=False,
            )  # fmt: skip
        return waiting

    def execute(self) -> dict[str, Any]:
        started = time.monotonic()
        self.namespace = self.cluster.create_namespace(
            self.namespace, labels={constants.LABEL_INJECT: "enabled"}
        )
        self.cluster.apply({
            "apiVersion": constants.API_VERSION, "kind": constants.POLICY_KIND,
            "metadata": {"name": "warn", "namespace": self.namespace},
            "spec": {"action": "Warn"},
        })  # fmt: skip
        self.sampler.start()
        self.start_operator()
        self.cluster.apply(*localsetup.webhook_configurations(
            self.port, self.cert.ca_pem, failure_policy=self.policy,
        ))  # fmt: skip
        time.sleep(2)  # the webhook configuration and the policy reach the API server
        n, every = self.args.workloads, self.args.kill_every
        i = 0
        while i < n:
            if i and i % every == 0:
                self.kill_operator()
                for _ in range(2):  # created while no operator runs
                    if i < n:
                        self.create(i)
                        i += 1
                time.sleep(3)  # their pods too (the ReplicaSet controller makes them)
                if self.operator is None or not self.operator.running():
                    self.start_operator()
                continue
            if i > n // 2 and self.counts["stops"] == 0:
                assert self.operator is not None
                os.kill(self.operator.pid, signal.SIGSTOP)
                self.counts["stops"] += 1
                timer = threading.Timer(12.0, os.kill, (self.operator.pid, signal.SIGCONT))
                timer.start()
                self.create(i)  # waits for the webhook's 10 s timeout
                i += 1
                timer.join()
                continue
            self.create(i)
            i += 1
            if i % 10 == 0:
                self.play_kubelet()
        deadline = time.monotonic() + self.args.settle
        while time.monotonic() < deadline:
            if not self.play_kubelet() and self.verify(final=False)["settled"]:
                break
            time.sleep(2)
        report = self.verify(final=True)
        assert self.operator is not None
        self.hwm_kib = max(self.hwm_kib, family_kib(self.operator.pid, "VmHWM"))
        self.sampler.stop_flag.set()
        localoperator.remove_webhooks(self.cluster)
        self.operator.stop()
        report.update(self.counts)
        report["policy"] = self.policy
        report["peak_rss_mib"] = round(max(self.sampler.peak_kib, self.hwm_kib) / 1024)
        report["seconds"] = round(time.monotonic() - started)
        return report

    def verify(self, *, final: bool) -> dict[str, Any]:
        pods = get_items(self.cluster, "pods", "-n", self.namespace)
        injected: dict[str, bool] = {}
        for pod in pods:
            app = pod["metadata"]["labels"].get("app", "")
            is_injected = pod["metadata"]["labels"].get(constants.LABEL_INJECTED) == "true"
            injected[app] = injected.get(app, False) or is_injected
        gpuvals = {
            g["spec"]["workloadRef"]["name"]: g.get("status") or {}
            for g in get_items(self.cluster, "gpuval", "-n", self.namespace)
        }
        lost, wrong, not_injected, examples = 0, 0, 0, []
        without: list[int] = []
        for i in range(self.args.workloads):
            name = f"vllm-{i:04d}"
            want = "pass" if i % 2 == 0 else "fail"
            status = gpuvals.get(name)
            if not status:
                lost += 1
                examples.append(f"{name}: no status")
                continue
            runtime = {c["type"]: c for c in status.get("conditions") or []}.get(
                "RuntimeChecksPassed", {}
            )
            if name in injected and not injected[name]:
                not_injected += 1
                without.append(i)
                ok = runtime.get("reason") == "NotInjected"
            else:
                ok = status.get("runtimeVerdict") == want
            ok = ok and status.get("staticVerdict") == want
            if not ok:
                wrong += 1
                examples.append(
                    f"{name}: static {status.get('staticVerdict')}, runtime"
                    f" {status.get('runtimeVerdict')} {runtime.get('reason')}, want {want}"
                )
        return {
            "settled": lost == 0 and wrong == 0,
            "lost": lost,
            "wrong": wrong,
            "pods_without_check": not_injected,
            "examples": examples[:10] if final else [],
            "without_check": without if final else [],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=104)
    parser.add_argument("--kill-every", type=int, default=26)
    parser.add_argument("--policies", default="Ignore,Fail")
    parser.add_argument("--settle", type=float, default=180.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--workdir", type=Path, help="where the operators' logs go (a temp dir)")
    args = parser.parse_args()
    reports = []
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp, LocalCluster() as cluster:
        localsetup.install_crds(cluster)
        for policy in args.policies.split(","):
            report = Run(cluster, Path(tmp), policy, args).execute()
            print(json.dumps(report), flush=True)
            reports.append(report)
    if args.json:
        args.json.write_text(json.dumps(reports, indent=2) + "\n")
    if any(r["lost"] or r["wrong"] for r in reports):
        sys.exit(1)


if __name__ == "__main__":
    main()
