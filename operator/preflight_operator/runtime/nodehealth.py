"""Node feedback's calls (issue 16): reads the Node, applies ``nodefeedback``'s builders,
patches it, posts the Event and keeps the per-node metrics.

Findings queue per node and are applied in order by one background task, off the
reconcile path: a slow or refused node write never delays a GPUValidation status. Only the
replica allowed to write (the write gate) applies them. A conflict (the node changed under
us: its taints are replaced whole) re-reads the node and tries again; any other refusal is
logged and counted, never raised.

A tenant's finding is a claim (issue 34): applied, it only reads the Node and, when the
claim would change it (a fault not yet recorded, a pass where GPUs are recorded), requests
the operator's own probe (nodeprobepod.py). The node changes only on the probe's verdict,
queued back here as a confirmed finding. Without a probe (no image to run it: outside the
chart, ``probe=None``) no tenant's report changes a node at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from prometheus_client import Counter, Gauge

from preflight_operator.core import apinames
from preflight_operator.core.nodefeedback import (
    STRATEGIC_MERGE_PATCH,
    Finding,
    Levels,
    Record,
    condition_patch,
    granted,
    next_record,
    node_event,
    node_gpus,
    node_patch,
    read_record,
)
from preflight_operator.core.operatorconfig import (
    DEFAULT_PROBE_SETTINGS,
    NODES_GRANTED,
    NodeAccess,
    ProbeSettings,
)
from preflight_operator.core.verdictreuse import (
    DeepPass,
    annotation_patch,
    merged,
    read_passes,
)
from preflight_operator.runtime import metrics
from preflight_operator.runtime.api import API_ERRORS, MERGE_PATCH, Conflict, KubeApi, NotFound
from preflight_operator.runtime.nodeproberunner import NodeProbes, ProbeImage

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
        *,
        capacity: int = 1000,
        access: NodeAccess = NODES_GRANTED,
        probe: ProbeImage | None = None,
        probe_settings: ProbeSettings = DEFAULT_PROBE_SETTINGS,
    ) -> None:
        """``access``: what the RBAC grants on Nodes (config.NodeAccess); a level it does
        not grant is never attempted (the policy's Valid condition names it instead).
        ``probe``: what the operator's own probe runs (None: no probe, and so no node
        feedback from any report)."""
        self._api = api
        self._access = access
        self._now = now
        self._allowed = allowed
        # (a Finding, or a deep pass with its node (record_deep_pass); its levels; whether
        # the operator's own probe confirmed it)
        self._queue: asyncio.Queue[tuple[Finding | tuple[str, DeepPass], Levels, bool]] = (
            asyncio.Queue(maxsize=capacity)
        )
        self.probes = (
            NodeProbes(api, probe, self.confirmed, allowed=allowed, settings=probe_settings)
            if probe is not None and access.write
            else None
        )
        # Verdict reuse (core/verdictreuse.py): the deep passes known per node, fed on every
        # replica by the trusted results it reads (the webhook of any replica offers them),
        # and merged with the Node's own record whenever the writer reads it.
        self._deep_passes: dict[str, list[DeepPass]] = {}
        # Nodes seen without our record: a pass there needs no read of the Node. Nodes
        # this process recorded on: a pass there is read even when no policy records now.
        self._clean: set[str] = set()
        self._recorded: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    def observe(self, found: Finding, levels: Levels) -> None:
        """Queue one tenant's finding (of a pod its controller made), a claim: a failure
        only with a level on; a pass only under a policy that records on nodes
        (nodefeedback.py says why), and not on a node already seen without a record."""
        levels = granted(levels, self._access)
        if self.probes is None:
            return  # nothing could confirm it: a report alone never changes a node
        if found.failing and not levels.any:
            return
        if not found.failing and (
            not found.passed or not levels.records or found.node in self._clean
        ):
            return
        self._put((found, levels, False), found.node)

    def confirmed(self, found: Finding, levels: Levels) -> None:
        """The operator's own probe's verdict on a node (nodeprobepod.py): applied."""
        self._put((found, granted(levels, self._access), True), found.node)

    def _put(self, item: tuple[Finding | tuple[str, DeepPass], Levels, bool], node: str) -> None:
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            NODE_FEEDBACK.labels(node=node, action="error").inc()

    def record_deep_pass(self, node: str, found: DeepPass) -> None:
        """A trusted deep pass on ``node`` (controller.py checks the policy's TTL first):
        offered at once by this replica, written on the Node by the writer."""
        self._deep_passes[node] = merged(self._deep_passes.get(node, []), found)
        if not self._access.write:
            return  # kept by this replica only: without rights on Nodes, nothing is written
        self._put(((node, found), Levels(), True), node)

    def deep_passes(self, namespace: str) -> dict[str, list[DeepPass]]:
        """The deep passes of ``namespace``'s pods, by node (never another namespace's)."""
        out: dict[str, list[DeepPass]] = {}
        for node, passes in self._deep_passes.items():
            mine = [p for p in passes if p.namespace == namespace]
            if mine:
                out[node] = mine
        return out

    async def write_deep_pass(self, node_name: str, found: DeepPass) -> None:
        """The Node's record of deep passes, merged with what it holds (so an operator
        restart loses nothing it had written)."""
        try:
            path = apinames.node_path(node_name)
        except apinames.MalformedReference as exc:
            logger.warning("deep pass not recorded: %s", exc)
            return
        try:
            node = await self._api.get(path)
        except NotFound:
            self._deep_passes.pop(node_name, None)
            return
        passes = merged(read_passes(node), found)
        for known in self._deep_passes.get(node_name, []):
            passes = merged(passes, known)
        self._deep_passes[node_name] = passes
        patch = annotation_patch(node, passes)
        if patch is not None:
            await self._api.request("PATCH", path, body=patch, content_type=MERGE_PATCH)
            NODE_FEEDBACK.labels(node=node_name, action="deep-pass").inc()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        if self.probes is not None:
            self.probes.start()

    async def stop(self) -> None:
        if self.probes is not None:
            await self.probes.stop()
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
            found, levels, confirmed = await self._queue.get()
            node = found.node if isinstance(found, Finding) else found[0]
            try:
                if self._allowed() and isinstance(found, Finding):
                    await self.apply(found, levels, confirmed=confirmed)
                elif self._allowed() and not isinstance(found, Finding):
                    await self.write_deep_pass(*found)
            except API_ERRORS as exc:
                NODE_FEEDBACK.labels(node=node, action="error").inc()
                logger.warning("node %s: feedback not applied: %s", node, exc)
            except Exception:  # a bug must not end node feedback for good
                NODE_FEEDBACK.labels(node=node, action="error").inc()
                logger.exception("node %s: feedback failed", node)
            finally:
                self._queue.task_done()

    async def apply(self, found: Finding, levels: Levels, *, confirmed: bool = True) -> None:
        """Takes the node to what this finding says, posting the Event of the change; a
        finding not ``confirmed`` (a tenant's) only requests a probe where it would change
        the node."""
        try:
            path = apinames.node_path(found.node)
        except apinames.MalformedReference as exc:
            logger.warning("node feedback not applied: %s", exc)
            return
        for _ in range(ATTEMPTS):
            try:
                node = await self._api.get(path)
            except NotFound:
                return  # the node is gone: nothing to say about it
            before = read_record(node)
            after = next_record(before, found, levels, node_gpus(node))
            if not confirmed:
                self._claimed(found, levels, before, after)
                return
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

    def _claimed(
        self, found: Finding, levels: Levels, before: Record, after: Record | None
    ) -> None:
        """A tenant's claim about a node as it is now: a probe when it would change it."""
        if before.gpus:
            self._clean.discard(found.node)
        else:
            self._clean.add(found.node)
        # what is recorded already (only a newer time) is no change worth a pod
        changes = (after is not None and after.gpus != before.gpus) or (
            found.failing and levels.event
        )
        if changes and self.probes is not None:
            self.probes.request(found.node, levels)
            NODE_FEEDBACK.labels(node=found.node, action="probe-requested").inc()

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
