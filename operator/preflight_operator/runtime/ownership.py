"""Whose GPUValidation a pod's result belongs to: up the controller ownerReferences to the
serving-stack object, as observed.

Apart from the Controller (issue 28). A Deployment, LeaderWorkerSet or RayCluster that a
serving stack's controller made (workloads.wrapper_owner) keeps no GPUValidation of its
own: its pods report to the stack's object (Pod -> ReplicaSet -> Deployment ->
InferenceService; RayCluster -> RayService). The chain is followed at most four steps, so a
reference loop cannot hang the operator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preflight_operator.core import provenance
from preflight_operator.core.store import Key, Store
from preflight_operator.core.workloads import WorkloadRef


class Ownership:
    def __init__(self, store: Store) -> None:
        self._store = store
        # child workload -> the serving-stack object that controls it
        self._owners: dict[Key, Key] = {}

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

    def owned_by_known_uid(self, pod: Mapping[str, Any], ref: WorkloadRef) -> bool:
        """Where the pod's controller is the workload itself (StatefulSet, Job, ...), its
        ownerReference's uid must be the workload's as watched (provenance.py: the chain
        of controller references, uid checked where the operator knows it)."""
        owner = provenance.controller_owner(pod)
        workload = self._store.workloads.get(ref.key)
        if owner is None or workload is None or not workload.uid:
            return True
        if owner.get("kind") != ref.kind or owner.get("name") != ref.name:
            return True  # a ReplicaSet or StatefulSet between them: its uid is not watched
        return str(owner.get("uid", "")) == workload.uid
