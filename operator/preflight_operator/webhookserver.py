"""The HTTPS server of both webhooks (/validate and /mutate-pods): a plain aiohttp app.

kopf serves no webhook here (its admission server is not configured): both webhooks
are answered by functions of ``handlers/admission.py`` from the AdmissionReview, with
the same AdmissionService. Why our own server and not kopf's: the validating webhook is
the hot path (every create or update of a workload in an opted-in namespace) and kopf's
per-request machinery (a cause object, handler selection, state, per-object memory, a
patch diff) cost more than the rules themselves: measured, it halved the webhook's
throughput and pushed its p99 past twice the bare TLS floor (docs/PERFORMANCE.md). The
first answer to that overrode a private method of kopf's server; this app uses only
aiohttp's public API (issue 12), and kopf keeps what it is for: the watches.

- TLS from the chart's certificate files, re-read when they change (every
  ``reload_interval`` seconds their bytes are compared; the live context loads the new
  pair, so new connections get it and open ones finish on the old one: no restart, no
  gap). A pair that does not load (half-written during a rotation) keeps the old one.
- Bounded: a body over 1 MiB is refused with 413 by aiohttp; a body that is not an
  AdmissionReview with a ``request`` mapping gets 400; an unknown path 404. The API
  server then applies the configuration's failurePolicy (Ignore in the chart).
- Never a 500: an exception of a review function admits the request unchanged, logged
  and counted as an error (fail open), like the review functions' own failures.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp.web

from preflight_operator import constants, metrics

logger = logging.getLogger(__name__)

ReviewFn = Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
MAX_BODY = 1024 * 1024  # what kopf's server allowed (aiohttp's default client_max_size)
_KNOWN = frozenset({constants.MUTATE_PODS_WEBHOOK_ID, constants.VALIDATE_WEBHOOK_ID})


class WebhookServer:
    """``routes``: webhook id (the URL path) -> review function."""

    def __init__(
        self,
        routes: Mapping[str, ReviewFn],
        *,
        addr: str,
        port: int,
        certfile: Path,
        keyfile: Path,
        reload_interval: float = 60.0,
    ) -> None:
        self.routes = dict(routes)
        self.addr = addr
        self.port = port
        self.certfile = Path(certfile)
        self.keyfile = Path(keyfile)
        self.reload_interval = reload_interval
        self._loaded: tuple[bytes, bytes] | None = None
        self._context: ssl.SSLContext | None = None
        self._runner: aiohttp.web.AppRunner | None = None

    # -- TLS ----------------------------------------------------------------------------

    def _read_pair(self) -> tuple[bytes, bytes]:
        return self.certfile.read_bytes(), self.keyfile.read_bytes()

    def ssl_context(self) -> ssl.SSLContext:
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
        context = self.ssl_context()
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

    # -- serving ------------------------------------------------------------------------

    def app(self) -> aiohttp.web.Application:
        app = aiohttp.web.Application(client_max_size=MAX_BODY)
        app.add_routes([aiohttp.web.post("/{id}", self.handle)])
        return app

    async def start(self) -> None:
        runner = aiohttp.web.AppRunner(self.app(), handle_signals=False, access_log=None)
        await runner.setup()
        site = aiohttp.web.TCPSite(
            runner, self.addr or None, self.port, ssl_context=self.ssl_context(),
            reuse_address=True,
        )  # fmt: skip
        await site.start()
        self._runner = runner
        logger.info("webhooks served at https://%s:%d/{%s}", self.addr or "*", self.port,
                    ",".join(sorted(self.routes)))  # fmt: skip

    async def watch_certificates(self) -> None:
        """Runs until cancelled: re-reads the certificate files every reload_interval."""
        while True:
            await asyncio.sleep(self.reload_interval)
            self.reload_if_changed()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def handle(self, request: aiohttp.web.Request) -> aiohttp.web.Response:
        webhook = request.match_info.get("id", "")
        review = self.routes.get(webhook)
        if review is None:
            raise aiohttp.web.HTTPNotFound(reason=f"no webhook {webhook[:40]!r} here")
        try:
            data = json.loads(await request.read())
        except ValueError as exc:
            raise aiohttp.web.HTTPBadRequest(reason=f"not JSON: {exc}"[:200]) from exc
        if not isinstance(data, dict) or not isinstance(data.get("request"), dict):
            raise aiohttp.web.HTTPBadRequest(reason="not an AdmissionReview request")
        try:
            answer = await review(data)
        except Exception:
            logger.exception("webhook %s failed; admitting the object unchanged", webhook)
            label = webhook if webhook in _KNOWN else "unknown"
            metrics.ADMISSIONS.labels(webhook=label, outcome="error").inc()
            answer = admit_unchanged(data)
        return aiohttp.web.json_response(answer)


def admit_unchanged(review: Mapping[str, Any]) -> dict[str, Any]:
    """An AdmissionReview response that admits the object as it is."""
    request = review.get("request") or {}
    uid = request.get("uid", "") if isinstance(request, Mapping) else ""
    return {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": {"uid": uid if isinstance(uid, str) else "", "allowed": True},
    }
