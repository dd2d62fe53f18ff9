"""One module per family of checks; importing this package registers them all."""

from preflight_check.checks import (  # noqa: F401  (imported to register the checks)
    compat,
    contexts,
    deep,
    hardware,
    health,
    library,
    model,
    modelready,
    settings,
    setup,
    system,
    visibility,
)
from preflight_check.checks.base import REGISTRY

__all__ = ["REGISTRY"]
