"""The one module that talks to the Kubernetes API.

A small asyncio client on aiohttp: JSON in, JSON out, no generated models (a pod as a
model object costs ten times its JSON in memory), one connection pool, explicit timeouts,
the operator's field manager on every write. Every body it reads is hostile input:
decoding.py bounds it, drops managedFields, and names what was refused (``rejected``).
Credentials come from the pod's service account or from a kubeconfig (credentials.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp

from preflight_contract import safejson
from preflight_operator.core import apinames, constants
from preflight_operator.core.apinames import MalformedReference
from preflight_operator.core.decoding import (
    LIST_PAGE_MAX_BYTES,
    Rejection,
    decode_body,
    decode_event,
    decode_list,
)
from preflight_operator.core.paging import ListPaging
from preflight_operator.core.workloads import KNOWN_KINDS, WorkloadKind, WorkloadRef
from preflight_operator.runtime import metrics
from preflight_operator.runtime.credentials import Credentials
from preflight_operator.runtime.refusals import Refusals

logger = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
RETRIES = 5
RETRIABLE = frozenset({429, 503, 504})


class ApiError(Exception):
    def __init__(self, status: int, message: str, reason: str = "") -> None:
        super().__init__(f"HTTP {status} {reason}: {message}".strip())
        self.status = status
        self.reason = reason
        self.message = message


class NotFound(ApiError):
    pass


class Conflict(ApiError):
    pass


class Forbidden(ApiError):
    """RBAC says no (e.g. no patch on workloads outside rbac.workloadNamespaces)."""


class Gone(ApiError):
    """A watch's resourceVersion is too old: list again."""


class Unreadable(ApiError):
    """The answer was refused by decoding.py (too deep, too large, not JSON): the object
    cannot be used, which callers treat like any other failed call."""

    def __init__(self, rejection: Rejection, head: bytes = b"") -> None:
        super().__init__(0, rejection.display, rejection.reason)
        self.rejection = rejection
        self.head = head  # the start of a list page that was refused (list_pages)


# One line of a watch (one object) at most: the API server refuses requests over 3 MiB.
MAX_LINE_BYTES = safejson.DEFAULT_MAX_BYTES


# What a call to the API may raise besides a bug: an answer >= 400, a broken connection, a
# timeout. Callers that must keep going (workers, watches) catch exactly these.
# MalformedReference: a name that may not enter a path (apinames.py); no call was made.
API_ERRORS = (ApiError, aiohttp.ClientError, OSError, asyncio.TimeoutError, MalformedReference)
# What of a refused list page is kept to name its one object and find where the list goes on.
LIST_HEAD_BYTES = 64 * 1024


def collection_path(kind: WorkloadKind, namespace: str | None) -> str:
    """The API path of a kind's objects (in ``namespace``, or in all). Every part is held
    to the API server's naming rules first (apinames.py): an owner kind read from an
    ownerReference brings its group and version from the reference. Raises
    MalformedReference (in API_ERRORS) before any call is made."""
    version = apinames.checked(apinames.VERSION, kind.version)
    plural = apinames.checked(apinames.PLURAL, kind.plural)
    if kind.group:
        base = f"/apis/{apinames.checked(apinames.GROUP, kind.group)}/{version}"
    else:
        base = f"/api/{version}"
    if namespace:
        return f"{base}/namespaces/{apinames.checked(apinames.NAMESPACE, namespace)}/{plural}"
    return f"{base}/{plural}"


def object_path(kind: WorkloadKind, namespace: str, name: str) -> str:
    """One object's path; its name is checked like the rest (``../`` never gets in)."""
    return f"{collection_path(kind, namespace)}/{apinames.checked(apinames.NAME, name)}"


GPUVALIDATIONS = WorkloadKind(
    constants.GPUVALIDATION_KIND,
    constants.GROUP,
    constants.VERSION,
    constants.GPUVALIDATION_PLURAL,
)
POLICIES = WorkloadKind(
    constants.POLICY_KIND, constants.GROUP, constants.VERSION, constants.POLICY_PLURAL
)
EVENTS = WorkloadKind("Event", "", "v1", "events")
LEASES = WorkloadKind("Lease", "coordination.k8s.io", "v1", "leases")


class KubeApi:
    """Every API call the operator and the webhooks make (kopf's watches aside)."""

    def __init__(
        self,
        credentials: Credentials,
        *,
        field_manager: str = constants.COMPONENT,
        timeout: float = 10.0,
        max_connections: int = 16,
    ) -> None:
        self._credentials = credentials
        self._field_manager = field_manager
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._watch_session: aiohttp.ClientSession | None = None
        self.writes = 0  # writes sent by this process (tests and metrics read it)
        # Told of every object or stream line that decoding refused (the controller
        # posts an Event); each is counted in metrics here either way.
        self.rejected: Callable[[Rejection], None] | None = None
        self._refusals = Refusals(logger)

    @property
    def credentials(self) -> Credentials:
        return self._credentials

    async def __aenter__(self) -> KubeApi:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._max_connections, ssl=self._credentials.ssl_context()
            )
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        return self._session

    def _get_watch_session(self) -> aiohttp.ClientSession:
        """Watches hold their connection for minutes, one each (about 25 with every
        serving stack on): a pool of their own, so they never starve the calls."""
        if self._watch_session is None or self._watch_session.closed:
            connector = aiohttp.TCPConnector(limit=0, ssl=self._credentials.ssl_context())
            self._watch_session = aiohttp.ClientSession(connector=connector)
        return self._watch_session

    async def close(self) -> None:
        for session in (self._session, self._watch_session):
            if session is not None:
                await session.close()
        self._session = self._watch_session = None

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        auth = self._credentials.authorization()
        if auth:
            headers["Authorization"] = auth
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        as_list: bool = False,
    ) -> dict[str, Any]:
        """One call; "try again" answers (429, 503, 504 — e.g. a CRD's storage still
        initialising, API priority and fairness) are retried a few times with back-off."""
        for attempt in range(RETRIES):
            started = time.perf_counter()
            try:
                return await self._request_once(
                    method, path, params, body, content_type, as_list=as_list
                )
            except ApiError as exc:
                if exc.status not in RETRIABLE or attempt == RETRIES - 1:
                    raise
                await asyncio.sleep(min(2.0, 0.1 * 2**attempt))
            finally:
                metrics.API_LATENCY.labels(verb=method).observe(time.perf_counter() - started)
        raise AssertionError("unreachable")

    async def _request_once(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: Any,
        content_type: str,
        *,
        as_list: bool = False,
    ) -> dict[str, Any]:
        is_write = method in ("POST", "PUT", "PATCH", "DELETE")
        query = dict(params or {})
        if is_write and method != "DELETE":
            query.setdefault("fieldManager", self._field_manager)
        data = None if body is None else json.dumps(body, separators=(",", ":"))
        session = self._get_session()
        async with session.request(
            method,
            self._credentials.server + path,
            params=query,
            data=data,
            headers=self._headers(content_type if data is not None else None),
        ) as response:
            if as_list and response.status < 400:
                raw = await _read_page(response.content, path)
            else:
                raw = await response.read()
            if response.status >= 400:
                raise _error(response.status, raw.decode("utf-8", "replace"))
            if is_write:
                self.writes += 1
        if not raw:
            return {}
        if as_list:
            page, rejections = _decode_page(raw, path)
            for rejection in rejections:
                self._report(rejection)
            return dict(page)
        decoded, refused = decode_body(raw, path)
        if refused is not None:
            raise self._refuse(refused)
        return dict(decoded) if isinstance(decoded, dict) else {}

    def _report(self, rejection: Rejection) -> None:
        self._refusals.report(rejection, self.rejected)

    def _refuse(self, rejection: Rejection) -> Unreadable:
        self._report(rejection)
        return Unreadable(rejection)

    # -- reads ------------------------------------------------------------------------

    async def get(self, path: str) -> dict[str, Any]:
        return await self.request("GET", path)

    async def get_or_none(self, path: str) -> dict[str, Any] | None:
        """``get``, None for 404 (the webhook's Workload API reads)."""
        try:
            return await self.get(path)
        except NotFound:
            return None

    async def list_pages(
        self, path: str, params: Mapping[str, str] | None = None, page: int = 500
    ) -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
        """Pages of a list (items, list resourceVersion), up to ``page`` items at a time,
        bounded by the object, never by the page: core/paging.py decides which page next
        (issue 34: one tenant's large objects made every listing fail)."""
        paging = ListPaging(params, page)
        while not paging.done:
            try:
                result = await self.request("GET", path, params=paging.query(), as_list=True)
            except Unreadable as exc:
                if paging.smaller():
                    continue
                head = paging.set_aside(exc.head, path, exc.rejection)
                if head is None:
                    raise self._refuse(exc.rejection) from None
                self._report(head.first)  # one object alone over the bounds: set aside
                yield [], head.resource_version
                continue
            meta = result.get("metadata") or {}
            yield list(result.get("items") or []), str(meta.get("resourceVersion", ""))
            paging.read(meta)

    async def watch(
        self, path: str, resource_version: str, params: Mapping[str, str] | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Events of a watch from ``resource_version``; raises Gone when it is too old."""
        query = {
            **(params or {}),
            "watch": "1",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "300",
        }
        session = self._get_watch_session()
        timeout = aiohttp.ClientTimeout(total=None, sock_read=330, sock_connect=10)
        async with session.get(
            self._credentials.server + path,
            params=query,
            headers=self._headers(),
            timeout=timeout,
        ) as response:
            if response.status >= 400:
                raise _error(response.status, await response.text())
            async for line in _lines(response.content, MAX_LINE_BYTES):
                if line is None:
                    self._report(Rejection(path, safejson.TOO_LARGE, "a watch event too large"))
                    continue
                if not line.strip():
                    continue
                event, rejection = decode_event(line, path)
                if rejection is not None:
                    self._report(rejection)
                if event is None:
                    continue
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    raise _error(int(status.get("code", 500)), json.dumps(status))
                yield event

    async def get_gpuvalidation(self, namespace: str, name: str) -> dict[str, Any]:
        return await self.get(object_path(GPUVALIDATIONS, namespace, name))

    async def get_workload(self, ref: WorkloadRef) -> dict[str, Any]:
        kind = ref.workload_kind or _kind_from_ref(ref)
        return await self.get(object_path(kind, ref.namespace, ref.name))

    # -- writes -----------------------------------------------------------------------

    async def create_gpuvalidation(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        namespace = obj["metadata"]["namespace"]
        return await self.request("POST", collection_path(GPUVALIDATIONS, namespace), body=obj)

    async def delete_gpuvalidation(self, namespace: str, name: str, uid: str) -> None:
        """Deletes it only if it is still the object with this uid."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}}
        with contextlib.suppress(NotFound, Conflict):
            await self.request("DELETE", object_path(GPUVALIDATIONS, namespace, name), body=body)

    async def patch_gpuvalidation_status(
        self, namespace: str, name: str, status_patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        path = object_path(GPUVALIDATIONS, namespace, name) + "/status"
        body = {"status": status_patch}
        return await self.request("PATCH", path, body=body, content_type=MERGE_PATCH)

    async def patch_policy_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The PreflightPolicy's status (its Valid condition), through /status."""
        path = object_path(POLICIES, namespace, name) + "/status"
        return await self.request("PATCH", path, body={"status": status}, content_type=MERGE_PATCH)

    async def patch_workload(self, ref: WorkloadRef, patch: Mapping[str, Any]) -> dict[str, Any]:
        kind = ref.workload_kind or _kind_from_ref(ref)
        path = object_path(kind, ref.namespace, ref.name)
        return await self.request("PATCH", path, body=patch, content_type=MERGE_PATCH)

    async def create_event(self, event: Mapping[str, Any]) -> dict[str, Any]:
        namespace = event["metadata"]["namespace"]
        return await self.request("POST", collection_path(EVENTS, namespace), body=event)

    # -- leader election (writegate.py, elector.py) -------------------------------------

    async def get_lease(self, namespace: str, name: str) -> dict[str, Any]:
        return await self.request("GET", object_path(LEASES, namespace, name))

    async def create_lease(self, lease: Mapping[str, Any]) -> dict[str, Any]:
        """Creates the Lease; Conflict when another replica created it first."""
        namespace = lease["metadata"]["namespace"]
        return await self.request("POST", collection_path(LEASES, namespace), body=lease)

    async def replace_lease(self, lease: Mapping[str, Any]) -> dict[str, Any]:
        """PUT with the resourceVersion in the body: Conflict when the Lease moved since it
        was read (another replica took or renewed it): the API server's optimistic
        concurrency is what makes exactly one replica win."""
        meta = lease["metadata"]
        path = object_path(LEASES, meta["namespace"], meta["name"])
        return await self.request("PUT", path, body=lease)


async def _read_page(content: aiohttp.StreamReader, path: str) -> bytes:
    """A list page, read up to its bound (LIST_PAGE_MAX_BYTES), never whole: past it, the
    rest is never read (the connection is then dropped, not reused) and the page is refused
    with only its head kept (list_pages reads it again in smaller pages)."""
    buffer = bytearray()
    async for chunk in content.iter_any():
        buffer += chunk
        if len(buffer) > LIST_PAGE_MAX_BYTES:
            detail = f"a list page over {LIST_PAGE_MAX_BYTES} bytes"
            rejection = Rejection(path, safejson.TOO_LARGE, detail)
            raise Unreadable(rejection, bytes(buffer[:LIST_HEAD_BYTES]))
    return bytes(buffer)


def _decode_page(raw: bytes, path: str) -> tuple[Any, list[Rejection]]:
    """decoding.decode_list; a page it cannot read at all is refused with its head kept (to
    be read again smaller, or its one object set aside by name: core/paging.py)."""
    try:
        return decode_list(raw, path)
    except safejson.Rejected as exc:
        rejection = Rejection(path, exc.reason, str(exc))
        raise Unreadable(rejection, raw[:LIST_HEAD_BYTES]) from None


async def _lines(content: aiohttp.StreamReader, limit: int) -> AsyncIterator[bytes | None]:
    """The lines of a stream, each at most ``limit`` bytes; a longer line is skipped to its
    end and yields None (aiohttp's own line reader raises on lines over 128 KiB)."""
    buffer = bytearray()
    skipping = False
    async for chunk in content.iter_any():
        buffer += chunk
        while True:
            end = buffer.find(b"\n")
            if end < 0:
                break
            line, buffer = bytes(buffer[:end]), buffer[end + 1 :]
            if skipping:
                skipping = False  # the end of the line too large
                continue
            yield line if len(line) <= limit else None
        if len(buffer) > limit:
            if not skipping:
                yield None
            skipping = True
            buffer.clear()
    if buffer and not skipping:
        yield bytes(buffer)


def _kind_from_ref(ref: WorkloadRef) -> WorkloadKind:
    if ref.kind_key in KNOWN_KINDS:
        return KNOWN_KINDS[ref.kind_key]
    group, _, version = ref.api_version.rpartition("/")
    # Unknown owner kinds (custom controllers): the plural is the lowercased kind + "s",
    # which holds for nearly every CRD; a miss is a 404 the caller logs.
    return WorkloadKind(ref.kind, group, version, ref.kind.lower() + "s")


def _error(status: int, text: str) -> ApiError:
    try:
        data = safejson.loads(text, max_bytes=64 * 1024)
        message = str(data.get("message", text))[:2000]
        reason = str(data.get("reason", ""))[:200]
    except (ValueError, AttributeError):
        message, reason = text[:500], ""
    if status == 404:
        return NotFound(status, message, reason)
    if status == 403:
        return Forbidden(status, message, reason)
    if status == 409:
        return Conflict(status, message, reason)
    if status == 410:
        return Gone(status, message, reason)
    return ApiError(status, message, reason)
