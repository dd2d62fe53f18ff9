"""`make demo`: the whole flow on a local control plane, in about half a minute.

1. a local kube-apiserver + etcd + controller-manager + kube-scheduler
   (preflight_dev.testing), and two fake GPU Nodes (4 and 2 H200s, testing/nodes.py);
2. the CRDs, the operator (a child process) and webhook configurations calling it;
3. a namespace opted in, a good vLLM Deployment (TP=2 on 2 GPUs) admitted, a bad one
   (TP=4 on 2 GPUs, no /dev/shm) DENIED under the default Enforce; a PreflightPolicy with
   action Warn for it (as a team trialling the rules would), and it is admitted with
   warnings; a right but big one (TP=8 on 8 GPUs) that no node can hold;
4. kube-scheduler binds the pods that fit to a GPU Node; the kubelet's part, for bound pods
   only: the REAL checker runs with the pod's preflight-check env over a fake GPU view of
   the GPUs the pod requested, and its exit code and termination message go into the
   pod's status; the big pod stays Pending, Unschedulable;
5. ``kubectl get gpuval``: one workload passes, one fails, and why;
6. (model rules) a Deployment whose model cannot split over its TP is DENIED, once the
   operator has fetched the model's config from a local Hub stand-in (demo/models.py).

Everything started is stopped at the end (and on Ctrl-C, or if this process dies).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from preflight_dev import fakekubelet, localsetup
from preflight_dev.demo import models
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import LocalCluster
from preflight_dev.testing.base import Cluster
from preflight_dev.testing.nodes import DEFAULT_NODES, create_gpu_nodes
from preflight_operator.core import constants
from preflight_operator.runtime.api import KubeApi
from preflight_operator.runtime.credentials import credentials_from_kubeconfig

MANIFESTS = localsetup.REPO / "tests" / "data" / "manifests"

GOOD = MANIFESTS / "good-tp2-deployment.yaml"
BAD = MANIFESTS / "bad-tp4-deployment.yaml"
BIG = MANIFESTS / "big-tp8-deployment.yaml"
NAMESPACE = "vllm-demo"
TRIAL_POLICY = {
    "apiVersion": constants.API_VERSION,
    "kind": constants.POLICY_KIND,
    "metadata": {"name": "trial-bad-workload", "namespace": NAMESPACE},
    "spec": {"selector": {"matchLabels": {"app": "vllm-bad"}}, "action": "Warn"},
}


def say(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m", flush=True)


def show(result: subprocess.CompletedProcess[str]) -> None:
    for stream in (result.stdout, result.stderr):
        if stream.strip():
            print(stream.rstrip(), flush=True)


def wait_for(what: str, condition: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.3)
    raise TimeoutError(f"timed out waiting for {what}")


def injected_pods(
    cluster: Cluster, apps: tuple[str, ...] = ("vllm-good", "vllm-bad")
) -> list[dict[str, Any]]:
    selector = f"{constants.INJECTED_POD_SELECTOR},app in ({','.join(apps)})"
    out = cluster.kubectl("get", "pods", "-n", NAMESPACE, "-l", selector, "-o", "json").stdout
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return items


def unschedulable_message(pod: dict[str, Any]) -> str:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return f"{cond.get('reason')}: {cond.get('message')}"
    return ""


def run_check(pod: dict[str, Any], workdir: Path) -> tuple[int, str, str]:
    """The real checker, with the pod's check env and /dev/shm size, over a fake view of
    its GPUs."""
    gpus = fakekubelet.check_gpus(pod)
    shm_bytes = fakekubelet.check_shm_bytes(pod)
    termination_log = workdir / f"{pod['metadata']['name']}.termination-log"
    env = {"PATH": os.environ.get("PATH", ""), **fakekubelet.check_env(pod)}
    env.pop("TMPDIR", None)  # /preflight exists in the pod, not here
    # The demo's nodes reach no Hub and hold no weights: the check's model lookup would
    # only warn that it found nothing, and model-source that nothing is there to load (the
    # model rules are shown at admission, models.py; tests/e2e/test_model_runtime.py and
    # test_will_it_load.py run them in the check against a Hub stand-in).
    env["HF_HUB_OFFLINE"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "preflight_dev.demo.fakecheck", "--gpus", str(gpus),
         "--shm-bytes", str(shm_bytes), "--", "--termination-log", str(termination_log),
         "--skip", "model-config-unknown,model-source"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    message = termination_log.read_text() if termination_log.exists() else result.stderr[-4000:]
    return result.returncode, message, result.stdout


def _what_matters(table: str) -> list[str]:
    """The checker's failures and warnings (with their fix lines) and its verdict."""
    kept: list[str] = []
    keep_fix = False
    for line in table.strip().splitlines():
        if line.startswith(("FAIL", "WARN", "ERROR", "verdict:")):
            kept.append(line)
            keep_fix = not line.startswith("verdict:")
        elif keep_fix and line.strip().startswith("fix:"):
            kept.append(line)
        else:
            keep_fix = False
    return kept


async def play_kubelet(kubeconfig: Path, pods: list[dict[str, Any]], workdir: Path) -> None:
    async with KubeApi(credentials_from_kubeconfig(kubeconfig)) as api:
        for pod in pods:
            name = pod["metadata"]["name"]
            gpus = fakekubelet.check_gpus(pod)
            node = fakekubelet.bound_node(pod)
            if node is None:  # a kubelet runs only what the scheduler bound to its node
                continue
            print(
                f"-- {name}: bound by kube-scheduler to {node}, {gpus} GPU(s);"
                " running the check ...",
                flush=True,
            )
            started = fakekubelet.rfc3339()
            exit_code, message, table = run_check(pod, workdir)
            print("\n".join("   " + line for line in _what_matters(table)))
            status = fakekubelet.pod_status(
                pod, exit_code=exit_code, message=message, started=started
            )
            await fakekubelet.write_status(api, NAMESPACE, name, status)


def runtime_verdicts(cluster: Cluster) -> bool:
    out = cluster.kubectl("get", "gpuval", "-n", NAMESPACE, "-o", "json").stdout
    items = [i for i in json.loads(out)["items"] if i["metadata"]["name"] in CHECKED]
    verdicts = [(i.get("status") or {}).get("runtimeVerdict") for i in items]
    return len(items) == len(CHECKED) and all(
        v in ("pass", "warn", "fail", "error") for v in verdicts
    )


CHECKED = ("deployment-vllm-good", "deployment-vllm-bad")


def _namespace_and_nodes(cluster: Cluster, operator: OperatorProcess, ca_pem: bytes) -> None:
    cluster.apply(*localsetup.webhook_configurations(operator.webhook_port, ca_pem))
    cluster.kubectl("create", "namespace", NAMESPACE)
    cluster.kubectl("label", "namespace", NAMESPACE, f"{constants.LABEL_INJECT}=enabled")
    cluster.wait_namespace_ready(NAMESPACE)
    shapes = ", ".join(f"{n.name} ({n.gpus} x {n.product})" for n in DEFAULT_NODES)
    say(f"GPU Nodes for kube-scheduler: {shapes}")
    create_gpu_nodes(cluster)
    show(
        cluster.kubectl(
            "get", "nodes", "-o", "custom-columns=NODE:.metadata.name,"
            "GPUS:.status.allocatable.nvidia\\.com/gpu,"
            "PRODUCT:.metadata.labels.nvidia\\.com/gpu\\.product",
        )
    )  # fmt: skip


def _admissions(cluster: Cluster) -> None:
    """The good, the bad (Enforce, then Warn), the big and the model that cannot split."""
    say("kubectl apply: the good vLLM Deployment (TP=2 on 2 GPUs, /dev/shm in memory)")
    show(cluster.kubectl("apply", "-n", NAMESPACE, "-f", str(GOOD)))
    say("kubectl apply: the bad one (TP=4 on 2 GPUs, no /dev/shm); default policy Enforce")
    denied = cluster.kubectl("apply", "-n", NAMESPACE, "-f", str(BAD), check=False)
    show(denied)
    if denied.returncode == 0:
        raise RuntimeError("the bad Deployment was admitted under Enforce")

    say("a PreflightPolicy with action Warn for it, then kubectl apply again")
    cluster.apply(TRIAL_POLICY)

    def apply_bad() -> subprocess.CompletedProcess[str] | None:
        result = cluster.kubectl("apply", "-n", NAMESPACE, "-f", str(BAD), check=False)
        return result if result.returncode == 0 else None

    # The webhooks learn policies from a watch: retry until this one has arrived.
    admitted = wait_for("the policy to reach the webhook", apply_bad, timeout=30)
    show(admitted)

    say("kubectl apply: a right but big one (TP=8 on 8 GPUs): no node has 8")
    show(cluster.kubectl("apply", "-n", NAMESPACE, "-f", str(BIG)))

    say(
        f"kubectl apply: {models.MODEL} (14 attention heads) with TP=4; the operator"
        " fetches its config.json from a local Hub stand-in"
    )
    models.deny_model_that_cannot_split(cluster, NAMESPACE, show)


def _checks(cluster: Cluster, workdir: Path) -> None:
    say("kube-scheduler binds the pods that fit; the kubelet's part: run the real checker")
    pods = wait_for(
        "kube-scheduler to bind 2 injected pods",
        lambda: (p := injected_pods(cluster)) and all(fakekubelet.bound_node(x) for x in p)
        and len(p) == 2 and p,
    )  # fmt: skip
    for pod in pods:
        inits = [c["name"] for c in pod["spec"].get("initContainers", [])]
        print(f"-- {pod['metadata']['name']}: init containers {inits}")
    asyncio.run(play_kubelet(cluster.kubeconfig, pods, workdir))


def _big_pending(cluster: Cluster) -> None:
    say("the big one: Pending, and why (kubectl vllm-preflight explain deploy/vllm-big)")

    def big_pending() -> dict[str, Any] | None:
        pods = injected_pods(cluster, ("vllm-big",))
        return next((p for p in pods if unschedulable_message(p)), None)

    big = wait_for("kube-scheduler to give up on the big pod", big_pending)
    print(f"{big['metadata']['name']}: {unschedulable_message(big)}")
    plugin_env = {**cluster.env()}
    plugin_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{plugin_env['PATH']}"
    show(
        subprocess.run(
            ["kubectl", "vllm-preflight", "explain", "deploy/vllm-big", "-n", NAMESPACE],
            capture_output=True, text=True, env=plugin_env, timeout=60, check=False,
        )
    )  # fmt: skip


def _results(cluster: Cluster) -> None:
    wait_for("runtime verdicts on both GPUValidations", lambda: runtime_verdicts(cluster))
    say("kubectl get gpuval -n vllm-demo")
    show(cluster.kubectl("get", "gpuval", "-n", NAMESPACE))
    say("the operator's annotations on the Deployments")
    for name in ("vllm-good", "vllm-bad"):
        annotations = json.loads(
            cluster.kubectl("get", "deployment", name, "-n", NAMESPACE, "-o", "json").stdout
        )["metadata"].get("annotations", {})
        ours = {k: v for k, v in annotations.items() if k.startswith(constants.PREFIX)}
        print(f"{name}: {ours}")
    say("kubectl get events -n vllm-demo --field-selector type=Warning")
    show(
        cluster.kubectl(
            "get", "events", "-n", NAMESPACE, "--field-selector", "type=Warning",
            "-o", "custom-columns=OBJECT:.involvedObject.name,REASON:.reason,"
            "MESSAGE:.message",
        )
    )  # fmt: skip


def demo(cluster: Cluster, workdir: Path, hub_url: str) -> None:
    say("installing the CRDs (chart)")
    localsetup.install_crds(cluster, lws=False)
    cert = cluster.issue_serving_cert()
    say("starting the operator (webhooks on https://127.0.0.1, leader election on a Lease)")
    operator = OperatorProcess(
        kubeconfig=cluster.kubeconfig,
        cert_path=cert.cert_path,
        key_path=cert.key_path,
        workdir=workdir,
        identity="vllm-preflight-demo",
        standalone=False,
        extra_args=["--config", str(models.operator_config(workdir, hub_url))],
        env=cluster.env(),
    )
    operator.start()
    try:
        print(f"operator ready; log: {operator.log_path}")
        _namespace_and_nodes(cluster, operator, cert.ca_pem)
        _admissions(cluster)
        _checks(cluster, workdir)
        _big_pending(cluster)
        _results(cluster)
    finally:
        operator.stop()


def main() -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vllm-preflight-demo-") as tmp:
        say(
            "starting a local control plane"
            " (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)"
        )
        with LocalCluster() as cluster, models.HubServer() as hub:
            print(
                f"up in {cluster.startup_seconds:.1f} s, Kubernetes {cluster.version},"
                f" in {cluster.workdir}"
            )
            demo(cluster, Path(tmp), hub.url)
            say("stopping everything")
    print(f"demo finished in {time.monotonic() - started:.0f} s; nothing left running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
