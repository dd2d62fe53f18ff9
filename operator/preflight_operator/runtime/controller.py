"""The operator's state machine: observations in, reconciles out.

The watches (watches.py) call the ``observe_*`` methods with the objects they read;
those update the store (pure) and queue the workload's key; workers reconcile keys one at a
time each (reconciler.py). Nothing here talks HTTP except through ``api.KubeApi``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from preflight_operator.core import constants
from preflight_operator.core.analysis import Analyser
from preflight_operator.core.events import now_rfc3339
from preflight_operator.core.gangindex import GangIndex, Member
from preflight_operator.core.loadtime import LoadSample
from preflight_operator.core.operatorconfig import OperatorConfig
from preflight_operator.core.podresults import PodResult, pod_result, unschedulable
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.static import StaticResult
from preflight_operator.core.store import (
    Key,
    PodState,
    Store,
    WorkloadState,
    static_key_of,
)
from preflight_operator.core.workloads import (
    POD,
    WorkloadKind,
    WorkloadRef,
    is_bare_pod,
    ref_of,
    workload_of_pod,
    wrapper_owner,
)
from preflight_operator.runtime import metrics, podfeed
from preflight_operator.runtime.analyses import AnalysisScheduler
from preflight_operator.runtime.api import (
    KubeApi,
)
from preflight_operator.runtime.eventsink import EventSink
from preflight_operator.runtime.listing import WorkloadLister
from preflight_operator.runtime.nodehealth import NodeFeedback
from preflight_operator.runtime.nodeproberunner import ProbeImage
from preflight_operator.runtime.ownership import Ownership
from preflight_operator.runtime.podfeed import PodFeed
from preflight_operator.runtime.policywatch import PolicyWatch
from preflight_operator.runtime.reconciler import Reconciler
from preflight_operator.runtime.reflector import Reflector
from preflight_operator.runtime.scope import NamespaceScope
from preflight_operator.runtime.validations import ValidationWatch
from preflight_operator.runtime.workers import ReconcileWorkers
from preflight_operator.runtime.writegate import WriteGate

logger = logging.getLogger(__name__)


def _our_annotations(meta: Mapping[str, Any]) -> dict[str, str]:
    return {
        k: str(v)
        for k, v in (meta.get("annotations") or {}).items()
        if k.startswith(constants.PREFIX)
    }


def _replicas(body: Mapping[str, Any]) -> int | None:
    value = (body.get("spec") or {}).get("replicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Controller:
    def __init__(
        self,
        config: OperatorConfig,
        api: KubeApi,
        analyser: Analyser,
        *,
        identity: str,
        context_reflectors: Sequence[Reflector] = (),
        now: Callable[[], str] = now_rfc3339,
        clock: Callable[[], float] = time.monotonic,
        gate: WriteGate | None = None,
    ) -> None:
        self.config = config
        self.api = api
        self.identity = identity
        self._now = now
        self._clock = clock
        self.store = Store()
        # which namespaces opted in or out, and what counts in them (scope.py)
        self.scope = NamespaceScope(config)
        self.events = EventSink(api, identity, now)
        # Reconciles write only while this replica holds the Lease (writegate.py,
        # elector.py); keys met while following wait until it leads (workers.py).
        self.gate = gate or WriteGate(identity, standalone=True)
        # node feedback acts on the operator's own probe only (nodeprobepod.py), in its own
        # namespace with the chart's check image
        probe = ProbeImage(
            namespace=config.release_namespace or "default",
            image=config.injection.check_image,
            pull_policy=config.injection.image_pull_policy,
            deadline_seconds=config.injection.timeout_seconds,
        )
        self.node_feedback = NodeFeedback(
            api,
            now,
            self.gate.allows,
            access=config.node_access,
            probe=probe,
            probe_settings=config.node_probe,
        )
        self._tasks: list[asyncio.Task[Any]] = []
        # When the rules run (now, or later in a worker) and which answer counts.
        self.analyses = AnalysisScheduler(analyser, spawn=self._spawn, now=now)
        # The reads observations cannot bring (a namespace's workloads, one afresh, the
        # pods that run without the check after an outage of the webhook).
        self.listing = WorkloadLister(api, self.store, self.observe_workload, self.analyses.settled)
        reconciler = Reconciler(
            self.store, api, self.events, load_workload=self.listing.load_workload,
            history_limit=config.history_pods_per_workload, now=now, clock=clock,
            uninjected=self.listing.uninjected_pods,
            may_patch=config.workload_patch.allows,
        )  # fmt: skip
        # GPUValidations as the cluster has them (validations.py)
        self.validations = ValidationWatch(api, self.store, self.enqueue)
        self._context_revision = 0
        # workloads whose pods name one Volcano PodGroup or Workload API gang (issue 39):
        # the rules read them through the lookup (main.py), a change re-observes the others
        self.gangs: GangIndex[WorkloadKind] = GangIndex()
        # Caches the rules read (Services named vllm): primed and run with the others,
        # on every replica; a change re-analyses the namespace's workloads.
        self.context_reflectors = list(context_reflectors)
        # child workload -> the serving-stack object that controls it (ownership.py)
        self.ownership = Ownership(
            self.store, api, spawn=self._spawn, reobserve=lambda b: self.observe_pod(b, False)
        )
        for reflector in self.context_reflectors:
            reflector.subscribe(self.context_changed)
        self.workers = ReconcileWorkers(self.store, reconciler, self.gate, clock=clock)
        # The PreflightPolicies: resolved for each workload, statuses written (policywatch.py).
        self.policy_watch = PolicyWatch(
            api, self.events, allowed=self.gate.allows, spawn=self._spawn, now=now,
            said_otherwise=self.context_changed, audit=partial(podfeed.audit, self.store),
            node_access=config.node_access,
        )  # fmt: skip
        # what a trusted pod result feeds besides the GPUValidation (podfeed.py)
        self.pod_feed = PodFeed(self.store, self.policy_watch, self.node_feedback)

    @property
    def analyser(self) -> Analyser:
        """The rules (in this process, or a pool of workers the life cycle swaps in)."""
        return self.analyses.analyser

    @analyser.setter
    def analyser(self, analyser: Analyser) -> None:
        self.analyses.analyser = analyser

    # -- observations (called by the watches; no I/O) ---------------------------------

    def observe_workload(
        self,
        kind: WorkloadKind,
        body: Mapping[str, Any],
        deleted: bool,
        *,
        has_injected_pods: bool = False,
    ) -> None:
        """``has_injected_pods``: its pods were injected, so it is in scope whatever its
        namespace's labels say (a pod-level opt-in)."""
        ref = ref_of(body, kind)
        key = ref.key
        owner = wrapper_owner(body, kind.key)
        if owner is not None:
            # made by a serving stack's controller: its pods report to that object
            self.ownership.note(key, None if deleted else owner.key)
            self._gang_changed(self.gangs.forget(key))
            if key in self.store.workloads:
                self.store.forget_workload(key)
            return
        if deleted or not self.scope.in_scope(kind, body, has_injected_pods=has_injected_pods):
            self._gang_changed(self.gangs.forget(key))
            self.listing.note_hint(key, kind, None)
            if key in self.store.workloads:
                self.store.forget_workload(key)
                metrics.WORKLOADS.set(len(self.store.workloads))
                self.policy_watch.statuses.audit_changed(ref.namespace)
            return
        hint_changed = self.listing.note_hint(key, kind, body)
        meta = body.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        uid = str(meta.get("uid", ""))
        policy = self.policy_watch.book.resolve(ref.namespace, labels, self.config.default_policy)
        # Items of a LIST carry no kind; the rules find pod templates by it.
        typed = {"apiVersion": kind.api_version, "kind": kind.kind, **body}
        others = self.gangs.note(key, kind, typed, has_injected_pods=has_injected_pods)
        revision = (self._context_revision, self.gangs.revision(key))
        memo = static_key_of(uid, body, labels, revision)
        before = self.store.workloads.get(key)
        seq = self.analyses.observe(key)
        if before is not None and before.static_key == memo:
            static, checked_at = before.static, before.static_checked_at
        elif self.analyses.off_loop:
            # the rest of the observation follows when the rules worker answers
            def deliver(static: StaticResult, checked_at: str) -> None:
                self._observed(
                    kind, body, policy=policy, memo=memo, static=static,
                    checked_at=checked_at, hint_changed=hint_changed,
                )  # fmt: skip

            self.analyses.analyse_later(key, ref.display, typed, policy, seq=seq, deliver=deliver)
            self._gang_changed(others)
            return
        else:
            static, checked_at = self.analyses.analyse_now(ref.display, typed, policy), self._now()
        self._observed(
            kind, body, policy=policy, memo=memo, static=static, checked_at=checked_at,
            hint_changed=hint_changed,
        )  # fmt: skip
        self._gang_changed(others)

    def _gang_changed(self, others: list[Member[WorkloadKind]]) -> None:
        """The other members of a gang that changed are analysed again (their memo key
        carries the gang's revision; gangindex.py). Each observation notes the same body
        again, which changes nothing: no cascade."""
        for member in others:
            self.observe_workload(
                member.kind, member.body, False,
                has_injected_pods=member.has_injected_pods,
            )  # fmt: skip

    def _observed(
        self,
        kind: WorkloadKind,
        body: Mapping[str, Any],
        *,
        policy: ResolvedPolicy,
        memo: tuple[Any, ...],
        static: StaticResult,
        checked_at: str,
        hint_changed: bool,
    ) -> None:
        """The rest of an observation once the workload's static result is known."""
        ref = ref_of(body, kind)
        key = ref.key
        before = self.store.workloads.get(key)
        if not static.has_vllm and key not in self.store.validations and key not in self.store.pods:
            if before is not None:
                self.store.forget_workload(key)
            return
        state = _state_of(ref, body, static, checked_at=checked_at, policy=policy, memo=memo)
        self.store.put_workload(state)
        metrics.WORKLOADS.set(len(self.store.workloads))
        if before is None or (before.static, before.policy) != (state.static, state.policy):
            self.policy_watch.statuses.audit_changed(ref.namespace)  # policyaudit.py
        if before is None or _relevant(before) != _relevant(state):
            self.enqueue(key)
        elif hint_changed and not self.store.pods.get(key):
            self.enqueue(key)  # its pods came (or went) and none of them is injected

    def observe_pod(self, body: Mapping[str, Any], deleted: bool) -> None:
        """An injected pod: its result, for its workload. The ``injected`` label is anyone's
        to write, so it alone is no opt-in (issue 34: 170 labelled bare pods in a
        namespace that never opted in became 170 GPUValidations of 27 KB there): a pod
        counts only in scope (scope.py). A deleted bare pod is forgotten whole: it is
        its own workload."""
        meta = body.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        if self.scope.excluded(namespace):
            return
        ref = workload_of_pod(body)
        key = self.ownership.top_owner(ref.key)
        uid = str(meta.get("uid", ""))
        if deleted or not self.scope.in_scope(POD, body):
            self._pod_gone(body, key, uid)
            return
        # trusted only through uids the API server confirms (ownership.py, issue 34)
        result = self.ownership.attribute(body, ref, key, pod_result(body))
        before = self.store.pods.get(key, {}).get(uid)
        pod = PodState(
            name=str(meta.get("name", "")),
            uid=uid,
            node=str((body.get("spec") or {}).get("nodeName", "")),
            result=result,
            unschedulable=unschedulable(body),
        )
        changed = self.store.put_pod(key, pod, self._clock())
        if result is not None and (before is None or before.result != result):
            if before is None or before.result is None or before.result.run_key != result.run_key:
                metrics.record_check(body, result)  # once a run, whenever it is trusted
                if result.dropped:
                    metrics.REPORT_ENTRIES_DROPPED.inc(result.dropped)
            if result.trusted:  # never a pod anyone else made (provenance.py)
                self.pod_feed.trusted_result(key, namespace, body, result)
        sample = _new_load(before.result if before else None, result)
        if sample is not None:
            metrics.POD_LOAD.labels(namespace=namespace).observe(sample.seconds)
        if is_bare_pod(body):
            self.observe_workload(POD, body, deleted=False, has_injected_pods=True)
        if changed:
            self.enqueue(key)

    def _pod_gone(self, body: Mapping[str, Any], key: Key, uid: str) -> None:
        """Deleted, or out of scope now (a label changed): forgotten; a bare pod is its
        own workload, forgotten with it."""
        self.ownership.forget_pod(uid)
        if self.store.forget_pod(key, uid):
            self.enqueue(key)
        if is_bare_pod(body) and key in self.store.workloads:
            self.observe_workload(POD, body, deleted=True)

    def enqueue(self, key: Key) -> None:
        self.workers.enqueue(key)

    def context_changed(self, namespace: str) -> None:
        """Something the rules read besides the workload changed in a namespace (its
        policies, a Service named vllm): its workloads are analysed again."""
        self._context_revision += 1
        if any(w.ref.namespace == namespace for w in self.store.workloads.values()):
            self._spawn(self.listing.reprocess_namespace(namespace))

    # -- lifecycle --------------------------------------------------------------------

    async def prime(self) -> None:
        """Before any event (watches.py primed the opted-in namespaces): policies and the
        GPUValidations as the cluster has them (so a restart that finds nothing new writes
        nothing)."""
        await self.policy_watch.prime()
        await self.validations.reflector.sync()
        for reflector in self.context_reflectors:
            await reflector.sync()

    def leadership_changed(self, leading: bool) -> None:
        """The elector's callback. A replica that starts to lead catches up: every key it
        met while following is reconciled (against the GPUValidations as the cluster has
        them, so what the previous leader wrote is not written again), and the policy
        statuses it held back are written."""
        metrics.LEADER_TRANSITIONS.labels(to="leader" if leading else "follower").inc()
        if not leading:
            return
        self.policy_watch.statuses.sync(set())
        self.workers.catch_up()

    async def start(self, workers: int = 4) -> None:
        self.events.start()
        self.node_feedback.start()
        self._spawn(self.policy_watch.reflector.run())
        self._spawn(self.validations.reflector.run())
        for reflector in self.context_reflectors:
            self._spawn(reflector.run())
        for _ in range(workers):
            self._spawn(self.workers.run())
        self.policy_watch.statuses.start()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.append(task)
        task.add_done_callback(lambda t: self._tasks.remove(t) if t in self._tasks else None)

    async def stop(self) -> None:
        self.workers.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.events.drain(timeout=2.0)
        await self.events.stop()
        await self.node_feedback.stop()


def _state_of(
    ref: WorkloadRef,
    body: Mapping[str, Any],
    static: StaticResult,
    *,
    checked_at: str,
    policy: ResolvedPolicy,
    memo: tuple[Any, ...],
) -> WorkloadState:
    """What the store keeps of a workload once its static result is known."""
    meta = body.get("metadata") or {}
    generation = meta.get("generation")
    return WorkloadState(
        ref=ref,
        uid=str(meta.get("uid", "")),
        generation=generation if isinstance(generation, int) else None,
        labels=dict(meta.get("labels") or {}),
        annotations=_our_annotations(meta),
        replicas=_replicas(body),
        paused=bool((body.get("spec") or {}).get("paused")),
        static=static,
        static_checked_at=checked_at,
        policy=policy,
        static_key=memo,
    )


def _relevant(state: WorkloadState) -> tuple[Any, ...]:
    """What a reconcile reads from a workload; other changes (its status) need none."""
    return (
        state.uid,
        state.static,
        state.policy,
        state.generation,
        tuple(sorted(state.annotations.items())),
        state.replicas,
        state.paused,
    )


def _new_load(before: PodResult | None, result: PodResult | None) -> LoadSample | None:
    """A trusted pod's start to Ready not counted yet (loadtime.py), for the metric."""
    if result is None or not result.trusted or result.load is None:
        return None
    # counted once it is trusted: its chain of uids may be confirmed after it came
    seen = before is not None and before.trusted and before.load == result.load
    return None if seen else result.load
