"""The rules, one small pure function each, registered by importing these modules.

Order matters only for presentation: findings are listed in this order within a severity.
"""

from preflight_operator.core.rules.checks import (
    args,
    consistency,
    env,
    gpus,
    group,
    modelfit,
    probes,
    service,
    shm,
)

__all__ = ["args", "consistency", "env", "gpus", "group", "modelfit", "probes", "service", "shm"]
