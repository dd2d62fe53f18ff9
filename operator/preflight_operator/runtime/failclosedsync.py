"""Keeps the fail-closed webhook entry's namespace list in step with the policies
(core/failclosedscope.py says why the entry exists and how the list is kept).

The Lease holder alone writes. Every ``interval`` seconds it computes the opted-in
namespaces under Enforce from what it holds in memory (the PreflightPolicies and the
opted-in namespaces its watches keep; no API call), and when that list differs from the
one it last wrote, or every ``resync`` seconds (a ``helm upgrade`` re-renders the
configuration with the sentinel alone), it reads the ValidatingWebhookConfiguration and
patches the two sentinel expressions if they differ: one GET a minute, a PATCH only on a
change. A policy change reaches the API server within ``interval`` seconds; until then a
namespace newly under Enforce is judged through the Ignore entry, as before this entry
existed, and one that opted out is already out of both (their selectors keep the opt-in
label).

Its rights: get and patch on that one configuration (the chart's ClusterRole names it in
``resourceNames``); a 403 or 404 is logged once per kind of failure and retried at the
next resync, never fatal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from preflight_operator.core import failclosedscope
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.policy import Policy
from preflight_operator.runtime.api import API_ERRORS, KubeApi

logger = logging.getLogger(__name__)

CONFIGURATIONS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


class FailClosedSync:
    def __init__(
        self,
        api: KubeApi,
        configuration: str,
        *,
        leading: Callable[[], bool],
        opted_in: Callable[[], Sequence[str]],
        policies: Callable[[str], Sequence[Policy]],
        default: PolicySpec,
        excluded: Callable[[str], bool],
        interval: float = 5.0,
        resync: float = 60.0,
    ) -> None:
        self.api = api
        self.path = f"{CONFIGURATIONS}/{configuration}"
        self.leading = leading
        self.opted_in = opted_in
        self.policies = policies
        self.default = default
        self.excluded = excluded
        self.interval = interval
        self.resync = resync
        self.written: tuple[str, ...] | None = None  # what the configuration holds now
        self._since_read = resync  # read at the first round
        self._last_error = ""

    def wanted(self) -> tuple[str, ...]:
        return failclosedscope.enforced_namespaces(
            self.opted_in(), self.policies, self.default, self.excluded
        )

    async def run(self) -> None:
        """Until cancelled."""
        while True:
            try:
                await self.sync_once()
            except API_ERRORS as exc:
                self._failed(f"{type(exc).__name__}: {exc}"[:300])
            await asyncio.sleep(self.interval)
            self._since_read += self.interval

    async def sync_once(self) -> bool:
        """One round; True when it patched the configuration."""
        if not self.leading():
            self.written = None  # a new holder reads before it trusts anything
            return False
        names = self.wanted()
        if names == self.written and self._since_read < self.resync:
            return False
        self._since_read = 0.0
        config = await self.api.get_or_none(self.path)
        if config is None:
            self._failed(f"{self.path} not found")
            return False
        ops = failclosedscope.selector_patch(config, names)
        if ops:
            await self.api.request(
                "PATCH", self.path, body=ops, content_type="application/json-patch+json"
            )
            logger.info(
                "fail-closed webhook entry: %d namespace(s) under Enforce%s",
                len(names),
                f" ({', '.join(names[:10])}{', ...' if len(names) > 10 else ''})" if names else "",
            )
        self.written = names
        self._last_error = ""
        return bool(ops)

    def _failed(self, why: str) -> None:
        self.written = None
        if why != self._last_error:
            logger.warning(
                "fail-closed webhook entry not kept in step (%s): namespaces under Enforce"
                " are judged through the failurePolicy Ignore entry until it is",
                why,
            )
            self._last_error = why
