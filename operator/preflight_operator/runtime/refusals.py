"""What api.py refused to use (decoding.py said why): counted, logged once, told.

Every object or stream line that decoding refused (poisoned, too large, not JSON, or one
object alone over a list page's bounds, set aside by core/paging.py) is counted in metrics
each time it is seen; it is logged at warning once (by object and reason), then at debug,
since a tenant's refused object comes back at every listing and every watch restart and
would flood the log; and whoever asked (the controller posts an Event) is told each time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from preflight_operator.core.decoding import Rejection
from preflight_operator.runtime import metrics

# Refusals logged at warning once each (by object and reason); then at debug. Forgotten
# when full: bounded memory whatever a flood of refused objects.
LOGGED_LIMIT = 10_000


class Refusals:
    """The refusals of one KubeApi, logged on its logger (``logger``)."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._logged: set[tuple[str, str, str]] = set()

    def report(self, rejection: Rejection, told: Callable[[Rejection], None] | None) -> None:
        """Counts ``rejection``, logs it (at warning the first time) and tells ``told``."""
        metrics.OBJECTS_REJECTED.labels(reason=rejection.reason).inc()
        seen = (
            rejection.source,
            rejection.uid or f"{rejection.namespace}/{rejection.name}",
            rejection.reason,
        )
        first = not (rejection.name or rejection.uid) or seen not in self._logged
        if len(self._logged) >= LOGGED_LIMIT:
            self._logged.clear()
        self._logged.add(seen)
        logger = self._logger
        (logger.warning if first else logger.debug)("not used: %s", rejection.display)
        if told is not None:
            try:
                told(rejection)
            except Exception:  # a callback bug must not stop a read
                logger.exception("rejection callback failed")
