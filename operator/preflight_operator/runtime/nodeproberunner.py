"""The operator's own probe of a node, the calls (issue 34; core/nodeprobepod.py says why and
builds the pod).

A tenant's report only *requests* a probe (:meth:`NodeProbes.request`, with the levels of
the reporting workload's policy). Requests coalesce per node (their levels are a union) and
wait, bounded (``max_pending`` nodes), until the node's last probe is ``interval_seconds``
old and fewer than ``max_running`` probes run. Only the writer (the Lease holder) probes;
the other replicas keep the requests, so that a new writer takes them up.

One probe: create the pod (named after the node: a leftover of a former writer is deleted
and the create tried once more), read it every ``poll_seconds`` until its check has a
verdict, the pod ended without one, or ``start_seconds`` + the check's deadline passed; then
delete it (with its uid as precondition), whatever happened. Its verdict goes to
``on_verdict`` (nodehealth.py applies it with the requested levels). A probe's pods are in
the operator's own namespace only; at the writer's first tick, probe pods left there by any
former writer are deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable

from prometheus_client import Counter

from preflight_operator.core import apinames
from preflight_operator.core.nodefeedback import Finding, Levels
from preflight_operator.core.nodeprobepod import (
    SELECTOR,
    Verdict,
    probe_name,
    probe_pod,
    read_probe,
    valid_node_name,
)
from preflight_operator.core.operatorconfig import DEFAULT_PROBE_SETTINGS, ProbeSettings
from preflight_operator.runtime import metrics
from preflight_operator.runtime.api import API_ERRORS, Conflict, KubeApi, NotFound

logger = logging.getLogger(__name__)

PROBES = Counter(
    "vllm_preflight_node_probes_total",
    "The operator's own node probes, by outcome (fault, pass, ended, error, dropped).",
    ["outcome"],
    registry=metrics.REGISTRY,
)
LEVEL_NAMES = ("event", "label", "taint", "condition")


def union(a: Levels, b: Levels) -> Levels:
    return Levels(**{n: getattr(a, n) or getattr(b, n) for n in LEVEL_NAMES})


@dataclasses.dataclass(frozen=True)
class ProbeImage:
    """What the probe pod runs (the chart's check image, by digest where pinned)."""

    namespace: str
    image: str
    pull_policy: str
    deadline_seconds: int


class NodeProbes:
    def __init__(
        self,
        api: KubeApi,
        image: ProbeImage,
        on_verdict: Callable[[Finding, Levels], None],
        *,
        allowed: Callable[[], bool] = lambda: True,
        settings: ProbeSettings = DEFAULT_PROBE_SETTINGS,
        poll_seconds: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._image = image
        self._on_verdict = on_verdict
        self._allowed = allowed
        self._settings = settings
        self._poll = poll_seconds
        self._clock = clock
        self._pending: dict[str, Levels] = {}
        self._running: set[str] = set()
        self._last: dict[str, float] = {}  # node -> when its last probe ended
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._probes: set[asyncio.Task[None]] = set()
        self._swept = False

    def request(self, node: str, levels: Levels) -> None:
        """Ask for a probe of ``node``: what a tenant's report may do, and all it may do."""
        if not valid_node_name(node):
            PROBES.labels(outcome="dropped").inc()
            return  # never a path: a malformed name is no node
        if node in self._pending:
            self._pending[node] = union(self._pending[node], levels)
        elif len(self._pending) >= self._settings.max_pending:
            PROBES.labels(outcome="dropped").inc()
            return
        else:
            self._pending[node] = levels
        self._wake.set()

    def pending(self) -> dict[str, Levels]:
        return dict(self._pending)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._probes) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._task = None
        self._probes.clear()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=1.0)
            self._wake.clear()
            if not self._allowed():
                self._swept = False  # a later term as writer sweeps again
                continue
            if not self._swept:
                self._swept = await self._sweep()
            self._start_due()

    def _start_due(self) -> None:
        now = self._clock()
        for node in list(self._pending):
            if len(self._running) >= self._settings.max_running:
                return
            if node in self._running:
                continue
            last = self._last.get(node)
            if last is not None and now - last < self._settings.interval_seconds:
                continue
            levels = self._pending.pop(node)
            self._running.add(node)
            task = asyncio.get_running_loop().create_task(self._probe(node, levels))
            self._probes.add(task)
            task.add_done_callback(self._probes.discard)

    async def _sweep(self) -> bool:
        """Deletes the probe pods a former writer left (they hold no verdict anyone waits
        for); True once done."""
        path = f"/api/v1/namespaces/{self._image.namespace}/pods"
        try:
            found = await self._api.request("GET", path, params={"labelSelector": SELECTOR})
        except API_ERRORS as exc:
            logger.warning("node probes: the leftovers could not be listed: %s", exc)
            return False
        for pod in (found.get("items") or [])[:1000]:
            name = str((pod.get("metadata") or {}).get("name", ""))
            uid = str((pod.get("metadata") or {}).get("uid", ""))
            if name and name not in {probe_name(n) for n in self._running}:
                await self._delete(name, uid)
        return True

    async def _probe(self, node: str, levels: Levels) -> None:
        outcome = "error"
        try:
            verdict = await self._run_probe(node)
            if verdict is None:
                outcome = "ended"
            elif verdict.found is None:
                outcome = "ended"
                logger.info("node %s: probe: %s; the node is left as it is", node, verdict.ended)
            else:
                outcome = "fault" if verdict.found.failing else "pass"
                self._on_verdict(verdict.found, levels)
        except API_ERRORS as exc:
            logger.warning("node %s: probe failed: %s", node, exc)
        except Exception:  # a bug must not end probing for good
            logger.exception("node %s: probe failed", node)
        finally:
            PROBES.labels(outcome=outcome).inc()
            self._running.discard(node)
            self._last[node] = self._clock()
            if len(self._last) > 4 * self._settings.max_pending:  # bounded: oldest go
                for old in sorted(self._last, key=self._last.__getitem__)[: len(self._last) // 2]:
                    del self._last[old]
            self._wake.set()

    async def _run_probe(self, node: str) -> Verdict | None:
        try:
            await self._api.get(apinames.node_path(node))
        except NotFound:
            return None  # the node is gone: nothing to probe, nothing to change
        image = self._image
        body = probe_pod(
            node,
            namespace=image.namespace,
            image=image.image,
            pull_policy=image.pull_policy,
            deadline_seconds=image.deadline_seconds,
            start_seconds=self._settings.start_seconds,
        )
        name = body["metadata"]["name"]
        path = f"/api/v1/namespaces/{image.namespace}/pods"
        try:
            created = await self._api.request("POST", path, body=body)
        except Conflict:  # a former writer's probe of this node: it goes, ours comes
            await self._delete(name, "")
            created = await self._api.request("POST", path, body=body)
        uid = str((created.get("metadata") or {}).get("uid", ""))
        try:
            until = self._clock() + self._settings.start_seconds + image.deadline_seconds
            while self._clock() < until:
                await asyncio.sleep(self._poll)
                try:
                    pod = await self._api.get(f"{path}/{name}")
                except NotFound:
                    return Verdict(ended="the probe pod was deleted")
                verdict = read_probe(pod, node, uid)
                if verdict is not None:
                    return verdict
            return Verdict(ended="the probe gave no verdict in time")
        finally:
            await self._delete(name, uid)

    async def _delete(self, name: str, uid: str) -> None:
        """At once (grace 0): the name is free for the node's next probe, and a probe that
        is deleted has nothing left to say (the kubelet stops what still runs)."""
        body: dict[str, object] = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "gracePeriodSeconds": 0,
        }
        if uid:
            body["preconditions"] = {"uid": uid}
        path = f"/api/v1/namespaces/{self._image.namespace}/pods/{name}"
        try:
            await self._api.request("DELETE", path, body=body)
        except (NotFound, Conflict):
            pass  # gone already, or no longer ours
        except API_ERRORS as exc:
            logger.warning("node probes: %s not deleted: %s", name, exc)
