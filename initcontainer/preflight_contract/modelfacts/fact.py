"""How certain a model fact is: ``Fact`` (its name, certainty and source) and the
contract's certainty names (exact, a class default, estimated, unknown).

Separate: the certainty every rule's FAIL rests on is one concern, read by the rules and
the readers alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from preflight_contract import certainty as _certainty

# -- how certain a model fact is -----------------------------------------------------------
# A rule may fail only on facts that are certain: stated in the model's own files as
# transformers reads them (EXACT), or left out there and filled in by the config class's
# default exactly as transformers applies it (DEFAULT: vLLM reads the same value). Config
# arithmetic is ESTIMATED; a key left out of a config whose class is not known here
# (custom code, a vLLM-only config class) is UNKNOWN. A FAIL resting on either is a WARN
# (``settle`` here for the checker; the rules engine's downgrade at admission).
# a fact's certainty: the contract's one vocabulary (certainty.py)
EXACT = _certainty.EXACT
DEFAULT = _certainty.DEFAULT
ESTIMATED = _certainty.ESTIMATED
FACT_UNKNOWN = _certainty.UNKNOWN
CERTAIN = _certainty.CERTAIN


@dataclass(frozen=True)
class Fact:
    """One model fact's certainty and where it came from (``config.json``, a class
    default, ``model.safetensors.index.json metadata.total_size``, an estimate, ...)."""

    name: str
    certainty: str
    source: str

    @property
    def certain(self) -> bool:
        return self.certainty in CERTAIN
