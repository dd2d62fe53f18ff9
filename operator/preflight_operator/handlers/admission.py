"""Admission handlers (kopf serves each at /<id>: /validate and /mutate-pods).

In kopf any exception from an admission handler denies the request. The rules or the
injection crashing must not block a cluster, so everything except our own deliberate
``kopf.AdmissionError`` is caught here: logged, counted, and the request admitted.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import kopf

from preflight_operator import constants, metrics
from preflight_operator.injection import Injection
from preflight_operator.webhooks import AdmissionService
from preflight_operator.workloads import VALIDATED_KINDS

logger = logging.getLogger(__name__)

_VALIDATED = {(k.group, k.plural) for k in VALIDATED_KINDS.values()}


def _validated_resource(resource: kopf.Resource) -> bool:
    return (resource.group, resource.plural) in _VALIDATED


def _service(memo: Any) -> AdmissionService:
    service: AdmissionService = memo.admission
    return service


async def validate(
    *,
    body: kopf.Body,
    dryrun: bool,
    warnings: list[str],
    memo: Any,
    **kwargs: Any,
) -> None:
    old: kopf.Body | None = kwargs.get("old")
    operation: str | None = kwargs.get("operation")
    started = time.perf_counter()
    webhook = constants.VALIDATE_WEBHOOK_ID
    try:
        result = _service(memo).validate(
            dict(body),
            old=dict(old) if old is not None else None,
            operation=operation or "",
            dry_run=dryrun,
        )
    except Exception:
        logger.exception("validating webhook failed; admitting the object")
        metrics.ADMISSIONS.labels(webhook=webhook, outcome="error").inc()
        return
    finally:
        metrics.WEBHOOK_LATENCY.labels(webhook=webhook).observe(time.perf_counter() - started)
    metrics.ADMISSIONS.labels(webhook=webhook, outcome=result.outcome).inc()
    warnings.extend(result.decision.warnings)
    if not result.decision.allowed:
        raise kopf.AdmissionError(result.decision.message, code=403)


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
    kopf.on.validate(
        _validated_resource,
        id=constants.VALIDATE_WEBHOOK_ID,
        operations=["CREATE", "UPDATE"],
        registry=registry,
    )(validate)
    kopf.on.mutate(
        "v1",
        "pods",
        id=constants.MUTATE_PODS_WEBHOOK_ID,
        operations=["CREATE"],
        registry=registry,
    )(mutate_pod)
