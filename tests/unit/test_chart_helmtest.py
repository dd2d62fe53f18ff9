"""The chart's `helm test` script (charts/vllm-preflight/files/helm-test.py), run here as
the test pod runs it, against stand-ins on 127.0.0.1: the operator's health and metrics
endpoints, a webhook TLS server using the certificate the chart renders, and an API server.
Only the Service routing stays untested here (it needs a real cluster)."""

from __future__ import annotations

import base64
import datetime
import http.server
import importlib.util
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from preflight_dev.testing import BinariesNotFound, CertificateAuthority, find_bin_dir

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "vllm-preflight"
SCRIPT = CHART / "files" / "helm-test.py"
NAMESPACE = "gpu-system"
SERVICE_DNS = f"vllm-preflight.{NAMESPACE}.svc"
TOKEN = "test-token"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("helm_test_script", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- stand-in servers ------------------------------------------------------------------------
class Server:
    """An HTTP(S) server on 127.0.0.1 in a thread, answering with `respond(path, headers)`."""

    def __init__(
        self,
        respond: Callable[[str, Any], tuple[int, bytes]],
        tls: ssl.SSLContext | None = None,
    ) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body = respond(self.path, self.headers)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class TLSServer:
    """Accepts TLS handshakes with the given certificate (the webhook port's stand-in)."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (OSError, ssl.SSLError):
                pass

    def close(self) -> None:
        self.sock.close()


def rendered_webhook_secret(tmp: Path) -> tuple[Path, Path, Path]:
    """tls.crt, tls.key and ca.crt of the chart's webhook Secret, written to files."""
    try:
        helm = find_bin_dir() / "helm"
    except BinariesNotFound as err:  # pragma: no cover - depends on the machine
        pytest.skip(f"no helm binary: {err}")
    out = subprocess.run(
        [str(helm), "template", "vllm-preflight", str(CHART), "--namespace", NAMESPACE,
         "--kube-version", "1.34.4", "--show-only", "templates/webhook-certificate.yaml"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    secret = next(
        d for d in yaml.safe_load_all(out) if d and d["metadata"]["name"].endswith("-webhook-tls")
    )
    paths = []
    for key in ("tls.crt", "tls.key", "ca.crt"):
        path = tmp / key
        path.write_bytes(base64.b64decode(secret["data"][key]))
        paths.append(path)
    return paths[0], paths[1], paths[2]


class Stand:
    """Everything the script talks to, and the environment that points it there."""

    def __init__(self, tmp: Path) -> None:
        self.lease: dict[str, Any] = {}
        self.tmp = tmp
        cert, key, self.ca_file = rendered_webhook_secret(tmp)
        self.webhook = TLSServer(cert, key)
        self.operator = Server(self._operator)
        api_ca = CertificateAuthority("stand-in API server CA")
        pair = api_ca.serving(["127.0.0.1"])
        (tmp / "api.crt").write_bytes(pair.cert_pem)
        (tmp / "api.key").write_bytes(pair.key_pem)
        api_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        api_tls.load_cert_chain(tmp / "api.crt", tmp / "api.key")
        self.api = Server(self._api, tls=api_tls)
        sa_dir = tmp / "serviceaccount"
        sa_dir.mkdir()
        (sa_dir / "token").write_text(TOKEN)
        (sa_dir / "ca.crt").write_bytes(api_ca.cert_pem)
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "NO_PROXY": "127.0.0.1",
            "NAMESPACE": NAMESPACE,
            "HEALTH_URL": f"http://127.0.0.1:{self.operator.port}/healthz",
            "METRICS_URL": f"http://127.0.0.1:{self.operator.port}/metrics",
            "WEBHOOK_ADDR": f"127.0.0.1:{self.webhook.port}",
            "WEBHOOK_SERVER_NAME": SERVICE_DNS,
            "CA_FILE": str(self.ca_file),
            "LEASE_NAME": "vllm-preflight",
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(self.api.port),
            "SA_DIR": str(sa_dir),
            "TEST_TIMEOUT": "5",
        }
        self.held_by("operator-0")

    def held_by(self, name: str, age_s: float = 1.0) -> None:
        seen = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=age_s)
        self.lease = {
            "holderIdentity": name,
            "leaseDurationSeconds": 15,
            "renewTime": seen.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }

    def _operator(self, path: str, headers: Any) -> tuple[int, bytes]:
        if path == "/healthz":
            return 200, b"{}"
        if path == "/metrics":
            return 200, b"# HELP vllm_preflight_checks_total x\n# TYPE x counter\n"
        return 404, b""

    def _api(self, path: str, headers: Any) -> tuple[int, bytes]:
        if headers.get("Authorization") != f"Bearer {TOKEN}":
            return 401, b'{"kind":"Status","code":401}'
        group = f"/apis/vllm-preflight.io/v1alpha1/namespaces/{NAMESPACE}/"
        if path in (group + "gpuvalidations", group + "preflightpolicies"):
            return 200, json.dumps({"items": [{}]}).encode()
        if path == f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/vllm-preflight":
            return 200, json.dumps({"spec": self.lease}).encode()
        return 404, b'{"kind":"Status","code":404}'

    def run(self, **overrides: str) -> subprocess.CompletedProcess[str]:
        env = self.env | overrides
        return subprocess.run(
            [sys.executable, str(SCRIPT)],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def close(self) -> None:
        self.webhook.close()
        self.operator.close()
        self.api.close()


@pytest.fixture
def stand(tmp_path: Path) -> Iterator[Stand]:
    s = Stand(tmp_path)
    yield s
    s.close()


def failed_checks(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [
        line.split()[1].rstrip(":")
        for line in result.stdout.splitlines()
        if line.startswith("FAIL")
    ]


# -- the script ------------------------------------------------------------------------------
class TestHelmTestScript:
    def test_passes_against_a_healthy_install(self, stand: Stand) -> None:
        result = stand.run()
        assert result.returncode == 0, result.stdout + result.stderr
        oks = [
            line.split()[1].rstrip(":")
            for line in result.stdout.splitlines()
            if line.startswith("ok")
        ]
        assert oks == ["health", "metrics", "webhook-tls", "api", "leader"]
        assert "5 passed, 0 failed" in result.stdout

    def test_chart_certificate_is_refused_for_another_name(self, stand: Stand) -> None:
        result = stand.run(WEBHOOK_SERVER_NAME=f"other.{NAMESPACE}.svc")
        assert result.returncode == 1
        assert failed_checks(result) == ["webhook-tls"]

    def test_certificate_from_another_ca_is_refused(self, stand: Stand, tmp_path: Path) -> None:
        other = tmp_path / "other-ca.crt"
        other.write_bytes(CertificateAuthority("someone else").cert_pem)
        result = stand.run(CA_FILE=str(other))
        assert failed_checks(result) == ["webhook-tls"]

    def test_operator_down_fails_health_and_metrics(self, stand: Stand) -> None:
        stand.operator.close()
        result = stand.run()
        assert failed_checks(result) == ["health", "metrics"]

    def test_api_refusing_the_token_fails(self, stand: Stand, tmp_path: Path) -> None:
        sa_dir = Path(stand.env["SA_DIR"])
        (sa_dir / "token").write_text("wrong")
        result = stand.run()
        assert set(failed_checks(result)) == {"api", "leader"}

    def test_a_lease_nobody_renews_fails(self, stand: Stand) -> None:
        stand.held_by("operator-gone", age_s=120)
        result = stand.run()
        assert failed_checks(result) == ["leader"]
        assert "operator-gone" in result.stdout

    def test_optional_checks_are_skipped_when_not_configured(self, stand: Stand) -> None:
        result = stand.run(METRICS_URL="", LEASE_NAME="")
        assert result.returncode == 0
        assert "3 passed, 0 failed" in result.stdout


class TestLeaseHolder:
    NOW = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.timezone.utc)

    def test_a_renewed_lease_has_a_holder_and_a_stale_or_empty_one_not(self) -> None:
        script = load_script()
        fresh = {"holderIdentity": "a", "leaseDurationSeconds": 15,
                 "renewTime": "2026-01-01T11:59:50.000000Z"}  # fmt: skip
        assert script.lease_holder(fresh, self.NOW) == "a"
        stale = {**fresh, "renewTime": "2026-01-01T11:59:30.000000Z"}  # 30 s > 15 + 5
        assert script.lease_holder(stale, self.NOW) == ""
        assert script.lease_holder({**fresh, "holderIdentity": ""}, self.NOW) == ""  # released
        assert script.lease_holder({**fresh, "renewTime": "garbage"}, self.NOW) == ""
        assert script.lease_holder({"holderIdentity": 3}, self.NOW) == ""
