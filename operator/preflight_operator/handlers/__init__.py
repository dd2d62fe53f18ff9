"""kopf handlers: thin adapters from kopf's callbacks to the controller and the webhooks.

``register(registry, options)`` adds every handler to a kopf registry (not kopf's global
one), so an operator is built explicitly and tests can build several.
"""

from __future__ import annotations

import kopf

from preflight_operator.handlers import admission, lifecycle, watches
from preflight_operator.options import RunOptions


def register(registry: kopf.OperatorRegistry, options: RunOptions) -> kopf.OperatorRegistry:
    lifecycle.register(registry, options)
    watches.register(registry, options.kind_families)
    admission.register(registry)
    return registry


__all__ = ["register"]
