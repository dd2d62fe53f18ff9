"""The operator's state machine: observations in, reconciles out.

The watches (watches.py) call the ``observe_*`` methods with the objects they read;
those update the store (pure) and queue the workload's key; workers reconcile keys one at a
time each (reconciler.py). Nothing here talks HTTP except through ``api.KubeApi``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from preflight_operator.core import constants, provenance
from preflight_operator.core.analysis import Analyser, analyse_off_loop
from preflight_operator.core.config import OperatorConfig
from preflight_operator.core.events import now_rfc3339, policy_invalid_event
from preflight_operator.core.nodefeedback import Levels, finding, parse_levels
from preflight_operator.core.podresults import PodResult, pod_result, unschedulable
from preflight_operator.core.policy import (
    VALID_CONDITION,
    Policy,
    PolicyBook,
    ResolvedPolicy,
    parse_policy,
    policy_status,
    status_differs,
    stored_status,
)
from preflight_operator.core.static import StaticResult, crashed
from preflight_operator.core.store import (
    Key,
    PodState,
    Store,
    StoredValidation,
    WorkloadState,
    resource_version_of,
)
from preflight_operator.core.workloads import (
    POD,
    VALIDATED_KINDS,
    WorkloadKind,
    WorkloadRef,
    is_bare_pod,
    ref_of,
    template_labels,
    workload_of_pod,
    wrapper_owner,
)
from preflight_operator.runtime import metrics
from preflight_operator.runtime.api import (
    API_ERRORS,
    POLICIES,
    KubeApi,
    NotFound,
    collection_path,
)
from preflight_operator.runtime.eventsink import EventSink
from preflight_operator.runtime.nodehealth import NodeFeedback
from preflight_operator.runtime.reconciler import Reconciler
from preflight_operator.runtime.reflector import Reflector
from preflight_operator.runtime.rulesworker import BudgetExceeded, RulesPool
from preflight_operator.runtime.workqueue import WorkQueue
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
        self.analyser = analyser
        self.identity = identity
        self._now = now
        self._clock = clock
        self.store = Store()
        self.queue: WorkQueue[Key] = WorkQueue()
        self.policies = PolicyBook()
        self.opted_in: set[str] = set()
        self.events = EventSink(api, identity, now)
        # The gate is made below; the lambda reads it when a finding is applied.
        self.node_feedback = NodeFeedback(api, now, lambda: self.gate.allows())  # noqa: PLW0108
        self.reconciler = Reconciler(
            self.store,
            api,
            self.events,
            load_workload=self._load_workload,
            history_limit=config.history_pods_per_workload,
            now=now,
            clock=clock,
            uninjected=self._uninjected_pods,
        )
        # Per workload: how many pods its controller reports, and the labels its pods
        # carry (to find pods that run without the check, after an outage of the webhook).
        self._pod_hints: dict[Key, tuple[int, str]] = {}
        self.policy_reflector = Reflector(
            api,
            collection_path(POLICIES, None),
            name="preflightpolicies",
            on_change=self._policies_changed,
        )
        # GPUValidations come from a watch of our own, not kopf's: it runs on paused peers
        # too (so a peer taking over starts from the cluster's state, not a stale one), and
        # the echo of each of our status writes costs a dict comparison, not a kopf event.
        self.validation_reflector = Reflector(
            api,
            "/apis/vllm-preflight.io/v1alpha1/gpuvalidations",
            name="gpuvalidations",
            params={"labelSelector": f"app.kubernetes.io/managed-by={constants.COMPONENT}"},
            on_object=self.observe_validation,
            transform=_identity_fields,
        )
        self._tasks: list[asyncio.Task[Any]] = []
        self._context_revision = 0
        # Caches the rules read (Services named vllm): primed and run with the others,
        # on every replica; a change re-analyses the namespace's workloads.
        self.context_reflectors = list(context_reflectors)
        # child workload -> the serving-stack object that controls it (workloads.wrapper_owner)
        self._owners: dict[Key, Key] = {}
        for reflector in self.context_reflectors:
            reflector.subscribe(self.context_changed)
        # Reconciles write only while this replica holds the Lease (writegate.py,
        # elector.py); keys met while following wait in `_deferred` until it leads.
        self.gate = gate or WriteGate(identity, standalone=True)
        self._deferred: set[Key] = set()
        # Per workload, the newest observation: an analysis answered late by a rules worker
        # is dropped when a newer one was made meanwhile.
        self._observed_seq: dict[Key, int] = {}
        self._analysing: set[Key] = set()
        # Namespaces whose PreflightPolicy statuses wait for the gate to open.
        self._policy_status_pending: set[str] = set()
        self._policy_status_lock = asyncio.Lock()
        self._started = False

    # -- scope ------------------------------------------------------------------------

    def excluded(self, namespace: str) -> bool:
        return not namespace or namespace in self.config.excluded_namespaces

    def in_scope(self, kind: WorkloadKind, body: Mapping[str, Any]) -> bool:
        namespace = str((body.get("metadata") or {}).get("namespace", ""))
        if self.excluded(namespace):
            return False
        label = template_labels(kind, body).get(self.config.namespace_label)
        if label == constants.INJECT_DISABLED:
            return False
        return namespace in self.opted_in or label == constants.INJECT_ENABLED

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
        owner = wrapper_owner(body, kind.kind)
        if owner is not None:
            # made by a serving stack's controller: its pods report to that object
            if deleted:
                self._owners.pop(key, None)
            else:
                self._owners[key] = owner.key
            if key in self.store.workloads:
                self.store.forget_workload(key)
            return
        in_scope = self.in_scope(kind, body) or (
            has_injected_pods and not self.excluded(ref.namespace)
        )
        if deleted or not in_scope:
            self._pod_hints.pop(key, None)
            if key in self.store.workloads:
                self.store.forget_workload(key)
                metrics.WORKLOADS.set(len(self.store.workloads))
            return
        hint = _pod_hint(kind, body)
        hint_changed = self._pod_hints.get(key) != hint
        if hint is None:
            self._pod_hints.pop(key, None)
        else:
            self._pod_hints[key] = hint
        meta = body.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        uid = str(meta.get("uid", ""))
        generation = meta.get("generation")
        policy = self.policies.resolve(ref.namespace, labels, self.config.default_policy)
        memo = (uid, generation, tuple(sorted(labels.items())), self._context_revision)
        before = self.store.workloads.get(key)
        # Items of a LIST carry no kind; the rules find pod templates by it.
        typed = {"apiVersion": kind.api_version, "kind": kind.kind, **body}
        self._observed_seq[key] = seq = self._observed_seq.get(key, 0) + 1
        if before is not None and before.static_key == memo:
            static, checked_at = before.static, before.static_checked_at
        elif isinstance(self.analyser, RulesPool):
            # Rules in worker processes: never hold up the event loop (it serves the
            # webhooks) for up to their budget; the rest follows when they answer.
            self._analysing.add(key)
            self._spawn(
                self._analysed_later(
                    kind, body, typed=typed, policy=policy, memo=memo,
                    hint_changed=hint_changed, seq=seq,
                )
            )  # fmt: skip
            return
        else:
            static, checked_at = self._analyse(ref, typed, policy), self._now()
        self._observed(
            kind, body, policy=policy, memo=memo, static=static, checked_at=checked_at,
            hint_changed=hint_changed,
        )  # fmt: skip

    def _analyse(
        self, ref: WorkloadRef, typed: Mapping[str, Any], policy: ResolvedPolicy
    ) -> StaticResult:
        try:
            return self.analyser.analyse(typed, policy.spec)
        except BudgetExceeded as exc:  # a stored hostile object: same budget as admission
            logger.warning("rules on %s stopped: %s", ref.display, exc.reason)
            metrics.RECONCILE_ERRORS.labels(stage="budget").inc()
            return crashed(f"could not be checked in time: the rules stopped, {exc.reason}")
        except Exception as exc:  # the rules must never stop the operator
            logger.exception("rules failed on %s", ref.display)
            metrics.RECONCILE_ERRORS.labels(stage="rules").inc()
            return crashed(f"{type(exc).__name__}: {exc}")

    async def _analysed_later(
        self,
        kind: WorkloadKind,
        body: Mapping[str, Any],
        *,
        typed: Mapping[str, Any],
        policy: ResolvedPolicy,
        memo: tuple[Any, ...],
        hint_changed: bool,
        seq: int,
    ) -> None:
        ref = ref_of(body, kind)
        try:
            try:
                static = await analyse_off_loop(self.analyser, typed, policy.spec)
            except BudgetExceeded as exc:  # a stored hostile object: same budget as admission
                logger.warning("rules on %s stopped: %s", ref.display, exc.reason)
                metrics.RECONCILE_ERRORS.labels(stage="budget").inc()
                static = crashed(f"could not be checked in time: the rules stopped, {exc.reason}")
            except Exception as exc:  # the rules must never stop the operator
                logger.exception("rules failed on %s", ref.display)
                metrics.RECONCILE_ERRORS.labels(stage="rules").inc()
                static = crashed(f"{type(exc).__name__}: {exc}")
            if self._observed_seq.get(ref.key) != seq:
                return  # a newer observation of the workload is on its way
            self._observed(
                kind, body, policy=policy, memo=memo, static=static, checked_at=self._now(),
                hint_changed=hint_changed,
            )  # fmt: skip
        finally:
            if self._observed_seq.get(ref.key) == seq:
                self._analysing.discard(ref.key)

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
        meta = body.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        uid = str(meta.get("uid", ""))
        generation = meta.get("generation")
        before = self.store.workloads.get(key)
        if not static.has_vllm and key not in self.store.validations and key not in self.store.pods:
            if before is not None:
                self.store.forget_workload(key)
            return
        state = WorkloadState(
            ref=ref,
            uid=uid,
            generation=generation if isinstance(generation, int) else None,
            labels=labels,
            annotations=_our_annotations(meta),
            replicas=_replicas(body),
            paused=bool((body.get("spec") or {}).get("paused")),
            static=static,
            static_checked_at=checked_at,
            policy=policy,
            static_key=memo,
        )
        self.store.put_workload(state)
        metrics.WORKLOADS.set(len(self.store.workloads))
        if before is None or _relevant(before) != _relevant(state):
            self.enqueue(key)
        elif hint_changed and not self.store.pods.get(key):
            self.enqueue(key)  # its pods came (or went) and none of them is injected

    def observe_pod(self, body: Mapping[str, Any], deleted: bool) -> None:
        meta = body.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        if self.excluded(namespace):
            return
        ref = workload_of_pod(body)
        key = self.top_owner(ref.key)
        uid = str(meta.get("uid", ""))
        if deleted:
            if self.store.forget_pod(key, uid):
                self.enqueue(key)
            return
        result = pod_result(body)
        if result is not None and result.trusted and not self._owned_by_known_uid(body, ref):
            result = dataclasses.replace(result, created_by=provenance.OTHER)
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
            metrics.record_check(body, result)
            if result.dropped:
                metrics.REPORT_ENTRIES_DROPPED.inc(result.dropped)
            if result.trusted:  # never a pod anyone else made (provenance.py)
                self._feed_node(key, namespace, result)
        if is_bare_pod(body):
            self.observe_workload(POD, body, deleted=False, has_injected_pods=True)
        if changed:
            self.enqueue(key)

    def _owned_by_known_uid(self, pod: Mapping[str, Any], ref: WorkloadRef) -> bool:
        """Where the pod's controller is the workload itself (StatefulSet, Job, ...), its
        ownerReference's uid must be the workload's as watched (provenance.py: the chain
        of controller references, uid checked where the operator knows it)."""
        owner = provenance.controller_owner(pod)
        workload = self.store.workloads.get(ref.key)
        if owner is None or workload is None or not workload.uid:
            return True
        if owner.get("kind") != ref.kind or owner.get("name") != ref.name:
            return True  # a ReplicaSet or StatefulSet between them: its uid is not watched
        return str(owner.get("uid", "")) == workload.uid

    def top_owner(self, key: Key) -> Key:
        """The workload whose GPUValidation a result of ``key`` belongs to: up the
        controller ownerReferences to the serving-stack object (Pod -> ReplicaSet ->
        Deployment -> InferenceService; RayCluster -> RayService), as observed."""
        for _ in range(4):  # bounded: a reference loop cannot hang us
            owner = self._owners.get(key)
            if owner is None:
                break
            key = owner
        return key

    def _feed_node(self, key: Key, namespace: str, result: PodResult) -> None:
        """Node feedback (nodefeedback.py) at the levels of the workload's policy."""
        found = finding(result, namespace)
        if found is None:
            return
        workload = self.store.workloads.get(key)
        body = self.policy_reflector.get(namespace, workload.policy.name) if workload else None
        levels = parse_levels((body or {}).get("spec"))[0] if body else Levels()
        self.node_feedback.observe(found, levels)

    def observe_validation(self, body: Mapping[str, Any], deleted: bool) -> None:
        meta = body.get("metadata") or {}
        ref = (body.get("spec") or {}).get("workloadRef") or {}
        key: Key = (
            str(meta.get("namespace", "")),
            str(ref.get("kind", "")),
            str(ref.get("name", "")),
        )
        stored = self.store.validations.get(key)
        if deleted:
            if stored is not None and stored.name == meta.get("name"):
                self.store.forget_validation(key)
                self.enqueue(key)  # re-created if the workload still exists
            return
        version = resource_version_of(body)
        if stored is not None and version and not stored.is_older_than(version):
            return  # the echo of our own write, or an event older than it
        status = dict(body.get("status") or {})
        fresh = StoredValidation(
            str(meta.get("name", "")), str(ref.get("uid", "")), status, version
        )
        if stored is not None and stored.status == status and stored.owner_uid == fresh.owner_uid:
            stored.resource_version = version
            return
        self.store.put_validation(key, fresh)
        if key in self.store.workloads:
            self.enqueue(key)

    def observe_namespace(self, name: str, opted_in: bool) -> bool:
        """Updates the opted-in set; True when the namespace just opted in (its existing
        workloads must then be read, as no workload event will bring them)."""
        if opted_in and not self.excluded(name):
            if name in self.opted_in:
                return False
            self.opted_in.add(name)
            return True
        self.opted_in.discard(name)
        return False

    def enqueue(self, key: Key) -> None:
        self.queue.add(key)
        metrics.QUEUE_DEPTH.set(len(self.queue))

    # -- reads the observations cannot bring ------------------------------------------

    async def reprocess_namespace(self, namespace: str) -> None:
        """Reads every workload of a namespace (it opted in, or its policies changed)."""
        for kind in VALIDATED_KINDS.values():
            if kind is POD:
                continue
            try:
                async for items, _ in self.api.list_pages(collection_path(kind, namespace)):
                    for item in items:
                        item.setdefault("metadata", {}).setdefault("namespace", namespace)
                        self.observe_workload(kind, item, deleted=False)
            except NotFound:
                continue  # e.g. LeaderWorkerSet is not installed
            except API_ERRORS as exc:
                logger.warning("could not list %s in %s: %s", kind.plural, namespace, exc)

    async def _uninjected_pods(self, workload: WorkloadState) -> list[str]:
        """Names of the workload's pods that lack the injected label (one label-selected
        list of its namespace, only when its controller reports pods)."""
        hint = self._pod_hints.get(workload.ref.key)
        if hint is None or hint[0] <= 0:
            return []
        selector = f"{hint[1]},!{constants.LABEL_INJECTED}"
        names: list[str] = []
        async for items, _ in self.api.list_pages(
            f"/api/v1/namespaces/{workload.ref.namespace}/pods",
            {"labelSelector": selector, "limit": "50"},
        ):
            names += [
                str((p.get("metadata") or {}).get("name", ""))
                for p in items
                if not (p.get("metadata") or {}).get("deletionTimestamp")
            ]
            break  # one page is enough to say so
        return sorted(names)

    async def _load_workload(self, key: Key) -> WorkloadState | None:
        namespace, kind_name, name = key
        kind = VALIDATED_KINDS.get(kind_name)
        if kind is None:
            return None
        try:
            body = await self.api.get_workload(
                ref_of({"metadata": {"namespace": namespace, "name": name}}, kind)
            )
        except NotFound:
            return None
        body.setdefault("metadata", {}).setdefault("namespace", namespace)
        self.observe_workload(kind, body, deleted=False, has_injected_pods=True)
        for _ in range(600):  # the rules may answer from a worker: within their budget
            if key not in self._analysing:
                break
            await asyncio.sleep(0.02)
        return self.store.workloads.get(key)

    def _policies_changed(self, namespace: str) -> None:
        parsed = self._parsed_policies()
        before = self.policies.in_namespace(namespace)
        self.policies.replace_all(parsed)
        self._sync_policy_statuses({namespace})
        if _by_name(before) != _by_name(self.policies.in_namespace(namespace)):
            # Only a change of what the policies say re-analyses the namespace, not the
            # echo of our own status write on a policy.
            self.context_changed(namespace)

    def _sync_policy_statuses(self, namespaces: set[str]) -> None:
        self._policy_status_pending |= namespaces
        if self._started and self._policy_status_pending and self.gate.allows():
            pending, self._policy_status_pending = self._policy_status_pending, set()
            self._spawn(self._write_policy_statuses(pending))

    async def _write_policy_statuses(self, namespaces: set[str]) -> None:
        """Each PreflightPolicy's status: observedGeneration and a Valid condition naming
        every field the operator did not take; a PolicyInvalid Event when that is new."""
        async with self._policy_status_lock:
            for namespace in sorted(namespaces):
                for body in self.policy_reflector.in_namespace(namespace):
                    await self._write_policy_status(body)

    async def _write_policy_status(self, body: Mapping[str, Any]) -> None:
        meta = body.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        problems = parse_policy(body).problems
        wanted = policy_status(body, problems, self._now())
        if not status_differs(body, wanted):
            return
        stored = stored_status(body)
        before = next(
            (
                c
                for c in stored.get("conditions") or []
                if isinstance(c, Mapping) and c.get("type") == VALID_CONDITION
            ),
            {},
        )
        condition = wanted["conditions"][0]
        try:
            await self.api.patch_policy_status(namespace, name, wanted)
        except API_ERRORS as exc:
            logger.warning("status of PreflightPolicy %s/%s not written: %s", namespace, name, exc)
            return
        metrics.STATUS_WRITES.inc()
        if problems and (
            before.get("status") != "False" or before.get("message") != condition["message"]
        ):
            logger.warning("PreflightPolicy %s/%s: %s", namespace, name, condition["message"])
            self.events.post(
                policy_invalid_event(
                    namespace,
                    name,
                    str(meta.get("uid", "")),
                    f"{condition['message']}. Fix the field(s) named; until then the"
                    " defaults shown apply",
                )
            )

    def context_changed(self, namespace: str) -> None:
        """Something the rules read besides the workload changed in a namespace (its
        policies, a Service named vllm): its workloads are analysed again."""
        self._context_revision += 1
        if any(w.ref.namespace == namespace for w in self.store.workloads.values()):
            self._spawn(self.reprocess_namespace(namespace))

    def _parsed_policies(self) -> list[Policy]:
        """Every policy, each bad field replaced by its default (policy.parse_policy)."""
        return [parse_policy(body) for body in self.policy_reflector.items.values()]

    # -- lifecycle --------------------------------------------------------------------

    async def prime(self) -> None:
        """Before any event (watches.py primed the opted-in namespaces): policies and the
        GPUValidations as the cluster has them (so a restart that finds nothing new writes
        nothing)."""
        await self.policy_reflector.sync()
        self.policies.replace_all(self._parsed_policies())
        await self.validation_reflector.sync()
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
        self._sync_policy_statuses(set())
        deferred, self._deferred = self._deferred, set()
        for key in sorted(deferred):
            self.enqueue(key)

    async def start(self, workers: int = 4) -> None:
        self.events.start()
        self.node_feedback.start()
        self._spawn(self.policy_reflector.run())
        self._spawn(self.validation_reflector.run())
        for reflector in self.context_reflectors:
            self._spawn(reflector.run())
        for _ in range(workers):
            self._spawn(self._worker())
        self._started = True
        self._sync_policy_statuses({ns for ns, _ in self.policy_reflector.items})

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.append(task)
        task.add_done_callback(lambda t: self._tasks.remove(t) if t in self._tasks else None)

    async def stop(self) -> None:
        self.queue.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.events.drain(timeout=2.0)
        await self.events.stop()
        await self.node_feedback.stop()

    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            if not self.gate.allows():
                # A follower: the leader writes. Remember the key, in case this replica
                # takes over (leadership_changed) before a watch brings the key again.
                self._deferred.add(key)
                self.queue.done(key, failed=False)
                continue
            failed = False
            started = self._clock()
            try:
                await self.reconciler.reconcile(key)
            except NotFound as exc:
                # The GPUValidation (or the workload) vanished under us: start over.
                self.store.forget_validation(key)
                failed = True
                logger.info("%s: %s; retrying", "/".join(key), exc)
            except API_ERRORS as exc:
                failed = True
                metrics.RECONCILE_ERRORS.labels(stage="api").inc()
                logger.warning("reconcile of %s failed: %s", "/".join(key), exc)
            except Exception:
                failed = True
                metrics.RECONCILE_ERRORS.labels(stage="bug").inc()
                logger.exception("reconcile of %s failed", "/".join(key))
            finally:
                metrics.RECONCILE_LATENCY.observe(self._clock() - started)
                self.queue.done(key, failed=failed)
                metrics.QUEUE_DEPTH.set(len(self.queue))


def _identity_fields(body: dict[str, Any]) -> dict[str, Any]:
    """What a GPUValidation's deletion needs to find its workload (the status lives in the
    store, once)."""
    meta = body.get("metadata") or {}
    return {
        "metadata": {"namespace": meta.get("namespace"), "name": meta.get("name")},
        "spec": body.get("spec") or {},
    }


def _pod_hint(kind: WorkloadKind, body: Mapping[str, Any]) -> tuple[int, str] | None:
    """(pods its controller reports, the label selector of its pods), or None when unknown.
    Deployments, StatefulSets and Jobs select their pods by ``spec.selector.matchLabels``;
    a LeaderWorkerSet labels its pods with its name."""
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    if not isinstance(spec, Mapping) or not isinstance(status, Mapping):
        return None
    name = str((body.get("metadata") or {}).get("name", ""))
    if kind.kind == "LeaderWorkerSet":
        labels: Mapping[str, Any] = {"leaderworkerset.sigs.k8s.io/name": name}
        count = status.get("replicas")
    else:
        selector = spec.get("selector") or {}
        labels = (selector.get("matchLabels") or {}) if isinstance(selector, Mapping) else {}
        count = status.get("active") if kind.kind == "Job" else status.get("replicas")
    if not labels or not isinstance(labels, Mapping):
        return None
    pods = count if isinstance(count, int) and not isinstance(count, bool) else 0
    selector_text = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return pods, selector_text


def _by_name(policies: Sequence[Policy]) -> list[tuple[str, Policy]]:
    return sorted(((p.name, p) for p in policies), key=lambda item: item[0])


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
