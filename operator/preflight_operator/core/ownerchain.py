"""Whether a pod belongs to a workload: a chain of controller references whose every uid
the API server confirms (pure; issue 34, item 3).

Why: until issue 34 the operator matched a pod to its workload by name: a controller
reference to a ReplicaSet named ``<deployment>-<pod-template-hash>``, a StatefulSet named
``<leaderworkerset>-<anything>``, the LeaderWorkerSet's name label. Names are the tenant's
to choose. Tried on the previous landing: a pods-only user's pod pointing at a "ReplicaSet"
``<victim>-<hash>`` in a made-up API group, and a tenant's own ReplicaSet or StatefulSet
named after the victim, each scaled the victim Deployment (or LeaderWorkerSet) from 2 to 0.

Now a result counts for a workload only through uids:

* the pod's controller reference, kind *and* API group exact (``apps`` ReplicaSet, not
  ``evil.example`` ReplicaSet), its name a valid object name, its uid present;
* either that reference is the workload itself (kind, group and uid equal to the workload
  as the operator watches it), or it is a kind that may stand between the two
  (:data:`BETWEEN`): the object is read (runtime/ownerchain.py), its uid must be the one
  the reference names, and its own controller reference is judged the same way;
* at most :data:`MAX_STEPS` steps (a LeaderWorkerSet's worker pod is the longest honest
  chain: pod -> worker StatefulSet -> leader Pod -> leader StatefulSet -> LeaderWorkerSet,
  kubernetes-sigs/lws pkg/controllers/pod_controller.go), so a reference loop ends.

Name patterns remain only as a cheap pre-filter (provenance.trusted), never as proof.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

MAX_STEPS = 4
MAX_UID = 128  # a uid is a 36-character UUID; anything longer is not one
# An object name as the API server admits it for the kinds below (DNS-1123 subdomain,
# k8s.io/apimachinery/pkg/util/validation): never "..", "/" or "%", so a name that passes
# can enter an API path as it is.
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_MAX_NAME = 253

# What its controller puts between a workload and its pods: (API group, kind). Sources:
# kubernetes/kubernetes pkg/controller/deployment (Deployment -> ReplicaSet -> Pod) and
# kubernetes-sigs/lws (LeaderWorkerSet -> leader StatefulSet -> leader Pod -> worker
# StatefulSet -> worker Pod). Every other kind the operator keeps owns its pods itself.
BETWEEN: dict[str, frozenset[tuple[str, str]]] = {
    "Deployment": frozenset({("apps", "ReplicaSet")}),
    "LeaderWorkerSet": frozenset({("apps", "StatefulSet"), ("", "Pod")}),
}

CONFIRMED = "confirmed"
REFUTED = "refuted"
FOLLOW = "follow"


@dataclasses.dataclass(frozen=True)
class Link:
    """A controller reference, validated: safe to put in a path and to compare."""

    group: str
    kind: str
    name: str
    uid: str


@dataclasses.dataclass(frozen=True)
class Target:
    """The workload as the operator watches it (its uid from its own watch)."""

    group: str
    kind: str
    uid: str


def group_of(api_version: str) -> str:
    """``apps/v1`` -> ``apps``; ``v1`` -> "" (the core group)."""
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def valid_name(name: Any) -> bool:
    return isinstance(name, str) and 0 < len(name) <= _MAX_NAME and bool(_NAME.fullmatch(name))


def controller_link(obj: Mapping[str, Any]) -> Link | None:
    """The object's controller reference as a :class:`Link`, or None when it has none or
    the one it has is malformed (a malformed reference proves nothing: no call is made)."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    if not isinstance(refs, list):
        return None
    for ref in refs[:64]:
        if not isinstance(ref, Mapping) or ref.get("controller") is not True:
            continue
        api_version, kind, name, uid = (
            ref.get("apiVersion"), ref.get("kind"), ref.get("name"), ref.get("uid"),
        )  # fmt: skip
        if not (isinstance(api_version, str) and isinstance(kind, str) and valid_name(name)):
            return None
        if not isinstance(uid, str) or not 0 < len(uid) <= MAX_UID:
            return None
        return Link(group_of(api_version), kind, str(name), uid)
    return None


def between(kinds: Iterable[tuple[str, str]]) -> frozenset[tuple[str, str]]:
    """What may stand between a pod and its workload, for the chain of workloads it
    reports through (``kinds``: (group, kind) from the pod's own workload up to the one
    that keeps the GPUValidation, e.g. Deployment then InferenceService): each one's own
    intermediates, and every workload but the last itself."""
    chain = list(kinds)
    allowed: set[tuple[str, str]] = set()
    for index, (group, kind) in enumerate(chain):
        allowed |= BETWEEN.get(kind, frozenset())
        if index < len(chain) - 1:
            allowed.add((group, kind))
    return frozenset(allowed)


def judge(link: Link | None, target: Target, allowed: frozenset[tuple[str, str]]) -> str:
    """One step: the reference is the workload (CONFIRMED), names another object to read
    and judge in turn (FOLLOW), or proves nothing (REFUTED)."""
    if link is None or not target.uid:
        return REFUTED
    if (link.group, link.kind) == (target.group, target.kind):
        return CONFIRMED if link.uid == target.uid else REFUTED
    return FOLLOW if (link.group, link.kind) in allowed else REFUTED


def read_back(link: Link, obj: Mapping[str, Any] | None) -> Link | bool | None:
    """What the object read for ``link`` says: False when it is not that object (gone, or
    another object of the same name: its uid differs), else its own controller reference
    (None: it has none)."""
    if obj is None:
        return False
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or meta.get("uid") != link.uid:
        return False
    return controller_link(obj)
