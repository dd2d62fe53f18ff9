"""`vllm-preflight lint --format sarif`: valid SARIF 2.1.0 (the OASIS schema, verbatim in
tests/data/schemas/), rules with help links that exist, levels as admission acts, and the
lines code-scanning UIs show the findings at."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_rules_support import deployment, pod_spec, vllm

from preflight_operator.cli import lint, lint_sarif, manifests
from preflight_operator.cli.lint_lines import Lines
from preflight_operator.core.rules import RULE_INFO

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests" / "data" / "schemas" / "sarif-schema-2.1.0.json").read_text())
BAD = ROOT / "tests" / "data" / "manifests" / "bad-tp4-deployment.yaml"
# RFC 3986 URI-reference characters (the schema says format uri-reference, which
# jsonschema checks only with an extra package): no space, no <, >, ", {, }, |, \, ^, `
URI_REFERENCE = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+$")


def sarif(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = lint.main(["--format", "sarif", *argv])
    out, _ = capsys.readouterr()
    doc = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA).validate(doc)
    for uri in _uris(doc):
        assert URI_REFERENCE.match(uri), uri
    return code, doc


def _uris(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["uri"]] if isinstance(node.get("uri"), str) else []
        return found + [u for v in node.values() for u in _uris(v)]
    if isinstance(node, list):
        return [u for v in node for u in _uris(v)]
    return []


def line_of(path: Path, text: str, start: int = 1) -> int:
    """The 1-based line of the first line at or after ``start`` containing ``text``."""
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if i >= start and text in line)


def test_the_schema_is_the_oasis_one_and_it_can_refuse() -> None:
    assert SCHEMA["id"].endswith("/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    validator = jsonschema.Draft4Validator(SCHEMA)
    assert not validator.is_valid({"version": "2.1.0", "runs": [{"tool": {}}]})  # no driver
    assert not validator.is_valid(
        {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [
            {"message": {"text": "m"}, "level": "fatal"}]}]}
    )  # fmt: skip


def test_findings_are_results_at_the_line_of_their_field(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc = sarif(capsys, str(BAD))
    assert code == lint.EXIT_FAILED
    (run,) = doc["runs"]
    assert doc["version"] == "2.1.0"
    assert run["invocations"] == [{"executionSuccessful": True}]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert set(by_rule) == {"gpu-count-too-low", "shm-missing"}
    low = by_rule["gpu-count-too-low"]
    assert low["level"] == "error"
    assert "World size (4)" in low["message"]["text"]
    assert "Fix: request 4 GPUs" in low["message"]["text"]
    physical = low["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": str(BAD.relative_to(ROOT))} or physical[
        "artifactLocation"
    ]["uri"].endswith("tests/data/manifests/bad-tp4-deployment.yaml")
    assert physical["region"]["startLine"] == line_of(BAD, "nvidia.com/gpu: 2")
    # volumeMounts is missing: the line of its container
    shm = by_rule["shm-missing"]["locations"][0]["physicalLocation"]["region"]
    assert shm["startLine"] == line_of(BAD, "- name: vllm")
    rules = run["tool"]["driver"]["rules"]
    assert rules[low["ruleIndex"]]["id"] == "gpu-count-too-low"


def test_every_rule_is_described_and_its_help_link_exists_in_rules_md(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("kind: ConfigMap\napiVersion: v1\nmetadata: {name: a}\n")
    _, doc = sarif(capsys, str(empty))
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(RULE_INFO)
    anchors = _github_anchors((ROOT / "docs" / "RULES.md").read_text())
    for rule in rules:
        info = RULE_INFO[rule["id"]]
        assert rule["shortDescription"]["text"] == info.summary
        assert info.summary in rule["fullDescription"]["text"]
        assert rule["helpUri"] in rule["help"]["text"]
        base, _, anchor = rule["helpUri"].partition("#")
        assert base == lint_sarif.RULES_DOC
        assert anchor in anchors, f"{rule['id']}: docs/RULES.md has no heading #{anchor}"
    levels = {r["id"]: r["defaultConfiguration"]["level"] for r in rules}
    assert levels["gpu-count-too-low"] == "error"
    assert levels["shm-too-small"] == "warning"  # a heuristic rule: Warn under Enforce
    assert levels["cvd-set"] == "warning"
    assert levels["kind-generic"] == "note"


def _github_anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but - and _ dropped, spaces to -."""
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", markdown, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def test_levels_follow_the_policy_action(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # shm-too-small is a heuristic rule: a fail admitted with a warning under Enforce
    small = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "256Mi"}}
    spec = pod_spec(vllm("m", "--tensor-parallel-size", "2", gpus=2), volumes=[small])
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(deployment(spec, name="small", namespace="team")))
    code, doc = sarif(capsys, str(path))
    (result,) = doc["runs"][0]["results"]
    assert (result["ruleId"], result["level"]) == ("shm-too-small", "warning")
    assert result["properties"]["action"] == "Warn"
    assert code == lint.EXIT_OK
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: vllm-preflight.io/v1alpha1\nkind: PreflightPolicy\n"
        "metadata: {name: strict, namespace: team}\n"
        "spec: {action: Audit, rules: {shm-too-small: Enforce}}\n"
    )
    code, doc = sarif(capsys, "--policy", str(policy), str(path))
    (result,) = doc["runs"][0]["results"]
    assert (result["level"], result["properties"]["policy"]) == ("error", "strict")
    assert code == lint.EXIT_FAILED
    assert lint_sarif.level("fail", "Audit") == "note"
    assert lint_sarif.level("warn", "Enforce") == "warning"


def test_lines_in_a_multi_document_stream_and_a_list(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = deployment(pod_spec(vllm("m", "--tensor-parallel-size", "4", gpus=2)), name="b")
    stream = (
        "# Source: chart/templates/cm.yaml\n"
        + yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
        + "---\n# Source: chart/templates/deploy.yaml\n"
        + yaml.safe_dump(bad)
        + "---\n"
        + yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [bad | {
            "metadata": {"name": "in-list", "namespace": "ns"}}]})
    )  # fmt: skip
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stream.encode())))
    code, doc = sarif(capsys, "-")
    assert code == lint.EXIT_FAILED
    lines = stream.splitlines()
    limit_lines = [i for i, line in enumerate(lines, 1) if "nvidia.com/gpu: 2" in line]
    assert len(limit_lines) == 2
    found = {
        r["properties"]["workload"]: r["locations"][0]["physicalLocation"]
        for r in doc["runs"][0]["results"]
        if r["ruleId"] == "gpu-count-too-low"
    }
    # Helm's `# Source:` comment names the template the document came from (its first
    # line: the rendered lines are not the template's); a document without one stays stdin
    assert found["Deployment/b"]["artifactLocation"] == {
        "uri": "chart/templates/deploy.yaml",
        "uriBaseId": lint_sarif.SRCROOT,
    }
    assert found["Deployment/b"]["region"]["startLine"] == 1
    assert found["Deployment/in-list"]["region"]["startLine"] == limit_lines[1]
    assert found["Deployment/in-list"]["artifactLocation"]["uri"] == "%3Cstdin%3E"
    assert limit_lines[0] < limit_lines[1]


def test_kustomizes_origin_annotation_locates_a_document_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kustomize build` with `buildMetadata: [originAnnotations]` writes where each
    object came from (config.kubernetes.io/origin, a YAML text with `path:`)."""
    bad = deployment(pod_spec(vllm("m", "--tensor-parallel-size", "4", gpus=2)), name="k")
    bad["metadata"]["annotations"] = {
        lint_sarif.ORIGIN_ANNOTATION: "path: overlays/prod/deployment.yaml\n"
    }
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(yaml.safe_dump(bad).encode())))
    _, doc = sarif(capsys, "-")
    (low,) = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "gpu-count-too-low"]
    assert low["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "overlays/prod/deployment.yaml",
        "uriBaseId": lint_sarif.SRCROOT,
    }


def test_uris_are_relative_to_the_base_with_its_uri_base_id(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    (repo / "k8s").mkdir(parents=True)
    manifest = repo / "k8s" / "bad.yaml"
    manifest.write_text(BAD.read_text())
    _, doc = sarif(capsys, "--sarif-base", str(repo), str(manifest))
    (run,) = doc["runs"]
    assert run["originalUriBaseIds"] == {lint_sarif.SRCROOT: {"uri": repo.as_uri() + "/"}}
    artifact = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": "k8s/bad.yaml", "uriBaseId": lint_sarif.SRCROOT}
    # a file outside the base: an absolute file URI, no base
    _, doc = sarif(capsys, "--sarif-base", str(repo / "k8s" / "none"), str(manifest))
    artifact = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert artifact["artifactLocation"] == {"uri": manifest.as_uri()}


def test_fingerprints_survive_a_line_inserted_above_a_finding(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 40: alerts track across commits. The same findings after a line is added
    above them: the same partialFingerprints, other lines; two findings never share one."""
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(BAD.read_text())
    _, before = sarif(capsys, "--sarif-base", str(tmp_path), str(manifest))
    manifest.write_text("# a comment a later commit added\n" + BAD.read_text())
    _, after = sarif(capsys, "--sarif-base", str(tmp_path), str(manifest))

    def prints(doc: dict[str, Any]) -> dict[str, tuple[str, int]]:
        return {
            r["ruleId"]: (
                r["partialFingerprints"][lint_sarif.FINGERPRINT],
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
            )
            for r in doc["runs"][0]["results"]
        }

    old, new = prints(before), prints(after)
    assert set(old) == set(new) == {"gpu-count-too-low", "shm-missing"}
    for rule in old:
        assert new[rule][0] == old[rule][0]
        assert new[rule][1] == old[rule][1] + 1
    assert len({fp for fp, _ in old.values()}) == len(old)


def test_rules_have_a_name_and_messages_keep_the_fix_apart(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, doc = sarif(capsys, str(BAD))
    (run,) = doc["runs"]
    names = {r["id"]: r["name"] for r in run["tool"]["driver"]["rules"]}
    assert names["gpu-count-too-low"] == "GpuCountTooLow"
    assert len(set(names.values())) == len(names)
    assert all(r["fullDescription"]["text"] for r in run["tool"]["driver"]["rules"])
    low = next(r for r in run["results"] if r["ruleId"] == "gpu-count-too-low")
    assert "\nFix: request 4 GPUs" in low["message"]["text"]


def test_a_field_the_document_lacks_points_at_the_deepest_part_it_has() -> None:
    text = "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n"
    source = manifests.Source({}, "f", "f", line=10, text=text)
    lines = Lines()
    assert lines.field_line(source, "spec.template.spec.containers[0].volumeMounts") == 15
    assert lines.field_line(source, "spec.template.spec.containers[3]") == 14
    assert lines.field_line(source, "spec.template spec.containers[0]") == 12  # stops at " "
    assert lines.field_line(source, 'metadata.labels["a"]') == 10  # only the object
    assert lines.container_line(source, "a") == 15
    assert lines.container_line(source, "nope") == 10
    unreadable = manifests.Source({}, "f", "f", line=7, text="{: [")
    assert lines.field_line(unreadable, "spec") == 7  # never an error: the document's line


def test_unreadable_input_is_a_notification_and_the_run_unsuccessful(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "odd name [1].yaml"
    path.write_text("kind: Pod\nmetadata: {name: a\n")
    code, doc = sarif(capsys, str(path))
    assert code == lint.EXIT_UNREADABLE
    (invocation,) = doc["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    physical = note["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == path.as_uri()
    assert physical["region"]["startLine"] >= 1
    assert "invalid YAML" in note["message"]["text"]


def test_artifact_uris_are_the_paths_as_given() -> None:
    assert lint_sarif.artifact_uri("k8s/deploy.yaml") == "k8s/deploy.yaml"
    assert lint_sarif.artifact_uri("./k8s/a b.yaml") == "./k8s/a%20b.yaml"
    assert lint_sarif.artifact_uri("/abs/x.yaml") == "file:///abs/x.yaml"
    assert lint_sarif.artifact_uri("<stdin>") == "%3Cstdin%3E"
