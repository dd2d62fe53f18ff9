"""A throwaway certificate authority for the local control plane and test webhooks.

Pure: everything returns PEM bytes; writing files is the caller's business. ECDSA P-256
keys throughout because they are generated in microseconds (RSA takes tens of
milliseconds each on a busy 2-core machine) and every Kubernetes component accepts them.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Long enough for a `make cluster` left running over a weekend; short enough that a
# leaked key is worthless soon. Backdated so a skewed clock never sees "not yet valid".
VALIDITY = datetime.timedelta(days=30)
BACKDATE = datetime.timedelta(hours=1)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes


def new_private_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def private_key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    # "EC PRIVATE KEY" (SEC 1) is the one encoding every consumer here parses: Go's
    # keyutil for --service-account-*-key-file, tls.X509KeyPair, etcd and Python's ssl.
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def subject_alt_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    """IP literals become IPAddress entries, everything else a DNSName."""
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


class CertificateAuthority:
    """A self-signed CA that issues serving and client certificates.

    Named so that pytest never mistakes it for a test class when a test imports it.
    """

    def __init__(self, common_name: str = "vllm-preflight test CA") -> None:
        self._key = new_private_key()
        now = datetime.datetime.now(datetime.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        public = self._key.public_key()
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .sign(self._key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def issue(
        self,
        common_name: str,
        *,
        organizations: Iterable[str] = (),
        hosts: Iterable[str] = (),
        server: bool = False,
        client: bool = False,
    ) -> KeyPair:
        """Signs a fresh key. `hosts` become subject alternative names (servers need
        them: Go ignores the CN); `organizations` become O= (Kubernetes groups)."""
        key = new_private_key()
        now = datetime.datetime.now(datetime.timezone.utc)
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        usages = [ExtendedKeyUsageOID.SERVER_AUTH] if server else []
        usages += [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attrs))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
        )
        if usages:
            builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        sans = subject_alt_names(hosts)
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), private_key_pem(key))

    def serving(self, hosts: Iterable[str], common_name: str = "") -> KeyPair:
        hosts = list(hosts)
        if not hosts:
            raise ValueError("a serving certificate needs at least one host")
        return self.issue(common_name or hosts[0], hosts=hosts, server=True)

    def client(self, user: str, groups: Iterable[str] = ()) -> KeyPair:
        """A client certificate: Kubernetes reads the user from CN, groups from O."""
        return self.issue(user, organizations=groups, client=True)
