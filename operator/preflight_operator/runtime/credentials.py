"""Who the operator is to the API server, and where that server is (api.py connects).

Credentials come from the pod's service account (the token file is re-read, so rotated
tokens keep working) or from a kubeconfig, held as PEM data, never as files left on disk.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import ssl
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0


@dataclasses.dataclass
class Credentials:
    """Where the API server is and how to prove who we are (PEM data, never temp files)."""

    server: str
    ca_pem: bytes | None = None
    insecure: bool = False
    cert_pem: bytes | None = None
    key_pem: bytes | None = None
    token: str | None = None
    token_file: Path | None = None
    _token_read_at: float = 0.0

    def current_token(self) -> str | None:
        if self.token_file is not None and (
            self.token is None or time.monotonic() - self._token_read_at > TOKEN_REREAD_SECONDS
        ):
            self.token = self.token_file.read_text(encoding="ascii").strip()
            self._token_read_at = time.monotonic()
        return self.token

    def authorization(self) -> str | None:
        token = self.current_token()
        return f"Bearer {token}" if token else None

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(
            cadata=self.ca_pem.decode("ascii") if self.ca_pem else None
        )
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert_pem and self.key_pem:
            # ssl loads a client certificate only from files: write them where only we can
            # read, load, and remove them at once.
            with tempfile.TemporaryDirectory() as tmp:
                cert, key = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
                cert.write_bytes(self.cert_pem)
                key.write_bytes(self.key_pem)
                context.load_cert_chain(str(cert), str(key))
        return context


def _data_or_file(entry: Mapping[str, Any], name: str, base: Path) -> bytes | None:
    data = entry.get(f"{name}-data")
    if data:
        return base64.b64decode(data)
    path = entry.get(name)
    if path:
        return (base / str(path)).expanduser().read_bytes()
    return None


def credentials_from_kubeconfig(path: Path) -> Credentials:
    """The current context of a kubeconfig: client certificates or a bearer token (what
    the local control plane, kind and most CI clusters use). exec and auth-provider
    plugins are not supported here: run the operator in the cluster for those."""
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    current = config.get("current-context")
    context = next(
        (c.get("context") or {} for c in config.get("contexts") or [] if c.get("name") == current),
        None,
    )
    if context is None:
        raise ValueError(f"{path}: no current context")
    cluster = next(
        (
            c.get("cluster") or {}
            for c in config.get("clusters") or []
            if c.get("name") == context.get("cluster")
        ),
        {},
    )
    user = next(
        (
            u.get("user") or {}
            for u in config.get("users") or []
            if u.get("name") == context.get("user")
        ),
        {},
    )
    if user.get("exec") or user.get("auth-provider"):
        raise ValueError(f"{path}: exec/auth-provider credentials are not supported")
    base = path.parent
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = (base / str(user["tokenFile"])).read_text(encoding="ascii").strip()
    return Credentials(
        server=str(cluster.get("server", "")).rstrip("/"),
        ca_pem=_data_or_file(cluster, "certificate-authority", base),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        cert_pem=_data_or_file(user, "client-certificate", base),
        key_pem=_data_or_file(user, "client-key", base),
        token=token,
    )


def load_credentials(kubeconfig: str | None = None) -> Credentials:
    """In a pod: its service account. Elsewhere: ``kubeconfig``, else $KUBECONFIG (its
    first file), else ~/.kube/config."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    token_file = SERVICE_ACCOUNT_DIR / "token"
    if kubeconfig is None and host and token_file.exists():
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
        return Credentials(
            server=server,
            ca_pem=(SERVICE_ACCOUNT_DIR / "ca.crt").read_bytes(),
            token_file=token_file,
        )
    path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return credentials_from_kubeconfig(Path(path or "~/.kube/config").expanduser())
