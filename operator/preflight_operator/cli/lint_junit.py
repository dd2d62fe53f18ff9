"""`vllm-preflight lint --format junit`: JUnit XML, the test report every CI shows.

There is no schema from JUnit itself; the one followed is Jenkins' xunit plugin's, the
strictest reader (junit-10.xsd, jenkinsci/xunit-plugin,
src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd at
8c515de2804b3fd591a3b0f1ff8908a1b1a41887; verbatim in tests/data/schemas/, where the test
checks every element and attribute of the output against it). GitLab's unit test reports
read the same elements. ``testsuites``; one ``testsuite`` per input file (``name`` and
``file`` the path as given); one ``testcase`` per vLLM container of a workload
(``classname`` namespace/Kind/name, ``name`` "container NAME"). That schema has no
``file``/``line`` on a testcase and no properties in one, so each finding's text starts
with ``FILE:LINE:`` (the line of its field, lint_lines), as a compiler prints it.

A testcase has a ``failure`` when a finding of it makes lint exit 1 under ``--fail-on``
(by default: a failure admission would deny under the workload's policy), so the report
and the exit code agree; every other finding (a heuristic rule's failure, a warning, an
info) is in its ``system-out``. An unreadable file or document is a testcase with an
``error``. A vLLM container that was not judged (ContainerResult.unjudged: its vLLM
command line could not be read) is a testcase with ``skipped`` whose message says why,
unless ``--fail-on unjudged`` makes it a failure; a file in which nothing is recognised as
vLLM is one skipped testcase saying so: never an empty suite, which CIs read as "no tests"
or as passed (issue 35: silence is a bypass).

``time``: lint judges the whole set in one pass (objects of one file may need those of
another); the suites' total is that pass, measured, and each testcase's time is its equal
share of it (each suite's time the sum of its testcases').

Everything a manifest says is hostile text: XML 1.0 cannot carry most control characters
even escaped, so they are written as ``\\xHH`` (lone surrogates as ``\\uHHHH``);
ElementTree escapes the rest (``<``, ``&``, ``]]>`` in text; quotes and newlines in
attributes), and no CDATA section is ever written.
"""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from preflight_operator.cli.lint_lines import Lines
from preflight_operator.cli.lint_policy import FAIL_ON_DENY, Judged
from preflight_operator.core.rules import UNJUDGED, ContainerResult, Finding

if TYPE_CHECKING:
    from preflight_operator.cli.manifests import Problem, Source

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


def _finding_text(finding: Finding, action: str, where: str) -> str:
    lines = [
        f"{where}: {finding.severity.upper()} {finding.id} (action {action}): {finding.message}"
    ]
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
    *,
    seconds: float = 0.0,
    not_judged: Sequence[tuple[Source, str, str]] = (),
) -> str:
    """The report; ``not_judged``: (source, object, why) of objects that run vLLM but
    that the rules could not judge (lint's "kind not checked" list): skipped testcases."""
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
        case = _element(
            suite(source.file if source is not None else "?"),
            "testcase",
            name=f"container {result.container}",
            classname=f"{result.namespace or '(unset)'}/{result.workload}",
        )
        _fill(case, judged, result, fail_on, functools.partial(_where, lines, source))
    for problem in problems:
        case = _element(suite(problem.file), "testcase", name="read", classname=problem.file)
        at = problem.file if problem.line is None else f"{problem.file}:{problem.line}"
        _element(case, "error", f"{at}: {problem.message}", type="unreadable",
                 message=problem.message)  # fmt: skip
    for source, name, why in not_judged:
        case = _element(suite(source.file), "testcase", name=name, classname=source.file)
        _element(case, "skipped", type=UNJUDGED, message=f"not judged: {why}")
    for file, element in suites.items():
        if element.find("testcase") is None:  # never an empty suite
            case = _element(element, "testcase", name="no vLLM workload", classname=file)
            _element(case, "skipped", message=NOTHING_RECOGNISED, type="no-vllm")
    _count(root, suites.values(), seconds)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


NOTHING_RECOGNISED = "nothing in this file is recognised as running vLLM: not judged"


def _count(root: ET.Element, suites: Iterable[ET.Element], seconds: float) -> None:
    """tests, failures, errors, skipped and time of each suite and of the whole."""
    suites = list(suites)
    cases = sum(len(s.findall("testcase")) for s in suites)
    share = seconds / cases if cases else 0.0
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for element in suites:
        counts = {
            "tests": len(element.findall("testcase")),
            "failures": len(element.findall("testcase/failure")),
            "errors": len(element.findall("testcase/error")),
            "skipped": len(element.findall("testcase/skipped")),
        }
        for key, value in counts.items():
            element.set(key, str(value))
            totals[key] += value
        for case in element.findall("testcase"):
            case.set("time", _seconds(share))
        element.set("time", _seconds(share * counts["tests"]))
    for key, value in totals.items():
        if key != "skipped":  # not an attribute of testsuites in the schema
            root.set(key, str(value))
    root.set("time", _seconds(seconds))


def _seconds(value: float) -> str:
    """Seconds as the schema's SUREFIRE_TIME takes them: digits, at most 3 decimals."""
    return f"{max(0.0, value):.3f}"


def _where(lines: Lines, source: Source | None, finding: Finding) -> str:
    """``file:line`` of a finding, as compilers print it (CIs link or show it as text)."""
    if source is None:
        return "?"
    return f"{source.file}:{lines.field_line(source, finding.field)}"


def _fill(
    case: ET.Element,
    judged: Judged,
    result: ContainerResult,
    fail_on: str,
    where: Callable[[Finding], str],
) -> None:
    policy = judged.policy_of(result)
    label = f"PreflightPolicy {policy.name}" if policy.name else "the default policy"
    failing = [f for f in result.findings if judged.counts(result, f, fail_on)]
    others = [f for f in result.findings if f not in failing]

    def text(findings: list[Finding]) -> str:
        shown = [_finding_text(f, judged.action(result, f), where(f)) for f in findings]
        return "\n\n".join([*shown, f"(under {label}, action {policy.action})"])

    if failing:
        ids = ", ".join(dict.fromkeys(f.id for f in failing))
        _element(
            case,
            "failure",
            text(failing),
            type=failing[0].id,
            message=f"{len(failing)} problem(s) ({ids}): {failing[0].message}",
        )
    elif result.verdict == UNJUDGED:  # recognised as vLLM, not judged: said, never passed
        _element(case, "skipped", type=UNJUDGED, message=f"not judged: {result.unjudged}")
    if others:
        _element(case, "system-out", text(others))


__all__ = ["junit_document", "xml_text"]
