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
  (:func:`read_passes`, :func:`annotation_patch`), at most :data:`MAX_PASSES`, newest kept.
* :func:`offers`: at admission, the records of the pod's own namespace with the same image
  digest (the check image pinned by digest: a tag may move) and plan shape, whose
  ``at + ttl`` is still ahead. The checker then matches the node and the key itself.
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

MAX_PASSES = 16  # per node: a few namespaces x images x plans
_KEY = re.compile(r"[0-9a-f]{32}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_ENDS_WITH_DIGEST = re.compile(r"(?:^|@)(sha256:[0-9a-f]{64})\Z")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


@dataclasses.dataclass(frozen=True)
class DeepPass:
    namespace: str
    key: str  # preflight_contract.reuse.hardware_key: the GPUs and the driver
    digest: str  # sha256:<hex> of the image the check ran in
    plan: str  # preflight_contract.reuse.plan_shape
    pod: str  # namespace/name
    at: str  # the check's finishedAt (UTC, seconds, Z)

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
    if not digest or not plan:
        return None
    return DeepPass(namespace, key, digest, plan, f"{namespace}/{result.pod}", result.checked_at)


def read_passes(node: Mapping[str, Any]) -> list[DeepPass]:
    """The records on a Node; anything malformed is left out (anyone with patch on nodes
    may have written it: bounded, validated field by field)."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    try:
        data = safejson.loads(str(annotations.get(ANNOTATION) or "[]"), max_bytes=64 * 1024)
    except ValueError:
        return []
    out: list[DeepPass] = []
    for item in data[:MAX_PASSES] if isinstance(data, list) else []:
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
            and len(one.plan) < 64
        ):  # fmt: skip
            out.append(one)
    return out


def merged(passes: Iterable[DeepPass], new: DeepPass) -> list[DeepPass]:
    """``new`` replacing the record of the same namespace, hardware, image and plan, the
    newest :data:`MAX_PASSES` kept (an older run never replaces a newer one)."""
    same = (new.namespace, new.key, new.digest, new.plan)
    kept = list(passes)
    for old in kept:
        if (old.namespace, old.key, old.digest, old.plan) == same and old.at >= new.at:
            return kept
    kept = [p for p in kept if (p.namespace, p.key, p.digest, p.plan) != same] + [new]
    return sorted(kept, key=lambda p: p.at, reverse=True)[:MAX_PASSES]


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
    image: str,
    plan: str,
    ttl_s: int,
    now: str,
) -> list[Offer]:
    """What the injector offers a new pod of ``namespace`` whose check runs ``image`` with
    ``plan`` (module docstring): nothing when the TTL is 0 or the image is not pinned by
    digest."""
    digest = image_digest(image)
    if ttl_s <= 0 or not digest or not namespace:
        return []
    found: list[Offer] = []
    for node, passes in passes_by_node.items():
        for one in passes:
            if (one.namespace, one.digest, one.plan) != (namespace, digest, plan):
                continue
            until = _plus(one.at, ttl_s)
            if until > now:
                found.append(Offer(node, one.key, one.pod, one.at, until))
    return sorted(found, key=lambda o: o.at, reverse=True)[:MAX_OFFERS]
