"""A list-then-watch cache of a small, server-side-filtered set of objects.

What the webhooks and the reconciles read synchronously — PreflightPolicies, Services
named ``vllm``, GPUValidations (which also tell a new leader what the previous one
wrote), DRA claims — comes from these reflectors, on every replica, leader or follower.
They hold only small objects that a field or label selector picks on the server. (They
were first needed because kopf's peering paused all of a follower's kopf watches; with
the Lease, kopf's watches run everywhere too, and these stay the lighter path.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from preflight_operator.runtime.api import API_ERRORS, Gone, KubeApi, NotFound

logger = logging.getLogger(__name__)

Body = dict[str, Any]


class Reflector:
    """Keeps ``items`` ((namespace, name) -> object) equal to the server's view."""

    def __init__(
        self,
        api: KubeApi,
        path: str,
        *,
        name: str,
        params: Mapping[str, str] | None = None,
        on_change: Callable[[str], None] | None = None,
        on_object: Callable[[Body, bool], None] | None = None,
        transform: Callable[[Body], Body] | None = None,
        optional: bool = False,
    ) -> None:
        """``on_change(namespace)`` after any change in a namespace; ``on_object(body,
        deleted)`` for every object listed or watched; ``transform`` shapes what ``items``
        keeps (e.g. only the fields a deletion needs, when ``on_object`` keeps the rest).
        ``optional``: the API may not be served (resource.k8s.io on an older cluster): a
        404 leaves the cache empty and synced, and the reflector looks again later."""
        self._optional = optional
        self._api = api
        self._path = path
        self._params = dict(params or {})
        self._on_change = on_change
        self._on_object = on_object
        self._transform = transform or (lambda body: body)
        self.name = name
        self.items: dict[tuple[str, str], Body] = {}
        # the same objects by namespace: the rules ask for a namespace's Services named
        # vllm on every analysis, which scanned every namespace's (issue 28)
        self._by_namespace: dict[str, dict[str, Body]] = {}
        self.absent = False  # an optional API the server does not serve
        self._resource_version = ""
        self.synced = asyncio.Event()

    def subscribe(self, on_change: Callable[[str], None]) -> None:
        self._on_change = on_change

    def in_namespace(self, namespace: str) -> list[Body]:
        return list(self._by_namespace.get(namespace, {}).values())

    def _index(self) -> None:
        self._by_namespace = {}
        for (namespace, name), body in self.items.items():
            self._by_namespace.setdefault(namespace, {})[name] = body

    def get(self, namespace: str, name: str) -> Body | None:
        return self.items.get((namespace, name))

    @staticmethod
    def _key(body: Mapping[str, Any]) -> tuple[str, str]:
        meta = body.get("metadata") or {}
        return (str(meta.get("namespace", "")), str(meta.get("name", "")))

    async def sync(self) -> None:
        """Lists everything; namespaces whose objects changed are reported."""
        fresh: dict[tuple[str, str], Body] = {}
        version = ""
        try:
            async for items, page_version in self._api.list_pages(self._path, self._params):
                version = page_version
                for item in items:
                    fresh[self._key(item)] = self._transform(item)
                    self._object(item, deleted=False)
        except NotFound:
            if not self._optional:
                raise
            self.items, self._resource_version = {}, ""
            self._index()
            self.synced.set()
            self.absent = True
            return
        self.absent = False
        for key in set(self.items) - set(fresh):  # deleted while we were not watching
            self._object(self.items[key], deleted=True)
        changed = {
            key[0] for key in set(fresh) | set(self.items) if fresh.get(key) != self.items.get(key)
        }
        self.items = fresh
        self._index()
        self._resource_version = version
        self.synced.set()
        for namespace in sorted(changed):
            self._notify(namespace)

    def _object(self, body: Body, deleted: bool) -> None:
        if self._on_object is not None:
            try:
                self._on_object(body, deleted)
            except Exception:  # a callback bug must not stop the cache
                logger.exception("%s: object callback failed", self.name)

    def _notify(self, namespace: str) -> None:
        if self._on_change is not None:
            try:
                self._on_change(namespace)
            except Exception:  # a callback bug must not stop the cache
                logger.exception("%s: change callback failed", self.name)

    def apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        body = event.get("object") or {}
        version = (body.get("metadata") or {}).get("resourceVersion")
        if version:
            self._resource_version = str(version)
        if kind == "BOOKMARK":
            return
        key = self._key(body)
        self._object(dict(body), deleted=kind == "DELETED")
        if kind == "DELETED":
            if self.items.pop(key, None) is not None:
                in_namespace = self._by_namespace.get(key[0], {})
                in_namespace.pop(key[1], None)
                if not in_namespace:
                    self._by_namespace.pop(key[0], None)
                self._notify(key[0])
            return
        value = self._transform(dict(body))
        if self.items.get(key) != value:
            self.items[key] = value
            self._by_namespace.setdefault(key[0], {})[key[1]] = value
            self._notify(key[0])

    async def run(self) -> None:
        """Watches forever, re-listing when the watch is too old, backing off on errors."""
        attempt = 0
        while True:
            try:
                if not self.synced.is_set() or self.absent:
                    await self.sync()
                if self.absent:
                    await asyncio.sleep(60.0)  # an API that may be installed later
                    continue
                async for event in self._api.watch(
                    self._path, self._resource_version, self._params
                ):
                    self.apply(event)
                    attempt = 0
            except Gone:
                self.synced.clear()
            except asyncio.CancelledError:
                raise
            except (*API_ERRORS, ValueError) as exc:
                attempt += 1
                logger.warning("%s: watch failed (%r); retrying", self.name, exc)
                await asyncio.sleep(min(30.0, 0.5 * 2**attempt))
