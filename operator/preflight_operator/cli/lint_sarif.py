"""`vllm-preflight lint --format sarif`: SARIF 2.1.0, the format code-scanning UIs read.

OASIS SARIF 2.1.0 (errata 01); tests/unit/test_lint_sarif.py validates the output against
the OASIS schema (tests/data/schemas/, with its source). What a UI needs from it: each
rule once in ``tool.driver.rules`` (id, short and full description, help text and a link
to its section of docs/RULES.md, its default level), and each finding as a result with
its ``ruleId``, ``level``, message and a physical location: the file as given (a relative
URI reference, so the UI resolves it against the checkout) and the line of the field the
finding names (lint_lines), else of its container, else of its object.

``level`` says what admission does with the finding under the workload's policy
(admissiondecision.finding_action), as lint's exit code does: ``error`` for a failure it denies,
``warning`` for a failure it admits with a warning (a heuristic rule's, or one whose
policy action is Warn) and for a warning, ``note`` for an info finding and for anything
the policy's action is Audit for. Each result's ``properties`` keep the rule's own
severity and the action. Unreadable inputs are the invocation's notifications
(``executionSuccessful`` false), each at its file and line.

As GitHub code scanning reads it (issue 40 item 4):

* every rule has a ``name`` (its id in PascalCase) and a ``fullDescription``;
* every result has ``partialFingerprints["vllmPreflightFinding/v1"]``: SHA-256 of the rule,
  the file, the workload, its namespace, the container and the field, never the line or the
  message's numbers, so an alert stays one alert when lines move above it;
* files under the base directory (``--sarif-base DIR``, default the working directory) are
  URIs relative to it with ``uriBaseId`` ``%SRCROOT%``, which ``originalUriBaseIds`` maps
  to the directory's file URI; a file outside it is an absolute file URI;
* a document read from standard input is located in the file it came from where the
  document says so: Helm's ``# Source: chart/templates/x.yaml`` comment (``helm template
  ... | vllm-preflight lint -``), kustomize's ``config.kubernetes.io/origin`` annotation
  (``buildMetadata: [originAnnotations]``) with its ``path``; both are relative to the base
  directory (run lint where the chart or kustomization lives, or pass ``--sarif-base``);
  the line is then the template's first (the rendered lines are not the template's), and
  without either the location stays ``<stdin>``;
* a message and its fix are apart (``\nFix: ``).

What was not judged is never left out (issue 35: a code-scanning gate reads an absent
object as clean): a vLLM container whose command line could not be read
(ContainerResult.unjudged) has its findings as results of level ``note`` (nothing was found
wrong; nothing was checked), with ``properties.verdict`` ``unjudged`` and the reason; an
object lint lists as not judged ("kind not checked") is a ``note`` result without a rule,
at the object's line.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
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
    action_for,
)

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
SRCROOT = "%SRCROOT%"
FINGERPRINT = "vllmPreflightFinding/v1"
STDIN = "<stdin>"
ORIGIN_ANNOTATION = "config.kubernetes.io/origin"
# Helm writes `# Source: <chart>/templates/<file>` above every rendered document
_HELM_SOURCE = re.compile(r"^# Source: (\S[^\n]{0,1023})$", re.M)
_ORIGIN_PATH = re.compile(r"^path: ?(\S[^\n]{0,1023})$", re.M)


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


def rule_name(rule_id: str) -> str:
    """The rule's ``name``: its id in PascalCase (``gpu-count-too-low`` ->
    ``GpuCountTooLow``), as code-scanning UIs show it beside the id."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", rule_id))


def origin(source: Source) -> str | None:
    """The file a document read from standard input came from, where the document says
    so itself: kustomize's origin annotation, else Helm's ``# Source:`` comment."""
    if source.file != STDIN:
        return None
    meta = source.obj.get("metadata") if isinstance(source.obj, dict) else None
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    said = annotations.get(ORIGIN_ANNOTATION) if isinstance(annotations, dict) else None
    if isinstance(said, str) and (found := _ORIGIN_PATH.search(said[:4096])):
        return found.group(1).strip().strip("'\"") or None
    head = source.text[:4096]
    if found := _HELM_SOURCE.search(head):
        return found.group(1).strip() or None
    return None


class Artifacts:
    """Artifact locations under one base directory (``%SRCROOT%``)."""

    def __init__(self, base: str | None) -> None:
        self.base = os.path.abspath(base or os.getcwd())

    def uri_base_ids(self) -> dict[str, Any]:
        return {SRCROOT: {"uri": PurePosixPath(self.base).as_uri().rstrip("/") + "/"}}

    def location(self, path: str) -> dict[str, Any]:
        if path == STDIN:
            return {"uri": artifact_uri(path)}
        full = os.path.normpath(os.path.join(self.base, path))
        relative = os.path.relpath(full, self.base)
        if relative == ".." or relative.startswith("../") or os.path.isabs(relative):
            return {"uri": PurePosixPath(full).as_uri()}
        return {"uri": urllib.parse.quote(relative, safe="/"), "uriBaseId": SRCROOT}


def fingerprint(rule_id: str, uri: str, result: ContainerResult, field: str) -> str:
    """Stable across line moves: the rule, the file and what the finding is about."""
    text = "\x00".join(
        (rule_id, uri, result.workload, result.namespace or "", result.container, field)
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


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
        "name": rule_name(info.id),
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
    base: str | None = None,
) -> dict[str, Any]:
    """The SARIF log; ``not_judged``: (source, object, why) of objects that run vLLM and
    were not judged (lint's "kind not checked" list); ``base``: the directory URIs are
    relative to (``--sarif-base``; None: the working directory)."""
    lines = Lines()
    artifacts = Artifacts(base)
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
                "locations": [_location(lines, artifacts, source, result, finding.field)],
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
            physical = entry["locations"][0].get("physicalLocation")
            uri = physical["artifactLocation"]["uri"] if physical else result.workload
            entry["partialFingerprints"] = {
                FINGERPRINT: fingerprint(finding.id, uri, result, finding.field)
            }
            if result.verdict == UNJUDGED:
                entry["level"] = "note"
                entry["properties"].update(verdict=UNJUDGED, reason=result.unjudged)
            results.append(entry)
    results += [_not_judged(lines, artifacts, *entry) for entry in not_judged]
    invocation: dict[str, Any] = {"executionSuccessful": not problems}
    if problems:
        invocation["toolExecutionNotifications"] = [_notification(artifacts, p) for p in problems]
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
                "originalUriBaseIds": artifacts.uri_base_ids(),
                "results": results,
            }
        ],
    }


def _message(result: ContainerResult, message: str, fix: str) -> str:
    text = f"{result.workload} container {result.container}: {message}"
    return f"{text}\nFix: {fix}" if fix else text


def _source(result: ContainerResult, sources: Sequence[Source]) -> Source | None:
    i = result.object_index
    return sources[i] if i is not None and 0 <= i < len(sources) else None


def _location(
    lines: Lines, artifacts: Artifacts, source: Source | None, result: ContainerResult, field: str
) -> dict[str, Any]:
    if source is None:  # not from lint's reader: no file to point at
        return {"message": {"text": result.workload}}
    came_from = origin(source)
    if came_from is not None:  # the template's own file; its lines are not the rendered ones
        artifact, line = artifacts.location(came_from), 1
    else:
        artifact = artifacts.location(source.file)
        line = (
            lines.field_line(source, field)
            if field
            else lines.container_line(source, result.container)
        )
    return {
        "physicalLocation": {
            "artifactLocation": artifact,
            "region": {"startLine": max(1, line)},
        },
        "logicalLocations": [
            {"fullyQualifiedName": f"{result.workload}/{result.container}", "kind": "object"}
        ],
    }


def _not_judged(
    lines: Lines, artifacts: Artifacts, source: Source, name: str, why: str
) -> dict[str, Any]:
    came_from = origin(source)
    artifact = artifacts.location(came_from or source.file)
    line = 1 if came_from is not None else lines.object_line(source)
    return {
        "level": "note",
        "message": {"text": f"{name}: not judged: {why}"},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": artifact,
                    "region": {"startLine": max(1, line)},
                },
                "logicalLocations": [{"fullyQualifiedName": name, "kind": "object"}],
            }
        ],
        "properties": {"verdict": UNJUDGED, "reason": why, "workload": name},
    }


def _notification(artifacts: Artifacts, problem: Problem) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": artifacts.location(problem.file)}
    if problem.line is not None:
        physical["region"] = {"startLine": max(1, problem.line)}
    return {
        "level": "error",
        "message": {"text": problem.text()},
        "locations": [{"physicalLocation": physical}],
    }


__all__ = [
    "FINGERPRINT",
    "SARIF_VERSION",
    "SRCROOT",
    "Artifacts",
    "artifact_uri",
    "fingerprint",
    "help_anchor",
    "level",
    "origin",
    "rule_name",
    "sarif_document",
]
