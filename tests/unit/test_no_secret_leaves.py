"""No secret leaves a pod (issue 36 item 2): known secrets fed through every output channel,
then grepped for. Four secrets, given the ways a pod carries them:

* URL userinfo: ``HF_ENDPOINT=http://mirroruser:UserinfoSecret42@...``;
* a Secret-valued env (``valueFrom.secretKeyRef``; the injector names it in
  PREFLIGHT_SECRET_ENV, the checker sees only its value);
* a token header: ``Authorization: Bearer hf_HeaderSecret77``;
* a literal token in a secret-named env: ``HF_TOKEN: hf_LiteralSecret123``.

The channels: the checker's JSON report, compact termination message, stdout and stderr
(a normal run and a usage error); from the operator, the GPUValidation status, the
Events, the metrics text, the admission denial and warnings, lint's text, JSON, SARIF and
JUnit output, and the operator's log lines. None may hold a secret, and the redaction
mark must show, so the reader knows something was hidden. The checks are run through the
real code paths; test_redaction_is_what_hides_them shows the same channels leak without
the layer, so this test can fail.
"""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import generate_latest

from preflight_check.cli import main
from preflight_contract import envnames, redact
from preflight_contract.redact import MARK
from preflight_contract.report import CheckResult, Report
from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check
from preflight_operator.cli import lint
from preflight_operator.core import admissiondecision, constants, events
from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.gpuvalidation import StatusInputs, build_status
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.podresults import pod_result
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.rules import redaction
from preflight_operator.core.workloads import WorkloadRef
from preflight_operator.main import _TerminalSafe
from preflight_operator.runtime import metrics

USERINFO = "UserinfoSecret42"
SECRET_REF = "SecretRefValue99"
HEADER = "hf_HeaderSecret77"
LITERAL = "hf_LiteralSecret123"
SECRETS = (USERINFO, SECRET_REF, HEADER, LITERAL)
ENDPOINT = f"http://mirroruser:{USERINFO}@127.0.0.1:9"
REF = WorkloadRef("ns", "Deployment", "leak", "apps/v1")

# The manifest: each secret where a rule quotes it (vLLM's parser names the bad value).
MANIFEST: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "leak", "namespace": "ns"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "leak"}},
        "template": {
            "metadata": {"labels": {"app": "leak"}},
            "spec": {
                "containers": [
                    {
                        "name": "vllm",
                        "image": "vllm/vllm-openai:v0.11.0",
                        "command": [
                            "vllm",
                            "serve",
                            "Qwen/Qwen3-8B",
                            "--api-key",
                            "$(API_KEY)",
                            "--tensor-parallel-size",
                            f"Authorization: Bearer {HEADER}",
                            "--pipeline-parallel-size",
                            f"x-{LITERAL}",
                            "--data-parallel-size",
                            f"{ENDPOINT}/x",
                        ],
                        "env": [
                            {"name": "HF_TOKEN", "value": LITERAL},
                            {"name": "HF_ENDPOINT", "value": ENDPOINT},
                            {
                                "name": "API_KEY",
                                "valueFrom": {"secretKeyRef": {"name": "api", "key": "key"}},
                            },
                        ],
                        "resources": {"limits": {"nvidia.com/gpu": 2}},
                    }
                ]
            },
        },
    },
}

# The check container's env as the kubelet gives it (the Secret's value filled in).
CHECK_ENV = {
    "HF_ENDPOINT": ENDPOINT,
    "HF_TOKEN": LITERAL,
    "API_KEY": SECRET_REF,
    envnames.SECRET_ENV: "API_KEY",
    # a variable the checker quotes when it is malformed: the header rides in it
    "CUDA_VISIBLE_DEVICES": f"Authorization: Bearer {HEADER}",
}


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    return {**CHECK_ENV, "HOME": str(tmp_path / "home")}


def _checker_outputs(env: dict[str, str], tmp_path: Path) -> tuple[str, str]:
    """(everything the checker wrote, its termination message)."""
    # the model name comes from the Secret too: it is quoted in the model checks
    args = f"vllm serve acme/{SECRET_REF} --api-key {SECRET_REF} -tp 2"
    run = run_check(fake_host(h200_machine(2), env), ["--vllm-args", args], tmp_path)
    term = (tmp_path / "termination-log").read_text()
    report = (tmp_path / "report.json").read_text()
    return run.stdout + run.stderr + report + term, term


def test_the_checkers_every_output(home: dict[str, str], tmp_path: Path) -> None:
    text, term = _checker_outputs(home, tmp_path)
    assert not _leaks(text)
    assert MARK in text
    assert MARK in term
    assert f"acme/{MARK}" in text  # the Secret's value, by exact match


def test_the_checkers_usage_error(home: dict[str, str], tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    term = tmp_path / "term"
    main(
        ["--vllm-args", f"vllm serve m -pp {SECRET_REF}", "--termination-log", str(term)],
        host=fake_host(h200_machine(1), home),
        out=out,
        err=err,
    )
    text = out.getvalue() + err.getvalue() + term.read_text()
    assert "usage" in text
    assert not _leaks(text)
    assert MARK in text


def _pod(message: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "leak-0", "namespace": "ns", "uid": "u1"},
        "spec": {"nodeName": "n1"},
        "status": {
            "initContainerStatuses": [
                {
                    "name": constants.CHECK_CONTAINER,
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": 1,
                            "message": message,
                            "finishedAt": "2026-01-01T00:00:00Z",
                        }
                    },
                }
            ]
        },
    }


def _hostile_message() -> str:
    """A termination message from a checker without the layer (or a hostile pod): the
    operator's patterns must still hide what they can see is a secret."""
    report = Report(
        checks=[
            CheckResult(
                "model-source",
                "fail",
                f"the Hub at {ENDPOINT} refused Authorization: Bearer {HEADER}",
                f"set HF_TOKEN={LITERAL} from a Secret",
                {"endpoint": ENDPOINT},
            )
        ]
    )
    return report.to_termination_message()


@pytest.fixture
def operator_channels(
    home: dict[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> str:
    """Everything the operator writes for the manifest and two pods' results: one from the
    real checker, one hostile."""
    caplog.set_level(logging.DEBUG)
    _, term = _checker_outputs(home, tmp_path)
    static = RulesAnalyser().analyse(MANIFEST, PolicySpec())
    assert static.failures  # the rules quote the values: a denial under Enforce
    results = [pod_result(_pod(term)), pod_result(_pod(_hostile_message()))]
    assert all(r is not None for r in results)
    live = tuple(r for r in results if r is not None)
    policy = ResolvedPolicy("", PolicySpec())
    status = build_status(
        StatusInputs(
            ref=REF,
            generation=1,
            static=static,
            static_checked_at="2026-01-01T00:00:00Z",
            policy=policy,
            live_results=live,
            pending_pods=0,
            previous={},
            remediation=None,
            now="2026-01-01T00:00:05Z",
        )
    )
    pieces = [json.dumps(status)]
    workload = events.InvolvedObject.of(REF)
    for result in live:
        pod = events.InvolvedObject("v1", "Pod", "ns", result.pod)
        for event in events.pod_result_events(result, pod, workload):
            pieces.append(json.dumps(events.to_body(event, "op-0", "now")))
        metrics.record_check(_pod(""), result)
    for event in events.static_events(static, workload, "Enforce"):
        pieces.append(json.dumps(events.to_body(event, "op-0", "now")))
    pieces.append(generate_latest(metrics.REGISTRY).decode())
    decision = admissiondecision.decide(static, policy, REF)
    assert not decision.allowed
    pieces += [decision.message, *decision.warnings]
    warned = admissiondecision.decide(static, ResolvedPolicy("w", PolicySpec(action="Warn")), REF)
    assert warned.warnings
    pieces += list(warned.warnings)
    pieces.append(caplog.text)
    return "\n".join(pieces)


def test_the_operators_every_output(operator_channels: str) -> None:
    assert not _leaks(operator_channels)
    assert f"http://{MARK}@" in operator_channels
    assert f"Bearer {MARK}" in operator_channels


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit"])
def test_every_lint_format(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "leak.yaml"
    path.write_text(yaml.safe_dump(MANIFEST))
    lint.main(["--format", fmt, str(path)])
    out, err = capsys.readouterr()
    assert not _leaks(out + err)
    assert MARK in out


def test_an_operator_log_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_OperatorOwnToken1")  # the model cache's token
    record = logging.LogRecord(
        "preflight_operator",
        logging.WARNING,
        __file__,
        1,
        "pod said %s; cache with %s",
        (_hostile_message(), "hf_OperatorOwnToken1"),
        None,
    )
    line = _TerminalSafe(logging.Formatter("%(message)s")).format(record)
    assert not _leaks(line)
    assert "hf_OperatorOwnToken1" not in line
    assert MARK in line


def test_redaction_is_what_hides_them(
    home: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the layer the same inputs leak (so the tests above can fail): the checker's
    report and the rules' findings."""
    monkeypatch.setattr(redact.Redactor, "text", lambda self, value: str(value))
    text, _ = _checker_outputs(home, tmp_path)
    assert set(_leaks(text)) >= {USERINFO, SECRET_REF, HEADER}
    static = RulesAnalyser().analyse(MANIFEST, PolicySpec())
    quoted = " ".join(f.one_line() for f in static.findings)
    assert set(_leaks(quoted)) == {USERINFO, HEADER, LITERAL}
    assert redaction.text(quoted) == quoted


def test_redaction_never_changes_a_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """It runs after the rules judged, on what is written: the same verdict and findings
    (ids, severities, fields) with and without it."""
    redacted = RulesAnalyser().analyse(MANIFEST, PolicySpec())
    monkeypatch.setattr(redact.Redactor, "text", lambda self, value: str(value))
    plain = RulesAnalyser().analyse(MANIFEST, PolicySpec())
    assert redacted.verdict == plain.verdict == "fail"
    shape = [(f.id, f.severity, f.field) for f in plain.findings]
    assert [(f.id, f.severity, f.field) for f in redacted.findings] == shape
