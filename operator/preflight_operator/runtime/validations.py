"""The GPUValidations as the cluster has them, in the store.

Apart from the Controller (issue 28). They come from a watch of our own, not kopf's: it
runs on paused peers too (so a peer taking over starts from the cluster's state, not a
stale one), and the echo of each of our status writes costs a dict comparison, not a
reconcile. A deleted GPUValidation whose workload still exists is queued, to be made again,
once the API server confirms that the workload does (store.unconfirmed: its owner may be
what is gone, and then the garbage collector deleted it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from preflight_operator.core import constants
from preflight_operator.core.store import Key, Store, StoredValidation, resource_version_of
from preflight_operator.runtime.api import KubeApi
from preflight_operator.runtime.reflector import Reflector


class ValidationWatch:
    def __init__(self, api: KubeApi, store: Store, enqueue: Callable[[Key], None]) -> None:
        self._store = store
        self._enqueue = enqueue
        self.reflector = Reflector(
            api,
            "/apis/vllm-preflight.io/v1alpha1/gpuvalidations",
            name="gpuvalidations",
            params={"labelSelector": f"app.kubernetes.io/managed-by={constants.COMPONENT}"},
            on_object=self.observe,
            transform=_identity_fields,
        )

    def observe(self, body: Mapping[str, Any], deleted: bool) -> None:
        meta = body.get("metadata") or {}
        ref = (body.get("spec") or {}).get("workloadRef") or {}
        key: Key = (
            str(meta.get("namespace", "")),
            str(ref.get("kind", "")),
            str(ref.get("name", "")),
        )
        stored = self._store.validations.get(key)
        if deleted:
            if stored is not None and stored.name == meta.get("name"):
                self._store.forget_validation(key)
                if key in self._store.workloads:
                    self._store.unconfirmed.add(key)
                self._enqueue(key)  # re-created if the workload still exists
            return
        version = resource_version_of(body)
        if stored is not None and version and not stored.is_older_than(version):
            return  # the echo of our own write, or an event older than it
        status = dict(body.get("status") or {})
        fresh = StoredValidation(
            str(meta.get("name", "")), str(ref.get("uid", "")), status, version
        )
        if stored is not None and stored.owner_uid == fresh.owner_uid and stored.same_status(fresh):
            stored.resource_version = version
            return
        self._store.put_validation(key, fresh)
        if key in self._store.workloads:
            self._enqueue(key)


def _identity_fields(body: dict[str, Any]) -> dict[str, Any]:
    """What a GPUValidation's deletion needs to find its workload (the status lives in the
    store, once)."""
    meta = body.get("metadata") or {}
    return {
        "metadata": {"namespace": meta.get("namespace"), "name": meta.get("name")},
        "spec": body.get("spec") or {},
    }
