"""The operator's side of the one redaction layer (preflight_contract/redact.py, issue 36).

The rules quote the manifest (a command line, an env value) in their findings, and a
finding goes to the admission answer, the GPUValidation, the Events, lint's every format
and the logs. So the findings are redacted once, where the rules engine finishes a
container (rules/engine.py ``_result``), with what the engine knows there: the literal
values of env variables whose names say they are secrets (a Secret's own values the
operator never reads: ``valueFrom.secretKeyRef`` is an unknown marker to the rules, so it
cannot be quoted), the passwords of URLs in any env value, and the pattern rules. The
sinks that write what a pod sent (the GPUValidation status, Events, log lines) apply the
pattern rules again, since a checker older than this layer (or a hostile pod) may send
anything in its termination message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from preflight_contract import redact
from preflight_operator.core.rules.kubeenv import has_unknown
from preflight_operator.core.rules.vocabulary import Finding


def env_redactor(values: Mapping[str, str]) -> redact.Redactor:
    """The redactor of one container's env as the rules read it (unknown markers left out:
    they are ours, not a value)."""
    known = {k: v for k, v in values.items() if isinstance(v, str) and not has_unknown(v)}
    return redact.Redactor.from_environ(known)


def findings(found: Iterable[Finding], values: Mapping[str, str]) -> list[Finding]:
    """``found`` with no secret of the container's env (or a pattern) in their texts."""
    redactor = env_redactor(values)
    out = []
    for finding in found:
        message, fix = redactor.text(finding.message), redactor.text(finding.fix)
        changed = message != finding.message or fix != finding.fix
        out.append(dataclasses.replace(finding, message=message, fix=fix) if changed else finding)
    return out


def status(value: dict[str, Any]) -> dict[str, Any]:
    """A GPUValidation status with the pattern rules applied to every string (the pods'
    results in it come from their termination messages)."""
    redacted = redact.tree(value)
    return redacted if isinstance(redacted, dict) else value


def text(value: object) -> str:
    """An Event's message, a log line: the pattern rules."""
    return redact.text(value)
