"""`vllm-preflight lint` where CI lives: the pre-commit hook, and a multi-document stream on
standard input as `helm template` and `kustomize build` write one."""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from preflight_dev.testing import BinariesNotFound, find_bin_dir
from preflight_operator.cli import lint

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "tests" / "data" / "manifests"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
# pre-commit's manifest schema: MANIFEST_HOOK_DICT in pre_commit/clientlib.py
# (pre-commit/pre-commit at a9bba55a3f74068b53f4bd4d831d7e05e34eae6c, v4.6.2-2)
REQUIRED = {"id", "name", "entry", "language"}
OPTIONAL = {
    "minimum_pre_commit_version", "alias", "files", "exclude", "types", "types_or",
    "exclude_types", "additional_dependencies", "args", "always_run", "fail_fast",
    "pass_filenames", "description", "language_version", "log_file", "require_serial",
    "stages", "verbose",
}  # fmt: skip
BOOLEANS = {"always_run", "fail_fast", "pass_filenames", "require_serial", "verbose"}

# What `helm template` prints: `---` and a `# Source:` comment before each document
# (helm v3.19.5 cmd/helm/template.go, "---\n# Source: %s\n%s\n"); a trailing empty
# document as some charts leave. The real helm and kubectl are run below where present.
HELM_STREAM = """---
# Source: vllm/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: vllm-svc
  labels:
    app.kubernetes.io/name: vllm
spec:
  ports:
    - port: 8000
---
# Source: vllm/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: release-vllm
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          args: ["meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "4"]
          resources:
            limits:
              nvidia.com/gpu: 2
---
"""


def hooks() -> list[dict[str, object]]:
    loaded = yaml.safe_load(HOOKS.read_text())
    assert isinstance(loaded, list)
    return loaded


def test_the_hook_manifest_has_pre_commits_shape() -> None:
    (hook,) = hooks()
    assert set(hook) >= REQUIRED
    assert set(hook) <= REQUIRED | OPTIONAL, set(hook) - REQUIRED - OPTIONAL
    assert all(isinstance(hook[k], bool) for k in BOOLEANS & set(hook))
    assert hook["id"] == "vllm-preflight-lint"
    assert hook["language"] == "python"  # pre-commit pip-installs this repository
    files, exclude = re.compile(str(hook["files"])), re.compile(str(hook["exclude"]))
    assert all(files.search(p) for p in ("k8s/a.yaml", "b.yml", "c.json"))
    assert not files.search("values.yaml.tpl")
    assert exclude.search("charts/vllm/templates/deployment.yaml")
    assert not exclude.search("k8s/deployment.yaml")


def test_the_hook_entry_runs_lint(tmp_path: Path) -> None:
    """What pre-commit runs: the entry, its args, then the file names; the script is the
    one this repository installs (pyproject.toml's [project.scripts])."""
    (hook,) = hooks()
    argv = shlex.split(str(hook["entry"]))
    assert argv[0] == "vllm-preflight"
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / argv[0]).exists():
        pytest.skip("the vllm-preflight script is not installed beside this Python")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}

    def run(*files: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*argv, *(str(f) for f in files)],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip

    bad = run(MANIFESTS / "bad-tp4-deployment.yaml", MANIFESTS / "good-tp2-deployment.yaml")
    assert bad.returncode == lint.EXIT_FAILED, bad.stderr
    assert "gpu-count-too-low" in bad.stdout
    good = run(MANIFESTS / "good-tp2-deployment.yaml")
    assert good.returncode == lint.EXIT_OK, good.stderr


def test_a_helm_template_stream_on_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(HELM_STREAM.encode())))
    code = lint.main(["-"])
    out, err = capsys.readouterr()
    assert err == ""
    assert code == lint.EXIT_FAILED
    assert "Deployment/release-vllm" in out
    assert "[<stdin> (document 2)]" in out  # documents are counted as helm printed them
    assert "gpu-count-too-low" in out
    assert "1 vLLM container(s): 0 pass, 0 warn, 1 fail" in out


def test_a_kustomize_stream_on_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `kustomize build` / `kubectl kustomize`: documents joined by ---, no leading ---,
    # namespaces set by the kustomization, a ConfigMap the workload reads its args from
    stream = """apiVersion: v1
data:
  TP: "4"
kind: ConfigMap
metadata:
  name: vllm-args-5h2k9
  namespace: llm
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: llm
spec:
  template:
    spec:
      containers:
      - args: [m, --tensor-parallel-size, $(TP)]
        env:
        - name: TP
          valueFrom: {configMapKeyRef: {name: vllm-args-5h2k9, key: TP}}
        image: vllm/vllm-openai:v0.11.0
        name: vllm
        resources:
          limits: {nvidia.com/gpu: 2}
"""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stream.encode())))
    code = lint.main(["--format", "json", "-"])
    out, err = capsys.readouterr()
    assert err == ""
    assert code == lint.EXIT_FAILED
    (result,) = yaml.safe_load(out)["results"]
    assert result["namespace"] == "llm"
    assert result["plan"]["tp"] == 4  # read through the ConfigMap of the same stream
    assert result["source"] == {"file": "<stdin>", "document": 2}


def _tool(name: str) -> str:
    try:
        path = find_bin_dir() / name
    except BinariesNotFound as err:  # pragma: no cover - depends on the machine
        pytest.skip(f"no {name} binary: {err}")
    if not path.exists():  # pragma: no cover
        pytest.skip(f"no {name} in {path.parent}")
    return str(path)


RUN_LINT = "import sys; from preflight_operator.cli import lint; sys.exit(lint.main(sys.argv[1:]))"


def _lint_stdin(stream: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`... | vllm-preflight lint ARGS -` as a shell pipeline would run it."""
    return subprocess.run(
        [sys.executable, "-c", RUN_LINT, *args, "-"],
        input=stream, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_the_helm_template_recipe(tmp_path: Path) -> None:
    """docs/RULES.md's `helm template RELEASE CHART | vllm-preflight lint -`, with helm."""
    chart = tmp_path / "vllm"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: vllm\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("tp: 4\ngpus: 2\n")
    (chart / "templates" / "deployment.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-vllm\n"
        "spec:\n  template:\n    spec:\n      containers:\n        - name: vllm\n"
        "          image: vllm/vllm-openai:v0.11.0\n"
        '          args: ["m", "--tensor-parallel-size", "{{ .Values.tp }}"]\n'
        "          resources:\n            limits:\n"
        "              nvidia.com/gpu: {{ .Values.gpus }}\n"
    )
    (chart / "templates" / "empty.yaml").write_text(
        "{{- if .Values.never }}\nkind: Pod\n{{- end }}\n"
    )
    rendered = subprocess.run(
        [_tool("helm"), "template", "rel", str(chart), "-n", "llm"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert "# Source: vllm/templates/deployment.yaml" in rendered
    bad = _lint_stdin(rendered, "-n", "llm")
    assert bad.returncode == lint.EXIT_FAILED, bad.stderr
    assert "Deployment/rel-vllm  namespace llm  [<stdin>" in bad.stdout
    assert "gpu-count-too-low" in bad.stdout
    fixed = subprocess.run(
        [_tool("helm"), "template", "rel", str(chart), "--set", "gpus=4"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    good = _lint_stdin(fixed, "--format", "sarif")
    assert good.returncode in (lint.EXIT_OK, lint.EXIT_FAILED), good.stderr
    results = yaml.safe_load(good.stdout)["runs"][0]["results"]
    assert "gpu-count-too-low" not in {r["ruleId"] for r in results}


def test_the_kustomize_recipe(tmp_path: Path) -> None:
    """docs/RULES.md's `kubectl kustomize DIR | vllm-preflight lint -`, with kubectl."""
    (tmp_path / "kustomization.yaml").write_text(
        "namespace: llm\nresources: [deployment.yaml]\n"
        "configMapGenerator:\n  - name: vllm-args\n    literals: [TP=4]\n"
    )
    (tmp_path / "deployment.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: vllm}\nspec:\n  template:\n"
        "    spec:\n      containers:\n        - name: vllm\n"
        "          image: vllm/vllm-openai:v0.11.0\n"
        '          args: ["m", "--tensor-parallel-size", "$(TP)"]\n'
        "          env: [{name: TP, valueFrom: {configMapKeyRef: {name: vllm-args, key: TP}}}]\n"
        "          resources: {limits: {nvidia.com/gpu: 2}}\n"
    )
    built = subprocess.run(
        [_tool("kubectl"), "kustomize", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert "vllm-args-" in built  # the generated ConfigMap's hashed name, referred to
    result = _lint_stdin(built, "--format", "json")
    assert result.returncode == lint.EXIT_FAILED, result.stderr
    (found,) = yaml.safe_load(result.stdout)["results"]
    assert (found["namespace"], found["plan"]["tp"]) == ("llm", 4)
