"""A rules worker child whose rules misbehave on request (tests/unit/test_operator_rulesworker.py):
a workload annotated ``test/rules=spin`` loops forever, ``grow`` allocates until the
address-space cap stops it. Everything else goes to the real rules."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from preflight_operator.core import rules
from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.runtime import rulesworker

_real = RulesAnalyser.results


def _results(
    self: RulesAnalyser, body: Mapping[str, Any], policy: PolicySpec
) -> Sequence[rules.ContainerResult]:
    mode = ((body.get("metadata") or {}).get("annotations") or {}).get("test/rules")
    if mode == "spin":
        while True:
            pass
    if mode == "grow":
        hoard = []
        while True:
            hoard.append(bytearray(16 * 1024 * 1024))
    return _real(self, body, policy)


RulesAnalyser.results = _results  # type: ignore[method-assign]

if __name__ == "__main__":
    rulesworker._child(int(sys.argv[1]), int(sys.argv[2]))
