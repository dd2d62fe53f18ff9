"""Verdict reuse (issue 29 item 3): a deep-tier pass on a node, offered to a later pod of the
same namespace on the same node, with the same GPUs, driver, image digest and plan, within
the policy's TTL (shared by the operator, which makes offers, and the checker, which takes
one or not; stdlib only, Python 3.9).

Why: the deep tier (torch workers, NCCL all-reduce, peer copies) costs seconds to minutes
per pod; a Deployment's restart or scale-out onto the same healthy node would pay it again
for the same hardware and software.

Who decides what (docs/CHECKS.md, "Verdict reuse"):

* The operator records a deep pass only from a *trusted* result (provenance.py: a pod its
  workload's controller made) whose report ran every deep check and passed them, under a
  policy with ``verdictReuse.ttlSeconds`` > 0. It keeps the record on the Node (the
  annotation :data:`ANNOTATION`, operator-owned).
* At admission the injector cannot know the node, so it offers the records of *the pod's
  own namespace* whose image digest and plan equal the pod's (a digest only when the
  vLLM image is pinned by digest: a tag may move) and whose TTL has not run out: the env
  :data:`preflight_contract.envnames.DEEP_REUSE`, a JSON list of :class:`Offer`.
* The checker (after the fast tier's view of the GPUs) takes the offer of its own node
  (``PREFLIGHT_NODE_NAME``, from the downward API) whose :func:`hardware_key` equals the
  key of the GPUs and driver it sees, and skips the deep tier, saying so.

A tenant writes its own pods' env, so it can make only its own pods skip the deep tier, which
its policy's tier already lets it choose; an offer is never made across namespaces, so no
tenant's pass (honest or forged by its own image) lets another namespace's pod skip.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

ANNOTATION = "vllm-preflight.io/deep-pass"
# The report's plan key carrying the hardware key of a deep tier that ran and passed.
DEEP_PASS_KEY = "deep_pass_key"
# The report's plan key saying whose deep pass a run reused (the GPUValidation shows it).
DEEP_REUSED = "deep_reused"
DEEP_PASS_IDS = ("deep-workers", "deep-allreduce", "deep-peer-copy")
# Bounds: an env value the injector writes and a hostile pod may have rewritten.
MAX_OFFERS = 32
MAX_TEXT = 16 * 1024
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,252}")
_KEY = re.compile(r"[0-9a-f]{32}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def hardware_key(gpu_uuids: Iterable[str], driver: str) -> str:
    """The GPUs (UUIDs, in any order) and the driver a deep pass ran on, as 32 hex digits:
    the offer carries no UUID, only this key, and a different GPU or driver never matches."""
    text = json.dumps([sorted(str(u) for u in gpu_uuids), str(driver)], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def plan_shape(tp: object, pp: object, dp_local: object) -> str:
    """The plan a deep pass is for: TP, PP and local DP (the deep tier's groups)."""
    return f"tp={tp},pp={pp},dp={dp_local}"


@dataclass(frozen=True)
class Offer:
    """A deep pass the checker may reuse: on ``node``, hardware ``key``, by ``pod`` at ``at``,
    valid until ``until`` (UTC, RFC 3339 with seconds and Z, compared as text)."""

    node: str
    key: str
    pod: str
    at: str
    until: str

    def to_json(self) -> Dict[str, str]:
        return {"node": self.node, "key": self.key, "pod": self.pod, "at": self.at,
                "until": self.until}  # fmt: skip


def format_offers(offers: Iterable[Offer]) -> str:
    return json.dumps([o.to_json() for o in list(offers)[:MAX_OFFERS]], separators=(",", ":"))


def parse_offers(text: str) -> Tuple[List[Offer], str]:
    """The offers of ``text`` and a problem ("" when none): a malformed offer is dropped,
    never guessed at (no reuse is the safe side: the deep tier then runs)."""
    if not text:
        return [], ""
    if len(text) > MAX_TEXT:
        return [], f"longer than {MAX_TEXT} characters"
    try:
        data = json.loads(text)
    except ValueError:
        return [], "not JSON"
    if not isinstance(data, list):
        return [], "not a JSON list"
    offers: List[Offer] = []
    bad = 0
    for item in data[:MAX_OFFERS]:
        fields = item if isinstance(item, dict) else {}
        values = [fields.get(k) for k in ("node", "key", "pod", "at", "until")]
        texts = [v for v in values if isinstance(v, str)]
        if len(texts) != len(values):
            bad += 1
            continue
        node, key, pod, at, until = texts
        if not (
            _NAME.fullmatch(node) and _KEY.fullmatch(key) and _NAME.fullmatch(pod)
            and _TIME.fullmatch(at) and _TIME.fullmatch(until)
        ):  # fmt: skip
            bad += 1
            continue
        offers.append(Offer(node, key, pod, at, until))
    return offers, (f"{bad} malformed offer(s) left out" if bad else "")


def pick(offers: Iterable[Offer], node: str, key: str, now: str) -> Optional[Offer]:
    """The newest offer for this node and hardware still valid at ``now``, or None."""
    if not node:
        return None
    found = [o for o in offers if o.node == node and o.key == key and now < o.until]
    return max(found, key=lambda o: o.at) if found else None
