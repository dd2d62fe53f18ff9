"""The static result of a workload, in the operator's own terms (pure data).

The rules engine (preflight_operator.core.rules) returns one result per vLLM container; the
operator keeps one per workload: the worst verdict, every finding (bounded; the rules' own
``Finding``, not a copy), and the plan of the first vLLM container (the one
`kubectl get gpuval` shows in TP and GPUS).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from preflight_contract.verdicts import ERROR, FAIL, UNKNOWN, WARN
from preflight_operator.core.rules import Finding

MAX_FINDINGS = 20  # status.static.findings maxItems
MORE_FINDINGS = "more-findings"  # the finding that counts those past MAX_FINDINGS
# A finding quotes the manifest (a command line, an env value): a 1 MB manifest must not
# make a 1 MB status (etcd refuses it, and no status is ever written) or a 1 MB Event.
MESSAGE_LIMIT = 1000
FIELD_LIMIT = 300
FIX_LIMIT = 1000


@dataclasses.dataclass(frozen=True)
class Plan:
    """The plan as the GPUValidation shows it and the check is injected with: the sizes of
    the contract's ``ParallelPlan`` the rules read, and ``gpus_needed`` as the rules
    reported it for the pod (the plan's count, or the pod's share of a spread engine). A
    record: it computes nothing (issue 37, one plan)."""

    tp: int
    pp: int
    dp: int
    dp_local: int
    gpus_needed: int
    container: str

    def to_status(self) -> dict[str, Any]:
        return {
            "tp": self.tp,
            "pp": self.pp,
            "dp": self.dp,
            "dpLocal": self.dp_local,
            "gpusNeeded": self.gpus_needed,
            "container": self.container,
        }


@dataclasses.dataclass(frozen=True)
class StaticResult:
    verdict: str  # pass | warn | fail | error | unknown
    findings: tuple[Finding, ...] = ()
    plan: Plan | None = None
    gpus_requested: int | None = None
    has_vllm: bool = True
    error: str = ""  # the rules engine crashed: recorded, never blocking
    # vLLM containers recognised but not judged (their command line not read: issue 35)
    unjudged: int = 0

    @property
    def failures(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == FAIL)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == WARN)

    @property
    def first_reason(self) -> str:
        if self.error:
            return "rules-error"
        first = (self.failures or self.warnings or (None,))[0]
        return first.id if first else ""


NOT_VLLM = StaticResult(verdict=UNKNOWN, has_vllm=False)


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def bounded_findings(findings: list[Finding] | tuple[Finding, ...]) -> tuple[Finding, ...]:
    """Each finding's texts capped; at most MAX_FINDINGS, the last one saying how many more
    there were (failures first, so a cut never hides a failure behind warnings)."""
    ordered = sorted(findings, key=lambda f: 0 if f.severity == FAIL else 1)
    capped = [
        Finding(
            shorten(f.id, 100),
            f.severity,
            shorten(f.message, MESSAGE_LIMIT),
            shorten(f.field, FIELD_LIMIT),
            shorten(f.fix, FIX_LIMIT),
        )
        for f in ordered
    ]
    if len(capped) <= MAX_FINDINGS:
        return tuple(capped)
    kept, rest = capped[: MAX_FINDINGS - 1], capped[MAX_FINDINGS - 1 :]
    failures = sum(1 for f in rest if f.severity == FAIL)
    ids = sorted({f.id for f in rest})
    summary = Finding(
        id=MORE_FINDINGS,
        severity=FAIL if failures else WARN,
        message=shorten(
            f"{len(rest)} more finding(s) not shown ({failures} failure(s)): {', '.join(ids)}",
            MESSAGE_LIMIT,
        ),
        fix="run `vllm-preflight lint` on the manifest to see every finding",
    )
    return (*kept, summary)


def crashed(error: str) -> StaticResult:
    return StaticResult(verdict=ERROR, error=error[:300])
