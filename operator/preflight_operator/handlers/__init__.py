"""Thin adapters: kopf's life-cycle callbacks to the controller (``lifecycle``), which
also starts the webhook server (webhook/webhookserver.py, not kopf) with the AdmissionReview
routes of webhook/admissionreview.py. The watches are the operator's own (watches.py says
why kopf's are not used).

``register(registry, options)`` adds every kopf handler to a kopf registry (not kopf's
global one), so an operator is built explicitly and tests can build several.
"""

from __future__ import annotations

import kopf

from preflight_operator.handlers import lifecycle
from preflight_operator.runtime.options import RunOptions


def register(registry: kopf.OperatorRegistry, options: RunOptions) -> kopf.OperatorRegistry:
    lifecycle.register(registry, options)
    return registry


__all__ = ["register"]
