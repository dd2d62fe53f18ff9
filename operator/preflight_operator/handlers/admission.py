"""The two webhooks: /validate (``review_validation_async``, served directly by
webhookserver.py) and /mutate-pods (``mutate_pod``, a ``@kopf.on.mutate`` handler).

Neither may block a cluster by crashing: in kopf any exception from an admission handler
denies the request, so everything is caught here, logged, counted, and the request
admitted unchanged. Only a deliberate denial (Enforce) says no.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import kopf

from preflight_operator import constants, metrics
from preflight_operator.injection import Injection
from preflight_operator.webhooks import AdmissionService, Validation

logger = logging.getLogger(__name__)


def _service(memo: Any) -> AdmissionService:
    service: AdmissionService = memo.admission
    return service


async def review_validation_async(
    service: AdmissionService, review: Mapping[str, Any]
) -> dict[str, Any]:
    """The AdmissionReview response of /validate (served by webhookserver.py, not kopf),
    the rules run off the event loop so that one slow manifest holds up no other request."""
    started = time.perf_counter()
    request = review.get("request") or {}
    try:
        body = request.get("object") or request.get("oldObject") or {}
        result: Validation | None = await service.validate_async(
            body,
            old=request.get("oldObject"),
            operation=str(request.get("operation", "")),
            dry_run=bool(request.get("dryRun")),
        )
    except Exception:
        logger.exception("validating webhook failed; admitting the object")
        result = None
    return _validation_response(review, result, started)


def _validation_response(
    review: Mapping[str, Any], result: Validation | None, started: float
) -> dict[str, Any]:
    webhook = constants.VALIDATE_WEBHOOK_ID
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    if result is None:
        metrics.ADMISSIONS.labels(webhook=webhook, outcome="error").inc()
    else:
        metrics.ADMISSIONS.labels(webhook=webhook, outcome=result.outcome).inc()
        decision = result.decision
        if decision.warnings:
            response["warnings"] = list(decision.warnings)
        if not decision.allowed:
            response["allowed"] = False
            response["status"] = {"code": 403, "reason": "Forbidden", "message": decision.message}
    metrics.WEBHOOK_LATENCY.labels(webhook=webhook).observe(time.perf_counter() - started)
    return {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": response,
    }


async def mutate_pod(*, body: kopf.Body, patch: kopf.Patch, memo: Any, **_: Any) -> None:
    started = time.perf_counter()
    webhook = constants.MUTATE_PODS_WEBHOOK_ID
    pod = dict(body)
    try:
        outcome = await _service(memo).mutate_pod(pod)
        if isinstance(outcome, Injection):
            patch.spec["initContainers"] = outcome.init_containers
            patch.spec["volumes"] = outcome.volumes
            for key, value in outcome.labels.items():
                patch.metadata.labels[key] = value
            metrics.INJECTIONS.labels(result="injected", reason="").inc()
            result = "injected"
        else:
            metrics.INJECTIONS.labels(result="skipped", reason=outcome.reason).inc()
            if outcome.reason == "undecided":
                meta = pod.get("metadata") or {}
                logger.info(
                    "pod %s/%s admitted without the check: %s",
                    meta.get("namespace"),
                    meta.get("name") or meta.get("generateName"),
                    outcome.detail or outcome.reason,
                )
            result = "skipped"
    except Exception:
        patch.clear()
        logger.exception("injection failed; admitting the pod unchanged")
        metrics.INJECTIONS.labels(result="error", reason="internal-error").inc()
        result = "error"
    finally:
        metrics.WEBHOOK_LATENCY.labels(webhook=webhook).observe(time.perf_counter() - started)
    metrics.ADMISSIONS.labels(webhook=webhook, outcome=result).inc()


def register(registry: kopf.OperatorRegistry) -> None:
    # /validate is answered by webhookserver.PreflightWebhookServer with review_validation_async.
    kopf.on.mutate(
        "v1",
        "pods",
        id=constants.MUTATE_PODS_WEBHOOK_ID,
        operations=["CREATE"],
        registry=registry,
    )(mutate_pod)
