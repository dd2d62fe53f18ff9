"""`helm test` for vllm-preflight: proves, from inside the cluster, that the operator answers
and that its API is served. Standard library only; every check prints one line.

1. health: GET HEALTH_URL (the operator's /healthz through its Service) answers 200;
2. metrics: GET METRICS_URL answers 200 with Prometheus text (skipped when unset);
3. webhook TLS: WEBHOOK_ADDR presents a certificate that chains to CA_FILE and is valid for
   WEBHOOK_SERVER_NAME -- exactly what the API server checks before calling a webhook;
4. API: the CRDs are served (list GPUValidations and PreflightPolicies in NAMESPACE with this
   pod's ServiceAccount token);
5. leader: the Lease LEASE_NAME in NAMESPACE is held by a replica that renewed it within
   its lease duration (skipped when unset: --standalone).

The API server is found as in any pod (KUBERNETES_SERVICE_HOST/PORT, the mounted token and
CA); tests outside a cluster point the same variables elsewhere.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import ssl
import sys
import urllib.request

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
TIMEOUT = float(os.environ.get("TEST_TIMEOUT", "10"))


class CheckFailed(Exception):
    pass


def http_get(url: str, context: ssl.SSLContext | None = None, token: str = "") -> bytes:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=context) as response:
            body: bytes = response.read()
            return body
    except OSError as err:  # URLError, HTTPError, timeouts
        raise CheckFailed(f"GET {url}: {err}") from err


def check_health(url: str) -> str:
    http_get(url)
    return f"{url} answered 200"


def check_metrics(url: str) -> str:
    body = http_get(url).decode("utf-8", "replace")
    if "# TYPE" not in body and "# HELP" not in body:
        raise CheckFailed(f"GET {url}: no Prometheus text in the answer")
    return f"{url} serves Prometheus text ({len(body)} bytes)"


def check_webhook_tls(addr: str, server_name: str, ca_file: str) -> str:
    host, _, port = addr.rpartition(":")
    context = ssl.create_default_context(cafile=ca_file)
    try:
        # Two with-statements: one with parentheses needs python 3.10, images may have 3.9.
        with socket.create_connection((host, int(port)), timeout=TIMEOUT) as raw:  # noqa: SIM117
            with context.wrap_socket(raw, server_hostname=server_name) as tls:
                version = tls.version()
    except (OSError, ssl.SSLError) as err:
        raise CheckFailed(f"TLS to {addr} as {server_name} with CA {ca_file}: {err}") from err
    return f"{addr} presents a certificate for {server_name} signed by the webhook CA ({version})"


def api_base() -> tuple[str, ssl.SSLContext, str]:
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise CheckFailed("KUBERNETES_SERVICE_HOST is not set (not in a pod?)")
    sa_dir = os.environ.get("SA_DIR", SA_DIR)
    with open(os.path.join(sa_dir, "token"), encoding="utf-8") as f:
        token = f.read().strip()
    context = ssl.create_default_context(cafile=os.path.join(sa_dir, "ca.crt"))
    if ":" in host:
        host = f"[{host}]"
    return f"https://{host}:{port}", context, token


def check_api(namespace: str) -> str:
    base, context, token = api_base()
    counts = []
    for plural in ("gpuvalidations", "preflightpolicies"):
        url = f"{base}/apis/vllm-preflight.io/v1alpha1/namespaces/{namespace}/{plural}"
        body = json.loads(http_get(url, context, token))
        counts.append(f"{len(body.get('items', []))} {plural}")
    return f"vllm-preflight.io/v1alpha1 is served ({', '.join(counts)} in {namespace})"


# Slack for the clock of this pod against the leader's (the renew time is the leader's).
CLOCK_SLACK_S = 5


def lease_holder(spec: dict[str, object], now: datetime.datetime) -> str:
    """The holder of a Lease spec whose renewTime + leaseDurationSeconds is still ahead
    (within CLOCK_SLACK_S), else ""."""
    holder = spec.get("holderIdentity")
    renewed = spec.get("renewTime")
    if not isinstance(holder, str) or not holder or not isinstance(renewed, str):
        return ""
    try:
        seen = datetime.datetime.fromisoformat(renewed.replace("Z", "+00:00"))
        duration = int(str(spec.get("leaseDurationSeconds", 15)))
    except ValueError:
        return ""
    if seen.tzinfo is None:
        seen = seen.replace(tzinfo=datetime.timezone.utc)
    if seen + datetime.timedelta(seconds=duration + CLOCK_SLACK_S) <= now:
        return ""
    return holder


def check_leader(namespace: str, name: str) -> str:
    base, context, token = api_base()
    url = f"{base}/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
    body = json.loads(http_get(url, context, token))
    spec = body.get("spec") or {}
    holder = lease_holder(spec, datetime.datetime.now(datetime.timezone.utc))
    if not holder:
        raise CheckFailed(
            f"Lease {namespace}/{name} is held by no live replica "
            f"(holderIdentity {spec.get('holderIdentity')!r}, renewTime "
            f"{spec.get('renewTime')!r}): see the operator's log"
        )
    return f"Lease {namespace}/{name}: held by {holder}, renewed at {spec.get('renewTime')}"


def main() -> int:
    env = os.environ
    namespace = env["NAMESPACE"]
    checks = [("health", lambda: check_health(env["HEALTH_URL"]))]
    if env.get("METRICS_URL"):
        checks.append(("metrics", lambda: check_metrics(env["METRICS_URL"])))
    checks.append(
        (
            "webhook-tls",
            lambda: check_webhook_tls(
                env["WEBHOOK_ADDR"], env["WEBHOOK_SERVER_NAME"], env["CA_FILE"]
            ),
        )
    )
    checks.append(("api", lambda: check_api(namespace)))
    if env.get("LEASE_NAME"):
        checks.append(("leader", lambda: check_leader(namespace, env["LEASE_NAME"])))
    failed = 0
    for name, check in checks:
        try:
            print(f"ok   {name}: {check()}", flush=True)
        except (CheckFailed, OSError, ValueError, KeyError) as err:
            failed += 1
            print(f"FAIL {name}: {err}", flush=True)
    print(f"{len(checks) - failed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
