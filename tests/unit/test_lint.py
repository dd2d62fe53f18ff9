"""`vllm-preflight lint` through main(): exit codes, output shapes, unreadable input."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_rules_support import deployment, pod_spec, service, vllm

from preflight_operator import cli
from preflight_operator.cli import lint

SAMPLES = Path(__file__).parents[1] / "data" / "manifests"
GOOD = SAMPLES / "good-tp2-deployment.yaml"
BAD = SAMPLES / "bad-tp4-deployment.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = lint.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, *docs: Any) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_good_sample_passes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(GOOD))
    assert code == lint.EXIT_OK
    assert "Deployment/vllm-good" in out
    assert "=> PASS" in out
    assert err == ""


def test_bad_sample_fails_with_the_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(BAD))
    assert code == lint.EXIT_FAILED
    assert "gpu-count-too-low" in out
    assert "shm-missing" in out
    assert "World size (4) is larger than the number of available GPUs (2)" in out


def test_json_shape_is_exact(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--format", "json", str(BAD), str(GOOD))
    assert code == lint.EXIT_FAILED
    doc = json.loads(out)
    assert list(doc) == ["schema", "results"]
    assert doc["schema"] == 1
    bad, good = doc["results"]
    assert list(bad) == [
        "workload",
        "namespace",
        "container",
        "plan",
        "gpus_requested",
        "verdict",
        "findings",
        "source",
    ]
    assert bad["source"] == {"file": str(BAD), "document": 1}
    assert bad["workload"] == "Deployment/vllm-bad"
    assert bad["container"] == "vllm"
    assert bad["plan"] == {"tp": 4, "pp": 1, "dp": 1, "dp_local": 1, "gpus_needed": 4}
    assert bad["gpus_requested"] == 2
    assert bad["verdict"] == "fail"
    assert {f["id"] for f in bad["findings"]} == {"gpu-count-too-low", "shm-missing"}
    for f in bad["findings"]:
        assert list(f) == ["id", "severity", "message", "field", "fix"]
    assert good["verdict"] == "pass"
    assert good["findings"] == []


def test_directory_recursion_and_cross_file_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "apps").mkdir()
    (tmp_path / ".git").mkdir()
    write(tmp_path / "apps", "deploy.yml", deployment(pod_spec(vllm("m", gpus=1))))
    write(tmp_path, "svc.yaml", service("vllm"))  # another file, same namespace
    (tmp_path / ".git" / "bad.yaml").write_text("{{ not yaml")
    (tmp_path / "README.md").write_text("not a manifest")
    code, out, _ = run(capsys, str(tmp_path))
    assert code == lint.EXIT_FAILED
    assert "vllm-port-service" in out


def test_json_files_and_list_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = {"apiVersion": "v1", "kind": "List", "items": [deployment(pod_spec(vllm("m", gpus=1)))]}
    (tmp_path / "list.json").write_text(json.dumps(items))
    code, out, _ = run(capsys, "--format", "json", str(tmp_path / "list.json"))
    assert code == lint.EXIT_OK
    assert [r["workload"] for r in json.loads(out)["results"]] == ["Deployment/llm"]


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(BAD.read_text()))
    code, out, _ = run(capsys, "-")
    assert code == lint.EXIT_FAILED
    assert "Deployment/vllm-bad" in out


def test_no_vllm_workloads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "x.yaml", service("web"), None)
    code, out, _ = run(capsys, str(path))
    assert code == lint.EXIT_OK
    assert "no vLLM workloads" in out
    code, out, _ = run(capsys, "--format", "json", str(path))
    assert json.loads(out) == {"schema": 1, "results": []}


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("a: [1\n", "document 1: invalid YAML at line 2"),
        ("kind: Service\n---\nkind: [\n", "document 2: invalid YAML"),
        ("- just\n- a list\n", "is a list, not a Kubernetes object"),
        ("plain scalar\n", "is a str"),
        ("kind: List\nitems: [3]\n", "items[0]: is a int"),
        ("a: !!python/object:os.system {}\n", "document 1"),  # safe_load refuses it
    ],
)
def test_unreadable_input_exits_2_naming_file_and_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, needle: str
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(content)
    code, out, err = run(capsys, str(path))
    assert code == lint.EXIT_UNREADABLE
    assert "Traceback" not in out
    assert str(path) in err
    assert needle in err
    assert "Traceback" not in err


def test_missing_file_binary_file_and_bad_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, str(tmp_path / "nope.yaml"))
    assert (code, "no such file" in err) == (lint.EXIT_UNREADABLE, True)
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00kind")
    code, _, err = run(capsys, str(binary))
    assert (code, "not UTF-8" in err) == (lint.EXIT_UNREADABLE, True)
    bad_json = tmp_path / "c.json"
    bad_json.write_text("{")
    code, _, err = run(capsys, str(bad_json))
    assert (code, "invalid JSON at line 1" in err) == (lint.EXIT_UNREADABLE, True)


def test_thresholds_and_disable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    volume = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "512Mi"}}
    path = write(
        tmp_path, "d.yaml", deployment(pod_spec(vllm("m", "-tp", "2", gpus=3), volumes=(volume,)))
    )
    code, out, _ = run(capsys, "--format", "json", str(path))
    # shm-too-small fails, but its threshold is a heuristic: Warn by default, exit 0
    assert code == lint.EXIT_OK
    assert json.loads(out)["results"][0]["verdict"] == "fail"
    assert {f["id"] for f in json.loads(out)["results"][0]["findings"]} == {
        "shm-too-small",
        "gpu-count-extra",
    }
    code, out, _ = run(capsys, "--shm-min", "256Mi", "--allow-extra-gpus", "1", str(path))
    assert code == lint.EXIT_OK
    assert "=> PASS" in out
    code, _, _ = run(capsys, "--disable", "shm-too-small,gpu-count-extra", str(path))
    assert code == lint.EXIT_OK
    code, _, _ = run(
        capsys, "--disable", "shm-too-small", "--disable", "gpu-count-extra", str(path)
    )
    assert code == lint.EXIT_OK


def test_a_former_rule_id_is_accepted_by_disable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = [{"name": "TP", "valueFrom": {"secretKeyRef": {"name": "s", "key": "tp"}}}]
    path = write(
        tmp_path, "d.yaml", deployment(pod_spec(vllm("m", "-tp", "$(TP)", gpus=2, env=env)))
    )
    code, out, _ = run(capsys, "--disable", "vllm-env-unresolved", "--format", "json", str(path))
    assert code == lint.EXIT_OK
    assert json.loads(out)["results"][0]["findings"] == []  # plan-unresolved, by its old id


@pytest.mark.parametrize(
    "argv",
    [
        ["--disable", "no-such-rule", "x.yaml"],
        ["--shm-min", "lots", "x.yaml"],
        ["--allow-extra-gpus", "-1", "x.yaml"],
        ["--format", "xml", "x.yaml"],
        [],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *argv)
    assert code == lint.EXIT_UNREADABLE
    assert err


def test_namespace_option_fills_unset_namespaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "d.yaml", deployment(pod_spec(vllm("m", gpus=1)), namespace=None))
    _, out, _ = run(capsys, "--format", "json", "-n", "team-a", str(path))
    assert json.loads(out)["results"][0]["namespace"] == "team-a"


def test_list_rules(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--list-rules")
    assert code == lint.EXIT_OK
    assert "gpu-count-too-low" in out


def test_reachable_from_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["lint", str(GOOD)]) == lint.EXIT_OK
    assert cli.main(["lint", str(BAD)]) == lint.EXIT_FAILED
    capsys.readouterr()
