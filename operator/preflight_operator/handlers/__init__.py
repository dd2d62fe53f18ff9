"""Thin adapters: kopf's callbacks to the controller (``lifecycle``, ``watches``) and
AdmissionReviews to the webhooks (``admission``, served by webhookserver.py, not kopf).

``register(registry, options)`` adds every kopf handler to a kopf registry (not kopf's
global one), so an operator is built explicitly and tests can build several.
"""

from __future__ import annotations

import kopf

from preflight_operator.handlers import lifecycle, watches
from preflight_operator.options import RunOptions


def register(registry: kopf.OperatorRegistry, options: RunOptions) -> kopf.OperatorRegistry:
    lifecycle.register(registry, options)
    watches.register(registry, options.kind_families)
    return registry


__all__ = ["register"]
