"""What the API server sends, decoded as hostile input (pure; api.py reads, this decides).

Why (issue 23): the API server stores and serves objects nested far deeper than any
decoder should follow. ``metadata.managedFields[].fieldsV1`` is free-form JSON that any
user who may create a Deployment can fill; one nested 1,000 deep made ``json.loads`` raise
``RecursionError`` inside kopf's watch stream and stopped both replicas, which a restart
met again at its first listing. Every body the operator reads from the API server now goes
through :func:`decode_body`, :func:`decode_list` or :func:`decode_event`:

* ``preflight_contract.safejson`` bounds size and depth, without recursion;
* ``metadata.managedFields`` is dropped from every object: the operator never reads it,
  and it is the one place a user can nest freely in a built-in kind (it is also about a
  third of a typical object's bytes, so the caches are smaller without it);
* an object that was too deep only inside managedFields is used as if it had none (so a
  deep managedFields can neither hide a workload nor break the watch);
* an object too deep anywhere else, too large or not JSON is *poisoned*: skipped, and
  described by a :class:`Rejection` the caller counts and reports. A deletion of a
  poisoned object is still delivered (its name and namespace are enough for it).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any

from preflight_contract import safejson

POISONED = "poisoned"  # too deep outside managedFields
# One object (a watch line, a GET): at most this many values (safejson.items), 10x the
# largest workload in tests/data/realworld (under 1,000 values, 22 KB; managedFields may
# double it). At the bound the costliest shape decodes in about 40-90 ms on a loaded
# 2-core machine; 1.5 MiB of nested [] (800,000 lists) took a second of the event loop
# before the bound (hack/reliability/integrity.py measures both).
OBJECT_MAX_ITEMS = 20_000
REASONS = (*safejson.REASONS, POISONED)
_MANAGED_FIELDS = ("metadata", "managedFields")


@dataclasses.dataclass(frozen=True)
class Rejection:
    """An object (or a line of a stream) the operator did not use, and why."""

    source: str  # the API path that was read
    reason: str  # one of REASONS
    detail: str
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""

    @property
    def display(self) -> str:
        where = "/".join(p for p in (self.namespace, self.name) if p) or "an object"
        return f"{self.kind or 'object'} {where} from {self.source}: {self.reason} ({self.detail})"


def strip_managed_fields(body: Any) -> None:
    meta = body.get("metadata") if isinstance(body, dict) else None
    if isinstance(meta, dict):
        meta.pop("managedFields", None)


def _loads(
    raw: bytes | str, max_items: int | None, max_bytes: int = safejson.DEFAULT_MAX_BYTES
) -> tuple[Any, list[safejson.Path]]:
    try:
        return safejson.loads(raw, max_items=max_items, max_bytes=max_bytes), []
    except safejson.Rejected as exc:
        if exc.reason != safejson.TOO_DEEP:
            raise
    return safejson.loads_pruned(raw, max_items=max_items, max_bytes=max_bytes)


def _rejection(source: str, body: Any, reason: str, detail: str, kind: str = "") -> Rejection:
    meta = body.get("metadata") if isinstance(body, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    kind = kind or (str(body.get("kind", "")) if isinstance(body, Mapping) else "")
    return Rejection(
        source=source,
        reason=reason,
        detail=detail,
        kind=kind[:63],
        namespace=str(meta.get("namespace", ""))[:253],
        name=str(meta.get("name", ""))[:253],
        uid=str(meta.get("uid", ""))[:64],
    )


def _where(path: safejson.Path) -> str:
    shown = ".".join(str(p) for p in path[:8])
    return f"{shown}... ({len(path)} levels)" if len(path) > 8 else shown


def _deep_outside_managed_fields(paths: list[safejson.Path], prefix: tuple[Any, ...]) -> str:
    """The first pruned path not under ``prefix`` + metadata.managedFields, as text."""
    skip = len(prefix)
    for path in paths:
        rest = path[skip:] if path[:skip] == prefix else path
        if rest[:2] != _MANAGED_FIELDS:
            return _where(rest)
    return ""


# The API server writes ObjectMeta's fields in its Go struct's order: name, generateName,
# namespace, ..., uid first. Enough to name an object whose body was refused unread.
_IDENTITY = re.compile(
    rb'"metadata":\{"name":"([a-z0-9.-]{1,253})"(?:,"generateName":"[^"]{0,253}")?'
    rb'(?:,"namespace":"([a-z0-9-]{1,63})")?(?:,"uid":"([0-9a-f-]{36})")?'
)


def _identified(rejection: Rejection, raw: bytes | str) -> Rejection:
    head = (raw.encode() if isinstance(raw, str) else raw)[:4096]
    match = _IDENTITY.search(head)
    if match is None:
        return rejection
    name, namespace, uid = (g.decode() if g else "" for g in match.groups())
    return dataclasses.replace(rejection, name=name, namespace=namespace, uid=uid)


def decode_body(raw: bytes | str, source: str) -> tuple[Any, Rejection | None]:
    """One object (a GET or a write's answer): (body, None), or (None, why not)."""
    try:
        body, paths = _loads(raw, OBJECT_MAX_ITEMS)
    except safejson.Rejected as exc:
        return None, Rejection(source, exc.reason, str(exc))
    strip_managed_fields(body)
    deep = _deep_outside_managed_fields(paths, ())
    if deep:
        return None, _rejection(source, body, POISONED, f"nested too deep at {deep}")
    return body, None


# A list page: at most this many values (safejson.items) in all, about 400 ordinary pods'
# worth, and at most LIST_PAGE_MAX_BYTES. A page over either bound is read again with a
# smaller limit (api.py list_pages), so a page never costs more than this to decode
# whatever its objects hold; each object is then judged alone against the bounds of one
# object (OBJECT_MAX_ITEMS, LIST_PAGE_MAX_BYTES), exactly as a watch line is.
PAGE_MAX_ITEMS = 16 * OBJECT_MAX_ITEMS
LIST_PAGE_MAX_BYTES = safejson.DEFAULT_MAX_BYTES


def decode_list(raw: bytes | str, source: str) -> tuple[Any, list[Rejection]]:
    """A list page: (the list with its usable items, one Rejection per item left out).
    A page that cannot be read at all (over PAGE_MAX_ITEMS or LIST_PAGE_MAX_BYTES, not
    JSON) raises ``safejson.Rejected``: the caller reads it again in smaller pages, down to
    one object, and sets that one aside by name (:func:`list_head`). Each item is bounded
    like one watch event (OBJECT_MAX_ITEMS values, managedFields counted): an item over the
    bound is left out and named, and the rest of the page is used (issue 34: a page was
    refused whole, and one tenant's objects stopped every listing)."""
    body, paths = _loads(raw, PAGE_MAX_ITEMS, LIST_PAGE_MAX_BYTES)
    if not isinstance(body, dict):
        raise safejson.Rejected(safejson.NOT_JSON, "a list page that is not a JSON object")
    items = body.get("items")
    if not isinstance(items, list):
        items = []
    refused: set[int] = set()
    rejections: list[Rejection] = []
    for path in paths:
        if len(path) >= 2 and path[0] == "items" and isinstance(path[1], int):
            if path[2:4] != _MANAGED_FIELDS and path[1] not in refused:
                refused.add(path[1])
                where = _where(path[2:])
                rejections.append(
                    _rejection(source, items[path[1]], POISONED, f"nested too deep at {where}")
                )
        elif path[:1] != ("items",):
            raise safejson.Rejected(safejson.TOO_DEEP, "a list page nested too deep")
    if safejson.items(raw.encode() if isinstance(raw, str) else raw) > OBJECT_MAX_ITEMS:
        # only then can one item be over the bound (the page's count bounds each item's)
        for i, item in enumerate(items):
            count = _values(item) if i not in refused else 0
            if count > OBJECT_MAX_ITEMS:
                refused.add(i)
                detail = f"about {count} values, more than the {OBJECT_MAX_ITEMS} accepted"
                rejections.append(_rejection(source, item, safejson.TOO_LARGE, detail))
    kept = [item for i, item in enumerate(items) if i not in refused]
    for item in kept:
        strip_managed_fields(item)
    body["items"] = kept
    return body, rejections


def _values(item: Any) -> int:
    """safejson.items of the item's text as the API server wrote it (re-encoded by C code:
    the same count a watch line of it gets, managedFields included)."""
    return safejson.items(json.dumps(item, separators=(",", ":")).encode())


@dataclasses.dataclass(frozen=True)
class ListHead:
    """What the head of a list page that was not decoded still says: where the list goes on
    (``continue``, "" at its end), its resourceVersion, and the first item's identity."""

    resource_version: str
    continue_token: str
    first: Rejection


# ListMeta's fields in its Go struct's order (selfLink, resourceVersion, continue, ...),
# all before "items": the head of a page names where it goes on without decoding it.
_LIST_VERSION = re.compile(rb'"resourceVersion":"([0-9]{1,20})"')
_LIST_CONTINUE = re.compile(rb'"continue":"([A-Za-z0-9+/=_.-]{1,8192})"')
_ITEMS = b'"items":['


def list_head(head: bytes, source: str, reason: str, detail: str) -> ListHead | None:
    """The head of a one-object page that was refused (``reason``, ``detail``), read
    without decoding; None when it does not look like a list page the API server wrote."""
    start = head.find(_ITEMS)
    if start < 0:
        return None
    meta = head[:start]
    version = _LIST_VERSION.search(meta)
    if version is None:
        return None
    token = _LIST_CONTINUE.search(meta)
    first = _identified(Rejection(source, reason, detail), head[start : start + 4096])
    return ListHead(version.group(1).decode(), token.group(1).decode() if token else "", first)


def decode_event(raw: bytes | str, source: str) -> tuple[dict[str, Any] | None, Rejection | None]:
    """One line of a watch: (event, None); (event, why) for the deletion of a poisoned
    object, which is still delivered; (None, why) for anything else that is refused."""
    try:
        event, paths = _loads(raw, OBJECT_MAX_ITEMS)
    except safejson.Rejected as exc:
        return None, _identified(Rejection(source, exc.reason, str(exc)), raw)
    if not isinstance(event, dict):
        return None, Rejection(source, safejson.NOT_JSON, "a watch event that is not an object")
    body = event.get("object")
    strip_managed_fields(body)
    deep = _deep_outside_managed_fields(paths, ("object",))
    if not deep:
        return event, None
    rejection = _rejection(source, body, POISONED, f"nested too deep at {deep}")
    return (event if event.get("type") == "DELETED" else None), rejection


REVIEW_OBJECTS = (("request", "object"), ("request", "oldObject"))


def decode_review(raw: bytes | str, source: str) -> tuple[dict[str, Any] | None, Rejection | None]:
    """An AdmissionReview body: (review, None); (review, why) when the object is nested
    too deep outside its managedFields (the review is still returned, pruned, so that the
    webhook can answer by the object's namespace and policy instead of failing open);
    (None, why) when it cannot be read at all. Not bounded by OBJECT_MAX_ITEMS (the API
    server sends what it accepted; its own limits apply)."""
    try:
        review, paths = _loads(raw, None)
    except safejson.Rejected as exc:
        return None, Rejection(source, exc.reason, str(exc))
    if not isinstance(review, dict):
        return None, Rejection(
            source, safejson.NOT_JSON, "an AdmissionReview that is not an object"
        )
    request = review.get("request")
    if isinstance(request, dict):
        for key in ("object", "oldObject"):
            strip_managed_fields(request.get(key))
    deep = [
        path
        for path in paths
        if not any(path[:2] == prefix and path[2:4] == _MANAGED_FIELDS for prefix in REVIEW_OBJECTS)
    ]
    if not deep:
        return review, None
    body = request.get("object") if isinstance(request, dict) else None
    return review, _rejection(source, body, POISONED, f"nested too deep at {_where(deep[0])}")
