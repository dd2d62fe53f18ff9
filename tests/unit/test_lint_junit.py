"""`vllm-preflight lint --format junit`: the elements and attributes of Jenkins' JUnit
schema (junit-10.xsd, verbatim in tests/data/schemas/), a failure exactly where lint exits
1, and hostile text that cannot break the XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from test_rules_support import deployment, pod_spec, vllm

from preflight_operator.cli import lint
from preflight_operator.cli.lint_junit import xml_text

ROOT = Path(__file__).resolve().parents[2]
XSD = ROOT / "tests" / "data" / "schemas" / "junit-10.xsd"
XS = "{http://www.w3.org/2001/XMLSchema}"


def _schema() -> dict[str, tuple[set[str], set[str], set[str]]]:
    """Per element of the XSD: (child elements allowed, attributes declared, required)."""
    out: dict[str, tuple[set[str], set[str], set[str]]] = {}
    for element in ET.parse(XSD).getroot().findall(f"{XS}element"):
        children = {ref.get("ref", "") for ref in element.iter(f"{XS}element")} - {""}
        attrs = {a.get("name", ""): a.get("use") for a in element.iter(f"{XS}attribute")}
        required = {name for name, use in attrs.items() if use == "required"}
        out[element.get("name", "")] = (children, set(attrs), required)
    return out


SCHEMA = _schema()


def check_against_schema(element: ET.Element) -> None:
    assert element.tag in SCHEMA, element.tag
    children, attributes, required = SCHEMA[element.tag]
    assert set(element.attrib) <= attributes, (element.tag, set(element.attrib) - attributes)
    assert required <= set(element.attrib), (element.tag, required - set(element.attrib))
    for child in element:
        assert child.tag in children, (element.tag, child.tag)
        check_against_schema(child)


def junit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, ET.Element]:
    code = lint.main(["--format", "junit", *argv])
    out, _ = capsys.readouterr()
    root = ET.fromstring(out.encode("utf-8"))
    assert root.tag == "testsuites"
    check_against_schema(root)
    return code, root


def write(tmp_path: Path, name: str, *docs: object) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_the_schema_reading_can_refuse() -> None:
    assert SCHEMA["testsuite"][2] == {"name", "tests", "failures", "errors"}
    assert "failure" in SCHEMA["testcase"][0]
    with pytest.raises(AssertionError):
        check_against_schema(ET.fromstring('<testsuites><testcase name="x"/></testsuites>'))
    with pytest.raises(AssertionError):
        check_against_schema(ET.fromstring("<testsuites><testsuite/></testsuites>"))


def test_one_suite_per_file_one_case_per_container(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = deployment(pod_spec(vllm("m", "--tensor-parallel-size", "4", gpus=2)), name="bad")
    good = deployment(pod_spec(vllm("m", gpus=1)), name="good")
    warned = deployment(
        pod_spec(vllm("m", gpus=1, env=[{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}])),
        name="warned",
    )
    first = write(tmp_path, "a.yaml", bad, good)
    second = write(tmp_path, "b.yaml", warned)
    code, root = junit(capsys, str(first), str(second))
    assert code == lint.EXIT_FAILED
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [str(first), str(second)]
    assert [(s.get("tests"), s.get("failures"), s.get("errors")) for s in suites] == [
        ("2", "1", "0"),
        ("1", "0", "0"),
    ]
    assert (root.get("tests"), root.get("failures")) == ("3", "1")
    cases = {c.get("classname"): c for c in root.iter("testcase")}
    failing = cases["ns/Deployment/bad"]
    assert failing.get("name") == "container vllm"
    failure = failing.find("failure")
    assert failure is not None
    assert failure.get("type") == "gpu-count-too-low"
    assert "gpu-count-too-low" in (failure.get("message") or "")
    assert "fix: request 4 GPUs" in (failure.text or "")
    limit = first.read_text().splitlines().index("            nvidia.com/gpu: 2") + 1
    assert f"{first}:{limit}: FAIL gpu-count-too-low (action Enforce)" in (failure.text or "")
    assert "(under the default policy, action Enforce)" in (failure.text or "")
    assert cases["ns/Deployment/good"].find("failure") is None
    out = cases["ns/Deployment/warned"].find("system-out")
    assert out is not None
    assert ": WARN cvd-set (action Warn)" in (out.text or "")


@pytest.mark.parametrize(
    ("fail_on", "code", "failures"),
    [("deny", lint.EXIT_OK, 0), ("fail", lint.EXIT_FAILED, 1), ("warn", lint.EXIT_FAILED, 2)],
)
def test_a_failure_is_exactly_what_makes_lint_exit_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fail_on: str, code: int, failures: int
) -> None:
    # a heuristic failure (shm-too-small: Warn under Enforce) and a warning (cvd-set)
    small = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "256Mi"}}
    heuristic = deployment(
        pod_spec(vllm("m", "--tensor-parallel-size", "2", gpus=2), volumes=[small]), name="h"
    )
    warned = deployment(
        pod_spec(vllm("m", gpus=1, env=[{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}])),
        name="w",
    )
    path = write(tmp_path, "d.yaml", heuristic, warned)
    got, root = junit(capsys, "--fail-on", fail_on, str(path))
    assert (got, root.get("failures")) == (code, str(failures))
    assert lint.main(["--fail-on", fail_on, str(path)]) == code  # the text report's too
    capsys.readouterr()


def test_hostile_text_is_escaped_and_stays_xml(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hostile = 'x]]><failure message="pwned"/>&amp;\x01\x1b[31m"\'\ud800'
    obj = deployment(
        pod_spec(vllm("m", "--tensor-parallel-size", "4", gpus=2, name=hostile)), name="bad"
    )
    path = tmp_path / "hostile.json"  # JSON: the only way a lone surrogate gets in
    path.write_text(json.dumps(obj), encoding="utf-8")
    code, root = junit(capsys, str(path))
    assert code == lint.EXIT_FAILED
    (case,) = root.iter("testcase")
    assert case.get("name") == "container " + xml_text(hostile)
    assert "\\x01" in (case.get("name") or "")
    assert "\\ud800" in (case.get("name") or "")
    assert len(case.findall("failure")) == 1  # the text's own <failure> stayed text
    assert "]]>" in (case.get("name") or "")


def test_xml_text_keeps_what_xml_can_hold() -> None:
    assert xml_text("a\tb\nc\r") == "a\tb\nc\r"
    assert xml_text("\x00\x08\x0b\x7f\ufffe") == "\\x00\\x08\\x0b\x7f\\ufffe"
    assert xml_text("\U0001f600 ü") == "\U0001f600 ü"


def test_unreadable_documents_are_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("kind: Pod\n---\nkind: Pod\nmetadata: {name: a\n")
    code, root = junit(capsys, str(path))
    assert code == lint.EXIT_UNREADABLE
    (suite,) = root.findall("testsuite")
    assert (suite.get("tests"), suite.get("errors")) == ("1", "1")
    error = suite.find("testcase/error")
    assert error is not None
    assert "document 2: invalid YAML" in (error.get("message") or "")
