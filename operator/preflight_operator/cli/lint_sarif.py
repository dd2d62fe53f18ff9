"""`vllm-preflight lint --format sarif`: SARIF 2.1.0, the format code-scanning UIs read.

OASIS SARIF 2.1.0 (errata 01); tests/unit/test_lint_sarif.py validates the output against
the OASIS schema (tests/data/schemas/, with its source). What a UI needs from it: each
rule once in ``tool.driver.rules`` (id, short and full description, help text and a link
to its section of docs/RULES.md, its default level), and each finding as a result with
its ``ruleId``, ``level``, message and a physical location: the file as given (a relative
URI reference, so the UI resolves it against the checkout) and the line of the field the
finding names (lint_lines), else of its container, else of its object.

``level`` says what admission does with the finding under the workload's policy
(admission.finding_action), as lint's exit code does: ``error`` for a failure it denies,
``warning`` for a failure it admits with a warning (a heuristic rule's, or one whose
policy action is Warn) and for a warning, ``note`` for an info finding and for anything
the policy's action is Audit for. Each result's ``properties`` keep the rule's own
severity and the action. Unreadable inputs are the invocation's notifications
(``executionSuccessful`` false), each at its file and line.

What was not judged is never left out (issue 35: a code-scanning gate reads an absent
object as clean): a vLLM container whose command line could not be read
(ContainerResult.unjudged) has its findings as results of level ``note`` (nothing was found
wrong; nothing was checked), with ``properties.verdict`` ``unjudged`` and the reason; an
object lint lists as not judged ("kind not checked") is a ``note`` result without a rule,
at the object's line.
"""

from __future__ import annotations

import posixpath
import urllib.parse
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from preflight_contract.actions import AUDIT, ENFORCE
from preflight_operator import __version__
from preflight_operator.cli.lint_lines import Lines
from preflight_operator.cli.lint_policy import Judged
from preflight_operator.core.rules import (
    FAIL,
    INFO,
    RULE_INFO,
    UNJUDGED,
    ContainerResult,
    RuleInfo,
)
from preflight_operator.core.rules.registry import action_for

if TYPE_CHECKING:
    from preflight_operator.cli.manifests import Problem, Source

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
TOOL_NAME = "vllm-preflight"
INFORMATION_URI = "https://github.com/vllm-preflight/vllm-preflight"
RULES_DOC = f"{INFORMATION_URI}/blob/main/docs/RULES.md"
# Rules documented together under one heading of docs/RULES.md (its GitHub anchor);
# every other rule has a heading of its own, `### \`rule-id\``.
# tests/unit/test_lint_sarif.py checks each anchor against the headings of docs/RULES.md.
LWS_GROUP = (
    "lws-args-mismatch", "lws-args-default", "lws-rank-mismatch", "lws-worker-not-headless",
    "lws-master-addr-mismatch", "lws-image-mismatch", "lws-nccl-env-mismatch",
)  # fmt: skip
_GROUPED = {rule: "leaderworkerset-consistency-" + "-".join(LWS_GROUP) for rule in LWS_GROUP}
MODEL_RULES_ANCHOR = "model-rules"


def help_anchor(rule_id: str) -> str:
    """The anchor of the rule's section in docs/RULES.md."""
    if rule_id in _GROUPED:
        return _GROUPED[rule_id]
    if rule_id.startswith("model-"):
        return MODEL_RULES_ANCHOR
    return rule_id


def default_level(info: RuleInfo) -> str:
    """The level of the rule's findings under the default Enforce policy."""
    if info.severity == FAIL:
        return "error" if action_for(info.id, ENFORCE) == ENFORCE else "warning"
    return "note" if info.severity == INFO else "warning"


def level(severity: str, action: str) -> str:
    if action == AUDIT or severity == INFO:
        return "note"
    return "error" if severity == FAIL and action == ENFORCE else "warning"


def artifact_uri(path: str) -> str:
    """The file as given, as a URI reference: relative paths stay relative (percent-
    encoded), absolute ones become file: URIs; standard input is `%3Cstdin%3E`."""
    if posixpath.isabs(path):
        return PurePosixPath(path).as_uri()
    return urllib.parse.quote(path, safe="/")


def _rule(info: RuleInfo) -> dict[str, Any]:
    anchor = help_anchor(info.id)
    basis = info.basis.kind if info.basis is not None else "unknown"
    action = action_for(info.id, ENFORCE)
    full = (
        f"{info.summary}. Severity {info.severity}; certainty source {basis}; action under "
        f"the default Enforce policy: {action}."
    )
    return {
        "id": info.id,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": full},
        "help": {
            "text": f"{full} What it detects and how to fix it: {RULES_DOC}#{anchor}",
            "markdown": f"{full}\n\n[docs/RULES.md: `{info.id}`]({RULES_DOC}#{anchor})",
        },
        "helpUri": f"{RULES_DOC}#{anchor}",
        "defaultConfiguration": {"level": default_level(info)},
        "properties": {"severity": info.severity, "certainty": basis, "tags": ["kubernetes"]},
    }


def sarif_document(
    judged: Judged,
    sources: Sequence[Source],
    problems: Sequence[Problem],
    not_judged: Sequence[tuple[Source, str, str]] = (),
) -> dict[str, Any]:
    """The SARIF log; ``not_judged``: (source, object, why) of objects that run vLLM and
    were not judged (lint's "kind not checked" list)."""
    lines = Lines()
    ids = sorted(RULE_INFO)
    index = {rule_id: i for i, rule_id in enumerate(ids)}
    results: list[dict[str, Any]] = []
    for result in judged.results:
        source = _source(result, sources)
        for finding in result.findings:
            action = judged.action(result, finding)
            entry: dict[str, Any] = {
                "ruleId": finding.id,
                "level": level(finding.severity, action),
                "message": {"text": _message(result, finding.message, finding.fix)},
                "locations": [_location(lines, source, result, finding.field)],
                "properties": {
                    "severity": finding.severity,
                    "action": action,
                    "policy": judged.policy_of(result).name,
                    "workload": result.workload,
                    "namespace": result.namespace or "",
                    "container": result.container,
                    "field": finding.field,
                },
            }
            if finding.id in index:
                entry["ruleIndex"] = index[finding.id]
            if result.verdict == UNJUDGED:
                entry["level"] = "note"
                entry["properties"].update(verdict=UNJUDGED, reason=result.unjudged)
            results.append(entry)
    results += [_not_judged(lines, *entry) for entry in not_judged]
    invocation: dict[str, Any] = {"executionSuccessful": not problems}
    if problems:
        invocation["toolExecutionNotifications"] = [_notification(p) for p in problems]
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule(RULE_INFO[rule_id]) for rule_id in ids],
                    }
                },
                "invocations": [invocation],
                "results": results,
            }
        ],
    }


def _message(result: ContainerResult, message: str, fix: str) -> str:
    text = f"{result.workload} container {result.container}: {message}"
    return f"{text} Fix: {fix}" if fix else text


def _source(result: ContainerResult, sources: Sequence[Source]) -> Source | None:
    i = result.object_index
    return sources[i] if i is not None and 0 <= i < len(sources) else None


def _location(
    lines: Lines, source: Source | None, result: ContainerResult, field: str
) -> dict[str, Any]:
    if source is None:  # not from lint's reader: no file to point at
        return {"message": {"text": result.workload}}
    line = (
        lines.field_line(source, field) if field else lines.container_line(source, result.container)
    )
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": artifact_uri(source.file)},
            "region": {"startLine": max(1, line)},
        },
        "logicalLocations": [
            {"fullyQualifiedName": f"{result.workload}/{result.container}", "kind": "object"}
        ],
    }


def _not_judged(lines: Lines, source: Source, name: str, why: str) -> dict[str, Any]:
    return {
        "level": "note",
        "message": {"text": f"{name}: not judged: {why}"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": artifact_uri(source.file)},
                    "region": {"startLine": max(1, lines.object_line(source))},
                },
                "logicalLocations": [{"fullyQualifiedName": name, "kind": "object"}],
            }
        ],
        "properties": {"verdict": UNJUDGED, "reason": why, "workload": name},
    }


def _notification(problem: Problem) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri(problem.file)}}
    if problem.line is not None:
        physical["region"] = {"startLine": max(1, problem.line)}
    return {
        "level": "error",
        "message": {"text": problem.text()},
        "locations": [{"physicalLocation": physical}],
    }


__all__ = ["SARIF_VERSION", "artifact_uri", "help_anchor", "level", "sarif_document"]
