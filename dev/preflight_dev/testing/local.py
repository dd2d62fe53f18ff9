"""LocalCluster: etcd + kube-apiserver + kube-controller-manager + kube-scheduler on
loopback ports.

Start: certificates and keys from a fresh test CA -> etcd (wait for /health) ->
kube-apiserver (wait for /readyz) -> kube-controller-manager and kube-scheduler together
(wait until the controller manager has created the `default` ServiceAccount and the
kube-root-ca.crt ConfigMap in `default`, which proves its controllers run, and until the
scheduler's /healthz answers). Stop: SIGTERM to every component's process group, SIGKILL after a
grace period, then the work directory is removed. See docs/CONTROL_PLANE.md.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from preflight_dev.testing import flags
from preflight_dev.testing.base import Cluster
from preflight_dev.testing.binaries import find_bin_dir
from preflight_dev.testing.certs import KeyPair, new_private_key, private_key_pem
from preflight_dev.testing.kubeconfig import (
    build_kubeconfig,
    client_cert_user,
    cluster_entry,
    write_kubeconfig,
)
from preflight_dev.testing.process import (
    OWNER_FILE,
    Component,
    free_ports,
    make_workdir,
    reap_stale_workdirs,
    record_pids,
)

KEEP_ENV = "VLLM_PREFLIGHT_KEEP_WORKDIR"
CONTEXT_NAME = "vllm-preflight-local"
START_ATTEMPTS = 3  # free_port() can lose a race with another process; retry with new ports


class ComponentError(RuntimeError):
    """A component failed; the message carries the tail of its log."""

    def __init__(self, component: Component, reason: str) -> None:
        self.component = component.name
        self.log_tail = component.log_tail()
        super().__init__(
            f"{component.name} {reason}; last lines of {component.log_path}:\n{self.log_tail}"
        )

    @property
    def port_conflict(self) -> bool:
        return "address already in use" in self.log_tail


class ClusterStartError(ComponentError):
    """A component did not come up."""


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


class LocalCluster(Cluster):
    """A throwaway control plane on this machine. Use as a context manager, or call
    start()/stop(); stop() also runs at interpreter exit if you forget it."""

    is_local = True

    def __init__(
        self,
        bin_dir: Path | None = None,
        *,
        parent_dir: Path | None = None,
        start_timeout: float = 60.0,
        extra_flags: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """`extra_flags`: more flags per component name ("kube-apiserver", ...), after
        flags.py's, e.g. the feature gates of the Workload API (testing/nextplane.py)."""
        super().__init__(bin_dir)
        self._extra_flags = {name: list(flags) for name, flags in (extra_flags or {}).items()}
        self._parent_dir = parent_dir
        self._start_timeout = start_timeout
        self._components: list[Component] = []
        self._workdir: Path | None = None
        self._attempt_t0 = 0.0
        self.server = ""  #: https://127.0.0.1:PORT
        self.startup_seconds = 0.0  #: certificates to ready, binaries already built
        #: seconds from the start of the attempt until each component was ready
        self.ready_after: dict[str, float] = {}

    @property
    def workdir(self) -> Path:
        """Certificates, etcd data, logs/<component>.log, admin.kubeconfig."""
        if self._workdir is None:
            raise RuntimeError("the cluster is not started")
        return self._workdir

    @property
    def is_started(self) -> bool:
        return self._workdir is not None

    @property
    def logs_dir(self) -> Path:
        return flags.Layout(self.workdir).logs

    @property
    def pids(self) -> dict[str, int]:
        return {c.name: c.pid for c in self._components}

    def diagnostics(self) -> str:
        return "".join(
            f"\n--- {c.name} (last lines of {c.log_path}):\n{c.log_tail(15)}"
            for c in self._components
        )

    def start(self) -> LocalCluster:
        if self._workdir is not None:
            return self
        reap_stale_workdirs(self._parent_dir)
        if self._bin_dir is None:
            self._bin_dir = find_bin_dir()
        t0 = time.monotonic()
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self._start_once()
                break
            except ClusterStartError as err:
                final = not err.port_conflict or attempt == START_ATTEMPTS
                # The last failure keeps its logs: the message points into them.
                self.stop(keep_workdir=final)
                if final:
                    raise
            except BaseException:
                self.stop()
                raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def stop(self, keep_workdir: bool | None = None) -> None:
        """Stops every component and removes the work directory, unless `keep_workdir`
        (default: env VLLM_PREFLIGHT_KEEP_WORKDIR=1) asks to keep it for its logs."""
        # The controller manager and API server shut down in parallel; etcd goes last so
        # the API server never spends its grace period retrying a vanished store.
        for component in self._components:
            if component.name != "etcd":
                component.terminate()
        for component in reversed(self._components):
            component.stop()
        self._components = []
        _LIVE.discard(self)
        if self._workdir is None:
            return
        keep = os.environ.get(KEEP_ENV) == "1" if keep_workdir is None else keep_workdir
        if keep:
            # Without an owner, reap_stale_workdirs leaves it alone for the developer.
            (self._workdir / OWNER_FILE).unlink(missing_ok=True)
        else:
            shutil.rmtree(self._workdir, ignore_errors=True)
        self._workdir = None
        self._scratch = None
        self._kubeconfig = None

    def check_alive(self) -> None:
        """Raises ComponentError if a component has exited."""
        for component in self._components:
            code = component.returncode()
            if code is not None:
                raise ComponentError(component, f"exited unexpectedly with code {code}")

    # -- start, step by step ----------------------------------------------------------
    def _start_once(self) -> None:
        _LIVE.add(self)
        self._attempt_t0 = time.monotonic()
        self.ready_after = {}
        self._workdir = workdir = make_workdir(self._parent_dir)
        layout = flags.Layout(workdir)
        self._scratch = workdir / "scratch"
        self._scratch.mkdir()
        ports = flags.Ports(*free_ports(4))
        self.server = f"https://127.0.0.1:{ports.apiserver}"
        self._write_pki(layout)
        ssl_ctx = ssl.create_default_context(cafile=str(layout.ca_cert))
        ssl_ctx.load_cert_chain(str(layout.admin_cert), str(layout.admin_key))

        etcd = self._launch("etcd", flags.etcd_args(self.bin_dir / "etcd", layout, ports))
        etcd_health = f"http://127.0.0.1:{ports.etcd_client}/health"
        self._wait(etcd, lambda: b'"health":"true"' in _get(etcd_health, None))

        apiserver = self._launch(
            "kube-apiserver",
            flags.apiserver_args(self.bin_dir / "kube-apiserver", layout, ports),
        )
        self._wait(apiserver, lambda: _get(f"{self.server}/readyz", ssl_ctx) == b"ok")
        self.version = json.loads(_get(f"{self.server}/version", ssl_ctx))["gitVersion"]

        controller_manager = self._launch(
            "kube-controller-manager",
            flags.controller_manager_args(self.bin_dir / "kube-controller-manager", layout),
        )
        # Started at once, not after the controller manager: both only need the API server.
        scheduler = self._launch(
            "kube-scheduler",
            flags.scheduler_args(self.bin_dir / "kube-scheduler", layout, ports),
        )
        default_sa = f"{self.server}/api/v1/namespaces/default/serviceaccounts/default"
        root_ca = f"{self.server}/api/v1/namespaces/default/configmaps/kube-root-ca.crt"
        self._wait(
            controller_manager,
            lambda: bool(_get(default_sa, ssl_ctx)) and bool(_get(root_ca, ssl_ctx)),
        )
        # Its serving certificate is self-signed in --cert-dir; only liveness is read here.
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        scheduler_health = f"https://127.0.0.1:{ports.scheduler}/healthz"
        self._wait(scheduler, lambda: _get(scheduler_health, insecure) == b"ok")
        # A component that lost its port to another process exits within milliseconds, but
        # a probe may have reached that other process (say, someone else's etcd) first.
        for component in self._components:
            code = component.returncode()
            if code is not None:
                raise ClusterStartError(component, f"exited with code {code} while starting")
        self._kubeconfig = layout.admin_kubeconfig

    def _write_pki(self, layout: flags.Layout) -> None:
        ca = self.certificate_authority
        layout.pki.mkdir(parents=True)
        layout.ca_cert.write_bytes(ca.cert_pem)
        serving = ca.serving(
            # The in-cluster names too, so a client that follows the `kubernetes` Service
            # endpoint (127.0.0.1) by name still verifies.
            ["127.0.0.1", "localhost", "10.0.0.1", "kubernetes", "kubernetes.default",
             "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"],
            common_name="kube-apiserver",
        )  # fmt: skip
        layout.apiserver_cert.write_bytes(serving.cert_pem)
        _write_private(layout.apiserver_key, serving.key_pem)
        # One ECDSA key both signs service account tokens and verifies them.
        _write_private(layout.sa_key, private_key_pem(new_private_key()))
        cluster = cluster_entry(self.server, ca.cert_pem)

        def client_kubeconfig(path: Path, user: str) -> KeyPair:
            # Each client its own identity (visible in audit and logs), with the admin
            # group's rights so no RBAC bootstrap detail can starve a controller.
            cert = ca.client(user, groups=["system:masters"])
            user_entry = client_cert_user(cert.cert_pem, cert.key_pem)
            write_kubeconfig(
                path, build_kubeconfig(name=CONTEXT_NAME, cluster=cluster, user=user_entry)
            )
            return cert

        admin = client_kubeconfig(layout.admin_kubeconfig, "vllm-preflight-admin")
        layout.admin_cert.write_bytes(admin.cert_pem)
        _write_private(layout.admin_key, admin.key_pem)
        client_kubeconfig(layout.controller_manager_kubeconfig, "system:kube-controller-manager")
        client_kubeconfig(layout.scheduler_kubeconfig, "system:kube-scheduler")

    def _launch(self, name: str, argv: list[str]) -> Component:
        argv = argv + self._extra_flags.get(name, [])
        component = Component(name, argv, self.logs_dir / f"{name}.log")
        component.start()
        self._components.append(component)
        record_pids(self.workdir, [c.pid for c in self._components])
        return component

    def _wait(self, component: Component, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + self._start_timeout
        while True:
            code = component.returncode()
            if code is not None:
                raise ClusterStartError(component, f"exited with code {code} while starting")
            with contextlib.suppress(OSError):
                if ready():
                    self.ready_after[component.name] = time.monotonic() - self._attempt_t0
                    return
            if time.monotonic() >= deadline:
                raise ClusterStartError(
                    component, f"was not ready after {self._start_timeout:.0f} s"
                )
            time.sleep(0.1)


def _get(url: str, ctx: ssl.SSLContext | None) -> bytes:
    """The body of a 200 response; b"" for any HTTP error status. Connection errors raise
    OSError (the caller keeps polling). Never through a proxy from the environment."""
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if ctx is not None:
        handlers.append(urllib.request.HTTPSHandler(context=ctx))
    try:
        with urllib.request.build_opener(*handlers).open(url, timeout=2) as response:
            body: bytes = response.read()
            return body
    except urllib.error.HTTPError:
        return b""


_LIVE: set[LocalCluster] = set()


@atexit.register
def _stop_leftovers() -> None:
    for cluster in list(_LIVE):
        cluster.stop()
