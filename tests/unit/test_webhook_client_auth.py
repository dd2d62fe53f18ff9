"""The webhook port's caller check (issue 34 item 6; tls.ServingCertificate's client_ca):
real TLS handshakes on a local socket, without a cluster (tests/e2e/test_webhook_caller.py
runs it with the API server presenting its certificate)."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from preflight_dev.testing.certs import CertificateAuthority
from preflight_operator.webhook.tls import ServingCertificate


def _files(tmp: Path, name: str, cert: bytes, key: bytes) -> tuple[Path, Path]:
    cert_path, key_path = tmp / f"{name}.crt", tmp / f"{name}.key"
    cert_path.write_bytes(cert)
    key_path.write_bytes(key)
    return cert_path, key_path


async def _handshake(server: ssl.SSLContext, client: tuple[Path, Path] | None) -> bool:
    """True when a client (with ``client``'s certificate, if any) completes a request."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readline()
            writer.write(b"ok\n")
            await writer.drain()
        except (ssl.SSLError, ConnectionError):
            pass
        finally:
            writer.close()

    listener = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server)
    port = listener.sockets[0].getsockname()[1]
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if client is not None:
        context.load_cert_chain(*client)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
        writer.write(b"hello\n")
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 10)
        writer.close()
        return line == b"ok\n"
    except (ssl.SSLError, ConnectionError, asyncio.IncompleteReadError):
        return False
    finally:
        listener.close()
        await listener.wait_closed()


@pytest.fixture
def serving(tmp_path: Path) -> tuple[Path, Path]:
    pair = CertificateAuthority("serving CA").serving(["127.0.0.1"])
    return _files(tmp_path, "tls", pair.cert_pem, pair.key_pem)


def test_without_a_client_ca_anyone_is_answered(serving: tuple[Path, Path]) -> None:
    context = ServingCertificate(*serving).context()
    assert asyncio.run(_handshake(context, None))


def test_with_a_client_ca_only_its_certificates_are_answered(
    serving: tuple[Path, Path], tmp_path: Path
) -> None:
    ca, other = CertificateAuthority("client CA"), CertificateAuthority("another CA")
    ca_file = tmp_path / "client-ca.crt"
    ca_file.write_bytes(ca.cert_pem)
    mine = ca.client("kube-apiserver")
    theirs = other.client("kube-apiserver")
    certificate = ServingCertificate(*serving, client_ca=ca_file)
    context = certificate.context()
    their_files = _files(tmp_path, "theirs", theirs.cert_pem, theirs.key_pem)
    assert not asyncio.run(_handshake(context, None))
    assert not asyncio.run(_handshake(context, their_files))
    assert asyncio.run(_handshake(context, _files(tmp_path, "mine", mine.cert_pem, mine.key_pem)))

    # a rotated bundle (the new CA added) is trusted without a restart
    ca_file.write_bytes(ca.cert_pem + other.cert_pem)
    assert certificate.reload_if_changed()
    assert asyncio.run(_handshake(context, their_files))


def test_an_unreadable_client_ca_stops_the_start(
    serving: tuple[Path, Path], tmp_path: Path
) -> None:
    """Never a port that quietly answers anyone because its CA file was missing."""
    with pytest.raises(FileNotFoundError):
        ServingCertificate(*serving, client_ca=tmp_path / "missing.crt").context()
