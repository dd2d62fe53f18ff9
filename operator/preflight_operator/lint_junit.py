"""`vllm-preflight lint --format junit`: JUnit XML, the test report every CI shows.

The shape is Jenkins' JUnit schema as the xunit plugin writes it down (junit-10.xsd,
jenkinsci/xunit-plugin, src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/
junit-10.xsd at 0c3752259ca17669b739481b2785a3e4cea1cc0f; kept verbatim in
tests/data/schemas/, where the test checks the output against its elements and
attributes), which GitLab's unit test reports read too: ``testsuites``, one ``testsuite``
per input file, one ``testcase`` per vLLM container of a workload (``classname``
namespace/Kind/name, ``name`` the container, ``file`` and ``line`` where it is).

A testcase has a ``failure`` when a finding of it makes lint exit 1 under ``--fail-on``
(by default: a failure admission would deny under the workload's policy), so the report
and the exit code agree. Every other finding (a heuristic rule's failure, a warning, an
info) is a line of its ``system-out``; each finding is also a ``property``
(``finding.N`` = ``severity action rule-id``), which CIs keep but do not show. An unreadable
file or document is a testcase with an ``error``.

Everything a manifest says is hostile text: XML 1.0 cannot carry most control characters
even escaped, so they are written as ``\\xHH`` (lone surrogates as ``\\uHHHH``);
ElementTree escapes the rest (``<``, ``&``, ``]]>`` in text; quotes and newlines in
attributes), and no CDATA section is ever written.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import TYPE_CHECKING

from preflight_operator.lint_lines import Lines
from preflight_operator.lint_policy import FAIL_ON_DENY, Judged
from preflight_operator.rules import ContainerResult, Finding

if TYPE_CHECKING:
    from preflight_operator.lint import Problem, Source

SUITES_NAME = "vllm-preflight lint"
# what XML 1.0 cannot hold (its Char production), escaped or not
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """Text XML 1.0 can carry: each character it cannot, written as an escape."""
    return _NOT_XML.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _element(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})
    if text is not None:
        element.text = xml_text(text)
    return element


def _finding_text(finding: Finding, action: str) -> str:
    lines = [f"{finding.severity.upper()} {finding.id} (action {action}): {finding.message}"]
    if finding.field:
        lines.append(f"  at:  {finding.field}")
    if finding.fix:
        lines.append(f"  fix: {finding.fix}")
    return "\n".join(lines)


def junit_document(
    judged: Judged,
    sources: Sequence[Source],
    problems: Sequence[Problem],
    fail_on: str = FAIL_ON_DENY,
) -> str:
    lines = Lines()
    root = ET.Element("testsuites", {"name": SUITES_NAME})
    suites: dict[str, ET.Element] = {}

    def suite(file: str) -> ET.Element:
        if file not in suites:
            suites[file] = _element(root, "testsuite", name=file, file=file)
        return suites[file]

    for read in sources:  # every file read has its suite, an empty one included
        suite(read.file)
    for result in judged.results:
        index = result.object_index
        source = sources[index] if index is not None and 0 <= index < len(sources) else None
        file = source.file if source is not None else "?"
        case = _element(
            suite(file),
            "testcase",
            name=f"container {result.container}",
            classname=f"{result.namespace or '(unset)'}/{result.workload}",
            file=file,
        )
        if source is not None:
            case.set("line", str(lines.container_line(source, result.container)))
        _fill(case, judged, result, fail_on)
    for problem in problems:
        case = _element(suite(problem.file), "testcase", name="read", classname=problem.file)
        case.set("file", xml_text(problem.file))
        if problem.line is not None:
            case.set("line", str(problem.line))
        _element(case, "error", problem.message, type="unreadable", message=problem.message)
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for element in suites.values():
        counts = {
            "tests": len(element.findall("testcase")),
            "failures": len(element.findall("testcase/failure")),
            "errors": len(element.findall("testcase/error")),
        }
        for key, value in counts.items():
            element.set(key, str(value))
            totals[key] += value
        element.set("skipped", "0")
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _fill(case: ET.Element, judged: Judged, result: ContainerResult, fail_on: str) -> None:
    policy = judged.policy_of(result)
    failing = [f for f in result.findings if judged.counts(result, f, fail_on)]
    others = [f for f in result.findings if f not in failing]
    if result.findings:
        properties = _element(case, "properties")
        _element(properties, "property", name="policy", value=policy.name or "(default)")
        for n, f in enumerate(result.findings, 1):
            action = judged.action(result, f)
            value = f"{f.severity} {action} {f.id}"
            _element(properties, "property", name=f"finding.{n}", value=value)
    if failing:
        ids = ", ".join(dict.fromkeys(f.id for f in failing))
        _element(
            case,
            "failure",
            "\n\n".join(_finding_text(f, judged.action(result, f)) for f in failing),
            type=failing[0].id,
            message=f"{len(failing)} problem(s) ({ids}): {failing[0].message}",
        )
    if others:
        _element(
            case,
            "system-out",
            "\n\n".join(_finding_text(f, judged.action(result, f)) for f in others),
        )


__all__ = ["junit_document", "xml_text"]
