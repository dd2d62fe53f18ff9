"""Node feedback's calls (issue 16): reads the Node, applies ``nodefeedback``'s builders,
patches it, posts the Event and keeps the per-node metrics.

Findings queue per node and are applied in order by one background task, off the
reconcile path: a slow or refused node write never delays a GPUValidation status. Only the
replica allowed to write (the write gate) applies them. A conflict (the node changed under
us: its taints are replaced whole) re-reads the node and tries again; any other refusal is
logged and counted, never raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from prometheus_client import Counter, Gauge

from preflight_operator.core.nodefeedback import (
    STRATEGIC_MERGE_PATCH,
    Finding,
    Levels,
    condition_patch,
    next_record,
    node_event,
    node_gpus,
    node_patch,
    read_record,
)
from preflight_operator.runtime import metrics
from preflight_operator.runtime.api import API_ERRORS, MERGE_PATCH, Conflict, KubeApi, NotFound

logger = logging.getLogger(__name__)

NODE_UNHEALTHY_GPUS = Gauge(
    "vllm_preflight_node_unhealthy_gpus",
    "GPUs of a node recorded as failing a node-level check (0 once a later check passed).",
    ["node"],
    registry=metrics.REGISTRY,
)
NODE_FEEDBACK = Counter(
    "vllm_preflight_node_feedback_total",
    "Node feedback applied, by node and what was done (event, label, taint, condition, clear,"
    " error).",
    ["node", "action"],
    registry=metrics.REGISTRY,
)
ATTEMPTS = 3


class NodeFeedback:
    def __init__(
        self,
        api: KubeApi,
        now: Callable[[], str],
        allowed: Callable[[], bool] = lambda: True,
        capacity: int = 1000,
    ) -> None:
        self._api = api
        self._now = now
        self._allowed = allowed
        self._queue: asyncio.Queue[tuple[Finding, Levels]] = asyncio.Queue(maxsize=capacity)
        # Nodes seen without our record: a pass there needs no read of the Node. Nodes
        # this process recorded on: a pass there is read even when no policy records now.
        self._clean: set[str] = set()
        self._recorded: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    def observe(self, found: Finding, levels: Levels) -> None:
        """Queue one finding (of a pod its controller made): a failure only with a level
        on; a pass only under a policy that records on nodes (nodefeedback.py says why),
        and not on a node already seen without a record."""
        if found.failing and not levels.any:
            return
        if not found.failing and (
            not found.passed or not levels.records or found.node in self._clean
        ):
            return
        try:
            self._queue.put_nowait((found, levels))
        except asyncio.QueueFull:
            NODE_FEEDBACK.labels(node=found.node, action="error").inc()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def drain(self, timeout: float = 5.0) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout)

    async def _run(self) -> None:
        while True:
            found, levels = await self._queue.get()
            try:
                if self._allowed():
                    await self.apply(found, levels)
            except API_ERRORS as exc:
                NODE_FEEDBACK.labels(node=found.node, action="error").inc()
                logger.warning("node %s: feedback not applied: %s", found.node, exc)
            except Exception:  # a bug must not end node feedback for good
                NODE_FEEDBACK.labels(node=found.node, action="error").inc()
                logger.exception("node %s: feedback failed", found.node)
            finally:
                self._queue.task_done()

    async def apply(self, found: Finding, levels: Levels) -> None:
        """Takes the node to what this finding says, posting the Event of the change."""
        path = f"/api/v1/nodes/{found.node}"
        for _ in range(ATTEMPTS):
            try:
                node = await self._api.get(path)
            except NotFound:
                return  # the node is gone: nothing to say about it
            before = read_record(node)
            after = next_record(before, found, levels, node_gpus(node))
            patch = node_patch(node, after, levels) if after is not None else None
            if patch is not None:
                try:
                    await self._api.request("PATCH", path, body=patch, content_type=MERGE_PATCH)
                except Conflict:
                    continue  # the node changed (its taints): read it again
            record = after if after is not None else before
            NODE_UNHEALTHY_GPUS.labels(node=found.node).set(len(record.gpus))
            if record.gpus:
                self._clean.discard(found.node)
                self._recorded.add(found.node)
            else:
                self._clean.add(found.node)
                self._recorded.discard(found.node)
            if patch is not None:
                self._count(found.node, patch, bool(record.gpus))
            event = node_event(node, before, record, found, levels, now=self._now())
            if event is not None:
                await self._api.create_event(event)
                NODE_FEEDBACK.labels(node=found.node, action="event").inc()
            # Last: a refused status patch (no nodes/status rights) loses nothing above.
            status = condition_patch(node, record, found, levels, now=self._now())
            if status is not None:
                # nodes/status: a subresource of its own (the chart grants its patch only
                # with nodeFeedback.condition); merged by condition type, no conflict.
                await self._api.request(
                    "PATCH", f"{path}/status", body=status, content_type=STRATEGIC_MERGE_PATCH
                )
                NODE_FEEDBACK.labels(node=found.node, action="condition").inc()
            return
        NODE_FEEDBACK.labels(node=found.node, action="error").inc()
        logger.warning("node %s: feedback not applied: it kept changing", found.node)

    @staticmethod
    def _count(node: str, patch: dict[str, object], unhealthy: bool) -> None:
        if not unhealthy:
            NODE_FEEDBACK.labels(node=node, action="clear").inc()
            return
        meta = patch.get("metadata")
        if isinstance(meta, dict) and "labels" in meta:
            NODE_FEEDBACK.labels(node=node, action="label").inc()
        if "spec" in patch:
            NODE_FEEDBACK.labels(node=node, action="taint").inc()
