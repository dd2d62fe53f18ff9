"""How certain a value is, one vocabulary for the checker and the operator (issue 24).

A FAIL may rest only on exact values; from an estimate or an unknown the answer is a
warning that says what was not known. ``DEFAULT`` is a model fact config.json leaves out
and the model class fills as transformers does (what vLLM reads, so as certain as exact).
Python 3.9, standard library only, like the whole contract package.
"""

from typing import FrozenSet

EXACT = "exact"
DEFAULT = "default"
ESTIMATED = "estimated"
UNKNOWN = "unknown"
# What a failure may rest on.
CERTAIN: FrozenSet[str] = frozenset((EXACT, DEFAULT))
