"""The watches of workloads, injected pods and opted-in namespaces: list+watch caches of
our own (reflector.py, on api.py), feeding the controller's ``observe_*`` methods.

Why not kopf's watches (they were, until issue 23): kopf decodes every watch line with a
plain ``json.loads`` (kopf 1.45.2, ``kopf/_cogs/clients/api.py``, ``stream()``), and no
public setting bounds or replaces that decoder. One Deployment whose
``metadata.managedFields`` was nested 1,000 deep, which any user allowed to create a
Deployment can write, raised ``RecursionError`` there and stopped both replicas, and every
restart met it again at the first listing: with the webhooks failing open, checking was
off cluster-wide. Filtering in front of kopf would mean a proxy on loopback decoding every
byte twice. api.py decodes every line through decoding.py instead (bounded, managedFields
dropped, a poisoned object skipped, counted and reported), and these reflectors were
already the operator's machinery for every other watch (policies, GPUValidations, the
rules' context), so one machinery now serves them all. kopf keeps what it is good at: the
process's life cycle, login, probes and the liveness endpoint.

What each watch asks the API server for (server-side selectors only; none of them keeps
more than a key and a resourceVersion per object, and a pod's identity):

- namespaces: v1 namespaces labelled ``<namespaceLabel>`` ``enabled`` or ``disabled`` ->
  the Controller's scope.observe_namespace (opted in, opted out; scope.py);
- pods: v1 pods in every namespace labelled ``vllm-preflight.io/injected=true`` ->
  observe_pod, which keeps only pods in scope (the label is anyone's to write);
- one per workload kind (core, and the enabled serving stacks'): the kind in every
  namespace, unfiltered (a workload opts in by its namespace or by its pod template's
  label) -> observe_workload. docs/ARCHITECTURE.md has the table of every watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from preflight_operator.core import constants
from preflight_operator.core.decoding import Rejection
from preflight_operator.core.events import EventSpec, InvolvedObject
from preflight_operator.core.workloads import VALIDATED_KINDS, WorkloadKind
from preflight_operator.runtime.api import KubeApi, collection_path
from preflight_operator.runtime.controller import Controller
from preflight_operator.runtime.reflector import Body, Reflector

logger = logging.getLogger(__name__)

WATCHED_WORKLOADS = [k for k in VALIDATED_KINDS.values() if k.kind != "Pod"]


def watched(families: Sequence[str]) -> list[WorkloadKind]:
    """The workload kinds to watch: the core ones and the enabled serving stacks'."""
    return [k for k in WATCHED_WORKLOADS if k.family == "core" or k.family in families]


def _key_only(body: Body) -> Body:
    """What a watch cache keeps of an object: enough to notice its deletion while the
    watch was down (the controller's store keeps what it needs)."""
    meta = body.get("metadata") or {}
    return {"rv": meta.get("resourceVersion")}


# What observe_pod needs to find a pod's workload when it was deleted while the watch was
# down (workloads.workload_of_pod): kept as one flat tuple (about 0.3 KB a pod; the same as
# nested dicts cost about 1.2 KB, 60 MB at 50,000 pods), expanded again for a deletion.
_POD_IDENTITY_LABELS = (
    constants.LABEL_WORKLOAD,
    "leaderworkerset.sigs.k8s.io/name",
    "pod-template-hash",
)
_OWNER_FIELDS = ("apiVersion", "kind", "name", "uid", "controller")


def _pod_identity(body: Body) -> Body:
    meta = body.get("metadata") or {}
    labels = meta.get("labels") or {}
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    return {
        "rv": meta.get("resourceVersion"),
        "id": (
            meta.get("namespace"),
            meta.get("name"),
            meta.get("uid"),
            tuple(labels.get(k) for k in _POD_IDENTITY_LABELS),
            tuple(owner.get(k) for k in _OWNER_FIELDS) if owner else None,
        ),
    }


def _pod_body(body: Body) -> Body:
    """A pod as observe_pod reads it: itself, or rebuilt from what _pod_identity kept."""
    identity = body.get("id")
    if not isinstance(identity, tuple):
        return body
    namespace, name, uid, label_values, owner = identity
    labels = {k: v for k, v in zip(_POD_IDENTITY_LABELS, label_values) if v is not None}
    meta: Body = {"namespace": namespace, "name": name, "uid": uid, "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [dict(zip(_OWNER_FIELDS, owner))]
    return {"metadata": meta}


Observer = Callable[[Body, bool], None]


def _typed(kind: WorkloadKind, callback: Observer) -> Observer:
    def observe(body: Body, deleted: bool) -> None:
        # items of a LIST carry no apiVersion and kind; the rules find templates by them
        body.setdefault("apiVersion", kind.api_version)
        body.setdefault("kind", kind.kind)
        callback(body, deleted)

    return observe


# Objects reported with an Event at most once each (by uid and reason); the set is
# forgotten when full, so a flood of poisoned objects costs bounded memory.
REPORTED_LIMIT = 10_000


def rejected_event(kind: WorkloadKind, rejection: Rejection) -> EventSpec:
    """The Warning Event on an object the operator could not use (decoding.py says why)."""
    involved = InvolvedObject(
        kind.api_version, kind.kind, rejection.namespace, rejection.name, rejection.uid
    )
    return EventSpec(
        involved,
        "Warning",
        "PreflightObjectRejected",
        f"vllm-preflight skipped this object: {rejection.reason}, {rejection.detail}. No"
        " Kubernetes object needs such nesting; remove it (metadata.managedFields excepted:"
        " it is ignored).",
    )


class Watches:
    """Builds, primes and runs the three kinds of watch for one controller."""

    def __init__(self, api: KubeApi, controller: Controller, families: Sequence[str]) -> None:
        self._controller = controller
        self._tasks: list[asyncio.Task[Any]] = []
        self._started = False
        self._reported: set[tuple[str, str]] = set()
        kinds = watched(families)
        self._kinds = {collection_path(kind, None): kind for kind in kinds}
        self._kinds["/api/v1/pods"] = VALIDATED_KINDS["Pod"]
        api.rejected = self._rejected
        self.namespaces = Reflector(
            api,
            "/api/v1/namespaces",
            name="namespaces",
            params={
                "labelSelector": f"{controller.config.namespace_label} in"
                f" ({constants.INJECT_ENABLED},{constants.INJECT_DISABLED})"
            },
            on_object=self._namespace,
            transform=_key_only,
        )
        self.pods = Reflector(
            api,
            "/api/v1/pods",
            name="injected-pods",
            params={"labelSelector": constants.INJECTED_POD_SELECTOR},
            on_object=_typed(VALIDATED_KINDS["Pod"], self._pod(controller)),
            transform=_pod_identity,
        )
        self.workloads = [
            Reflector(
                api,
                collection_path(kind, None),
                name=kind.plural,
                on_object=_typed(kind, self._workload(kind)),
                transform=_key_only,
                # a serving stack's CRD may be missing: look again later, never fail
                optional=kind.group not in ("", "apps", "batch"),
            )
            for kind in kinds
        ]

    @property
    def reflectors(self) -> list[Reflector]:
        return [self.namespaces, self.pods, *self.workloads]

    @staticmethod
    def _pod(controller: Controller) -> Observer:
        def observe(body: Body, deleted: bool) -> None:
            controller.observe_pod(_pod_body(body), deleted)

        return observe

    def _workload(self, kind: WorkloadKind) -> Observer:
        def observe(body: Body, deleted: bool) -> None:
            self._controller.observe_workload(kind, body, deleted=deleted)

        return observe

    def _namespace(self, body: Body, deleted: bool) -> None:
        # The watch is label-selected: DELETED also means "no longer labelled enabled or
        # disabled" (a deletion seen at a re-list brings only the name: it is gone).
        meta = body.get("metadata") or {}
        name = str(meta.get("name", ""))
        label = (meta.get("labels") or {}).get(self._controller.config.namespace_label)
        opted_in = not deleted and label == constants.INJECT_ENABLED
        opted_out = not deleted and label == constants.INJECT_DISABLED
        if self._controller.scope.observe_namespace(name, opted_in, opted_out) and self._started:
            self._spawn(self._controller.listing.reprocess_namespace(name))

    def _rejected(self, rejection: Rejection) -> None:
        """api.py counted it; the Lease holder also tells the object's owner, once."""
        kind = self._kinds.get(rejection.source)
        if kind is None or not (rejection.namespace and rejection.name):
            return
        if not self._controller.gate.allows():
            return
        key = (rejection.uid or f"{rejection.namespace}/{rejection.name}", rejection.reason)
        if key in self._reported:
            return
        if len(self._reported) >= REPORTED_LIMIT:
            self._reported.clear()
        self._reported.add(key)
        self._controller.events.post(rejected_event(kind, rejection))

    async def prime(self) -> None:
        """The opted-in namespaces, before the controller primes (scope depends on them)."""
        await self.namespaces.sync()

    def start(self) -> None:
        """Every watch, after the controller started; the workloads' first lists bring
        every workload (so a namespace that opted in while we were down is read too)."""
        self._started = True
        for reflector in self.reflectors:
            self._spawn(reflector.run())

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.append(task)
        task.add_done_callback(lambda t: self._tasks.remove(t) if t in self._tasks else None)

    async def stop(self) -> None:
        self._started = False
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
