"""The status names and their one order, shared by the checker and the operator.

A check's status (``CHECK_STATUSES``), a report's verdict (``VERDICTS``), a static rule's
severity (``SEVERITIES``), the operator's static and runtime verdicts and a multi-node
group's verdict are all ranked here, in this order, from best to worst::

    pass = skip = info  <  warn  <  unknown  <  error  <  fail

* ``skip`` (a check that did not run) and ``info`` (a finding that asks nothing) weigh no
  more than a pass: a report whose checks all skipped passes.
* ``unknown`` (the operator's: nothing could be judged, e.g. no vLLM container, or the
  model's config could not be read) is worse than a warning and better than a check that
  could not complete.
* A real failure outranks an internal error: "2 GPUs visible, 4 needed" is more useful to
  the user than "NVML crashed", and both are shown.

A status this module does not know ranks as ``unknown``: worse than a warning, never
taken for a pass, never above a real error or failure.
"""

from __future__ import annotations

from typing import Dict, Iterable, Tuple

PASS = "pass"
WARN = "warn"
FAIL = "fail"
SKIP = "skip"
ERROR = "error"
# The operator's verdict when there is nothing to judge or the judgement could not be made.
UNKNOWN = "unknown"
# A static rule's finding that asks nothing of the user.
INFO = "info"

# What one check of the report may say, and what a whole report may say.
CHECK_STATUSES: Tuple[str, ...] = (PASS, WARN, FAIL, SKIP, ERROR)
VERDICTS: Tuple[str, ...] = (PASS, WARN, FAIL, ERROR)
# What a static rule's finding may say.
SEVERITIES: Tuple[str, ...] = (FAIL, WARN, INFO)

_RANK: Dict[str, int] = {PASS: 0, SKIP: 0, INFO: 0, WARN: 1, UNKNOWN: 2, ERROR: 3, FAIL: 4}


def rank(status: str) -> int:
    """The place of ``status`` in the order (higher is worse); an unknown name as UNKNOWN."""
    return _RANK.get(status, _RANK[UNKNOWN])


def worse(a: str, b: str) -> str:
    """The worse of two statuses; ``a`` when they rank alike."""
    return a if rank(a) >= rank(b) else b


def worst(statuses: Iterable[str], default: str = PASS) -> str:
    """The worst of ``statuses`` (the first of those that rank alike); ``default`` for none."""
    found = default
    first = True
    for status in statuses:
        if first or rank(status) > rank(found):
            found, first = status, False
    return found


def verdict_of_severities(severities: Iterable[str]) -> str:
    """A static result's verdict from its findings' severities: fail, warn or pass (info,
    and any severity this module does not know, asks nothing)."""
    found = set(severities)
    return FAIL if FAIL in found else WARN if WARN in found else PASS
