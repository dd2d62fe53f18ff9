"""What a test can do with any cluster, local or real: run kubectl/helm against it, get a
Python API client, make namespaces that are ready for Pods, mint restricted credentials,
and get certificates for a webhook server."""

from __future__ import annotations

import itertools
import json
import os
import secrets
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, TypeVar

from kubernetes import config as kube_config

from preflight_dev.testing.certs import CertificateAuthority
from preflight_dev.testing.kubeconfig import build_kubeconfig, token_user, write_kubeconfig

_C = TypeVar("_C", bound="Cluster")

# Loopback must never go through a proxy: webhooks and the API server live there.
_NO_PROXY = "127.0.0.1,localhost,::1"


class KubectlError(subprocess.CalledProcessError):
    """A failed kubectl/helm call; unlike CalledProcessError, str() includes stderr."""

    def __str__(self) -> str:
        return f"{super().__str__()}\nstderr: {self.stderr}\nstdout: {self.stdout}"


class ServingCert(NamedTuple):
    """Files for a TLS server on 127.0.0.1, and the CA bundle a webhook configuration's
    clientConfig.caBundle needs (base64 of `ca_pem`)."""

    cert_path: Path
    key_path: Path
    ca_pem: bytes


class Cluster:
    """Base of LocalCluster and ExternalCluster; see preflight_dev.testing."""

    #: True when the API server runs on this machine and so can call webhooks on
    #: 127.0.0.1; tests that rely on that skip on a real cluster.
    is_local: bool = False

    def __init__(self, bin_dir: Path | None = None) -> None:
        self._bin_dir = bin_dir
        self._kubeconfig: Path | None = None
        self._scratch: Path | None = None
        self._ca: CertificateAuthority | None = None
        self._serial = itertools.count(1)
        self._namespaces: list[str] = []
        self.version = ""  #: the API server's gitVersion once started, e.g. v1.34.4

    # -- lifecycle (subclasses) -------------------------------------------------------
    def start(self: _C) -> _C:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self: _C) -> _C:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def diagnostics(self) -> str:
        """Extra context for error messages (a local cluster adds its component logs)."""
        return ""

    # -- what tests use ---------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        """An admin kubeconfig (cluster-admin on the local cluster)."""
        if self._kubeconfig is None:
            raise RuntimeError("the cluster is not started")
        return self._kubeconfig

    @property
    def bin_dir(self) -> Path:
        """Directory with kubectl, helm, etcd, kube-apiserver, kube-controller-manager."""
        if self._bin_dir is None:
            raise RuntimeError("the cluster is not started")
        return self._bin_dir

    def env(self, kubeconfig: Path | None = None) -> dict[str, str]:
        """os.environ for a subprocess that should talk to this cluster (the operator,
        helm, a shell): KUBECONFIG set, our binaries first on PATH."""
        env = dict(os.environ)
        env["KUBECONFIG"] = str(kubeconfig or self.kubeconfig)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        # kubectl's discovery cache would otherwise pile up in ~/.kube/cache, one
        # directory per random port.
        env["KUBECACHEDIR"] = str(self.scratch / "kube-cache")
        for var in ("NO_PROXY", "no_proxy"):
            env[var] = f"{_NO_PROXY},{env[var]}" if env.get(var) else _NO_PROXY
        return env

    def kubectl(
        self,
        *args: str,
        kubeconfig: Path | None = None,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60.0,
    ) -> subprocess.CompletedProcess[str]:
        """Runs kubectl (ours, pinned) with the admin kubeconfig or `kubeconfig`. Raises
        KubectlError (with stderr) on a non-zero exit unless check=False."""
        return self._run(
            "kubectl", args, kubeconfig=kubeconfig, input=input, check=check, timeout=timeout
        )

    def helm(
        self,
        *args: str,
        kubeconfig: Path | None = None,
        check: bool = True,
        timeout: float = 300.0,
    ) -> subprocess.CompletedProcess[str]:
        """Runs helm (ours, pinned) against this cluster."""
        return self._run(
            "helm", args, kubeconfig=kubeconfig, input=None, check=check, timeout=timeout
        )

    def apply(self, *manifests: Mapping[str, Any], kubeconfig: Path | None = None) -> str:
        """`kubectl apply` of objects given as dicts; returns kubectl's output."""
        doc = {"apiVersion": "v1", "kind": "List", "items": [dict(m) for m in manifests]}
        return self.kubectl("apply", "-f", "-", input=json.dumps(doc), kubeconfig=kubeconfig).stdout

    def api_client(self, kubeconfig: Path | None = None) -> Any:
        """A new kubernetes.client.ApiClient for this cluster (close it when done)."""
        path = str(kubeconfig or self.kubeconfig)
        return kube_config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=path, persist_config=False
        )

    def create_namespace(
        self, prefix: str = "e2e", *, labels: Mapping[str, str] | None = None
    ) -> str:
        """Creates a uniquely named namespace and waits until Pods can be created in it."""
        name = f"{prefix}-{secrets.token_hex(3)}"
        meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
        self._namespaces.append(name)
        self.wait_namespace_ready(name)
        return name

    def wait_namespace_ready(self, namespace: str, timeout: float = 30.0) -> None:
        """Waits for the namespace's `default` ServiceAccount: until the serviceaccount
        controller has made it, ServiceAccount admission rejects every Pod there."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.kubectl(
                "get", "serviceaccount", "default", "-n", namespace,
                "--ignore-not-found", "-o", "name", check=False,
            )  # fmt: skip
            if found.returncode == 0 and found.stdout.strip():
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"namespace {namespace}: no default ServiceAccount after {timeout:.0f} s "
                    f"({found.stderr.strip()}){self.diagnostics()}"
                )
            time.sleep(0.1)

    def delete_namespace(self, namespace: str, *, wait: bool = False) -> None:
        self.kubectl(
            "delete", "namespace", namespace, "--ignore-not-found", f"--wait={str(wait).lower()}"
        )

    def service_account_kubeconfig(
        self, namespace: str, name: str, *, duration: str = "1h"
    ) -> Path:
        """Creates ServiceAccount `name` if missing, mints a token for it (TokenRequest,
        as kubelets do) and writes a kubeconfig that authenticates only with that token.
        Bind Roles to `system:serviceaccount:<namespace>:<name>` to grant it anything."""
        meta = {"name": name, "namespace": namespace}
        self.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta})
        token = self.kubectl(
            "create", "token", name, "-n", namespace, f"--duration={duration}"
        ).stdout.strip()
        view = self.kubectl("config", "view", "--minify", "--flatten", "--raw", "-o", "json")
        cluster = json.loads(view.stdout)["clusters"][0]["cluster"]
        config = build_kubeconfig(
            name=f"{namespace}-{name}", cluster=cluster, user=token_user(token), namespace=namespace
        )
        path = self.scratch / f"sa-{namespace}-{name}-{next(self._serial)}.kubeconfig"
        return write_kubeconfig(path, config)

    def issue_serving_cert(self, hosts: Iterable[str] = ("127.0.0.1", "localhost")) -> ServingCert:
        """A serving certificate for `hosts` from this cluster's test CA."""
        pair = self.certificate_authority.serving(hosts)
        stem = self.scratch / f"serving-{next(self._serial)}"
        cert_path, key_path = stem.with_suffix(".crt"), stem.with_suffix(".key")
        cert_path.write_bytes(pair.cert_pem)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(pair.key_pem)
        return ServingCert(cert_path, key_path, self.certificate_authority.cert_pem)

    # -- for subclasses ---------------------------------------------------------------
    @property
    def scratch(self) -> Path:
        """Private directory for generated kubeconfigs and certificates."""
        if self._scratch is None:
            raise RuntimeError("the cluster is not started")
        return self._scratch

    @property
    def certificate_authority(self) -> CertificateAuthority:
        if self._ca is None:
            self._ca = CertificateAuthority()
        return self._ca

    def _run(
        self,
        tool: str,
        args: Iterable[str],
        *,
        kubeconfig: Path | None,
        input: str | None,
        check: bool,
        timeout: float,
    ) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin_dir / tool), f"--kubeconfig={kubeconfig or self.kubeconfig}", *args]
        result = subprocess.run(
            cmd,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(kubeconfig),
            check=False,
        )
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, cmd, result.stdout, result.stderr)
        return result
