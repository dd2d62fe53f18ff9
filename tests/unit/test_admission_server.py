"""The webhook server: a plain aiohttp HTTPS app (no kopf), both webhooks, fail open,
bounded, and the certificate re-read when its files change."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp

from preflight_dev.testing.certs import CertificateAuthority
from preflight_dev.testing.process import free_ports
from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.operatorconfig import OperatorConfig
from preflight_operator.core.policy import PolicyBook
from preflight_operator.runtime import metrics
from preflight_operator.webhook import admissionreview
from preflight_operator.webhook.webhooks import AdmissionService
from preflight_operator.webhook.webhookserver import MAX_BODY, WebhookServer


def serving(tmp_path: Path, ca: CertificateAuthority, name: str = "tls") -> tuple[Path, Path]:
    pair = ca.serving(["127.0.0.1"])
    cert, key = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    return cert, key


def run_against(
    server: WebhookServer, ca: CertificateAuthority, client: Callable[[str, Any], Awaitable[Any]]
) -> Any:
    async def scenario() -> Any:
        await server.start()
        try:
            context = ssl.create_default_context(cadata=ca.cert_pem.decode())
            return await client(f"https://127.0.0.1:{server.port}", context)
        finally:
            await server.stop()

    return asyncio.run(scenario())


def test_both_webhooks_are_routed_and_bad_requests_get_4xx(tmp_path: Path) -> None:
    ca = CertificateAuthority()
    cert, key = serving(tmp_path, ca)
    seen: list[tuple[str, str]] = []

    def answer(webhook: str, allowed: bool) -> Callable[[Mapping[str, Any]], Awaitable[Any]]:
        async def review(data: Mapping[str, Any]) -> dict[str, Any]:
            seen.append((webhook, data["request"]["uid"]))
            return {"response": {"uid": data["request"]["uid"], "allowed": allowed}}

        return review

    (port,) = free_ports(1)
    server = WebhookServer(
        {"validate": answer("validate", False), "mutate-pods": answer("mutate-pods", True)},
        addr="127.0.0.1", port=port, certfile=cert, keyfile=key,
    )  # fmt: skip

    async def client(url: str, context: ssl.SSLContext) -> list[tuple[int, Any]]:
        answers = []
        async with aiohttp.ClientSession() as session:
            for path, data in (
                ("validate", b'{"request": {"uid": "v1"}}'),
                ("mutate-pods", b'{"request": {"uid": "m1"}}'),
                ("validate", b"{not json"),
                ("validate", b'{"request": "x"}'),
                ("validate", b"[]"),
                ("elsewhere", b'{"request": {"uid": "e1"}}'),
                ("validate", b" " * (MAX_BODY + 1)),
            ):
                async with session.post(f"{url}/{path}", data=data, ssl=context) as rsp:
                    ok = rsp.status == 200
                    answers.append((rsp.status, (await rsp.json()) if ok else None))
        return answers

    answers = run_against(server, ca, client)
    assert [a[0] for a in answers] == [200, 200, 400, 400, 400, 404, 413]
    assert answers[0][1]["response"] == {"uid": "v1", "allowed": False}
    assert answers[1][1]["response"] == {"uid": "m1", "allowed": True}
    assert seen == [("validate", "v1"), ("mutate-pods", "m1")]


def test_a_review_function_that_raises_admits_and_is_counted(tmp_path: Path) -> None:
    ca = CertificateAuthority()
    cert, key = serving(tmp_path, ca)

    async def broken(data: Mapping[str, Any]) -> dict[str, Any]:
        raise RuntimeError("boom")

    (port,) = free_ports(1)
    server = WebhookServer(
        {"validate": broken}, addr="127.0.0.1", port=port, certfile=cert, keyfile=key
    )
    errors = metrics.ADMISSIONS.labels(webhook="validate", outcome="error")
    before = errors._value.get()

    async def client(url: str, context: ssl.SSLContext) -> tuple[int, Any]:
        async with aiohttp.ClientSession() as session:
            review = {"apiVersion": "admission.k8s.io/v1", "request": {"uid": "u9"}}
            async with session.post(f"{url}/validate", json=review, ssl=context) as rsp:
                return rsp.status, await rsp.json()

    status, body = run_against(server, ca, client)
    assert status == 200
    assert body["response"] == {"uid": "u9", "allowed": True}
    assert errors._value.get() == before + 1


def test_mutate_pods_never_answers_500_for_a_malformed_pod(tmp_path: Path) -> None:
    ca = CertificateAuthority()
    cert, key = serving(tmp_path, ca)
    service = AdmissionService(OperatorConfig(), RulesAnalyser(), PolicyBook(), events=None)
    (port,) = free_ports(1)
    server = WebhookServer(
        admissionreview.routes(service), addr="127.0.0.1", port=port, certfile=cert, keyfile=key
    )
    objects: list[Any] = [
        {"metadata": "x", "spec": {}},
        {"metadata": ["a"], "spec": {"containers": "x"}},
        {"metadata": {"namespace": "team", "name": "p", "labels": "x"}, "spec": []},
        {"metadata": {"namespace": "team", "name": "p", "uid": "u"}, "spec": {}},
        "a string",
        None,
    ]

    async def client(url: str, context: ssl.SSLContext) -> list[tuple[int, Any]]:
        answers = []
        async with aiohttp.ClientSession() as session:
            for i, obj in enumerate(objects):
                review = {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {"uid": f"u{i}", "operation": "CREATE", "object": obj},
                }
                async with session.post(f"{url}/mutate-pods", json=review, ssl=context) as rsp:
                    answers.append((rsp.status, await rsp.json()))
        return answers

    answers = run_against(server, ca, client)
    assert [status for status, _ in answers] == [200] * len(objects)
    for i, (_, body) in enumerate(answers):
        assert body["response"]["uid"] == f"u{i}"
        assert body["response"]["allowed"] is True
        assert "patch" not in body["response"]


def _served_serial(port: int, ca_pem: bytes) -> int:
    """The serial number of the certificate a new TLS connection is served."""
    import socket

    from cryptography import x509

    context = ssl.create_default_context(cadata=ca_pem.decode())
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_a_rotated_certificate_is_served_to_new_connections(tmp_path: Path) -> None:
    """The chart's Secret changes (cert-manager renews it): the files are re-read and new
    connections get the new pair, without a restart; a pair that does not load (caught
    half-written) keeps the old one."""
    from cryptography import x509

    ca = CertificateAuthority()
    cert, key = serving(tmp_path, ca)
    (port,) = free_ports(1)

    async def review(data: Mapping[str, Any]) -> dict[str, Any]:
        return {"response": {"uid": "", "allowed": True}}

    server = WebhookServer(
        {"validate": review}, addr="127.0.0.1", port=port, certfile=cert, keyfile=key
    )
    first = x509.load_pem_x509_certificate(cert.read_bytes()).serial_number

    async def scenario() -> list[Any]:
        await server.start()
        loop = asyncio.get_running_loop()
        try:
            seen = [await loop.run_in_executor(None, _served_serial, port, ca.cert_pem)]
            unchanged = server.reload_if_changed()
            new_cert, new_key = serving(tmp_path, ca, "next")
            cert.write_bytes(new_cert.read_bytes())
            key.write_bytes(b"half-written")
            broken = server.reload_if_changed()
            seen.append(await loop.run_in_executor(None, _served_serial, port, ca.cert_pem))
            key.write_bytes(new_key.read_bytes())
            reloaded = server.reload_if_changed()
            seen.append(await loop.run_in_executor(None, _served_serial, port, ca.cert_pem))
            return [unchanged, broken, reloaded, *seen]
        finally:
            await server.stop()

    unchanged, broken, reloaded, before, during, after = asyncio.run(scenario())
    second = x509.load_pem_x509_certificate(cert.read_bytes()).serial_number
    assert (unchanged, broken, reloaded) == (False, False, True)
    assert before == first
    assert during == first
    assert after == second != first
