"""/validate-provenance: an injected pod's marks (the injected and workload labels, the
provenance annotation) are written once, by the mutating webhook, and never added, changed
or removed after, through ``pods`` or ``pods/status`` (provenance.py says why). Cheap and
pure: no rules, no policy; like every webhook here it admits on any internal failure."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from preflight_operator.core import constants, provenance
from preflight_operator.runtime import metrics

logger = logging.getLogger(__name__)


async def review_provenance_async(
    trusted: Iterable[str], review: Mapping[str, Any]
) -> dict[str, Any]:
    started = time.perf_counter()
    webhook = constants.PROVENANCE_WEBHOOK_ID
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    outcome = "allowed"
    try:
        pod = request.get("object")
        old = request.get("oldObject")
        if isinstance(pod, Mapping):
            why = provenance.refusal(
                str(request.get("operation", "")),
                pod,
                old if isinstance(old, Mapping) else None,
                request.get("userInfo") or {},
                trusted,
            )
            if why:
                outcome = "denied"
                response["allowed"] = False
                response["status"] = {"code": 403, "reason": "Forbidden", "message": why}
    except Exception:
        logger.exception("provenance webhook failed; admitting the pod")
        outcome = "error"
    metrics.ADMISSIONS.labels(webhook=webhook, outcome=outcome).inc()
    metrics.WEBHOOK_LATENCY.labels(webhook=webhook).observe(time.perf_counter() - started)
    return {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": response,
    }
