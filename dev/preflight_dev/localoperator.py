"""The operator as a child process on this machine (the demo, e2e tests, benchmarks).

A real process, not an in-process runner: a test that kills it with SIGKILL and starts
another one tests what happens to a pod of a real cluster, and two of them really race.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from preflight_dev import localsetup
from preflight_dev.testing.base import Cluster
from preflight_dev.testing.process import Component, free_ports, port_is_listening

PORT_TAKEN = "address already in use"  # the operator's log when a bind failed


class PortTaken(TimeoutError):
    """A port chosen for the operator was bound by another process first."""


class OperatorProcess:
    def __init__(
        self,
        *,
        kubeconfig: Path,
        cert_path: Path,
        key_path: Path,
        workdir: Path,
        identity: str = "operator-0",
        webhook_port: int | None = None,
        standalone: bool = True,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.identity = identity
        self.workdir = workdir / identity
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.cert_dir = self.workdir / "certs"
        self.cert_dir.mkdir(exist_ok=True)
        shutil.copyfile(cert_path, self.cert_dir / "tls.crt")
        shutil.copyfile(key_path, self.cert_dir / "tls.key")
        self._fixed_webhook_port = webhook_port
        self.log_path = self.workdir / "operator.log"
        self._kubeconfig = kubeconfig
        self._standalone = standalone
        self._extra_args = list(extra_args)
        self._pick_ports()
        self._env = {**(env or os.environ), "POD_NAME": identity, "PYTHONUNBUFFERED": "1"}
        # The harness's Component: own process group, killed with us even on SIGKILL.
        self._component: Component | None = None

    def _pick_ports(self) -> None:
        """Free ports now; another process may still take one before the operator binds it
        (a busy machine), which ``start`` notices and answers with new ports."""
        ports = free_ports(3)
        self.webhook_port = self._fixed_webhook_port or ports[0]
        self.metrics_port, self.health_port = ports[1], ports[2]
        kubeconfig, standalone, extra_args = self._kubeconfig, self._standalone, self._extra_args
        self._args = [
            sys.executable, "-m", "preflight_operator.cli", "operator",
            "--kubeconfig", str(kubeconfig),
            "--webhook-addr", "127.0.0.1",
            "--webhook-port", str(self.webhook_port),
            "--webhook-cert-dir", str(self.cert_dir),
            "--metrics-addr", "127.0.0.1",
            "--metrics-port", str(self.metrics_port),
            "--health-addr", "127.0.0.1",
            "--health-port", str(self.health_port),
            *(["--standalone"] if standalone else []),
            *extra_args,
        ]  # fmt: skip

    @property
    def pid(self) -> int:
        assert self._component is not None
        return self._component.pid

    def start(self, timeout: float = 60.0, attempts: int = 3) -> OperatorProcess:
        """Starts the operator and waits until it is ready. A port taken between choosing
        it and binding it is chosen again (up to ``attempts`` times); a start that fails
        otherwise leaves no process behind (a leaked operator would act on the next
        test's objects)."""
        for attempt in range(1, attempts + 1):
            self._component = Component(self.identity, self._args, self.log_path, self._env)
            self._component.start()
            try:
                self.wait_ready(timeout)
                return self
            except PortTaken:
                self.kill()
                if attempt == attempts:
                    raise
                # the log is appended to: keep this attempt's apart, so the next one is read
                # on its own
                self.log_path.rename(self.log_path.with_name(f"operator.log.{attempt}"))
                self._pick_ports()
            except BaseException:
                self.kill()
                raise
        raise AssertionError("unreachable")

    def running(self) -> bool:
        return self._component is not None and self._component.returncode() is None

    def wait_ready(self, timeout: float) -> None:
        """Until the webhook server and the liveness endpoint answer."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._component is not None and not self.running():
                raise RuntimeError(f"the operator exited:\n{self.log_tail()}")
            if port_is_listening(self.webhook_port) and self.healthy():
                return
            if PORT_TAKEN in self.log_tail(20):
                raise PortTaken(f"a port of the operator was taken:\n{self.log_tail()}")
            time.sleep(0.2)
        raise TimeoutError(f"the operator did not become ready:\n{self.log_tail()}")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.health_port}/healthz", timeout=2
            ) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def metrics(self) -> str:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5
        ) as response:
            text: str = response.read().decode()
            return text

    def metric(self, name: str) -> float:
        """The sum of a metric's samples (all label sets); 0 when absent."""
        total = 0.0
        for line in self.metrics().splitlines():
            if line.startswith(name) and not line.startswith("#"):
                head, _, value = line.rpartition(" ")
                if head == name or head.startswith(name + "{"):
                    total += float(value)
        return total

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL, as when a node dies: no clean-up of any kind."""
        if self._component is not None:
            if self.running():
                os.killpg(self._component.pid, signal.SIGKILL)
            self._component.stop(grace=0)

    def stop(self, grace: float = 10.0) -> None:
        if self._component is not None:
            self._component.stop(grace)

    def __enter__(self) -> OperatorProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_with_webhooks(
    cluster: Cluster,
    workdir: Path,
    *,
    identity: str = "operator-0",
    standalone: bool = True,
    extra_args: Sequence[str] = (),
    webhooks: bool = True,
    failure_policy: str = "Fail",
) -> OperatorProcess:
    """An operator serving a certificate from the cluster's test CA, and (``webhooks``)
    the webhook configurations pointing at it (``failure_policy``: Fail, so that a test
    notices a webhook that does not answer; Ignore is the chart's default)."""
    cert = cluster.issue_serving_cert()
    if webhooks:  # the leader keeps the fail-closed entry in step, as under the chart
        extra_args = [
            "--webhook-configuration", localsetup.WEBHOOK_CONFIGURATION_NAME, *extra_args,
        ]  # fmt: skip
    operator = OperatorProcess(
        kubeconfig=cluster.kubeconfig,
        cert_path=cert.cert_path,
        key_path=cert.key_path,
        workdir=workdir,
        identity=identity,
        standalone=standalone,
        extra_args=extra_args,
        env=cluster.env(),
    )
    operator.start()
    if webhooks:
        cluster.apply(
            *localsetup.webhook_configurations(
                operator.webhook_port, cert.ca_pem, failure_policy=failure_policy
            )
        )
    return operator


@contextlib.contextmanager
def with_upstream_crds(cluster: Cluster, workdir: Path, *crds: Path) -> Iterator[OperatorProcess]:
    """The chart's CRDs and the upstream ``crds`` applied (Established), then an operator
    with its webhooks (start_with_webhooks); the webhooks removed and the operator stopped
    after. The fixture of the e2e files of one serving stack's kind (JobSet, Kthena)."""
    localsetup.install_crds(cluster)
    localsetup.apply_upstream_crds(cluster, *crds)
    operator = start_with_webhooks(cluster, workdir)
    try:
        yield operator
    finally:
        remove_webhooks(cluster)
        operator.stop()


def remove_webhooks(cluster: Cluster) -> None:
    name = localsetup.WEBHOOK_CONFIGURATION_NAME
    cluster.kubectl(
        "delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", name,
        "--ignore-not-found",
    )  # fmt: skip
