"""Verdict reuse, the operator's side (issue 29 item 3; pure): which results are reusable deep
passes, the record of them on the Node, and the offers the injector writes into a new pod.

preflight_contract/reuse.py says who decides what. Here:

* :func:`deep_pass`: a result is recorded only when it is *trusted* (provenance.py: a pod
  its workload's controller made), passed (or only warned), ran the deep tier and carries
  the hardware key the checker puts in its report's plan only after the deep tier ran and
  passed there (never after a reuse: a reuse never extends itself). The image digest is
  the kubelet's ``imageID`` of the check container (what actually ran), the plan shape
  the PREFLIGHT_TP/PP/DP_LOCAL the injector wrote into the pod's spec.
* The record lives on the Node, in the annotation ``vllm-preflight.io/deep-pass``
  (:func:`read_passes`, :func:`annotation_patch`), bounded *per namespace*
  (:data:`MAX_PER_NAMESPACE`, that namespace's newest kept) and in all
  (:data:`MAX_PASSES`): a namespace's record is only ever replaced by the same
  namespace's newer one, and a record of a namespace new to a full node is refused, never
  made room for (issue 34: one tenant's 16 passes evicted every other tenant's records on a
  node). Records older than the longest TTL a policy may set are dropped at every merge.
* :func:`offers`: at admission, the records of the pod's own namespace *and workload* with
  the same image digest (the check image pinned by digest: a tag may move) and plan shape,
  whose ``at + ttl`` is still ahead. The checker then matches the node and the key itself.
  Why the workload too (issue 34): reuse offered to another workload is an action beyond
  the reporting workload, which only the operator's own confirmation may take, and the
  operator's probe (nodeprobepod.py) cannot confirm a deep pass in a tenant's image; so a
  pass is offered only to later pods of the workload that earned it.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from preflight_contract import envnames, safejson
from preflight_contract.report import Report, ReportError
from preflight_contract.reuse import ANNOTATION, DEEP_PASS_KEY, MAX_OFFERS, Offer, plan_shape
from preflight_contract.verdicts import PASS, WARN
from preflight_operator.core import constants
from preflight_operator.core.podresults import PodResult
from preflight_operator.core.policy import REUSE_TTL_MAX_S

MAX_PER_NAMESPACE = 4  # per node and namespace: a few workloads x images x plans
MAX_PASSES = 64  # per node, all namespaces: about 20 KiB of annotation (300 B a record)
MAX_AGE_S = REUSE_TTL_MAX_S  # no policy's TTL reaches past it: older records are dead
_KEY = re.compile(r"[0-9a-f]{32}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_ENDS_WITH_DIGEST = re.compile(r"(?:^|@)(sha256:[0-9a-f]{64})\Z")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_WORKLOAD = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")  # a label value


@dataclasses.dataclass(frozen=True)
class DeepPass:
    namespace: str
    key: str  # preflight_contract.reuse.hardware_key: the GPUs and the driver
    digest: str  # sha256:<hex> of the image the check ran in
    plan: str  # preflight_contract.reuse.plan_shape
    pod: str  # namespace/name
    at: str  # the check's finishedAt (UTC, seconds, Z)
    workload: str  # the pod's workload label value, <kind>.<name>: offered to it alone

    @property
    def same(self) -> tuple[str, str, str, str, str]:
        """What one record stands for: a newer run of it replaces it."""
        return (self.namespace, self.workload, self.key, self.digest, self.plan)

    def to_json(self) -> dict[str, str]:
        return dataclasses.asdict(self)


def image_digest(reference: object) -> str:
    """The ``sha256:<hex>`` an image reference (``repo@sha256:...``) or a kubelet imageID
    (``docker-pullable://repo@sha256:...``, ``sha256:...``) ends with, or "" (a tag)."""
    found = _ENDS_WITH_DIGEST.search(str(reference or ""))
    return found.group(1) if found else ""


def _check_status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if isinstance(status, Mapping) and status.get("name") == constants.CHECK_CONTAINER:
            return status
    return {}


def _spec_plan(pod: Mapping[str, Any]) -> str:
    for container in (pod.get("spec") or {}).get("initContainers") or []:
        if isinstance(container, Mapping) and container.get("name") == constants.CHECK_CONTAINER:
            env = {
                str(e.get("name")): str(e.get("value"))
                for e in container.get("env") or []
                if isinstance(e, Mapping) and "value" in e
            }
            values = [env.get(n, "") for n in (envnames.TP, envnames.PP, envnames.DP_LOCAL)]
            return plan_shape(*values) if all(v.isdigit() for v in values) else ""
    return ""


def deep_pass(pod: Mapping[str, Any], result: PodResult, namespace: str) -> DeepPass | None:
    """The reusable deep pass this result is, or None (module docstring)."""
    if not result.trusted or result.verdict not in (PASS, WARN) or not result.node:
        return None
    if not _TIME.fullmatch(result.checked_at):
        return None
    status = _check_status(pod)
    found = [
        t
        for t in ((status.get(k) or {}).get("terminated") for k in ("state", "lastState"))
        if isinstance(t, Mapping)
    ]  # the latest finished run first, as podresults reads it
    if not found:
        return None
    terminated = found[0]
    try:
        report = Report.from_json(str(terminated.get("message") or ""))
    except (ReportError, ValueError):
        return None
    key = report.plan.get(DEEP_PASS_KEY) if isinstance(report.plan, Mapping) else None
    if report.tier != "deep" or not isinstance(key, str) or not _KEY.fullmatch(key):
        return None
    digest = image_digest(status.get("imageID"))
    plan = _spec_plan(pod)
    labels = (pod.get("metadata") or {}).get("labels") or {}
    workload = str(labels.get(constants.LABEL_WORKLOAD) or "")
    if not digest or not plan or not _WORKLOAD.fullmatch(workload):
        return None
    return DeepPass(
        namespace, key, digest, plan, f"{namespace}/{result.pod}", result.checked_at, workload
    )


def read_passes(node: Mapping[str, Any]) -> list[DeepPass]:
    """The records on a Node; anything malformed is left out (anyone with patch on nodes
    may have written it: bounded, validated field by field)."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    try:
        data = safejson.loads(str(annotations.get(ANNOTATION) or "[]"), max_bytes=64 * 1024)
    except ValueError:
        return []
    out: list[DeepPass] = []
    for item in data[: MAX_PASSES * 2] if isinstance(data, list) else []:
        if not isinstance(item, Mapping):
            continue
        values = {f.name: item.get(f.name) for f in dataclasses.fields(DeepPass)}
        if not all(isinstance(v, str) for v in values.values()):
            continue
        one = DeepPass(**values)  # type: ignore[arg-type]
        if (
            _NAME.fullmatch(one.namespace) and _KEY.fullmatch(one.key)
            and _DIGEST.fullmatch(one.digest) and _TIME.fullmatch(one.at)
            and one.pod.startswith(f"{one.namespace}/") and len(one.pod) < 320
            and len(one.plan) < 64 and _WORKLOAD.fullmatch(one.workload)
        ):  # fmt: skip
            out.append(one)
    return bounded(out)


def bounded(passes: Iterable[DeepPass]) -> list[DeepPass]:
    """Newest first, at most :data:`MAX_PER_NAMESPACE` of each namespace and
    :data:`MAX_PASSES` in all (what a Node's annotation may hold, whoever wrote it)."""
    out: list[DeepPass] = []
    per_namespace: dict[str, int] = {}
    for one in sorted(passes, key=lambda p: p.at, reverse=True):
        if per_namespace.get(one.namespace, 0) < MAX_PER_NAMESPACE and len(out) < MAX_PASSES:
            per_namespace[one.namespace] = per_namespace.get(one.namespace, 0) + 1
            out.append(one)
    return out


def merged(passes: Iterable[DeepPass], new: DeepPass) -> list[DeepPass]:
    """``new`` replacing the record of the same namespace, workload, hardware, image and
    plan (an older run never replaces a newer one), then bounded (module docstring).

    ``new`` only ever pushes out records of its own namespace: a record of a namespace
    whose records are at :data:`MAX_PER_NAMESPACE` goes for it, the oldest first; when the
    node holds :data:`MAX_PASSES` of other namespaces' records, ``new`` is refused (returned
    without it). Records older than :data:`MAX_AGE_S` before ``new`` are dropped first."""
    oldest = _plus(new.at, -MAX_AGE_S) if _TIME.fullmatch(new.at) else ""
    alive = [p for p in passes if p.at >= oldest]
    for old in alive:
        if old.same == new.same and old.at >= new.at:
            return bounded(alive)
    kept = [p for p in alive if p.same != new.same]
    mine = sorted((p for p in kept if p.namespace == new.namespace), key=lambda p: p.at)
    others = [p for p in kept if p.namespace != new.namespace]
    others = bounded(others)
    room = min(MAX_PER_NAMESPACE, MAX_PASSES - len(others))
    if room <= 0:
        return bounded(alive)  # refused: no other namespace's record is made room for
    mine = [*mine, new][-room:]
    return bounded([*others, *mine])


def annotation_patch(node: Mapping[str, Any], passes: Sequence[DeepPass]) -> dict[str, Any] | None:
    """A merge patch writing ``passes`` on the Node (None when they are there already)."""
    text = json.dumps([p.to_json() for p in passes], separators=(",", ":"), sort_keys=True)
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    if annotations.get(ANNOTATION) == text:
        return None
    return {"metadata": {"annotations": {ANNOTATION: text}}}


def _plus(at: str, seconds: int) -> str:
    when = datetime.datetime.strptime(at, "%Y-%m-%dT%H:%M:%SZ") + datetime.timedelta(
        seconds=seconds
    )
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def offers(
    passes_by_node: Mapping[str, Iterable[DeepPass]],
    *,
    namespace: str,
    workload: str,
    image: str,
    plan: str,
    ttl_s: int,
    now: str,
) -> list[Offer]:
    """What the injector offers a new pod of ``namespace`` and ``workload`` (its workload
    label value) whose check runs ``image`` with ``plan`` (module docstring): nothing when
    the TTL is 0, the workload is unknown or the image is not pinned by digest."""
    digest = image_digest(image)
    if ttl_s <= 0 or not digest or not namespace or not workload:
        return []
    wanted = (namespace, workload, digest, plan)
    found: list[Offer] = []
    for node, passes in passes_by_node.items():
        for one in passes:
            if (one.namespace, one.workload, one.digest, one.plan) != wanted:
                continue
            until = _plus(one.at, ttl_s)
            if until > now:
                found.append(Offer.sealed(node, one.key, one.pod, one.at, until))
    return sorted(found, key=lambda o: o.at, reverse=True)[:MAX_OFFERS]
