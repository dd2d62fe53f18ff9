"""The two webhooks, AdmissionReview in, AdmissionReview out: /validate
(``review_validation_async``) and /mutate-pods (``review_mutation_async``), served by
webhookserver.py (not kopf: it says why).

Neither may block a cluster by crashing: everything is caught here, logged, counted, and
the request admitted unchanged. Only a deliberate denial (Enforce) says no.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import time
from collections.abc import Mapping
from typing import Any

from preflight_operator.core import constants, provenance
from preflight_operator.core.injection import Injection, already_injected, json_patch
from preflight_operator.runtime import metrics
from preflight_operator.webhook.deadline import FallbackFn
from preflight_operator.webhook.provenancereview import review_provenance_async
from preflight_operator.webhook.webhooks import AdmissionService, Validation
from preflight_operator.webhook.webhookserver import ReviewFn

logger = logging.getLogger(__name__)


async def review_validation_async(
    service: AdmissionService, review: Mapping[str, Any]
) -> dict[str, Any]:
    """The AdmissionReview response of /validate; the rules run off the event loop, so
    that one slow manifest holds up no other request."""
    started = time.perf_counter()
    request = review.get("request") or {}
    try:
        body = request.get("object") or request.get("oldObject") or {}
        result: Validation | None = await service.validate_async(
            body,
            old=request.get("oldObject"),
            operation=str(request.get("operation", "")),
            dry_run=bool(request.get("dryRun")),
            user_info=request.get("userInfo") or {},
        )
    except Exception:
        logger.exception("validating webhook failed; admitting the object")
        result = None
    return _validation_response(review, result, started)


def validation_fallback(
    service: AdmissionService, review: Mapping[str, Any], seconds: float
) -> dict[str, Any]:
    """/validate's answer when the review could not be answered by its deadline
    (webhookserver.py): what the object's policy says of an object it could not check."""
    started = time.perf_counter()
    request = review.get("request") or {}
    body = request.get("object") or request.get("oldObject") or {}
    result = service.overloaded(
        body if isinstance(body, Mapping) else {},
        old=request.get("oldObject"),
        operation=str(request.get("operation", "")),
        seconds=seconds,
    )
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
        if result.unjudged:
            metrics.UNJUDGED.inc(result.unjudged)
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


async def review_mutation_async(
    service: AdmissionService, review: Mapping[str, Any]
) -> dict[str, Any]:
    """The AdmissionReview response of /mutate-pods: the injection as a JSON patch, or the
    pod admitted unchanged (skipped, or anything failed)."""
    started = time.perf_counter()
    webhook = constants.MUTATE_PODS_WEBHOOK_ID
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    try:
        pod = request.get("object")
        if not isinstance(pod, Mapping) or request.get("operation", "CREATE") != "CREATE":
            raise ValueError("not a Pod CREATE")  # the configuration sends only those
        outcome = await service.mutate_pod(dict(pod))
        if isinstance(outcome, Injection):
            # who created it, whatever the client wrote (provenance.py)
            ops = provenance.annotation_patch(
                pod,
                provenance.created_by(pod, request.get("userInfo") or {}, service.pod_creators),
            )
        elif already_injected(pod):
            # its check is not one this webhook injected (a template carrying a
            # preflight-check of its own): never the controller's (issue 34)
            ops = provenance.annotation_patch(pod, provenance.OTHER)
        else:
            ops = []
        if isinstance(outcome, Injection):
            ops = json_patch(pod, outcome) + ops  # none when the pod carries it already
            if outcome.warnings:
                response["warnings"] = list(outcome.warnings)
            _count_injected(pod, outcome)
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
        if ops:
            patch = json.dumps(ops, separators=(",", ":")).encode()
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(patch).decode("ascii")
    except Exception:
        response = {"uid": request.get("uid", ""), "allowed": True}
        logger.exception("injection failed; admitting the pod unchanged")
        metrics.INJECTIONS.labels(result="error", reason="internal-error").inc()
        result = "error"
    finally:
        metrics.WEBHOOK_LATENCY.labels(webhook=webhook).observe(time.perf_counter() - started)
    metrics.ADMISSIONS.labels(webhook=webhook, outcome=result).inc()
    return {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": response,
    }


def _count_injected(pod: Mapping[str, Any], injection: Injection) -> None:
    """The injection counted; one whose plan the rules could not read is counted as
    ``reason="plan-unknown"`` and logged with the pod's name and why: its check runs
    without the plan (docs/CHECKS.md, "Plan unknown")."""
    if not injection.plan_unknown:
        metrics.INJECTIONS.labels(result="injected", reason="").inc()
        return
    metrics.INJECTIONS.labels(result="injected", reason="plan-unknown").inc()
    meta = pod.get("metadata") or {}
    logger.info(
        "pod %s/%s injected with the plan unknown: %s",
        meta.get("namespace"),
        meta.get("name") or meta.get("generateName"),
        injection.plan_unknown,
    )


def routes(service: AdmissionService) -> dict[str, ReviewFn]:
    """The webhook server's routes: webhook id (URL path) -> review function."""
    return {
        constants.VALIDATE_WEBHOOK_ID: functools.partial(review_validation_async, service),
        # the same review behind the failurePolicy Fail entry (namespaces under Enforce,
        # runtime/failclosedsync.py); only its answer when no decision is possible differs
        constants.VALIDATE_ENFORCE_WEBHOOK_ID: functools.partial(review_validation_async, service),
        constants.MUTATE_PODS_WEBHOOK_ID: functools.partial(review_mutation_async, service),
        constants.PROVENANCE_WEBHOOK_ID: functools.partial(
            review_provenance_async, service.pod_creators
        ),
    }


def fallbacks(service: AdmissionService) -> dict[str, FallbackFn]:
    """The answers by the deadline (webhookserver.py): /validate's follows the object's
    policy; /mutate-pods has none of its own (its failurePolicy: the pod unchanged)."""
    fallback = functools.partial(validation_fallback, service)
    return {
        constants.VALIDATE_WEBHOOK_ID: fallback,
        constants.VALIDATE_ENFORCE_WEBHOOK_ID: fallback,
    }
