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
* An offer is *sealed* (issue 34 item 6): it names no node, no pod and no hardware key,
  only :func:`seal` of them under a salt of its own. The JSON patch of ``/mutate-pods``
  goes to whoever called the port, and without ``webhook.clientAuth`` that may be anyone
  who reaches it with a forged review naming another namespace; a sealed offer tells such
  a caller how many passes there are and when they ran, not where, on which GPUs or by
  whom. The key under the seal is 128 bits of the GPU UUIDs and driver, so guessing node
  names does not open it.
* The checker (after the fast tier's view of the GPUs) computes the seal of its own node
  (``PREFLIGHT_NODE_NAME``, from the downward API) and of the :func:`hardware_key` of the
  GPUs and driver it sees, takes the offer whose seal equals it, and skips the deep tier,
  saying so.

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
_KEY = re.compile(r"[0-9a-f]{32}")
_SALT = re.compile(r"[0-9a-f]{16}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def hardware_key(gpu_uuids: Iterable[str], driver: str) -> str:
    """The GPUs (UUIDs, in any order) and the driver a deep pass ran on, as 32 hex digits:
    the offer carries no UUID, only this key, and a different GPU or driver never matches."""
    text = json.dumps([sorted(str(u) for u in gpu_uuids), str(driver)], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def plan_shape(tp: object, pp: object, dp_local: object) -> str:
    """The plan a deep pass is for: TP, PP and local DP (the deep tier's groups)."""
    return f"tp={tp},pp={pp},dp={dp_local}"


def seal(salt: str, node: str, key: str) -> str:
    """What an offer shows of the pass it stands for: 32 hex digits of the node and the
    hardware key under ``salt``. Equal only for the same node, GPUs and driver."""
    text = json.dumps([str(salt), str(node), str(key)], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def salt_for(pod: str, at: str, until: str) -> str:
    """The salt of one offer: 16 hex digits, different for every record and TTL, so two
    offers of one node never show the same seal (nothing links them to a node)."""
    text = json.dumps(["salt", str(pod), str(at), str(until)], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Offer:
    """A deep pass the checker may reuse: :func:`seal` of its node and hardware key under
    ``salt``, run at ``at``, valid until ``until`` (UTC, RFC 3339 with seconds and Z,
    compared as text)."""

    seal: str
    salt: str
    at: str
    until: str

    @classmethod
    def sealed(cls, node: str, key: str, pod: str, at: str, until: str) -> Offer:
        salt = salt_for(pod, at, until)
        return cls(seal(salt, node, key), salt, at, until)

    def to_json(self) -> Dict[str, str]:
        return {"seal": self.seal, "salt": self.salt, "at": self.at, "until": self.until}

    def opens(self, node: str, key: str) -> bool:
        return bool(node) and seal(self.salt, node, key) == self.seal


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
        values = [fields.get(k) for k in ("seal", "salt", "at", "until")]
        texts = [v for v in values if isinstance(v, str)]
        if len(texts) != len(values):
            bad += 1
            continue
        sealed, salt, at, until = texts
        if not (
            _KEY.fullmatch(sealed) and _SALT.fullmatch(salt)
            and _TIME.fullmatch(at) and _TIME.fullmatch(until)
        ):  # fmt: skip
            bad += 1
            continue
        offers.append(Offer(sealed, salt, at, until))
    return offers, (f"{bad} malformed offer(s) left out" if bad else "")


def pick(offers: Iterable[Offer], node: str, key: str, now: str) -> Optional[Offer]:
    """The newest offer for this node and hardware still valid at ``now``, or None."""
    if not node:
        return None
    found = [o for o in offers if now < o.until and o.opens(node, key)]
    return max(found, key=lambda o: o.at) if found else None
