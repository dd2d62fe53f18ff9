"""The reads that observations cannot bring: a namespace's workloads when it opts in or its
policies change, one workload when a reconcile needs it afresh, and the pods of a workload
that run without the check.

Apart from the Controller (issue 28). What it reads goes back through ``observe`` (the
controller's ``observe_workload``), the one way into the store. Per workload it keeps the
hint its controller gives (how many pods it reports, and their label selector), so that the
pods without the injected label are looked for with one label-selected list, and only when
there are pods.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from preflight_operator.core import constants
from preflight_operator.core.apinames import MalformedReference
from preflight_operator.core.store import Key, Store, WorkloadState
from preflight_operator.core.workloads import POD, VALIDATED_KINDS, WorkloadKind, ref_of
from preflight_operator.runtime.api import API_ERRORS, KubeApi, NotFound, collection_path

logger = logging.getLogger(__name__)

Observe = Callable[..., None]


class WorkloadLister:
    def __init__(
        self,
        api: KubeApi,
        store: Store,
        observe: Observe,
        settled: Callable[[Key], Awaitable[None]],
    ) -> None:
        self._api = api
        self._store = store
        self._observe = observe
        self._settled = settled
        # Per workload: how many pods its controller reports, and their label selector.
        self.hints: dict[Key, tuple[int, str]] = {}

    def note_hint(self, key: Key, kind: WorkloadKind, body: Mapping[str, Any] | None) -> bool:
        """Keeps the workload's pod hint (None body: forget it); True when it changed."""
        hint = pod_hint(kind, body) if body is not None else None
        changed = self.hints.get(key) != hint
        if hint is None:
            self.hints.pop(key, None)
        else:
            self.hints[key] = hint
        return changed

    async def reprocess_namespace(self, namespace: str) -> None:
        """Reads every workload of a namespace (it opted in, or its policies changed)."""
        for kind in VALIDATED_KINDS.values():
            if kind is POD:
                continue
            try:
                async for items, _ in self._api.list_pages(collection_path(kind, namespace)):
                    for item in items:
                        item.setdefault("metadata", {}).setdefault("namespace", namespace)
                        self._observe(kind, item, deleted=False)
            except NotFound:
                continue  # e.g. LeaderWorkerSet is not installed
            except API_ERRORS as exc:
                logger.warning("could not list %s in %s: %s", kind.plural, namespace, exc)

    async def uninjected_pods(self, workload: WorkloadState) -> list[str]:
        """Names of the workload's pods that lack the injected label (one label-selected
        list of its namespace, only when its controller reports pods)."""
        hint = self.hints.get(workload.ref.key)
        if hint is None or hint[0] <= 0:
            return []
        selector = f"{hint[1]},!{constants.LABEL_INJECTED}"
        names: list[str] = []
        async for items, _ in self._api.list_pages(
            collection_path(POD, workload.ref.namespace),
            {"labelSelector": selector, "limit": "50"},
        ):
            names += [
                str((p.get("metadata") or {}).get("name", ""))
                for p in items
                if not (p.get("metadata") or {}).get("deletionTimestamp")
            ]
            break  # one page is enough to say so
        return sorted(names)

    async def load_workload(self, key: Key) -> WorkloadState | None:
        """The workload as the API server has it now, observed (and analysed) again."""
        namespace, kind_name, name = key
        kind = VALIDATED_KINDS.get(kind_name)
        if kind is None:
            return None
        try:
            body = await self._api.get_workload(
                ref_of({"metadata": {"namespace": namespace, "name": name}}, kind)
            )
        except NotFound:
            return None
        except MalformedReference as exc:  # a name no object can have: nothing to read
            logger.info("%s/%s/%s not read: %s", namespace, kind_name, name, exc)
            return None
        body.setdefault("metadata", {}).setdefault("namespace", namespace)
        self._observe(kind, body, deleted=False, has_injected_pods=True)
        await self._settled(key)  # the rules may answer from a worker
        return self._store.workloads.get(key)


def pod_hint(kind: WorkloadKind, body: Mapping[str, Any]) -> tuple[int, str] | None:
    """(pods its controller reports, the label selector of its pods), or None when unknown.
    Deployments, StatefulSets and Jobs select their pods by ``spec.selector.matchLabels``;
    a LeaderWorkerSet labels its pods with its name."""
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    if not isinstance(spec, Mapping) or not isinstance(status, Mapping):
        return None
    name = str((body.get("metadata") or {}).get("name", ""))
    if kind.key == "LeaderWorkerSet":
        labels: Mapping[str, Any] = {"leaderworkerset.sigs.k8s.io/name": name}
        count = status.get("replicas")
    else:
        selector = spec.get("selector") or {}
        labels = (selector.get("matchLabels") or {}) if isinstance(selector, Mapping) else {}
        count = status.get("active") if kind.key == "Job" else status.get("replicas")
    if not labels or not isinstance(labels, Mapping):
        return None
    pods = count if isinstance(count, int) and not isinstance(count, bool) else 0
    selector_text = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return pods, selector_text
