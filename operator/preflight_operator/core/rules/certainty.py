"""How certain the rules are: of each input they read, and of each rule's own knowledge.

Two questions, two vocabularies (docs/RULES.md, "Certainty and actions"):

* **An input** (the value a rule reads) is ``exact``, ``estimated`` or ``unknown``, and
  comes from a kind of source: an ``argv`` token, an ``env`` value, a ``device-count`` per
  resource unit, a ``model-fact`` or ``weight-bytes``. An unknown input stops the rule
  (plan-unresolved says so); an estimated one lets it speak, but a FAIL resting on it is
  downgraded to WARN by the engine (``downgrade``), never by each rule's care.
* **A rule** knows what it knows from ``vllm-code`` (vLLM's own code or parser, mirrored
  and recorded), a ``measurement`` on real hardware, a ``vendor-doc`` (Kubernetes, NVIDIA,
  NCCL documentation) or a ``heuristic`` (a threshold or a judgement of ours). Rules whose
  source is a heuristic default to Warn under any policy (``default_action``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from preflight_contract import certainty as _certainty
from preflight_contract.actions import ENFORCE, WARN

# -- inputs ---------------------------------------------------------------------------
# the contract's one vocabulary (preflight_contract.certainty), shared with the checker
EXACT = _certainty.EXACT
ESTIMATED = _certainty.ESTIMATED
UNKNOWN = _certainty.UNKNOWN
CERTAINTIES = (EXACT, ESTIMATED, UNKNOWN)

ARGV = "argv"
ENV = "env"
DEVICE_COUNT = "device-count"
MODEL_FACT = "model-fact"
WEIGHT_BYTES = "weight-bytes"
INPUT_KINDS = (ARGV, ENV, DEVICE_COUNT, MODEL_FACT, WEIGHT_BYTES)


@dataclass(frozen=True)
class Input:
    """One value a finding rests on: what it is (``what``, in the user's terms: "TP",
    "the nvidia.com/gpu count"), its source kind, its certainty, and why it is not exact
    (empty when it is)."""

    kind: str  # one of INPUT_KINDS
    what: str
    certainty: str = EXACT
    why: str = ""

    def __post_init__(self) -> None:
        if self.kind not in INPUT_KINDS:
            raise ValueError(f"input kind {self.kind!r} is not one of {INPUT_KINDS}")
        if self.certainty not in CERTAINTIES:
            raise ValueError(f"certainty {self.certainty!r} is not one of {CERTAINTIES}")

    @property
    def exact(self) -> bool:
        return self.certainty == EXACT

    def to_dict(self) -> dict[str, str]:
        out = {"kind": self.kind, "what": self.what, "certainty": self.certainty}
        if self.why:
            out["why"] = self.why
        return out


def not_exact(inputs: Iterable[Input]) -> list[Input]:
    """The inputs a FAIL must not rest on, each once, in order."""
    seen: list[Input] = []
    for item in inputs:
        if not item.exact and item not in seen:
            seen.append(item)
    return seen


def downgrade_note(inputs: Iterable[Input]) -> str:
    """What the engine appends to a FAIL it downgrades: which input was not exact."""
    parts = [f"{i.what} {i.why}" if i.why else f"{i.what} is {i.certainty}" for i in inputs]
    return f" (downgraded from fail: {'; '.join(parts)})"


# -- rules ----------------------------------------------------------------------------
VLLM_CODE = "vllm-code"
MEASUREMENT = "measurement"
VENDOR_DOC = "vendor-doc"
HEURISTIC = "heuristic"
SOURCE_KINDS = (VLLM_CODE, MEASUREMENT, VENDOR_DOC, HEURISTIC)


@dataclass(frozen=True)
class Basis:
    """Where a rule's knowledge comes from: a SOURCE_KINDS entry and a short reference
    (the vLLM function, the measurement's table, the document)."""

    kind: str
    reference: str

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise ValueError(f"certainty source {self.kind!r} is not one of {SOURCE_KINDS}")


def default_action(basis: Basis, policy_action: str) -> str:
    """The action a rule's failures get under a policy that does not name the rule: the
    policy's, except that a heuristic rule never denies unless named (Enforce -> Warn)."""
    if basis.kind == HEURISTIC and policy_action == ENFORCE:
        return WARN
    return policy_action


def rule_action(
    rule_id: str, basis: Basis | None, policy_action: str, per_rule: Iterable[tuple[str, str]]
) -> str:
    """The action for ``rule_id``'s findings: the policy's per-rule entry when it has one
    (``rules: {shm-too-small: Warn}``, Gatekeeper's enforcementAction per constraint),
    else ``default_action``. An id without a Basis (a summary the operator made) takes the
    policy's action."""
    for name, action in per_rule:
        if name == rule_id:
            return action
    if basis is None:
        return policy_action
    return default_action(basis, policy_action)
