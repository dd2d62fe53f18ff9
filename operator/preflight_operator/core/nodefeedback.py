"""Node feedback (issue 16): when a check fails for a reason that belongs to the node or
its GPUs, tell the scheduler and the node's owner, and take it back once a later check
passes there (pure builders; ``nodehealth`` makes the calls).

Why: a workload whose check failed is paused or annotated, but the scheduler keeps sending
its retries to the same bad node. Only failures of the GPU or the node count (``NODE_CHECKS``:
a context that cannot be created, ECC, row remapping, a GPU that needs a reset, NVLink or
PCIe degraded, hardware slowdown, fabric, XIDs, a crashing sharing layer, compute mode), never
a manifest's fault (TP vs GPUs, CUDA_VISIBLE_DEVICES, /dev/shm, the image's CUDA).

Each level is opt-in per PreflightPolicy (``spec.nodeFeedback``):
  event:  a Warning Event on the Node naming the GPUs, the checks and the fix;
  label:  label ``vllm-preflight.io/gpu-health=unhealthy`` and the annotation of the same
          key naming each failing GPU UUID with its check ids;
  taint:  ``vllm-preflight.io/gpu-health=unhealthy:NoSchedule``;
  condition: the Node condition ``GPUPreflightReady`` (status False, reason
          ``GPUCheckFailed``, a message naming the GPUs and checks), written with a status
          patch; a later pass sets it True (reason ``GPUCheckPassed``). This is what
          node-repair systems and health controllers read (docs/CHECKS.md gives a mapping).
The annotation is also the record the clear works from, so it is written whenever label,
taint or condition is on. The record is the union, by GPU UUID, of the failures reported by
pods their workload's controller made (provenance.py) under policies that record on nodes.
A later run that passes there removes only the GPUs it checked (a failure that named no GPU
only when the run saw every GPU of the node), and only when it too is a controller-made pod
under a policy that records on nodes: a pass from another tenant's namespace whose policy
has no node feedback, or from a pod anyone could have made, clears nothing (issue 23: a
forged pass from another namespace removed a taint). When no GPU is left the label, the
annotation and our taint go.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from preflight_contract import safejson
from preflight_contract.verdicts import FAIL, PASS, WARN
from preflight_operator.core import constants
from preflight_operator.core.operatorconfig import FieldProblem, NodeAccess
from preflight_operator.core.podresults import PodResult

KEY = constants.PREFIX + "gpu-health"  # label, annotation and taint key
UNHEALTHY = "unhealthy"
TAINT_EFFECT = "NoSchedule"
EVENT_NAMESPACE = "default"  # Events of cluster-scoped objects live there (as the kubelet's)
CONDITION = "GPUPreflightReady"  # the Node condition (opt-in level ``condition``)
CONDITION_FAILED = "GPUCheckFailed"
CONDITION_PASSED = "GPUCheckPassed"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
UNKNOWN_GPU = "unknown"  # a node failure whose report no longer names the pod's GPUs
MESSAGE_LIMIT = 1000

# Check ids whose failure is the node's or its GPUs' (docs/CHECKS.md says why for each).
NODE_CHECKS = frozenset(
    {
        "context-threads",  # a context cannot be created on a GPU the pod was given
        "context-ranks",
        "thread-discipline",  # the node's GPU-sharing / vGPU layer crashes threads
        "compute-mode",  # an administrator's setting on the node
        "ecc",
        "row-remap",
        "gpu-reset",
        "nvlink",
        "pcie-link",
        "clock-throttle",
        "fabric",
        "xid",
    }
)


@dataclasses.dataclass(frozen=True)
class Levels:
    """What a policy lets the operator do to a node (every level off by default)."""

    event: bool = False
    label: bool = False
    taint: bool = False
    condition: bool = False

    @property
    def records(self) -> bool:
        """Whether the node keeps our record (the annotation): label, taint or condition."""
        return self.label or self.taint or self.condition

    @property
    def any(self) -> bool:
        return self.event or self.records


def parse_levels(spec: Any) -> tuple[Levels, list[str]]:
    """``spec.nodeFeedback`` of a PreflightPolicy; a bad value leaves its level off and is
    named (problems), so a typo never taints a node."""
    problems: list[str] = []
    raw = spec.get("nodeFeedback") if isinstance(spec, Mapping) else None
    if raw is None:
        return Levels(), problems
    if not isinstance(raw, Mapping):
        return Levels(), ["spec.nodeFeedback: expected a mapping; every level stays off"]
    values: dict[str, bool] = {}
    for name in ("event", "label", "taint", "condition"):
        value = raw.get(name, False)
        if not isinstance(value, bool):
            problems.append(f"spec.nodeFeedback.{name}: {value!r:.40} is not true or false; off")
            value = False
        values[name] = value
    return Levels(**values), problems


def granted(levels: Levels, access: NodeAccess) -> Levels:
    """The levels the operator's rights allow (the rest would only be refused)."""
    if not access.write:
        return Levels()
    return dataclasses.replace(levels, condition=levels.condition and access.status)


def policy_problems(spec: Any, access: NodeAccess) -> list[FieldProblem]:
    """What a PreflightPolicy's Valid condition says of ``spec.nodeFeedback``: a bad value,
    or a level the operator's RBAC does not grant (named with the chart value that does),
    so that the owner learns it once instead of from a 403 logged at every finding."""
    levels, bad = parse_levels(spec)
    problems = [FieldProblem("spec.nodeFeedback", text) for text in bad]
    if levels.any and not access.write:
        problems.append(
            FieldProblem(
                "spec.nodeFeedback",
                "spec.nodeFeedback: the operator has no rights on Nodes, so nothing is"
                " written on them; set the Helm value nodeFeedback.enabled=true",
            )
        )
    elif levels.condition and not access.status:
        problems.append(
            FieldProblem(
                "spec.nodeFeedback.condition",
                "spec.nodeFeedback.condition: the operator may not patch nodes/status, so"
                " the GPUPreflightReady condition is not written; set the Helm value"
                " nodeFeedback.condition=true",
            )
        )
    return problems


@dataclasses.dataclass(frozen=True)
class Finding:
    """What one finished check says about its node."""

    node: str
    pod: str  # namespace/name
    checked_at: str
    # (GPU UUID, check ids that failed on it), sorted; empty when the node is not at fault.
    failing: tuple[tuple[str, tuple[str, ...]], ...]
    checked: tuple[str, ...]  # the UUIDs of every GPU the check ran on
    passed: bool  # verdict pass or warn: evidence the checked GPUs are healthy
    fixes: tuple[str, ...] = ()


def _failing_uuids(message: str, gpus: Sequence[str]) -> list[str]:
    """The pod's GPUs a failure names (messages name GPUs by their UUID's first 12
    characters, e.g. 'GPU 1 (GPU-7b01fc6f, ...)'); all of them when it names none."""
    named = [uuid for uuid in gpus if uuid[:12] and uuid[:12] in message]
    return named or list(gpus) or [UNKNOWN_GPU]


def finding(result: PodResult, namespace: str) -> Finding | None:
    """The node finding of a pod's check, or None when it says nothing about a node."""
    if not result.node:
        return None
    gpus = [uuid for _, uuid, _ in result.gpus if uuid]
    per_gpu: dict[str, set[str]] = {}
    fixes: list[str] = []
    for failure in result.failures:
        if failure.status != FAIL or failure.id not in NODE_CHECKS:
            continue
        for uuid in _failing_uuids(failure.message, gpus):
            per_gpu.setdefault(uuid, set()).add(failure.id)
        if failure.remediation and failure.remediation not in fixes:
            fixes.append(failure.remediation)
    failing = tuple(sorted((uuid, tuple(sorted(ids))) for uuid, ids in per_gpu.items()))
    return Finding(
        node=result.node,
        pod=f"{namespace}/{result.pod}",
        checked_at=result.checked_at,
        failing=failing,
        checked=tuple(gpus),
        passed=result.verdict in (PASS, WARN) and not failing,
        fixes=tuple(fixes),
    )


@dataclasses.dataclass(frozen=True)
class Record:
    """Our annotation on a node: the failing GPUs and the time of the run it is from."""

    gpus: tuple[tuple[str, tuple[str, ...]], ...] = ()
    checked_at: str = ""
    pod: str = ""

    def to_annotation(self) -> str:
        return json.dumps(
            {
                "gpus": {uuid: list(ids) for uuid, ids in self.gpus},
                "checkedAt": self.checked_at,
                "pod": self.pod,
            },
            separators=(",", ":"),
            sort_keys=True,
        )


def read_record(node: Mapping[str, Any]) -> Record:
    """Our record from a Node object; an absent or unreadable one is an empty record."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    try:
        # a Node annotation anyone with patch on nodes may have written: bounded
        data = safejson.loads(str(annotations.get(KEY) or "{}"), max_bytes=256 * 1024)
    except ValueError:
        return Record()
    if not isinstance(data, Mapping):
        return Record()
    gpus = data.get("gpus")
    if not isinstance(gpus, Mapping):
        gpus = {}
    return Record(
        gpus=tuple(
            sorted(
                (str(uuid), tuple(sorted(str(i) for i in ids)))
                for uuid, ids in gpus.items()
                if isinstance(ids, list)
            )
        ),
        checked_at=str(data.get("checkedAt") or ""),
        pod=str(data.get("pod") or ""),
    )


def next_record(
    current: Record, found: Finding, levels: Levels, node_gpus: int | None = None
) -> Record | None:
    """The record after this finding, or None when it changes nothing (a result older than
    the record, a manifest-only failure, a pass on GPUs the record does not hold, a pass
    under a policy that does not record on nodes). ``node_gpus``: the node's GPU capacity,
    when known."""
    if current.checked_at and found.checked_at and found.checked_at < current.checked_at:
        return None  # a run older than what the node already reflects (e.g. after a restart)
    if found.failing and levels.records:
        merged = {uuid: set(ids) for uuid, ids in current.gpus}
        for uuid, ids in found.failing:
            merged.setdefault(uuid, set()).update(ids)
        gpus = tuple(sorted((u, tuple(sorted(i))) for u, i in merged.items()))
        wanted = Record(gpus, found.checked_at, found.pod)
        return wanted if wanted != current else None
    if found.passed and current.gpus and levels.records:
        # Only the GPUs this run checked; a failure that named no GPU only when the run
        # saw every GPU the node has (so a pass on one GPU never clears the node).
        cleared = set(found.checked)
        if node_gpus is not None and len(cleared) >= node_gpus > 0:
            cleared.add(UNKNOWN_GPU)
        left = tuple((u, ids) for u, ids in current.gpus if u not in cleared)
        if left == current.gpus:
            return None
        return Record(left, found.checked_at if left else "", current.pod if left else "")
    return None


def node_gpus(node: Mapping[str, Any]) -> int | None:
    """The node's ``nvidia.com/gpu`` capacity, or None when it advertises none."""
    capacity = ((node.get("status") or {}).get("capacity") or {}).get(constants.GPU_RESOURCE)
    try:
        return int(str(capacity)) if capacity is not None else None
    except ValueError:
        return None


def _taints(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [dict(t) for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]


def node_patch(node: Mapping[str, Any], record: Record, levels: Levels) -> dict[str, Any] | None:
    """A merge patch taking the Node to ``record`` (None when it is there already).

    An empty record removes the label, the annotation and our taint. The patch carries the
    node's resourceVersion: the taint list is replaced whole, so a concurrent change to it
    (the node lifecycle controller's own taints) must make the patch fail, not be lost."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    taints = _taints(node)
    ours = [t for t in taints if t.get("key") == KEY]
    others = [t for t in taints if t.get("key") != KEY]
    patch_meta: dict[str, Any] = {}
    new_taints: list[dict[str, Any]] | None = None
    if record.gpus:
        text = record.to_annotation()
        if annotations.get(KEY) != text:
            patch_meta["annotations"] = {KEY: text}
        if levels.label and labels.get(KEY) != UNHEALTHY:
            patch_meta["labels"] = {KEY: UNHEALTHY}
        wanted = {"key": KEY, "value": UNHEALTHY, "effect": TAINT_EFFECT}
        if levels.taint and [{k: t.get(k) for k in wanted} for t in ours] != [wanted]:
            new_taints = [*others, wanted]
    else:
        if KEY in annotations:
            patch_meta["annotations"] = {KEY: None}
        if KEY in labels:
            patch_meta["labels"] = {KEY: None}
        if ours:
            new_taints = others
    if not patch_meta and new_taints is None:
        return None
    patch: dict[str, Any] = {"metadata": patch_meta}
    if new_taints is not None:
        patch["metadata"]["resourceVersion"] = str(meta.get("resourceVersion", ""))
        patch["spec"] = {"taints": new_taints}
    return patch


def describe(record: Record) -> str:
    return "; ".join(f"{uuid}: {', '.join(ids)}" for uuid, ids in record.gpus)


def node_event(
    node: Mapping[str, Any],
    before: Record,
    after: Record,
    found: Finding,
    levels: Levels,
    *,
    now: str,
) -> dict[str, Any] | None:
    """The Event on the Node for this change (None when the policy has no event level, or
    nothing changed)."""
    if not levels.event:
        return None
    if before.checked_at and found.checked_at and found.checked_at < before.checked_at:
        return None  # an older run than the node already reflects
    meta = node.get("metadata") or {}
    name = str(meta.get("name", found.node))
    if found.failing:
        gpus = "; ".join(f"{uuid}: {', '.join(ids)}" for uuid, ids in found.failing)
        reason, kind = "GPUUnhealthy", "Warning"
        message = f"vLLM preflight check of pod {found.pod} failed on this node's GPUs ({gpus})"
        if found.fixes:
            message += f". Fix: {' / '.join(found.fixes)}"
        if levels.taint:
            message += f". Tainted {KEY}={UNHEALTHY}:{TAINT_EFFECT} until a check passes here"
    elif before.gpus and not after.gpus:
        reason, kind = "GPUHealthy", "Normal"
        message = (
            f"vLLM preflight check of pod {found.pod} passed on this node: "
            f"cleared {describe(before)}"
        )
    else:
        return None
    if len(message) > MESSAGE_LIMIT:
        message = message[: MESSAGE_LIMIT - 1] + "\u2026"
    involved: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "name": name}
    if meta.get("uid"):
        involved["uid"] = str(meta["uid"])
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{name[:200]}.", "namespace": EVENT_NAMESPACE},
        "involvedObject": involved,
        "type": kind,
        "reason": reason,
        "message": message,
        "source": {"component": constants.COMPONENT},
        "reportingComponent": constants.COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def _our_condition(node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == CONDITION:
            return condition
    return None


def condition_patch(
    node: Mapping[str, Any], record: Record, found: Finding, levels: Levels, *, now: str
) -> dict[str, Any] | None:
    """A strategic merge patch of the Node's status taking ``GPUPreflightReady`` to
    ``record`` (None when it is there already, or when the policy has no condition level and
    the node has no condition of ours to clear).

    Failing GPUs: status False, reason GPUCheckFailed. No failing GPU left: status True,
    reason GPUCheckPassed, but only on a node whose condition we set (a node never failed
    gets no condition: a pass costs no write). Node conditions merge by ``type`` (the
    strategic merge key of NodeStatus.conditions), so the kubelet's own conditions and a
    concurrent heartbeat are never overwritten; no resourceVersion needed."""
    current = _our_condition(node)
    if record.gpus:
        if not levels.condition:
            return None
        status, reason = "False", CONDITION_FAILED
        message = (
            f"vLLM preflight check of pod {record.pod} failed on this node's GPUs "
            f"({describe(record)}); it turns True when a later check passes here"
        )
    elif current is not None and current.get("status") == "False":
        status, reason = "True", CONDITION_PASSED
        message = (
            f"vLLM preflight check of pod {found.pod} passed on this node"
            f" ({found.checked_at or now})"
        )
    else:
        return None
    if len(message) > MESSAGE_LIMIT:
        message = message[: MESSAGE_LIMIT - 1] + "\u2026"
    if current is not None and [current.get(k) for k in ("status", "reason", "message")] == [
        status,
        reason,
        message,
    ]:
        return None
    if current is None or current.get("status") != status:
        transition = now
    else:
        transition = str(current.get("lastTransitionTime") or now)
    return {
        "status": {
            "conditions": [
                {
                    "type": CONDITION,
                    "status": status,
                    "reason": reason,
                    "message": message,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": transition,
                }
            ]
        }
    }
