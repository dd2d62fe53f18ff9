"""Whose GPUValidation a pod's result belongs to, and whether the API server confirms it.

Apart from the Controller (issue 28). A Deployment, LeaderWorkerSet or RayCluster that a
serving stack's controller made (workloads.wrapper_owner) keeps no GPUValidation of its
own: its pods report to the stack's object (Pod -> ReplicaSet -> Deployment ->
InferenceService; RayCluster -> RayService). The chain is followed at most four steps, so a
reference loop cannot hang the operator.

Issue 34: a result counts for a workload only through a chain of uids the API server
confirms (core/ownerchain.py says why). The objects between a pod and its workload (a
ReplicaSet, a LeaderWorkerSet's StatefulSets and leader pod) are read here, once per uid
(:class:`ChainReader`); a pod whose chain is not yet read is untrusted until it is, then
observed again with its latest body (``reobserve``), so no result waits on an event that
may never come.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from preflight_operator.core import ownerchain, provenance
from preflight_operator.core.ownerchain import Link, Target
from preflight_operator.core.podresults import PodResult
from preflight_operator.core.store import Key, Store
from preflight_operator.core.workloads import KNOWN_KINDS, WorkloadRef
from preflight_operator.runtime.api import ApiError, KubeApi, NotFound, Unreadable, object_path

logger = logging.getLogger(__name__)

CACHE_SIZE = 4096  # objects between pods and workloads: a ReplicaSet per rollout
WAITING_LIMIT = 10_000  # pods parked while their chain is read; past it, the next event
RETRIES = (1.0, 2.0, 4.0, 8.0, 16.0)  # seconds: a workload not yet listed, a failed read
GIVE_UP_S = 300.0  # after the retries, a chain stays unconfirmed this long without reads
READS_AT_ONCE = 8  # a restart reads one ReplicaSet per Deployment: never all at once

# (group, kind) of the objects that may stand between a pod and its workload -> the kind
# to read them as (core/ownerchain.BETWEEN names them; every workload kind may stand
# between a serving stack's object and its pods).
_READABLE = {(k.group, k.kind): k for k in KNOWN_KINDS.values()}

Ticket = tuple[str, Any]  # ("uid", an object's uid) or ("workload", its key)
Spawn = Callable[[Coroutine[Any, Any, Any]], None]
Body = Mapping[str, Any]
UNKNOWN = "unknown"


class ChainReader:
    """Each object between a pod and its workload, read once per uid: its own controller
    reference, or False when it is not the object the reference names (404, another uid,
    unreadable). Uids never come back, so an answer stays true while the object lives; a
    ReplicaSet orphaned and adopted again keeps its uid but changes its reference, which
    a fresh read after eviction from the bounded cache sees."""

    def __init__(self, api: KubeApi) -> None:
        self._api = api
        self._known: OrderedDict[str, Link | bool | None] = OrderedDict()
        self._reads = asyncio.Semaphore(READS_AT_ONCE)

    def cached(self, link: Link) -> Link | bool | str | None:
        """What is known about ``link``'s object, or UNKNOWN."""
        if link.uid in self._known:
            self._known.move_to_end(link.uid)
            return self._known[link.uid]
        return UNKNOWN

    async def read(self, namespace: str, link: Link) -> None:
        """Reads the object (raises ApiError on a failure worth retrying)."""
        kind = _READABLE.get((link.group, link.kind))
        if kind is None or not ownerchain.valid_name(link.name):
            answer: Link | bool | None = False  # never a call for a malformed reference
        else:
            try:
                async with self._reads:
                    obj: Mapping[str, Any] | None = await self._api.get(
                        object_path(kind, namespace, link.name)
                    )
            except (NotFound, Unreadable):
                obj = None
            answer = ownerchain.read_back(link, obj)
        self._known[link.uid] = answer
        while len(self._known) > CACHE_SIZE:
            self._known.popitem(last=False)


class Ownership:
    def __init__(
        self,
        store: Store,
        api: KubeApi | None = None,
        *,
        spawn: Spawn | None = None,
        reobserve: Callable[[Body], None] | None = None,
    ) -> None:
        self._store = store
        # child workload -> the serving-stack object that controls it
        self._owners: dict[Key, Key] = {}
        self._reader = ChainReader(api) if api is not None else None
        self._spawn = spawn
        self._reobserve = reobserve
        # what pods wait on (an object's uid to read, or their workload to be listed)
        # -> pod uid -> the pod's latest body
        self._waiting: dict[Ticket, dict[str, Body]] = {}
        self._given_up: dict[Ticket, float] = {}  # ticket -> until (the loop's clock)
        self._pending = 0  # pods in _waiting, kept as a count: a restart parks thousands

    def note(self, key: Key, owner: Key | None) -> None:
        """``key`` is controlled by ``owner`` (None: by nobody we know, or deleted)."""
        if owner is None:
            self._owners.pop(key, None)
        else:
            self._owners[key] = owner

    def top_owner(self, key: Key) -> Key:
        for _ in range(4):  # bounded: a reference loop cannot hang us
            owner = self._owners.get(key)
            if owner is None:
                break
            key = owner
        return key

    def _path(self, ref: WorkloadRef, top: Key) -> list[tuple[str, str]]:
        """(group, kind) from the pod's workload up to ``top``."""
        path = [(ownerchain.group_of(ref.api_version), ref.kind)]
        key = ref.key
        for _ in range(4):
            if key == top or key not in self._owners:
                break
            key = self._owners[key]
            kind = KNOWN_KINDS.get(key[1])  # key[1]: a kind_key
            path.append((kind.group, kind.kind) if kind else ("?", key[1]))
        return path

    def confirmed(self, pod: Body, ref: WorkloadRef, key: Key) -> bool | None:
        """Whether the pod's controller references lead, uid by uid, to the workload that
        keeps ``key``'s GPUValidation; None while a step is not yet read (the read is
        started, and the pod observed again when it is answered)."""
        meta = pod.get("metadata") or {}
        namespace, pod_uid = str(meta.get("namespace", "")), str(meta.get("uid", ""))
        workload = self._store.workloads.get(key)
        if workload is None or not workload.uid:
            return self._park(("workload", key), pod_uid, pod, None)
        held = workload.ref  # its kind, not key[1] (a kind_key)
        target = Target(ownerchain.group_of(held.api_version), held.kind, workload.uid)
        allowed = ownerchain.between(self._path(ref, key))
        link = ownerchain.controller_link(pod)
        for _ in range(ownerchain.MAX_STEPS + 1):
            verdict = ownerchain.judge(link, target, allowed)
            if verdict != ownerchain.FOLLOW or link is None:
                return verdict == ownerchain.CONFIRMED
            known = self._reader.cached(link) if self._reader is not None else False
            if known == UNKNOWN:
                return self._park(("uid", link.uid), pod_uid, pod, (namespace, link))
            if not isinstance(known, Link):
                return False  # gone, another object, or no controller of its own
            link = known
        return False

    def attribute(
        self, pod: Body, ref: WorkloadRef, key: Key, result: PodResult | None
    ) -> PodResult | None:
        """The pod's result as it counts for ``key``: one the marks call the controller's
        (podresults, provenance.trusted) stays so only when the chain is confirmed. A pod
        whose check has not finished has its chain read already, so that its result, when
        it comes, is judged at once. While the chain is read (after a restart: ms), the
        result counts as this operator last judged the same pod (its GPUValidation's
        ``createdBy`` for the pod's uid), so that a restart rewrites no status."""
        if result is None:
            if provenance.recorded(pod) == provenance.CONTROLLER:
                self.confirmed(pod, ref, key)
            return None
        if not result.trusted:
            return result
        verdict = self.confirmed(pod, ref, key)
        if verdict is None:
            verdict = self._last_judged(key, result.uid) == provenance.CONTROLLER
        return result if verdict else dataclasses.replace(result, created_by=provenance.OTHER)

    def _last_judged(self, key: Key, pod_uid: str) -> str:
        stored = self._store.validations.get(key)
        pods = ((stored.status.get("runtime") or {}).get("pods") or []) if stored else []
        for entry in pods if isinstance(pods, list) else []:
            if isinstance(entry, Mapping) and entry.get("uid") == pod_uid:
                return str(entry.get("createdBy", ""))
        return provenance.OTHER

    @property
    def pending(self) -> int:
        """Pods whose chain is being read."""
        return self._pending

    def forget_pod(self, pod_uid: str) -> None:
        """A deleted pod is never observed again from a parked body."""
        if not self._pending:
            return
        for waiting in self._waiting.values():
            if waiting.pop(pod_uid, None) is not None:
                self._pending -= 1

    def _park(
        self, ticket: Ticket, pod_uid: str, pod: Body, read: tuple[str, Link] | None
    ) -> bool | None:
        """None: the pod waits for ``ticket`` (observed again once answered); False when
        it cannot wait (no loop, too many waiting, or this ticket was given up lately)."""
        if self._spawn is None or self._reobserve is None or not pod_uid:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False  # observed outside the loop (a replay): its next event reads it
        if self._given_up.get(ticket, 0.0) > loop.time():
            return False
        waiting = self._waiting.get(ticket)
        if waiting is None and self._pending >= WAITING_LIMIT:
            return False
        if waiting is None:
            waiting = self._waiting[ticket] = {}
            self._spawn(self._resolve(ticket, read))
        if pod_uid not in waiting:
            self._pending += 1
        waiting[pod_uid] = pod  # the latest body; the read may be under way
        return None

    async def _resolve(self, ticket: Ticket, read: tuple[str, Link] | None) -> None:
        """Reads the object (or waits for the workload's listing), then observes the
        parked pods again; when neither comes, the ticket is given up for GIVE_UP_S and
        they are observed again as unconfirmed."""
        answered = False
        try:
            for delay in (0.0, *RETRIES):
                await asyncio.sleep(delay)
                if read is None:
                    answered = ticket[1] in self._store.workloads
                elif self._reader is not None:
                    try:
                        await self._reader.read(*read)
                        answered = True
                    except ApiError as exc:
                        logger.info("reading %s %s failed: %s", read[1].kind, read[1].name, exc)
                if answered:
                    break
        finally:
            parked = self._waiting.pop(ticket, {})
            self._pending -= len(parked)
        if not answered:
            loop = asyncio.get_running_loop()
            self._given_up = {t: e for t, e in self._given_up.items() if e > loop.time()}
            self._given_up[ticket] = loop.time() + GIVE_UP_S
        for body in parked.values():
            if self._reobserve is not None:
                self._reobserve(body)
