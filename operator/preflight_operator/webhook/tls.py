"""The webhook's serving certificate: loaded once, re-read when its files change.

Apart from the server (issue 28). cert-manager, or the chart's self-signed pair, rotates the
Secret's files under a running pod; the server re-reads them every ``reload_interval``
(webhookserver.watch_certificates) without a restart. A pair that fails to load is never
put into the live context: the old one keeps serving.

The caller (issue 34 item 6). Anyone who reaches the port can POST a forged AdmissionReview
naming any namespace and read the JSON patch: that namespace's policy as PREFLIGHT_* env and
its verdict-reuse offers (nodes, pods, keys). The API server can prove itself with a client
certificate (kube-apiserver's AdmissionConfiguration, a kubeconfig per webhook host): with
``client_ca`` set, the handshake requires a certificate that CA signed, and any other caller
is refused before a byte of HTTP is read. Off by default: a cluster whose API server is not
configured so (most managed ones cannot be) would have every review refused, which under a
fail-closed entry denies pods. docs/OPERATOR.md, "Who can call the webhook port".
"""

from __future__ import annotations

import logging
import ssl
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)


class ServingCertificate:
    def __init__(self, certfile: Path, keyfile: Path, client_ca: Path | None = None) -> None:
        self.certfile = Path(certfile)
        self.keyfile = Path(keyfile)
        self.client_ca = Path(client_ca) if client_ca is not None else None
        self._loaded: tuple[bytes, bytes] | None = None
        self._context: ssl.SSLContext | None = None
        self._client_ca_loaded: bytes | None = None

    def _read_pair(self) -> tuple[bytes, bytes]:
        return self.certfile.read_bytes(), self.keyfile.read_bytes()

    def context(self) -> ssl.SSLContext:
        if self._context is None:
            context = ssl.create_default_context(purpose=ssl.Purpose.CLIENT_AUTH)
            pair = self._read_pair()
            context.load_cert_chain(self.certfile, self.keyfile)
            if self.client_ca is not None:
                # no fallback: a CA that cannot be read stops the start (the pod restarts
                # and says why), never a port that quietly answers anyone
                ca = self.client_ca.read_bytes()
                context.load_verify_locations(cadata=ca.decode("ascii", "replace"))
                context.verify_mode = ssl.CERT_REQUIRED
                self._client_ca_loaded = ca
            self._context, self._loaded = context, pair
        return self._context

    def _reload_client_ca(self, context: ssl.SSLContext) -> bool:
        """A changed client CA bundle is added to the live context (a rotation: the new CA
        is trusted at once; the old one stays trusted until the next restart, as an SSL
        context cannot drop a CA). One that fails to load is ignored with a warning."""
        if self.client_ca is None:
            return False
        try:
            ca = self.client_ca.read_bytes()
        except OSError as exc:
            logger.warning("webhook client CA not re-read (%s); keeping the loaded one", exc)
            return False
        if ca == self._client_ca_loaded:
            return False
        try:
            context.load_verify_locations(cadata=ca.decode("ascii", "replace"))
        except (ssl.SSLError, ValueError) as exc:
            logger.warning("new webhook client CA not loaded (%s); keeping the old one", exc)
            return False
        self._client_ca_loaded = ca
        logger.info("webhook client CA re-read from %s", self.client_ca)
        return True

    def reload_if_changed(self) -> bool:
        """True when the files changed and the new pair was loaded. The pair is read once
        and tried on a scratch context first: a pair that fails to load half-way would
        leave the live context with a certificate and no matching key (measured: every
        new handshake then fails), so only a pair known to load reaches it."""
        context = self.context()
        ca_changed = self._reload_client_ca(context)
        try:
            pair = self._read_pair()
        except OSError as exc:
            logger.warning("webhook certificate not re-read (%s); serving the old one", exc)
            return False
        if pair == self._loaded:
            return ca_changed
        with tempfile.TemporaryDirectory(prefix="vllm-preflight-tls-") as scratch:
            cert, key = Path(scratch, "tls.crt"), Path(scratch, "tls.key")
            cert.write_bytes(pair[0])
            key.write_bytes(pair[1])
            try:
                ssl.create_default_context(purpose=ssl.Purpose.CLIENT_AUTH).load_cert_chain(
                    cert, key
                )
            except (OSError, ssl.SSLError) as exc:
                # e.g. the Secret's files caught between their two writes: next time
                logger.warning("new webhook certificate not loaded (%s); serving the old one", exc)
                return False
            context.load_cert_chain(cert, key)
        self._loaded = pair
        logger.info("webhook certificate re-read from %s", self.certfile)
        return True
