"""The webhook's serving certificate: loaded once, re-read when its files change.

Apart from the server (issue 28). cert-manager, or the chart's self-signed pair, rotates the
Secret's files under a running pod; the server re-reads them every ``reload_interval``
(webhookserver.watch_certificates) without a restart. A pair that fails to load is never
put into the live context: the old one keeps serving.
"""

from __future__ import annotations

import logging
import ssl
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)


class ServingCertificate:
    def __init__(self, certfile: Path, keyfile: Path) -> None:
        self.certfile = Path(certfile)
        self.keyfile = Path(keyfile)
        self._loaded: tuple[bytes, bytes] | None = None
        self._context: ssl.SSLContext | None = None

    def _read_pair(self) -> tuple[bytes, bytes]:
        return self.certfile.read_bytes(), self.keyfile.read_bytes()

    def context(self) -> ssl.SSLContext:
        if self._context is None:
            context = ssl.create_default_context(purpose=ssl.Purpose.CLIENT_AUTH)
            pair = self._read_pair()
            context.load_cert_chain(self.certfile, self.keyfile)
            self._context, self._loaded = context, pair
        return self._context

    def reload_if_changed(self) -> bool:
        """True when the files changed and the new pair was loaded. The pair is read once
        and tried on a scratch context first: a pair that fails to load half-way would
        leave the live context with a certificate and no matching key (measured: every
        new handshake then fails), so only a pair known to load reaches it."""
        context = self.context()
        try:
            pair = self._read_pair()
        except OSError as exc:
            logger.warning("webhook certificate not re-read (%s); serving the old one", exc)
            return False
        if pair == self._loaded:
            return False
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
