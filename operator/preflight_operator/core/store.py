"""What the operator knows between events, in memory (pure: no I/O, no asyncio).

Everything here can be rebuilt from the cluster: workloads and injected pods come back
with kopf's initial listing, GPUValidations (with the result history) from one paged list
at start. That is why a restart loses nothing and why nothing here is persisted.

Memory is bounded by what we care about: only vLLM workloads in opted-in namespaces, only
injected pods (the pod watch is label-selected server-side), and per pod only its compact
result, never its body.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import zlib
from collections.abc import Mapping
from typing import Any

from preflight_operator.core import constants
from preflight_operator.core.podresults import PodResult
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.static import StaticResult
from preflight_operator.core.workloads import WorkloadRef

Key = tuple[str, str, str]  # (namespace, kind, name)


@dataclasses.dataclass
class WorkloadState:
    ref: WorkloadRef
    uid: str
    generation: int | None
    labels: Mapping[str, str]
    annotations: Mapping[str, str]  # only ours (vllm-preflight.io/*)
    replicas: int | None
    paused: bool
    static: StaticResult
    static_checked_at: str
    policy: ResolvedPolicy
    # (uid, rule inputs digest, labels, context revisions; static_key_of): the static
    # result is recomputed only when one of these changes, not on every status update of
    # the workload, nor when only the operator's own verdict annotations moved.
    static_key: tuple[Any, ...] = ()


@dataclasses.dataclass
class PodState:
    name: str
    uid: str
    node: str
    result: PodResult | None
    unschedulable: str = ""  # kube-scheduler's message while no node fits the pod


class StoredValidation:
    """A GPUValidation's status as the cluster has it (after our last write or its last
    event), kept packed: canonical JSON (sorted keys, no spaces), zlib level 1.

    Why packed (issue 28): at 10,000 Deployments / 50,000 pods the statuses, kept as dicts,
    were the operator's peak-RSS excess over the bare-kopf floor (324 MiB, 1.73x the
    floor's 187; docs/PERFORMANCE.md). One status of 5 per-pod results is 13.5 KB as
    Python objects, 3.1 KB as compact JSON and 0.69 KB packed (tracemalloc over 2,000
    statuses built by ``build_status``). Reading one back costs about 24 us and packing
    about 47 us, once per reconcile, against a reconcile's milliseconds. The reconciler
    reads the whole previous status (history merge, the replacing merge patch), so
    nothing of it can be dropped; only its representation changes.
    """

    __slots__ = ("_packed", "name", "owner_uid", "resource_version")

    def __init__(
        self, name: str, owner_uid: str, status: Mapping[str, Any], resource_version: int = 0
    ) -> None:
        self.name = name
        self.owner_uid = owner_uid
        self._packed = _pack(status)
        self.resource_version = resource_version

    @property
    def status(self) -> dict[str, Any]:
        """A fresh copy each time: changing it changes nothing stored."""
        value = json.loads(zlib.decompress(self._packed))
        return value if isinstance(value, dict) else {}

    @status.setter
    def status(self, value: Mapping[str, Any]) -> None:
        self._packed = _pack(value)

    def same_status(self, other: StoredValidation) -> bool:
        """Whether both hold the same status (as JSON: 1 and 1.0 differ, which at worst
        costs one reconcile more)."""
        return self._packed == other._packed

    def is_older_than(self, resource_version: int) -> bool:
        return resource_version > self.resource_version

    def __repr__(self) -> str:
        return f"StoredValidation({self.name!r}, {self.owner_uid!r}, rv={self.resource_version})"


def _pack(status: Mapping[str, Any]) -> bytes:
    text = json.dumps(status, sort_keys=True, separators=(",", ":"), default=str)
    return zlib.compress(text.encode(), 1)


# The annotations each reconcile may write on a workload (reconcilesteps.py): never rule inputs.
VERDICT_ANNOTATIONS = frozenset(
    (constants.ANNOTATION_STATUS, constants.ANNOTATION_REASON, constants.ANNOTATION_CHECKED_AT)
)


def rule_inputs_digest(body: Mapping[str, Any]) -> bytes:
    """A digest of what the rules read of a workload besides its labels: its spec and its
    annotations, less the verdict annotations the operator writes itself.

    Why not ``metadata.generation`` (the key until issue 28): a Deployment's generation
    counts annotation changes too, so every verdict annotation the operator wrote came
    back as a "new generation" and ran the rules again (2,214 analyses of 6-7 ms each for
    1,000 Deployments in the 1k/5k benchmark's profile). A StatefulSet's or a Job's does
    not count them, so an annotation the rules do read (a LeaderWorkerSet's size) could
    change under an unchanged generation. The digest costs one JSON encoding of the spec
    per event, tens of microseconds, and 16 bytes per workload."""
    meta = body.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    if isinstance(annotations, Mapping):
        annotations = {k: v for k, v in annotations.items() if k not in VERDICT_ANNOTATIONS}
    text = json.dumps([body.get("spec"), annotations], sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def static_key_of(
    uid: str, body: Mapping[str, Any], labels: Mapping[str, str], context_revision: object
) -> tuple[Any, ...]:
    """The memo key of a workload's static result (WorkloadState.static_key).
    ``context_revision``: what else the rules read, as revisions (the controller's: its
    context caches' and the workload's gang's, gangindex.py); last, so that a caller may
    take it from a stored key."""
    return (uid, rule_inputs_digest(body), tuple(sorted(labels.items())), context_revision)


def resource_version_of(body: Mapping[str, Any]) -> int:
    """The object's resourceVersion as a number, 0 when it is not one.

    Kubernetes asks clients not to order resourceVersions; within one object's history
    served by one etcd they do grow, and the only use here is to recognise a watch event
    that is older than our own last write of the same object (so a late echo never
    replaces the newer status we know). A server whose versions are not numbers makes
    every event count as new: correct, only more reconciles."""
    version = str((body.get("metadata") or {}).get("resourceVersion", ""))
    return int(version) if version.isdigit() else 0


class Store:
    def __init__(self) -> None:
        self.workloads: dict[Key, WorkloadState] = {}
        self.pods: dict[Key, dict[str, PodState]] = {}
        self.validations: dict[Key, StoredValidation] = {}
        # Monotonic time a new pod result arrived, per workload, until its status is written.
        self.result_arrivals: dict[Key, float] = {}
        # Workloads whose GPUValidation the cluster deleted: the API server confirms the
        # workload still exists before it is made again (a 404 ends the key). Without it, a
        # bare pod's GPUValidation, owned by a pod that was gone, was created and collected
        # in a loop (issue 34: 19 retries/s for 52 keys, for up to 74 minutes).
        self.unconfirmed: set[Key] = set()

    # -- workloads --------------------------------------------------------------------

    def put_workload(self, state: WorkloadState) -> None:
        self.workloads[state.ref.key] = state

    def forget_workload(self, key: Key) -> None:
        self.workloads.pop(key, None)
        self.pods.pop(key, None)
        self.validations.pop(key, None)
        self.result_arrivals.pop(key, None)
        self.unconfirmed.discard(key)

    # -- pods -------------------------------------------------------------------------

    def put_pod(self, key: Key, pod: PodState, now: float) -> bool:
        """Records a pod; True when this changes what its workload's status shows."""
        pods = self.pods.setdefault(key, {})
        before = pods.get(pod.uid)
        pods[pod.uid] = pod
        if before is None:
            if pod.result is not None:
                self.result_arrivals.setdefault(key, now)
            return True
        old_run = before.result.run_key if before.result else None
        new_run = pod.result.run_key if pod.result else None
        if new_run != old_run:
            if pod.result is not None:
                self.result_arrivals.setdefault(key, now)
            return True
        return (
            before.node != pod.node
            or before.unschedulable != pod.unschedulable
            or _load(before) != _load(pod)  # it became Ready (loadtime.py)
            # the same run, now confirmed (or no longer) as the controller's: its chain of
            # uids was read after the result came (runtime/ownership.py)
            or _trusted(before) != _trusted(pod)
        )

    def forget_pod(self, key: Key, uid: str) -> bool:
        pods = self.pods.get(key)
        if not pods or uid not in pods:
            return False
        del pods[uid]
        if not pods:
            del self.pods[key]
        return True

    def live_results(self, key: Key) -> list[PodResult]:
        return [p.result for p in self.pods.get(key, {}).values() if p.result is not None]

    def pending_pods(self, key: Key) -> int:
        return sum(1 for p in self.pods.get(key, {}).values() if p.result is None)

    def unschedulable_pods(self, key: Key) -> list[tuple[str, str]]:
        """(pod, scheduler message) of the pods that wait for a node no node fits."""
        pods = self.pods.get(key, {}).values()
        return sorted(
            (p.name, p.unschedulable) for p in pods if p.result is None and p.unschedulable
        )

    # -- GPUValidations ---------------------------------------------------------------

    def put_validation(self, key: Key, stored: StoredValidation) -> None:
        self.validations[key] = stored

    def forget_validation(self, key: Key) -> None:
        self.validations.pop(key, None)


def _trusted(pod: PodState) -> bool:
    return pod.result is not None and pod.result.trusted


def _load(pod: PodState) -> object:
    return pod.result.load if pod.result is not None else None
