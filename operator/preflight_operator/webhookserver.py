"""The HTTPS server of both webhooks: kopf's WebhookServer, with /validate answered directly.

kopf's server keeps everything it is good at: TLS from the chart's certificate files,
re-reading them when they change, its place in kopf's lifecycle, and /mutate-pods through
``@kopf.on.mutate`` (kopf turns the handler's patch into the JSON patch). The validating
webhook is the hot path — every create or update of a workload in an opted-in namespace —
and kopf's per-request machinery (a cause object, handler selection, state, per-object
memory, a patch) cost more than the rules themselves: measured, it halved the webhook's
throughput and pushed its p99 past twice the bare TLS floor (docs/PERFORMANCE.md). So
/validate reads the AdmissionReview and answers it here, with the same AdmissionService.

Bounded: aiohttp refuses request bodies over 1 MiB (kopf's Application default) with 413;
the API server then applies the configuration's failurePolicy (Ignore in the chart).

Never a 500: kopf builds its cause, logger and memo from the request's object before any
handler runs, and raises (aiohttp answers 500) when e.g. ``metadata`` is not a mapping.
Such a request is admitted unchanged here, logged and counted as an error, as the
handlers do with their own failures (fail open).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp.web
import kopf

from preflight_operator import constants, metrics

logger = logging.getLogger(__name__)

ReviewFn = Callable[[Mapping[str, Any]], Mapping[str, Any] | Awaitable[Mapping[str, Any]]]


class PreflightWebhookServer(kopf.WebhookServer):
    """kopf.WebhookServer whose ``direct`` paths (by webhook id) bypass kopf's handlers."""

    def __init__(self, *, direct: Mapping[str, ReviewFn], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.direct = dict(direct)

    # kopf calls ``self._serve(fn, request)`` for every request (kopf 1.45, pinned in
    # constraints.txt); tests/unit/test_admission_server.py fails if that stops being so.
    async def _serve(  # type: ignore[override]
        self, fn: Any, request: aiohttp.web.Request
    ) -> aiohttp.web.Response:
        webhook = request.match_info.get("id", "")
        review = self.direct.get(webhook)
        try:
            data = json.loads(await request.text())
        except ValueError as exc:
            raise aiohttp.web.HTTPBadRequest(reason=str(exc)) from exc
        if not isinstance(data, dict) or not isinstance(data.get("request"), dict):
            raise aiohttp.web.HTTPBadRequest(reason="not an AdmissionReview request")
        if review is not None:
            answer = review(data)
            if inspect.isawaitable(answer):
                answer = await answer
            return aiohttp.web.json_response(answer)
        try:
            return await kopf.WebhookServer._serve(fn, request)
        except aiohttp.web.HTTPException:
            raise  # kopf's own answers to a malformed review (400, 404, 409)
        except Exception:
            logger.exception("webhook %.40s failed before any handler ran; admitting", webhook)
            label = webhook if webhook in _KNOWN else "unknown"
            metrics.ADMISSIONS.labels(webhook=label, outcome="error").inc()
            return aiohttp.web.json_response(admit_unchanged(data))


_KNOWN = frozenset({constants.MUTATE_PODS_WEBHOOK_ID, constants.VALIDATE_WEBHOOK_ID})


def admit_unchanged(review: Mapping[str, Any]) -> dict[str, Any]:
    """An AdmissionReview response that admits the object as it is."""
    request = review.get("request") or {}
    uid = request.get("uid", "") if isinstance(request, Mapping) else ""
    return {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": {"uid": uid if isinstance(uid, str) else "", "allowed": True},
    }
