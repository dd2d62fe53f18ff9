"""`lint` reads like kubectl and says which file (issue 11 items 6 and 7, issue 19 item 7)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_rules_support import deployment, pod_spec, vllm

from preflight_operator.cli import lint, lint_policy, manifests
from preflight_operator.core.rules import embedded
from preflight_operator.core.rules.embedded import embedded_pod_specs, runs_vllm

sys.path.insert(0, str(Path(__file__).parents[1] / "data" / "hostile"))
import corpus

GOOD = deployment(pod_spec(vllm("m", gpus=1)), name="good")
BAD = deployment(pod_spec(vllm("m", "-tp", "4", gpus=2)), name="bad")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = lint.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_trailing_tabs_are_accepted_as_kubectl_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = yaml.safe_dump(GOOD).replace("kind: Deployment", "kind: Deployment\t")
    path = tmp_path / "tab.yaml"
    path.write_text(text.replace("name: good", "name: good\t"))
    code, out, err = run(capsys, str(path))
    assert (code, err) == (lint.EXIT_OK, "")
    assert "Deployment/good" in out


def test_the_pure_loader_accepts_them_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(yaml, "CSafeLoader")
    monkeypatch.setattr(manifests, "_LOADER", None)
    assert manifests.load_yaml("kind: A\t\nmetadata: {name: a}\t\n") == {
        "kind": "A",
        "metadata": {"name": "a"},
    }
    monkeypatch.setattr(manifests, "_LOADER", None)


def test_a_bad_document_costs_only_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = yaml.safe_dump(GOOD)
    path = tmp_path / "mixed.yaml"
    path.write_text(f"{good}---\nkind: [\n---\n{yaml.safe_dump(BAD)}")
    code, out, err = run(capsys, str(path))
    assert code == lint.EXIT_UNREADABLE  # at the end, after the results
    assert "Deployment/good" in out
    assert "Deployment/bad" in out
    line = good.count("\n") + 3  # the line after "kind: ["
    assert f"{path}: document 2: invalid YAML at line {line}" in err


def test_a_bad_file_costs_only_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.yaml").write_text("kind: Deployment\nmetadata: {name: x\n")
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(BAD))
    (tmp_path / "c.json").write_text("{")
    code, out, err = run(capsys, "--format", "json", str(tmp_path))
    assert code == lint.EXIT_UNREADABLE
    doc = json.loads(out)
    assert [r["workload"] for r in doc["results"]] == ["Deployment/bad"]
    assert [e["file"] for e in doc["errors"]] == [
        str(tmp_path / "a.yaml"),
        str(tmp_path / "c.json"),
    ]
    assert doc["errors"][0]["line"] == 3  # where libyaml finds the mapping unclosed
    assert "a.yaml" in err
    assert "c.json" in err


def test_helm_templates_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deployment.yaml"
    path.write_text(
        'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ include "x" . }}\n'
        "{{- if .Values.gpu }}\nspec: {}\n{{- end }}\n"
    )
    code, _, err = run(capsys, str(path))
    assert code == lint.EXIT_UNREADABLE
    assert f"{path}: this is a Helm/Go template: render it first (`helm template" in err


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("alias-bomb", "excessive aliasing"),
        ("deep-json", "nested more than 1000 levels deep"),
        ("deep-yaml", "nesting depth"),
        ("big-int-json", "an integer of 5000 digits"),
        ("big-int-yaml", "an integer of 5000 digits at line 4"),
    ],
)
def test_hostile_files_are_clean_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, needle: str
) -> None:
    _, name, text, _ = next(c for c in corpus.lint_cases(full=False) if c[0] == case)
    path = tmp_path / name
    path.write_text(text)
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(GOOD))
    started = time.process_time()  # CPU spent, not wall time: a loaded machine waits more
    code, out, err = run(capsys, str(path), str(tmp_path / "good.yaml"))
    assert time.process_time() - started < 2
    assert code == lint.EXIT_UNREADABLE
    assert needle in err
    assert f"{path}: document 1:" in err
    assert "Traceback" not in err
    assert "Deployment/good" in out  # the rest is judged


def test_lone_surrogates_are_printed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_text(corpus.surrogate_json())
    code, out, _ = run(capsys, str(path))
    assert code == lint.EXIT_FAILED
    assert "bad\\ud800name" in out
    code, out, _ = run(capsys, "--format", "json", str(path))
    assert "bad\\ud800name" in out


def test_shm_min_exa_is_a_quantity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    code, _, err = run(capsys, "--shm-min", "1Ei", str(path))
    assert code in (lint.EXIT_OK, lint.EXIT_FAILED)
    assert err == ""


# -- attribution ---------------------------------------------------------------------------


def test_results_name_their_file_and_document_with_the_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # same kind and name in two namespaces: matching by kind/name would mix them up
    first = deployment(pod_spec(vllm("m", gpus=1)), name="llm", namespace="a")
    second = deployment(pod_spec(vllm("m", "-tp", "4", gpus=1)), name="llm", namespace="b")
    (tmp_path / "1.yaml").write_text(yaml.safe_dump(first))
    (tmp_path / "2.yaml").write_text(yaml.safe_dump_all([{"kind": "ConfigMap"}, second]))
    code, out, _ = run(capsys, "--format", "json", str(tmp_path))
    assert code == lint.EXIT_FAILED
    sources = [(r["namespace"], r["source"]) for r in json.loads(out)["results"]]
    assert sources == [
        ("a", {"file": str(tmp_path / "1.yaml"), "document": 1}),
        ("b", {"file": str(tmp_path / "2.yaml"), "document": 2}),
    ]
    _, out, _ = run(capsys, str(tmp_path))
    assert f"Deployment/llm  namespace a  [{tmp_path / '1.yaml'}]" in out
    assert f"Deployment/llm  namespace b  [{tmp_path / '2.yaml'} (document 2)]" in out


def inference_service() -> dict[str, Any]:
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "qwen", "namespace": "ml"},
        "spec": {
            "predictor": {
                "containers": [
                    {
                        "name": "kserve-container",
                        "image": "vllm/vllm-openai:latest",
                        "args": ["--model", "Qwen/Qwen2-7B"],
                    }
                ]
            }
        },
    }


def ray_service() -> dict[str, Any]:
    head = {"name": "head", "image": "rayproject/ray:2.9", "command": ["ray", "start"]}
    worker = {
        "name": "w",
        "image": "img",
        "command": ["sh", "-c", "vllm serve m --tensor-parallel-size 2"],
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "rs"},
        "spec": {
            "rayClusterConfig": {
                "headGroupSpec": {"template": {"spec": {"containers": [head]}}},
                "workerGroupSpecs": [{"template": {"spec": {"containers": [worker]}}}],
            }
        },
    }


def test_embedded_pod_specs_are_found_by_shape() -> None:
    assert [p for p, _ in embedded_pod_specs(inference_service())] == ["spec.predictor"]
    found = embedded_pod_specs(ray_service())
    assert [p for p, _ in found] == [
        "spec.rayClusterConfig.headGroupSpec.template.spec",
        "spec.rayClusterConfig.workerGroupSpecs[0].template.spec",
    ]
    assert [runs_vllm(spec) for _, spec in found] == [False, True]
    assert runs_vllm(inference_service()["spec"]["predictor"])
    assert embedded_pod_specs({"kind": "ConfigMap", "data": {"containers": "x"}}) == []


def test_embedded_search_is_bounded() -> None:
    deep: dict[str, Any] = {"containers": [{"image": "vllm/vllm-openai"}]}
    for _ in range(50):
        deep = {"x": deep}
    assert embedded_pod_specs(deep) == []  # beyond MAX_DEPTH
    # Wide: the walk takes no more than MAX_NODES children of a list, however many there
    # are (counted, not timed: a loaded machine must not decide this test).
    taken = 0

    class Counted(list[Any]):
        def __iter__(self) -> Iterator[Any]:
            nonlocal taken
            for item in super().__iter__():
                taken += 1
                yield item

    wide = {"items": Counted([{"a": [1, 2, 3]}] * 100_000)}
    assert embedded_pod_specs(wide) == []
    assert 0 < taken <= embedded.MAX_NODES


def test_kinds_not_checked_are_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # whatever kinds the engine judges (it judges unknown ones by their pod specs), an
    # object it returns nothing for while it embeds vLLM is listed, not dropped
    monkeypatch.setattr(lint_policy, "check_objects", lambda *_a, **_k: [])
    path = tmp_path / "crs.yaml"
    path.write_text(yaml.safe_dump_all([inference_service(), ray_service(), {"kind": "Other"}]))
    code, out, _ = run(capsys, str(path))
    assert code == lint.EXIT_OK
    assert "InferenceService/qwen  namespace ml" in out
    # InferenceService is a kind of the registry: "not judged" says why, not "not checked"
    assert "not judged: InferenceService embeds a pod spec running vLLM at spec.predictor" in out
    assert "RayService/rs" in out
    assert "spec.rayClusterConfig.workerGroupSpecs[0].template.spec" in out
    assert "Other" not in out


def test_plain_scalars_are_typed_as_kubectl_types_them() -> None:
    # what `kubectl create --dry-run=client -o json` (v1.34.4) printed for the same lines;
    # tests/e2e/test_lint_reads_like_kubectl.py compares with kubectl itself
    text = "".join(
        f"{k}: {v}\n"
        for k, v in {
            "a": "y",
            "c": "Y",
            "f": "1:30",
            "g": "1e3",
            "h": "0755",
            "i": "08",
            "k": "0o17",
            "m": "1_000",
            "r": "2001-12-14",
            "x": "190:20:30.15",
            "n": "no",
        }.items()
    )
    assert manifests.load_yaml(text) == {
        "a": True,
        "c": True,
        "f": "1:30",
        "g": 1000,
        "h": 493,
        "i": 8,
        "k": 15,
        "m": 1000,
        "r": "2001-12-14",
        "x": "190:20:30.15",
        False: False,  # the key n is a boolean too
    }


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("%YAML 1.1\n---\nkind: A\n", "directive at line 1"),
        ("kind: A\nx: .inf\n", ".inf at line 2 has no JSON form"),
    ],
)
def test_what_kubectl_refuses_is_refused(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    problems: list[manifests.Problem] = []
    assert list(manifests.read_all([str(path)], problems)) == []
    assert needle in problems[0].message


def test_json_always_carries_the_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: [\n")
    code, out, _ = run(capsys, "--format", "json", str(path))
    assert code == lint.EXIT_UNREADABLE
    doc = json.loads(out)
    assert doc["results"] == []
    assert doc["errors"] == [
        {
            "file": str(path),
            "document": 1,
            "line": 2,
            "message": "document 1: invalid YAML at line 2, column 1: "
            "did not find expected node content",
        }
    ]


def test_stdin_bytes_that_are_not_utf8(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"kind: caf\xe9\n")))
    code, _, err = run(capsys, "-")
    assert code == lint.EXIT_UNREADABLE
    assert "<stdin>: not UTF-8 text" in err
