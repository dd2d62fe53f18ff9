"""Enforce never opens under load (issue 34): two replicas on a Lease, the chart's
defaults (failurePolicy Ignore, 10 s, and the fail-closed entry for namespaces under
Enforce), an opted-in namespace under the default policy (Enforce).

- two peers holding 256 idle TLS connections each on the port the API server calls (before:
  the 512 cap was full, the API server's calls were reset, and 3 of 5 broken Deployments
  were admitted under Ignore);
- a flood of 400 reviews of 200 KiB sent straight to that port while busy loops hold every
  core (before: decoding them held the loop 22.7 s, /healthz said 503, the Lease was lost
  and a broken Deployment was admitted).

Each time a broken Deployment (TP=4 on 2 GPUs) is created 5 times: denied 5 times out of 5,
by the operator's own answer (the denial names the rule), not only by the failurePolicy.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import secrets
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from preflight_dev import localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants, failclosedscope

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
BAD = next(
    d for d in yaml.safe_load_all((MANIFESTS / "bad-tp4-deployment.yaml").read_text())
    if d["kind"] == "Deployment"
)  # fmt: skip
RULE = "gpu-count-too-low"
LEADER = "vllm_preflight_leader"


@pytest.fixture(scope="module")
def cluster(k8s: Cluster) -> Iterator[Cluster]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.3", 0))
    except OSError:
        pytest.skip("needs 127.0.0.0/8 on lo (Linux): the test is several peers")
    localsetup.install_crds(k8s)
    yield k8s
    localoperator.remove_webhooks(k8s)


@pytest.fixture(scope="module")
def replicas(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[OperatorProcess, OperatorProcess]]:
    work = tmp_path_factory.mktemp("enforce-load")
    lease = cluster.create_namespace("load-lease")
    args = ["--lease-namespace", lease, "--lease-name", "load"]
    first = localoperator.start_with_webhooks(
        cluster, work, identity="load-a", standalone=False, extra_args=args,
        failure_policy="Ignore",  # the chart's default
    )  # fmt: skip
    second = localoperator.start_with_webhooks(
        cluster, work, identity="load-b", standalone=False, webhooks=False,
        extra_args=[*args, "--webhook-configuration", localsetup.WEBHOOK_CONFIGURATION_NAME],
    )  # fmt: skip
    try:
        wait_for(lambda: first.metric(LEADER) + second.metric(LEADER) == 1, what="a leader")
        yield first, second
    finally:
        localoperator.remove_webhooks(cluster)
        first.stop()
        second.stop()
        cluster.delete_namespace(lease)


@pytest.fixture(scope="module")
def namespace(cluster: Cluster, replicas: Any) -> Iterator[str]:
    name = cluster.create_namespace("load", labels={constants.LABEL_INJECT: "enabled"})

    def listed() -> bool:
        out = cluster.kubectl(
            "get", "validatingwebhookconfiguration", localsetup.WEBHOOK_CONFIGURATION_NAME,
            "-o", "json",
        ).stdout  # fmt: skip
        return name in failclosedscope.entry_names(json.loads(out))

    wait_for(listed, what="the leader to list the namespace on the fail-closed entry")
    yield name
    cluster.delete_namespace(name)


def broken_five_times(cluster: Cluster, namespace: str) -> list[str]:
    """Creates the broken Deployment 5 times (new names); what each create answered."""
    answers = []
    for _ in range(5):
        doc = copy.deepcopy(BAD)
        doc["metadata"] = {**doc["metadata"], "name": f"vllm-bad-{secrets.token_hex(3)}",
                           "namespace": namespace}  # fmt: skip
        done = cluster.kubectl(
            "create", "-f", "-", input=json.dumps(doc), check=False, timeout=60
        )  # fmt: skip
        answers.append("admitted" if done.returncode == 0 else done.stderr)
    return answers


def assert_denied_by_the_operator(answers: list[str]) -> None:
    admitted = sum(1 for a in answers if a == "admitted")
    assert admitted == 0, f"{admitted} of 5 broken Deployments admitted under Enforce"
    judged = sum(1 for a in answers if RULE in a)
    assert judged == 5, f"denied, but not by the operator's answer: {answers}"


def idle_connections(port: int, ca_pem: bytes, source: str, count: int) -> list[ssl.SSLSocket]:
    """TLS connections that send nothing (a tenant holding the port open)."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    held = []
    for _ in range(count):
        raw = socket.socket()
        raw.settimeout(30)
        try:
            raw.bind((source, 0))
            raw.connect(("127.0.0.1", port))
            held.append(context.wrap_socket(raw, server_hostname="127.0.0.1"))
        except OSError:
            raw.close()
    return held


def test_two_peers_holding_256_idle_connections_each_do_not_open_enforce(
    cluster: Cluster, replicas: tuple[OperatorProcess, OperatorProcess], namespace: str
) -> None:
    first, _ = replicas
    ca = cluster.certificate_authority.cert_pem
    held = [
        conn
        for source in ("127.0.0.2", "127.0.0.3")
        for conn in idle_connections(first.webhook_port, ca, source, 256)
    ]
    try:
        answers = broken_five_times(cluster, namespace)
    finally:
        for conn in held:
            with contextlib.suppress(OSError):
                conn.close()
    assert_denied_by_the_operator(answers)


def review(namespace: str, index: int, pad_kib: int) -> bytes:
    doc = copy.deepcopy(BAD)
    doc["metadata"] = {
        "name": f"flood-{index}",
        "namespace": namespace,
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "x" * pad_kib * 1024},
    }
    return json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": f"flood-{index}", "namespace": namespace, "operation": "CREATE",
            "dryRun": True,
            "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
            "object": doc,
        },
    }).encode()  # fmt: skip


class Flood(threading.Thread):
    """``count`` reviews straight to the webhook port, ``in_flight`` at a time, from its
    own event loop."""

    def __init__(self, port: int, ca_pem: bytes, bodies: list[bytes], in_flight: int) -> None:
        super().__init__(daemon=True)
        self.port, self.ca_pem, self.bodies, self.in_flight = port, ca_pem, bodies, in_flight
        self.answered = 0

    def run(self) -> None:
        asyncio.run(self._flood())

    async def _flood(self) -> None:
        context = ssl.create_default_context(cadata=self.ca_pem.decode())
        connector = aiohttp.TCPConnector(ssl=context, limit=self.in_flight)
        url = f"https://127.0.0.1:{self.port}/validate?timeout=10s"
        gate = asyncio.Semaphore(self.in_flight)
        timeout = aiohttp.ClientTimeout(total=60)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

            async def one(body: bytes) -> None:
                async with gate:
                    with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                        async with session.post(url, data=body) as rsp:
                            await rsp.read()
                            self.answered += rsp.status == 200

            await asyncio.gather(*(one(b) for b in self.bodies))


@contextlib.contextmanager
def busy_cores() -> Iterator[None]:
    """A busy loop on every core: the loaded host."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 2)
    ]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_flood_of_400_reviews_on_a_loaded_host_does_not_open_enforce(
    cluster: Cluster, replicas: tuple[OperatorProcess, OperatorProcess], namespace: str
) -> None:
    first, second = replicas
    leader = first if first.metric(LEADER) == 1 else second
    bodies = [review(namespace, i, pad_kib=200) for i in range(400)]
    flood = Flood(first.webhook_port, cluster.certificate_authority.cert_pem, bodies, 100)
    with busy_cores():
        flood.start()
        wait_for(lambda: flood.answered >= 20, timeout=120, what="the flood to be answered")
        answers = broken_five_times(cluster, namespace)
        flood.join(timeout=300)
    assert_denied_by_the_operator(answers)
    assert first.healthy()
    assert second.healthy()
    assert leader.metric(LEADER) == 1, "the Lease was lost during the flood"
