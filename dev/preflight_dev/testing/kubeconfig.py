"""Kubeconfig documents: built as plain dicts (pure), written with owner-only permissions.

Credentials are embedded (`*-data`), never referenced by path, so a kubeconfig stays
valid when copied and means exactly one thing to kubectl, helm, kopf and the Python client.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def build_kubeconfig(
    *,
    name: str,
    cluster: Mapping[str, Any],
    user: Mapping[str, Any],
    namespace: str = "",
) -> dict[str, Any]:
    """One cluster, one user, one context, all called `name`, selected as current."""
    context: dict[str, Any] = {"cluster": name, "user": name}
    if namespace:
        context["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": dict(cluster)}],
        "users": [{"name": name, "user": dict(user)}],
        "contexts": [{"name": name, "context": context}],
        "current-context": name,
        "preferences": {},
    }


def cluster_entry(server: str, ca_pem: bytes) -> dict[str, Any]:
    return {"server": server, "certificate-authority-data": _b64(ca_pem)}


def client_cert_user(cert_pem: bytes, key_pem: bytes) -> dict[str, Any]:
    return {"client-certificate-data": _b64(cert_pem), "client-key-data": _b64(key_pem)}


def token_user(token: str) -> dict[str, Any]:
    return {"token": token}


def write_kubeconfig(path: Path, config: Mapping[str, Any]) -> Path:
    """Writes atomically (a reader never sees half a file) and readable by the owner only
    (it holds keys or tokens)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        yaml.safe_dump(dict(config), out, sort_keys=False)
    tmp.replace(path)
    return path
