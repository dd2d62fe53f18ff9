"""What a webhook answers without its rules (issues 23, 34): by its deadline, or for a review
that is not decoded at all.

WebhookServer (webhookserver.py) decides when: a review that gets no slot in time
(``cause="shed"``), whose rules are not done by its deadline (``"deadline"``), whose body
the decoding thread could not get to (``"decode"``) or that has more than
``REVIEW_MAX_ITEMS`` JSON values (``"too-many-values"``). This module decides what, counted
in ``vllm_preflight_webhook_deadline_answers_total``: the webhook's fallback when it has one
(/validate: what the object's policy says of an object it could not check; Enforce
refuses, to retry), else what its failurePolicy says (Ignore: admitted unchanged, with a
warning saying so; Fail: refused, 503). Why answer at all instead of leaving the call to
the API server's timeout: left to it, the review was admitted silently, a broken
Deployment under Enforce included. The deadline is a share of the ``?timeout=`` the API
server sends with each call (request_timeout), else of the configured timeoutSeconds
(FailureAnswer).

Plain data in and JSON text out: aiohttp stays in webhookserver.py, which sends it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from preflight_operator.core import constants
from preflight_operator.core.operatorconfig import WebhookConfig
from preflight_operator.runtime import metrics

logger = logging.getLogger(__name__)

# The answer of a webhook whose review is not done by its deadline (the review, the
# seconds it had); without one, the webhook's failurePolicy answers (failure_answer).
FallbackFn = Callable[[Mapping[str, Any], float], Mapping[str, Any]]
_KNOWN = frozenset(
    {
        constants.MUTATE_PODS_WEBHOOK_ID,
        constants.VALIDATE_WEBHOOK_ID,
        constants.VALIDATE_ENFORCE_WEBHOOK_ID,
    }
)
# A review with more JSON values than this is not decoded (answered as the failurePolicy
# says): 150,000 values decode in about 36 ms, holding the GIL; the largest real workload
# of tests/data/realworld has under 1,000 (decoding.OBJECT_MAX_ITEMS is 20,000 for an
# object read from the API server). 1 MiB of ``[]`` would be 500,000 values, 200 ms.
REVIEW_MAX_ITEMS = 100_000
_CAUSES = {
    "shed": "overloaded",
    "deadline": "the rules too slow",
    "decode": "not decoded in time",
    "too-many-values": f"over {REVIEW_MAX_ITEMS:,} JSON values",
}
_GO_DURATION = re.compile(r"^([0-9]{1,4}(?:\.[0-9]{1,3})?)(ms|s|m)$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0}


@dataclasses.dataclass(frozen=True)
class FailureAnswer:
    """What a webhook answers when it cannot answer in time: its configuration's
    failurePolicy (what the API server itself would do on a timeout) and timeoutSeconds
    (used when a request does not say its own)."""

    policy: str = "Ignore"
    timeout_seconds: float = 10.0


def failure_answers(config: WebhookConfig) -> dict[str, FailureAnswer]:
    return {
        constants.VALIDATE_WEBHOOK_ID: FailureAnswer(
            config.validating_failure_policy, config.validating_timeout_seconds
        ),
        # the entry for namespaces under Enforce (failclosedscope.py): always Fail
        constants.VALIDATE_ENFORCE_WEBHOOK_ID: FailureAnswer(
            "Fail", config.validating_timeout_seconds
        ),
        constants.MUTATE_PODS_WEBHOOK_ID: FailureAnswer(
            config.mutating_failure_policy, config.mutating_timeout_seconds
        ),
    }


def request_timeout(query: str | None, default: float) -> float:
    """The API server's timeout for this call: the ``timeout`` query parameter it adds (a Go
    duration, ``10s``), within the 1-30 s a webhook configuration allows; else ``default``."""
    match = _GO_DURATION.match(query or "")
    if match is None:
        return default
    return min(30.0, max(1.0, float(match.group(1)) * _UNITS[match.group(2)]))


def webhook_label(webhook: str) -> str:
    """The webhook's metrics label: its id, or ``unknown`` for a path of no webhook."""
    return webhook if webhook in _KNOWN else "unknown"


class DeadlineAnswers:
    """``failure``: webhook id -> its failure answer (default: Ignore, 10 s);
    ``fallbacks``: webhook id -> its own answer by the deadline, where it has one."""

    def __init__(
        self,
        failure: Mapping[str, FailureAnswer] | None = None,
        fallbacks: Mapping[str, FallbackFn] | None = None,
    ) -> None:
        self.failure = dict(failure or {})
        self.fallbacks = dict(fallbacks or {})
        self._logged_at, self._unlogged = -1e9, 0  # answers by the deadline not yet logged

    def of(self, webhook: str) -> FailureAnswer:
        return self.failure.get(webhook, FailureAnswer())

    def answer(
        self,
        webhook: str,
        data: Mapping[str, Any],
        failure: FailureAnswer,
        seconds: float,
        cause: str,
        *,
        use_fallback: bool = True,
    ) -> str:
        """The AdmissionReview answer as JSON text, made without the rules; counted, and
        logged at most once per 10 s. A fallback that raises, or whose answer is not JSON,
        leaves the answer to the failurePolicy."""
        metrics.WEBHOOK_DEADLINE_ANSWERS.labels(webhook=webhook_label(webhook), cause=cause).inc()
        now = asyncio.get_running_loop().time()
        self._unlogged += 1
        if now - self._logged_at >= 10.0:  # one line per 10 s: an overload is no log flood
            logger.warning(
                "webhook %s: %d review(s) answered without the rules since the last such"
                " line (this one: %s, within %.1f s)",
                webhook, self._unlogged, _CAUSES.get(cause, cause), seconds,
            )  # fmt: skip
            self._logged_at, self._unlogged = now, 0
        fallback = self.fallbacks.get(webhook) if use_fallback else None
        if fallback is not None:
            try:
                return json.dumps(fallback(data, seconds))
            except Exception:
                logger.exception("webhook %s: its answer by the deadline failed", webhook)
        why = (
            f"the object has more than {REVIEW_MAX_ITEMS:,} JSON values, more than any"
            " workload needs; make it smaller"
            if cause == "too-many-values"
            else None
        )
        return json.dumps(failure_answer(webhook, data, failure.policy, seconds, why=why))


def failure_answer(
    webhook: str,
    review: Mapping[str, Any],
    policy: str,
    seconds: float,
    *,
    why: str | None = None,
) -> dict[str, Any]:
    """The answer of a webhook that could not decide in time (or at all: ``why``), as its
    failurePolicy says: Ignore admits (unchanged, with a warning that says so), Fail
    refuses (503, to retry)."""
    answer = admit_unchanged(review)
    response = answer["response"]
    why = why or f"the operator could not answer within {seconds:.1f} s (overloaded)"
    if policy == "Fail":
        response["allowed"] = False
        response["status"] = {
            "code": 503,
            "reason": "ServiceUnavailable",
            "message": f"vllm-preflight: not checked: {why}; refused, as the webhook's"
            " failurePolicy Fail says. Retry shortly.",
        }
    elif webhook == constants.MUTATE_PODS_WEBHOOK_ID:
        response["warnings"] = [
            f"vllm-preflight: not checked: {why}; the pod is admitted without the GPU"
            " preflight check, as the webhook's failurePolicy Ignore says."
        ]
    else:
        response["warnings"] = [
            f"vllm-preflight: not checked: {why}; admitted, as the webhook's failurePolicy"
            " Ignore says. The operator still judges it and records the result on its"
            " GPUValidation."
        ]
    return answer


def admit_unchanged(review: Mapping[str, Any]) -> dict[str, Any]:
    """An AdmissionReview response that admits the object as it is."""
    request = review.get("request") or {}
    uid = request.get("uid", "") if isinstance(request, Mapping) else ""
    return {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": {"uid": uid if isinstance(uid, str) else "", "allowed": True},
    }
