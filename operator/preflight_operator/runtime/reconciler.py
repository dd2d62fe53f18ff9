"""Carries out one reconcile: the steps from ``reconcilesteps`` turned into API calls.

Order matters for crash safety: the remediation patch first (its annotation records what
was done), then the workload's verdict annotations, then the one status patch, then Events
(best effort, queued). A crash anywhere in between is repaired by the next reconcile,
because every step is computed from the cluster's state, not from what this process
remembers.

Why the annotations before the status (issue 28): a Deployment's generation counts
annotation changes, so a status written first said ``observedGeneration`` N, the
annotation patch made N+1, and its echo cost a second status write (and its echo) for
every verdict change. Written after, the status carries the generation the annotation
patch returned, when that patch changed nothing the rules read (store.static_key_of); a
reconcile that remediated keeps the old order (the status first, then the annotations).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from preflight_operator.core.gpuvalidation import NOT_INJECTED, NOT_INJECTED_REASON, desired_object
from preflight_operator.core.reconcilesteps import ReconcileSteps, reconcile_steps, without_nulls
from preflight_operator.core.store import (
    Key,
    Store,
    StoredValidation,
    WorkloadState,
    resource_version_of,
    static_key_of,
)
from preflight_operator.core.workloads import gpuvalidation_name
from preflight_operator.runtime import metrics
from preflight_operator.runtime.api import API_ERRORS, Conflict, Forbidden, KubeApi, NotFound
from preflight_operator.runtime.eventsink import EventSink

logger = logging.getLogger(__name__)

LoadWorkload = Callable[[Key], Awaitable[WorkloadState | None]]
# Names of a workload's pods that run without the injected check (an API list, made only
# when the workload has pods and none of them is injected).
Uninjected = Callable[[WorkloadState], Awaitable[Sequence[str]]]


class Reconciler:
    def __init__(
        self,
        store: Store,
        api: KubeApi,
        events: EventSink,
        *,
        load_workload: LoadWorkload,
        history_limit: int,
        now: Callable[[], str],
        clock: Callable[[], float] = time.monotonic,
        uninjected: Uninjected | None = None,
        may_patch: Callable[[str], bool] = lambda namespace: True,
    ) -> None:
        """``may_patch(namespace)``: whether the RBAC grants patch on that namespace's
        workloads (config.WorkloadPatch); where it does not, no patch is sent."""
        self._may_patch = may_patch
        self._store = store
        self._uninjected = uninjected
        self._refused: set[tuple[Key, str]] = set()
        self._api = api
        self._events = events
        self._load_workload = load_workload
        self._history_limit = history_limit
        self._now = now
        self._clock = clock

    async def reconcile(self, key: Key) -> None:
        store = self._store
        workload = await self._workload(key)
        if workload is None:
            return
        stored = store.validations.get(key)
        if stored is None or stored.owner_uid != workload.uid:
            stored = await self._ensure_validation(workload)
        not_injected = await self._not_injected(key, workload)
        steps = self._steps(key, workload, stored, not_injected)
        if steps.note:
            logger.info("%s: %s", workload.ref.display, steps.note)
        if steps.remediation_patch is not None and not await self._remediated(
            workload, steps.remediation_patch
        ):
            steps = self._steps(key, _unremedied(workload), stored, not_injected)
        if steps.remediation_metric is not None:
            remedy, action = steps.remediation_metric
            metrics.REMEDIATIONS.labels(type=remedy, action=action).inc()
        first = steps.annotation_patch if steps.remediation_patch is None else None
        if first is not None:
            try:
                moved = await self._write_annotations(workload, first)
            except API_ERRORS:
                # the record never waits on its copy (an answer too large to read, a
                # timeout): the status as planned, then the queue retries the rest
                await self._write_status(workload, stored, steps)
                raise
            if moved:  # the patch moved the workload's generation: the status says it
                again = self._steps(key, workload, stored, not_injected)
                steps = dataclasses.replace(
                    steps, status=again.status, status_write=again.status_write
                )
        await self._write_status(workload, stored, steps)
        arrived = store.result_arrivals.pop(key, None)
        if arrived is not None:
            metrics.RESULT_LATENCY.observe(self._clock() - arrived)
        if steps.annotation_patch is not None and first is None:
            await self._write_annotations(workload, steps.annotation_patch)
        for event in steps.events:
            if event.reason == NOT_INJECTED:
                metrics.INJECTIONS.labels(result="missed", reason=NOT_INJECTED_REASON).inc(
                    len(not_injected)
                )
            self._events.post(event)

    async def _workload(self, key: Key) -> WorkloadState | None:
        """The workload to reconcile, or None when there is nothing to do for `key`."""
        store = self._store
        workload = store.workloads.get(key)
        if workload is not None and key in store.unconfirmed:
            store.unconfirmed.discard(key)
            if key not in store.validations:
                # its GPUValidation was deleted: read the workload before making it again
                workload = await self._load_workload(key)
                if workload is None:  # a 404 ends the key
                    store.forget_workload(key)
                    return None
        if workload is None:
            if not store.pods.get(key):
                return None
            # Pods report for a workload we have not seen (it is outside the workload
            # watch: a pod-level opt-in, or a custom owner kind): read it once.
            workload = await self._load_workload(key)
            if workload is None:
                store.forget_workload(key)
                return None
        if not workload.static.has_vllm and not store.pods.get(key):
            return None
        return workload

    async def _not_injected(self, key: Key, workload: WorkloadState) -> Sequence[str]:
        """Pods of a workload that should have the check and run without it (best effort)."""
        if (
            self._uninjected is None
            or self._store.pods.get(key)
            or not _expects_injection(workload)
        ):
            return ()
        try:
            return await self._uninjected(workload)
        except API_ERRORS as exc:  # best effort: the next reconcile asks again
            logger.warning("%s: pods not listed: %s", workload.ref.display, exc)
            return ()

    def _steps(
        self,
        key: Key,
        workload: WorkloadState,
        stored: StoredValidation,
        not_injected: Sequence[str],
    ) -> ReconcileSteps:
        store = self._store
        return reconcile_steps(
            workload,
            store.live_results(key),
            store.pending_pods(key),
            stored.status,
            history_limit=self._history_limit,
            now=self._now(),
            not_injected=not_injected,
            unschedulable=store.unschedulable_pods(key),
        )

    async def _remediated(self, workload: WorkloadState, patch: dict[str, Any]) -> bool:
        """Patch the workload as the steps say; False when this namespace forbids it."""
        if not self._may_patch(workload.ref.namespace):
            self._forbidden(workload, "remediation", None)
            return False
        try:
            await self._remediate(workload, patch)
        except Forbidden as exc:
            # No patch on this namespace's workloads (rbac.workloadPatch): record
            # nothing as done, say what to grant, and carry on with the status.
            self._forbidden(workload, "remediation", exc)
            return False
        return True

    async def _write_status(
        self, workload: WorkloadState, stored: StoredValidation, steps: ReconcileSteps
    ) -> None:
        if steps.status_write is None:
            return
        if logger.isEnabledFor(logging.DEBUG):  # reading the stored status back costs
            before = stored.status
            changed = sorted(k for k, v in steps.status.items() if before.get(k) != v)
            logger.debug("%s: status write (%s)", workload.ref.display, ", ".join(changed))
        written = await self._api.patch_gpuvalidation_status(
            workload.ref.namespace, stored.name, steps.status_write
        )
        metrics.STATUS_WRITES.inc()
        stored.status = steps.status
        stored.resource_version = resource_version_of(written)

    async def _write_annotations(self, workload: WorkloadState, patch: dict[str, Any]) -> bool:
        """True when the patch moved the workload's generation and nothing the rules read
        (the workload state now has the new generation)."""
        if not self._may_patch(workload.ref.namespace):
            self._forbidden(workload, "annotations", None)
            return False
        try:
            written = await self._api.patch_workload(workload.ref, patch)
        except Forbidden as exc:  # the GPUValidation is the record; annotations a copy
            self._forbidden(workload, "annotations", exc)
            return False
        workload.annotations = _ours({**workload.annotations, **patch["metadata"]["annotations"]})
        return _adopt_generation(workload, written)

    def _forbidden(self, workload: WorkloadState, what: str, exc: Exception | None) -> None:
        """A patch the RBAC refused (``exc``, counted as an error) or that the configuration
        says it would refuse (None: not sent); said once per workload and kind of write."""
        if exc is not None:
            metrics.RECONCILE_ERRORS.labels(stage="forbidden").inc()
        first = (workload.ref.key, what) not in self._refused
        self._refused.add((workload.ref.key, what))
        why = f" ({exc})" if exc is not None else " (not granted by the chart: not sent)"
        (logger.warning if first and exc is not None else logger.info if first else logger.debug)(
            "%s: %s not written, the operator may not patch workloads in %s%s; grant it"
            " with the chart's rbac.workloadNamespaces or rbac.workloadPatch=cluster",
            workload.ref.display, what, workload.ref.namespace, why,
        )  # fmt: skip

    async def _remediate(self, workload: WorkloadState, patch: dict[str, Any]) -> None:
        await self._api.patch_workload(workload.ref, patch)
        annotations = (patch.get("metadata") or {}).get("annotations") or {}
        workload.annotations = _ours({**workload.annotations, **annotations})
        spec = patch.get("spec") or {}
        if "replicas" in spec:
            workload.replicas = spec["replicas"]
        if "paused" in spec:
            workload.paused = bool(spec["paused"])

    async def _ensure_validation(self, workload: WorkloadState) -> StoredValidation:
        """Creates the GPUValidation, or adopts the existing one. One left by an earlier
        workload of the same name (deleted and re-created) is replaced: its history is
        about other pods, and the garbage collector is about to delete it anyway."""
        ref = workload.ref
        obj = desired_object(ref, workload.uid)
        name = gpuvalidation_name(ref.kind_key, ref.name)
        for _ in range(2):
            try:
                created = await self._api.create_gpuvalidation(obj)
                stored = StoredValidation(
                    name,
                    workload.uid,
                    dict(created.get("status") or {}),
                    resource_version_of(created),
                )
                break
            except Conflict:
                existing = await self._api.get_gpuvalidation(ref.namespace, name)
                spec = existing.get("spec") or {}
                owner = (spec.get("workloadRef") or {}).get("uid", "")
                if owner == workload.uid:
                    status = without_nulls(dict(existing.get("status") or {}))
                    stored = StoredValidation(
                        name, workload.uid, status, resource_version_of(existing)
                    )
                    break
                uid = (existing.get("metadata") or {}).get("uid", "")
                await self._api.delete_gpuvalidation(ref.namespace, name, uid)
        else:
            raise RuntimeError(f"could not create GPUValidation {ref.namespace}/{name}")
        self._store.put_validation(ref.key, stored)
        return stored


def _unremedied(workload: WorkloadState) -> WorkloadState:
    """The workload as if its policy asked for no runtime remediation."""
    return dataclasses.replace(
        workload,
        policy=dataclasses.replace(
            workload.policy,
            spec=dataclasses.replace(workload.policy.spec, on_runtime_failure="None"),
        ),
    )


def _adopt_generation(workload: WorkloadState, written: Mapping[str, Any]) -> bool:
    """Takes the generation of the workload as the patch left it, when the rules would
    read the same (the static result stays true for it); True when it moved."""
    meta = written.get("metadata") or {}
    generation = meta.get("generation")
    if not isinstance(generation, int) or isinstance(generation, bool):
        return False
    if generation == workload.generation or not workload.static_key:
        return False
    labels = meta.get("labels") or {}
    uid = str(meta.get("uid", ""))
    if static_key_of(uid, written, labels, workload.static_key[-1]) != workload.static_key:
        return False  # someone else changed it too: its own event brings the new state
    workload.generation = generation
    return True


def _expects_injection(workload: WorkloadState) -> bool:
    """Its pods would get the check: vLLM with a plan, GPUs requested, injection on."""
    static = workload.static
    return (
        static.has_vllm
        and static.plan is not None
        and bool(static.gpus_requested)
        and workload.policy.spec.injection_enabled
    )


def _ours(annotations: dict[str, Any]) -> dict[str, str]:
    return {
        k: v for k, v in annotations.items() if v is not None and k.startswith("vllm-preflight.io/")
    }


__all__ = ["NotFound", "Reconciler"]
