"""No output path writes a control byte (issue 34 item 7): every CLI that prints to a terminal
is fed hostile report, status, Event, policy and manifest text (OSC 52 clipboard writes,
OSC 8 links, CSI 2J screen clears, the 8-bit CSI 0x9b, BiDi overrides, a carriage return)
and what it writes holds nothing but text, newlines, tabs and its own colours.

The kubectl plugin's verbs run whole, through a fake kubectl that answers hostile JSON."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from preflight_check.output import render as render_check
from preflight_contract.report import CheckResult, Report
from preflight_contract.terminal import clean, clean_tree, has_control
from preflight_operator.cli import audit, kubectl_plugin, lint, plugin_check_node

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b2J"
BIDI = "\u202egnp.exe"
HOSTILE = f"A{OSC52}B{OSC8}C{CLEAR}D{C1_CSI}E{BIDI}F\rG\x00H\x7fI\x90dcs\x9cJ"


def _assert_clean(text: str, *, colour: bool = False) -> None:
    assert not has_control(text, allow_sgr=colour), repr(text)
    assert "\x9b" not in text
    assert "\u202e" not in text


# -- the sanitiser ---------------------------------------------------------------------------
def test_clean_removes_sequences_whole_and_marks_lone_controls() -> None:
    assert clean(HOSTILE) == "ABclickCDE?gnp.exeF?G?H?IJ"
    assert clean("line 1\n\tline 2") == "line 1\n\tline 2"
    assert clean("a\nb", keep_newlines=False) == "a?b"
    assert clean("plain text ünïcode") == "plain text ünïcode"
    assert clean("\x1b]52;c;unterminated") == ""  # swallowed to the end, as a terminal would
    assert clean_tree({"k\x1b[31m": [HOSTILE, 3, None]}) == {"k": [clean(HOSTILE), 3, None]}


# -- the kubectl plugin, whole, through a fake kubectl -----------------------------------------
def _fake_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gpuval = {
        "apiVersion": "vllm-preflight.io/v1alpha1",
        "kind": "GPUValidation",
        "metadata": {"name": "deployment-vllm", "namespace": "team", "creationTimestamp": "x"},
        "spec": {"workloadRef": {"kind": "Deployment", "name": "vllm"}},
        "status": {
            "workload": f"Deployment/vllm{OSC8}",
            "plan": {"tp": HOSTILE},
            "gpus": HOSTILE,
            "staticVerdict": f"fail{CLEAR}",
            "runtimeVerdict": "fail",
            "reason": HOSTILE,
            "policy": HOSTILE,
            "action": "Warn",
            "static": {
                "findings": [
                    {"id": "tp-divides", "severity": "fail", "message": HOSTILE, "fix": HOSTILE}
                ]
            },
            "runtime": {
                "pods": [
                    {
                        "pod": f"gone{OSC52}",
                        "node": HOSTILE,
                        "verdict": "fail",
                        "failures": [{"id": "ecc", "status": "fail", "message": HOSTILE}],
                        "remediation": HOSTILE,
                    }
                ]
            },
        },
    }
    report = Report(checks=[CheckResult("shm-size", "fail", HOSTILE, HOSTILE)], host=HOSTILE)
    pod = {
        "metadata": {"name": "vllm-1", "namespace": "team", "labels": {}},
        "spec": {"nodeName": HOSTILE},
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "X", "message": HOSTILE}
            ],
            "initContainerStatuses": [
                {
                    "name": "preflight-check",
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": 1,
                            "message": report.to_termination_message(),
                        }
                    },
                }
            ],
        },
    }
    event = {
        "type": f"Warning{CLEAR}",
        "reason": HOSTILE,
        "message": HOSTILE,
        "involvedObject": {"kind": "Pod", "name": "vllm-1"},
        "lastTimestamp": HOSTILE,
    }
    policy = {
        "apiVersion": "vllm-preflight.io/v1alpha1",
        "kind": "PreflightPolicy",
        "metadata": {"name": "p", "namespace": "team"},
        "spec": {"thresholds": {"shmMin": HOSTILE}, "action": "Warn"},
    }
    answers = {
        "gpuvalidations": {"items": [gpuval]},
        "gpuvalidation": gpuval,
        "pod": pod,
        "pods": {"items": [pod]},
        "events": {"items": [event]},
        "preflightpolicies": {"items": [policy]},
    }
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    script = tmp_path / "kubectl"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"answers = json.load(open({str(tmp_path / 'answers.json')!r}))\n"
        "args = [a for a in sys.argv[1:]]\n"
        "if args[:2] == ['config', 'view']:\n"
        "    print('team'); sys.exit(0)\n"
        "if args[0] == 'api-resources':\n"
        "    names = ['deployments.apps', 'configmaps', 'preflightpolicies.vllm-preflight.io']\n"
        "    print('\\n'.join(names)); sys.exit(0)\n"
        "res = args[1].split('.')[0]\n"
        "if res == 'gpuvalidations' and not args[2].startswith('-'):\n"
        "    res = 'gpuvalidation'\n"
        "print(json.dumps(answers.get(res, {'items': []})))\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("KUBECTL", str(script))


@pytest.mark.parametrize(
    "argv",
    [
        ["status", "-A", "--color", "always"],
        ["status", "-n", "team", "--color", "never"],
        ["explain", "deploy/vllm", "-n", "team", "--color", "always"],
        ["explain", "pod/vllm-1", "-n", "team", "--color", "never"],
        ["explain", "vllm", "-n", "team", "--color", "always"],
        ["audit", "-n", "team", "--color", "always"],
    ],
)
def test_no_plugin_verb_writes_a_control_byte(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _fake_kubectl(tmp_path, monkeypatch)
    out = io.StringIO()
    kubectl_plugin.main(argv, out=out)
    written = out.getvalue() + capsys.readouterr().out
    assert written.strip(), "the verb printed nothing: the fake kubectl did not answer"
    _assert_clean(written, colour="always" in argv)
    if argv[0] == "explain":
        assert "click" in written  # the text stays, the link goes
    if argv[0] == "audit":
        assert "note: PreflightPolicy team/p" in written  # the policy's problem, quoting it


def test_an_error_from_kubectl_is_printed_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "kubectl"
    fake.write_text(
        f"#!/bin/sh\nprintf '{CLEAR}error: {OSC8}' >&2\nexit 1\n".replace("\x1b", "\\033")
    )
    fake.chmod(0o755)
    monkeypatch.setenv("KUBECTL", str(fake))
    assert kubectl_plugin.main(["status", "-A"], out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert "error: click" in err
    _assert_clean(err)


def test_check_node_outcome_is_clean() -> None:
    report = Report(checks=[CheckResult("ecc", "fail", HOSTILE, HOSTILE)], host=HOSTILE)
    pod = {
        "metadata": {"name": "c"},
        "status": {
            "containerStatuses": [
                {
                    "name": "preflight-check",
                    "state": {
                        "terminated": {"exitCode": 1, "message": report.to_termination_message()}
                    },
                }
            ]
        },
    }
    got = plugin_check_node.canary_outcome([pod])
    assert got.done
    _assert_clean(got.text)
    raw = {"metadata": {"name": "c"}, "status": {"containerStatuses": [
        {"name": "preflight-check", "state": {"terminated": {"exitCode": 2, "message": HOSTILE}}}
    ]}}  # fmt: skip
    _assert_clean(plugin_check_node.canary_outcome([raw]).text)


# -- lint's text report and the checker's table -------------------------------------------------
def test_lint_text_report_is_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"vllm{CLEAR}", "namespace": f"t{OSC52}"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": f"vllm{BIDI}",
                            "image": "vllm/vllm-openai:v0.8.5",
                            "command": ["vllm", "serve", f"m{OSC8}", "-tp", f"3{C1_CSI}"],
                            "resources": {"limits": {"nvidia.com/gpu": "2"}},
                        }
                    ]
                }
            }
        },
    }
    path = tmp_path / "d.json"
    path.write_text(json.dumps(manifest))
    lint.main([str(path)])
    captured = capsys.readouterr()
    assert "vllm" in captured.out
    _assert_clean(captured.out)
    _assert_clean(captured.err)


@pytest.mark.parametrize("colour", [False, True])
def test_check_table_is_clean(colour: bool) -> None:
    report = Report(
        checks=[CheckResult("shm-size", "fail", HOSTILE, HOSTILE)],
        plan={"tp": HOSTILE, "pp": 1, "dp_local": 1, "gpus_needed": 1, "source": HOSTILE},
        error=HOSTILE,
    )
    _assert_clean(render_check(report, colour=colour), colour=colour)


def test_operator_log_lines_are_clean() -> None:
    """`kubectl logs` of the operator reaches a terminal too: every root handler's lines go
    through the sanitiser once the operator configured logging."""
    import logging

    from preflight_operator import main

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        main.configure_logging(verbose=False)
        main.configure_logging(verbose=False)  # twice: wrapped once
        # a logger of this test's own, enabled whatever earlier tests left behind (a
        # dictConfig disables existing loggers; kopf sets levels): only the sanitiser is
        # under test here
        logging.disable(logging.NOTSET)
        logger = logging.getLogger("vllm_preflight_terminal_output_test")
        logger.disabled, logger.propagate = False, True
        logger.setLevel(logging.INFO)
        logger.warning("peer said %s", HOSTILE)
    finally:
        root.removeHandler(handler)
    written = stream.getvalue()
    assert "peer said ABclick" in written
    _assert_clean(written)


def test_audit_render_is_clean() -> None:
    row = audit.AuditRow("ns", "Deployment", f"x{CLEAR}", HOSTILE, "Warn", "fail", "warn", "", ())
    _assert_clean(audit.render([row], colour=True), colour=True)
