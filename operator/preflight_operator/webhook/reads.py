"""What the webhook reads of other objects for a pod's admission, each kept briefly: the
pod's workload (or the JobSet that made it), and the Workload API gang (issue 26) or the
Volcano PodGroup (issue 39) a multi-node vLLM pod names.

Why a class of its own: the admission service decides; reading the cluster's other objects
(a pod's workload, its JobSet, its gang) is a second job with its own cache, timeouts and
hostile input. What the webhook does with a gang: it says what is missing as an admission
warning and never gives the check a group from it (core/rules/workloadapi.py: the API names
no rank and no leader, and a gang's ``minCount`` is a minimum, not the group's size).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from preflight_operator.core import apinames
from preflight_operator.core.injection import (
    LWS_SIZE_ANNOTATION,
    Injection,
    Skip,
    in_lws_group,
    jobset_name,
    runs_own_share,
)
from preflight_operator.core.rules import (
    JOBSET,
    JOBSET_COORDINATOR,
    VOLCANO,
    WORKLOAD_API_GROUP,
    declared_warning,
    engine_nodes,
    pod_group,
    podgroup_min_member,
    podgroup_path,
    workload_admission_note,
    workload_group,
    workload_object_path,
    workload_reference,
    workload_version_to_read,
)
from preflight_operator.core.workloads import WorkloadRef

logger = logging.getLogger(__name__)

# A pod's workload as the API server has it (None: it does not exist). Its labels choose
# the pod's policy; a Ray-pattern LeaderWorkerSet's other template says whether the group
# may meet. One read serves both.
OwnerBody = Callable[[WorkloadRef], Awaitable[Mapping[str, Any] | None]]
# A GET of an API path: the body, None for 404; raises otherwise (an ``ApiError`` with its
# ``status``). The Workload API's objects and discovery are read through it.
ApiGet = Callable[[str], Awaitable[Mapping[str, Any] | None]]
DISCOVERY = f"/apis/{WORKLOAD_API_GROUP}"
OWNER_CACHE_SECONDS = 30.0
OWNER_LOOKUP_TIMEOUT = 2.0
OWNER_CACHE_ENTRIES = 10_000

V = TypeVar("V")


class RecentReads(Generic[V]):
    """What was read of another object for pods' admission, kept OWNER_CACHE_SECONDS so a
    burst of one workload's pods reads it once. Bounded: past OWNER_CACHE_ENTRIES it
    forgets everything and refills on demand."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str, str], tuple[float, V]] = {}

    def get(self, key: tuple[str, str, str], now: float) -> V | None:
        cached = self._entries.get(key)
        if cached is not None and now - cached[0] < OWNER_CACHE_SECONDS:
            return cached[1]
        return None

    def put(self, key: tuple[str, str, str], now: float, value: V) -> None:
        if len(self._entries) > OWNER_CACHE_ENTRIES:
            self._entries.clear()
        self._entries[key] = (now, value)


class OwnerReads:
    """A pod's workload (or another object that made it), read once for a burst of its pods
    (OWNER_CACHE_SECONDS); None ``body``: never read."""

    def __init__(self, body: OwnerBody | None, clock: Callable[[], float] = time.monotonic):
        self._body = body
        self._clock = clock
        self._cache: RecentReads[tuple[Mapping[str, Any] | None]] = RecentReads()

    @property
    def enabled(self) -> bool:
        return self._body is not None

    def cached(self, ref: WorkloadRef) -> tuple[Mapping[str, Any] | None] | None:
        return self._cache.get(ref.key, self._clock())

    def remember(self, ref: WorkloadRef, body: Mapping[str, Any] | None) -> None:
        self._cache.put(ref.key, self._clock(), (body,))

    async def fresh(self, ref: WorkloadRef) -> Mapping[str, Any] | None:
        """A read now (OWNER_LOOKUP_TIMEOUT), remembered; raises when it cannot be read.
        A reference whose name or namespace no stored object can have (an ownerReference
        is written by whoever creates the pod: ``../../../api/v1/nodes/x``) raises
        MalformedReference before any call (apinames.py; api.object_path checks the kind's
        group and version too)."""
        assert self._body is not None
        apinames.checked(apinames.NAMESPACE, ref.namespace)
        apinames.checked(apinames.NAME, ref.name)
        body = await asyncio.wait_for(self._body(ref), OWNER_LOOKUP_TIMEOUT)
        self.remember(ref, body)
        return body

    async def get(self, ref: WorkloadRef) -> Mapping[str, Any] | None:
        """The object, cached or read; None when it does not exist. Raises when it cannot
        be read (nothing cached)."""
        cached = self.cached(ref)
        return cached[0] if cached is not None else await self.fresh(ref)


class WorkloadApiGangs:
    """The Workload API's served versions and the objects pods name, each (body or None,
    why there is none), cached like a workload; None ``api_get``: never read."""

    def __init__(self, api_get: ApiGet | None, clock: Callable[[], float] = time.monotonic):
        self._api_get = api_get
        self._clock = clock
        self._cache: RecentReads[tuple[Mapping[str, Any] | None, str]] = RecentReads()

    async def warn(
        self,
        pod: Mapping[str, Any],
        container: Mapping[str, Any],
        argv: Sequence[str],
        outcome: Injection | Skip,
    ) -> Injection | Skip:
        """``outcome`` with the gang's note as its admission warning (and logged)."""
        note = await self.note(pod, container, argv)
        if not note:
            return outcome
        logger.info("pod %s: %s", _pod_display(pod), note)
        if isinstance(outcome, Injection):
            return dataclasses.replace(outcome, warnings=(f"vllm-preflight: {note}",))
        return outcome

    async def _read(self, key: tuple[str, str, str], path: str) -> tuple[Any, str]:
        """(body or None, why none) of one Workload API path, cached OWNER_CACHE_SECONDS,
        failures included (a chart that grants no read: one line per burst, not per pod)."""
        now = self._clock()
        cached = self._cache.get(key, now)
        if cached is not None:
            return cached
        assert self._api_get is not None
        try:
            body = await asyncio.wait_for(self._api_get(path), OWNER_LOOKUP_TIMEOUT)
            found: tuple[Any, str] = (body, "" if body is not None else "not found")
        except Exception as exc:
            if getattr(exc, "status", None) == 403:
                why = "forbidden: the chart value rbac.workloadApiRead grants the read"
            else:
                why = f"unreadable: {str(exc)[:80]}"
            logger.warning("%s %s", path, why)
            found = (None, why)
        self._cache.put(key, now, found)
        return found

    async def _volcano_gang(self, pod: Mapping[str, Any], argv: Sequence[str]) -> str:
        """What a Volcano pod's PodGroup says of its gang (issue 39): read (cached, bounded,
        judged by ``crdgroups.podgroup_min_member``) only for a multi-node vLLM pod that
        names one; a ``minMember`` under the engine's ``--nnodes`` is a warning (Volcano
        may start fewer pods than the engine waits for), never a failure. "" otherwise."""
        declared = pod_group(pod)
        if declared is None or declared.system != VOLCANO or self._api_get is None:
            return ""
        namespace = str((pod.get("metadata") or {}).get("namespace", ""))
        if apinames.problem(apinames.NAME, declared.name) or apinames.problem(
            apinames.NAMESPACE, namespace
        ):
            return ""
        path = podgroup_path(namespace, declared.name)
        found, missing = await self._read((namespace, "volcano/PodGroup", declared.name), path)
        if missing:
            why = missing.replace("rbac.workloadApiRead", "rbac.volcanoPodGroupRead")
            return f"its PodGroup {declared.name!r} was not read ({why})"
        count, problem = podgroup_min_member(found, declared.name, namespace)
        nodes = engine_nodes(argv)
        if count is None:
            return f"its gang is not known: {problem}"
        if nodes is not None and count < nodes:
            return (
                f"its PodGroup {declared.name!r} has spec.minMember {count}, less than the "
                f"{nodes} pods the engine needs at once (--nnodes {nodes}): Volcano may start "
                "the gang with fewer, and the engine waits for the rest"
            )
        return ""

    async def note(
        self, pod: Mapping[str, Any], container: Mapping[str, Any], argv: Sequence[str]
    ) -> str:
        """What to say of the Workload API gang a multi-node vLLM pod names ("" when it
        names none, or its engine runs on one pod). The object is read (cached, bounded,
        judged by workloadapi.workload_group as hostile input) only for such a pod; the
        check is never given a group from it: the API names no rank and no leader, and a
        gang's minCount is a minimum, not the group's size."""
        ref = workload_reference(pod)
        lws = in_lws_group(pod)
        if ref is None:
            note = declared_note(pod, container, lws=lws)
            gang = await self._volcano_gang(pod, argv) if note else ""
            return "; ".join(p for p in (note, gang) if p)
        if self._api_get is None or not (lws or runs_own_share(container)):
            return ""
        namespace = str((pod.get("metadata") or {}).get("namespace", ""))
        obj: Mapping[str, Any] | None = None
        missing = ""
        if not ref.problem:
            served, why = await self._read(("", "discovery", WORKLOAD_API_GROUP), DISCOVERY)
            versions = _served_versions(served)
            version = workload_version_to_read(ref, versions)
            if version is None:
                served_here = ", ".join(v.rpartition("/")[2] for v in versions[:4]) or "none"
                missing = why or f"no version known here is served (served: {served_here})"

            else:
                key = (namespace, f"{version}/{ref.kind}", ref.name)
                found, missing = await self._read(
                    key, workload_object_path(ref, version, namespace)
                )
                obj = found if isinstance(found, Mapping) else None
        group = workload_group(pod, obj, missing=missing or "not read")
        if group is None:
            return ""
        nodes = _lws_size(pod) if lws else engine_nodes(argv)
        return workload_admission_note(group, nodes, has_group=lws or _coordinated(pod))


def declared_note(pod: Mapping[str, Any], container: Mapping[str, Any], *, lws: bool) -> str:
    """What to say of the Kueue pod group, Volcano PodGroup or RoleBasedGroup a multi-node
    vLLM pod declares on its own labels and annotations (``groups.pod_group``, issue 39):
    what its system does not put on the pod (a Volcano pod's size is its PodGroup's
    ``spec.minMember``; Kueue names no leader), as a warning; "" when the pod says it all
    (a RoleBasedGroup leader-worker pod), names no such group, runs its engine on one pod,
    or has a group of its own (a LeaderWorkerSet's; a JobSet pod's group is the injector's,
    read from its JobSet). A Volcano pod's PodGroup is then read (``_volcano_gang``)."""
    if lws or not runs_own_share(container):
        return ""
    declared = pod_group(pod)
    if declared is None or declared.system == JOBSET:
        return ""
    return declared_warning(declared)


def _pod_display(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name') or meta.get('generateName')}"


def _served_versions(discovery: Any) -> list[str]:
    """The group versions an APIGroup discovery document lists (hostile: bounded, strings
    only)."""
    versions = discovery.get("versions") if isinstance(discovery, Mapping) else None
    items = versions[:32] if isinstance(versions, list) else []
    found = [v.get("groupVersion") for v in items if isinstance(v, Mapping)]
    return [v[:100] for v in found if isinstance(v, str)]


def _lws_size(pod: Mapping[str, Any]) -> int | None:
    """A LeaderWorkerSet pod's group size (its ``leaderworkerset.sigs.k8s.io/size``
    annotation), or None when it is not a count."""
    notes = (pod.get("metadata") or {}).get("annotations") or {}
    value = notes.get(LWS_SIZE_ANNOTATION) if isinstance(notes, Mapping) else None
    if isinstance(value, str) and value.isdigit() and len(value) <= 6:
        return int(value)
    return None


def _coordinated(pod: Mapping[str, Any]) -> bool:
    """A JobSet pod whose JobSet names a coordinator: JobSet gives it a group (the
    injector's jobset_place), the Workload API need not."""
    notes = (pod.get("metadata") or {}).get("annotations") or {}
    return (
        bool(jobset_name(pod))
        and isinstance(notes, Mapping)
        and bool(notes.get(JOBSET_COORDINATOR))
    )
