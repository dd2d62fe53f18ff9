"""Operator restarts and replicas, with real processes: SIGKILL mid-way loses no result;
two replicas on one Lease never both write; the survivor takes over during churn and
writes nothing twice; a clean stop hands over at once."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_contract.report import CheckResult, Report
from preflight_dev import fakekubelet, localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
PASSED = Report(checks=[CheckResult("gpu-count", "pass", "ok")]).to_termination_message()
STATUS_WRITES = "vllm_preflight_status_writes_total"


@pytest.fixture(scope="module")
def cluster(k8s: Cluster) -> Iterator[Cluster]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s)
    yield k8s
    localoperator.remove_webhooks(k8s)


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    name = cluster.create_namespace("ha", labels={constants.LABEL_INJECT: "enabled"})
    yield name
    cluster.delete_namespace(name)


def deployment(namespace: str, replicas: int) -> dict[str, Any]:
    doc = next(
        d
        for d in yaml.safe_load_all((MANIFESTS / "good-tp2-deployment.yaml").read_text())
        if d["kind"] == "Deployment"
    )
    doc = copy.deepcopy(doc)
    doc["metadata"]["namespace"] = namespace
    doc["spec"]["replicas"] = replicas
    return doc


def injected_pods(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    out = cluster.kubectl(
        "get", "pods", "-n", namespace, "-l", constants.INJECTED_POD_SELECTOR, "-o", "json"
    ).stdout
    pods: list[dict[str, Any]] = json.loads(out)["items"]
    return sorted(pods, key=lambda p: p["metadata"]["name"])


def report_result(cluster: Cluster, pod: dict[str, Any]) -> None:
    status = fakekubelet.pod_status(pod, exit_code=0, message=PASSED)
    cluster.kubectl(
        "patch", "pod", pod["metadata"]["name"], "-n", pod["metadata"]["namespace"],
        "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def recorded_pods(cluster: Cluster, namespace: str) -> set[str]:
    result = cluster.kubectl(
        "get", "gpuval", "deployment-vllm-good", "-n", namespace, "-o", "json", check=False
    )
    if result.returncode != 0:
        return set()
    status = json.loads(result.stdout).get("status") or {}
    return {p["pod"] for p in (status.get("runtime") or {}).get("pods") or []}


def test_killing_the_operator_mid_way_and_restarting_loses_no_result(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    first = localoperator.start_with_webhooks(cluster, tmp_path, identity="first")
    try:
        cluster.apply(deployment(namespace, replicas=6))
        pods = wait_for(lambda: len(p := injected_pods(cluster, namespace)) == 6 and p)
        for pod in pods[:3]:
            report_result(cluster, pod)
        first.kill()  # SIGKILL while it works through those results
        for pod in pods[3:]:
            report_result(cluster, pod)  # results that arrive while no operator runs
        before_restart = recorded_pods(cluster, namespace)
        assert len(before_restart) < 6
    finally:
        first.kill()

    cert = cluster.issue_serving_cert()
    second = OperatorProcess(
        kubeconfig=cluster.kubeconfig, cert_path=cert.cert_path, key_path=cert.key_path,
        workdir=tmp_path, identity="second", webhook_port=first.webhook_port,
        env=cluster.env(),
    )  # fmt: skip
    with second:
        names = {p["metadata"]["name"] for p in pods}
        wait_for(lambda: recorded_pods(cluster, namespace) == names, what="all 6 results")
        status = json.loads(
            cluster.kubectl(
                "get", "gpuval", "deployment-vllm-good", "-n", namespace, "-o", "json"
            ).stdout
        )["status"]
        assert status["runtime"]["podsChecked"] == 6
        assert status["runtimeVerdict"] == "pass"


LEADER = "vllm_preflight_leader"


def lease_args(namespace: str, name: str) -> list[str]:
    """Short timings, so that a takeover takes seconds: a follower waits 4 s after the last
    renewal it saw; a leader that cannot renew stops writing after 3 s."""
    return [
        "--lease-namespace", namespace, "--lease-name", name,
        "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5",
    ]  # fmt: skip


class Watch:
    """``kubectl get <resource> -A --watch``: every change of every object, with the time it
    arrived here. A status patch that changes nothing emits no event (the API server keeps
    the resourceVersion), so events count the writes that changed something."""

    def __init__(self, cluster: Cluster, resource: str) -> None:
        import subprocess
        import threading
        import time

        self._time = time.monotonic
        kubectl = [str(cluster.bin_dir / "kubectl"), "get", resource, "-A", "--watch",
                   "--output-watch-events", "-o", "json"]  # fmt: skip
        self._proc = subprocess.Popen(
            kubectl, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=cluster.env(),
        )  # fmt: skip
        self.events: list[tuple[float, str, dict[str, Any]]] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        decoder = json.JSONDecoder()
        buffer = ""
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            buffer += line
            while buffer.strip():
                try:
                    event, end = decoder.raw_decode(buffer.lstrip())
                except ValueError:
                    break
                buffer = buffer.lstrip()[end:]
                self.events.append((self._time(), event["type"], event["object"]))

    def changes_since(self, since: float) -> list[dict[str, Any]]:
        return [obj for at, kind, obj in self.events if at >= since and kind == "MODIFIED"]

    def close(self) -> None:
        self._proc.kill()
        self._proc.wait()


def settled_workload(cluster: Cluster) -> str:
    """A namespace with a workload whose two results are written: its namespace."""
    settled = cluster.create_namespace("ha-settled", labels={constants.LABEL_INJECT: "enabled"})
    cluster.apply(deployment(settled, replicas=2))
    done = wait_for(lambda: len(p := injected_pods(cluster, settled)) == 2 and p)
    for pod in done:
        report_result(cluster, pod)
    wait_for(lambda: len(recorded_pods(cluster, settled)) == 2, what="the settled results")
    return settled


def hand_over_on_a_clean_stop(
    cluster: Cluster, tmp_path: Path, namespace: str, leader: OperatorProcess, args: list[str]
) -> OperatorProcess:
    """The leader stops (SIGTERM): it releases the Lease, and a follower leads at its next
    round, not a lease duration later."""
    import time

    follower = localoperator.start_with_webhooks(
        cluster, tmp_path, identity="replica-c", standalone=False, extra_args=args,
        webhooks=False,
    )  # fmt: skip
    assert follower.metric(LEADER) == 0
    stopped_at = time.monotonic()
    leader.stop()
    wait_for(lambda: follower.metric(LEADER) == 1, timeout=30, what="replica-c to lead")
    handed_over_s = time.monotonic() - stopped_at
    spec = json.loads(cluster.kubectl(
        "get", "lease", "ha-churn", "-n", namespace, "-o", "json"
    ).stdout)["spec"]  # fmt: skip
    assert spec["holderIdentity"] == "replica-c"
    assert spec["leaseTransitions"] == 2
    assert f"released by {leader.identity}" in leader.log_path.read_text()
    print(f"hand-over after a clean stop: {handed_over_s:.1f} s")
    return follower


def settled_writes(
    replica: OperatorProcess, watches: list[Watch], since: float
) -> tuple[float, int]:
    """The status writes ``replica`` sent and the changes the watches saw since ``since``,
    once the changes cover the writes. The watches see the last writes a moment after they
    are sent (longer on a loaded machine); a write that changed nothing never shows up, so
    then the wait ends and the caller's assertion names the difference. On a loaded machine
    the dead leader's last changes can also arrive after ``since``: more changes than
    writes, never fewer."""

    def counts() -> tuple[float, int]:
        return replica.metric(STATUS_WRITES), sum(len(w.changes_since(since)) for w in watches)

    with contextlib.suppress(TimeoutError):
        wait_for(lambda: (c := counts())[0] <= c[1], timeout=20, what="the watches")
    return counts()


def test_killing_the_leader_during_churn_loses_no_status_and_writes_none_twice(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    """Two replicas on one Lease, results arriving all the time; the leader is killed
    (SIGKILL) mid-way. The follower wrote nothing while the leader lived, takes over after
    the lease duration, and every write it makes changes something (none repeats what the
    dead leader had written); at the end every result is on the GPUValidation. Then a
    clean stop hands the Lease over at once."""
    import time

    args = lease_args(namespace, "ha-churn")
    first = localoperator.start_with_webhooks(
        cluster, tmp_path, identity="replica-a", standalone=False, extra_args=args,
        webhooks=False,
    )  # fmt: skip
    watches: list[Watch] = []
    second = third = None
    settled = ""
    try:
        wait_for(lambda: first.metric(LEADER) == 1, what="replica-a to lead")
        # The survivor serves the webhooks (pods keep coming while the leader is dead).
        second = localoperator.start_with_webhooks(
            cluster, tmp_path, identity="replica-b", standalone=False, extra_args=args
        )
        assert second.metric(LEADER) == 0
        holder = json.loads(cluster.kubectl(
            "get", "lease", "ha-churn", "-n", namespace, "-o", "json"
        ).stdout)["spec"]["holderIdentity"]  # fmt: skip
        assert holder == "replica-a"
        # A workload the leader has finished with before it dies: nothing to write for it
        # after the takeover, though the new leader reconciles it.
        settled = settled_workload(cluster)
        watches = [Watch(cluster, "gpuvalidations"), Watch(cluster, "preflightpolicies")]

        cluster.apply(deployment(namespace, replicas=8))
        pods = wait_for(lambda: len(p := injected_pods(cluster, namespace)) == 8 and p)
        for pod in pods[:4]:
            report_result(cluster, pod)
        wait_for(lambda: len(recorded_pods(cluster, namespace)) >= 2, what="a first result")
        assert second.metric(STATUS_WRITES) == 0  # a follower writes nothing
        first.kill()  # mid-way: results still being written
        killed_at = time.monotonic()
        for pod in pods[4:]:
            report_result(cluster, pod)  # while nobody leads
        cluster.kubectl("scale", "deployment", "vllm-good", "-n", namespace, "--replicas=10")
        pods = wait_for(lambda: len(p := injected_pods(cluster, namespace)) == 10 and p)
        names = {p["metadata"]["name"] for p in pods}
        for pod in pods:
            if pod["metadata"]["name"] not in recorded_pods(cluster, namespace):
                report_result(cluster, pod)
        wait_for(lambda: second.metric(LEADER) == 1, timeout=30, what="replica-b to lead")
        took_over_s = time.monotonic() - killed_at
        wait_for(lambda: recorded_pods(cluster, namespace) == names, what="all 10 results")
        status = json.loads(cluster.kubectl(
            "get", "gpuval", "deployment-vllm-good", "-n", namespace, "-o", "json"
        ).stdout)["status"]  # fmt: skip
        assert status["runtime"]["podsChecked"] == 10
        assert status["runtimeVerdict"] == "pass"

        # A's in-flight writes land within milliseconds of the kill; B leads >= 3 s later.
        writes, changed = settled_writes(second, watches, killed_at + 1.0)
        assert writes > 0
        assert writes <= changed, (
            f"replica-b sent {writes:g} status writes but {changed} changed something: "
            "it wrote again what the dead leader had written"
        )
        print(f"takeover after SIGKILL: {took_over_s:.1f} s (lease duration 4 s)")

        # A clean stop releases the Lease: the next follower leads at its next round.
        third = hand_over_on_a_clean_stop(cluster, tmp_path, namespace, second, args)
    finally:
        for watch in watches:
            watch.close()
        if settled:
            cluster.delete_namespace(settled)
        first.kill()
        for replica in (second, third):
            if replica is not None:
                replica.kill()


def test_pods_created_while_no_operator_ran_get_not_injected_after_a_restart(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    """failurePolicy Ignore (the chart's default): while no replica answers, the API
    server admits pods without the check. Once one runs again, the workload says so."""
    cert = cluster.issue_serving_cert()

    def operator(identity: str, port: int | None = None) -> OperatorProcess:
        return OperatorProcess(
            kubeconfig=cluster.kubeconfig, cert_path=cert.cert_path, key_path=cert.key_path,
            workdir=tmp_path, identity=identity, env=cluster.env(),
            **({"webhook_port": port} if port else {}),
        )  # fmt: skip

    first = operator("before-outage").start()
    cluster.apply(*localsetup.webhook_configurations(
        first.webhook_port, cert.ca_pem, failure_policy="Ignore"
    ))  # fmt: skip
    first.kill()
    cluster.apply(deployment(namespace, replicas=2))
    pods = wait_for(
        lambda: len(p := json.loads(cluster.kubectl(
            "get", "pods", "-n", namespace, "-l", "app=vllm-good", "-o", "json"
        ).stdout)["items"]) == 2 and p,
        what="2 pods admitted without the webhook",
    )  # fmt: skip
    assert all("initContainers" not in p["spec"] for p in pods)
    with operator("after-outage", first.webhook_port) as second:

        def runtime() -> dict[str, Any] | None:
            r = cluster.kubectl("get", "gpuval", "deployment-vllm-good", "-n", namespace,
                                "-o", "json", check=False)  # fmt: skip
            if r.returncode != 0:
                return None
            for c in json.loads(r.stdout).get("status", {}).get("conditions") or []:
                if c["type"] == "RuntimeChecksPassed" and c["reason"] == "NotInjected":
                    return dict(c)
            return None

        condition = wait_for(runtime, what="the NotInjected condition")
        assert "2 pod(s) run without the preflight check" in condition["message"]
        assert "kubectl rollout restart deployment/vllm-good" in condition["message"]

        def reasons() -> set[str] | None:
            # the Event is posted after the status write (the event sink's own queue)
            found = {e["reason"] for e in json.loads(cluster.kubectl(
                "get", "events", "-n", namespace, "-o", "json",
                "--field-selector", "involvedObject.name=vllm-good",
            ).stdout)["items"]}  # fmt: skip
            return found if "NotInjected" in found else None

        assert "NotInjected" in wait_for(reasons, what="the NotInjected Event")
        missed = 'vllm_preflight_injections_total{reason="not-injected",result="missed"}'
        assert second.metric(missed) == 2
