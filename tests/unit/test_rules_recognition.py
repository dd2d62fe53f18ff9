"""Recognition apart from reading (issue 35 item 1): a container that launches vLLM is
named, with the signal that recognised it and what could not be read, even where the
reader cannot read its command line; a container that only talks to vLLM is not.

The unreadable forms are the issue's, measured on real manifests: an argv built with
``set --`` and ``exec vllm "$@"`` with ``envFrom`` of a ConfigMap not in the file,
``echo ... | xargs vllm``, and a script written by a here-document and then run. Another
branch may teach the reader these forms; then the result is judged instead, and these
tests still hold (they ask for a result that says why it is not judged, or a judged one).
"""

from __future__ import annotations

from typing import Any

import pytest
from test_rules_support import check, deployment, pod_spec, vllm

from preflight_operator.core.rules import UNJUDGED, WARN, recognise
from preflight_operator.core.rules.recognition import (
    ENTRYPOINT,
    ENV,
    IMAGE,
    MAX_TEXT,
    OPTIONS,
    unread_parts,
)

CLIENT_IMAGE = "curlimages/curl:8.10.1"
PLAIN_IMAGE = "python:3.12-slim"

SET_ARGV = """\
set -- serve "$MODEL" --tensor-parallel-size 2
if [ -n "$MAX_LEN" ]; then set -- "$@" --max-model-len "$MAX_LEN"; fi
exec vllm "$@"
"""
XARGS = 'echo "serve m --tensor-parallel-size 4" | xargs vllm'
HEREDOC = """\
cat > /tmp/run.sh <<'EOF2'
vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2
EOF2
bash /tmp/run.sh
"""

# (script, image, extra container fields): each launches vLLM in a way the reader may not
# read; the issue measured "no vLLM workloads found" for each
UNREADABLE: list[tuple[str, str, dict[str, Any]]] = [
    (SET_ARGV, PLAIN_IMAGE, {"envFrom": [{"configMapRef": {"name": "vllm-settings"}}]}),
    (XARGS, PLAIN_IMAGE, {}),
    (HEREDOC, PLAIN_IMAGE, {}),
    (SET_ARGV, "vllm/vllm-openai:v0.11.0", {}),
]


def _container(script: str, image: str, **extra: Any) -> dict[str, Any]:
    return vllm(command=["bash", "-c", script], image=image, **extra)


@pytest.mark.parametrize(("script", "image", "extra"), UNREADABLE)
def test_a_recognised_vllm_is_never_silent(script: str, image: str, extra: dict[str, Any]) -> None:
    results = check(deployment(pod_spec(_container(script, image, **extra))))
    assert len(results) == 1, results  # never "no vLLM workloads found"
    result = results[0]
    if result.verdict == UNJUDGED:
        assert result.unjudged
        (finding,) = result.findings
        assert finding.id == "vllm-command-unparsed"
        assert finding.severity == WARN
        assert "recognised as vLLM by:" in finding.message
        assert finding.field.startswith("spec.template.spec.containers[0].")
    else:  # the reader read it: judged like any other
        assert result.plan is not None or result.findings


def test_forms_the_reader_learned_are_judged_by_their_plan() -> None:
    """`set --` with "$@" and a here-document script were unjudged when this file was
    written (issue 35); the reader reads both now (shio.py), so they are judged on TP 2."""
    extra = {"envFrom": [{"configMapRef": {"name": "vllm-settings"}}]}
    for script, fields in ((SET_ARGV, extra), (HEREDOC, {})):
        (result,) = check(deployment(pod_spec(_container(script, PLAIN_IMAGE, **fields))))
        assert result.verdict != UNJUDGED, result.unjudged
        assert result.plan is not None
        assert result.plan.tp == 2


def test_the_finding_names_what_was_not_read() -> None:
    """A script fetched at run time is not in the manifest: the finding names it, and the
    env the manifest does not hold."""
    script = "curl -s http://cfg/run.sh > /tmp/run.sh\nbash /tmp/run.sh  # vllm serve"
    extra = {"envFrom": [{"configMapRef": {"name": "vllm-settings"}}]}
    (result,) = check(deployment(pod_spec(_container(script, PLAIN_IMAGE, **extra))))
    assert result.verdict == UNJUDGED
    assert "a script file that is not in the manifest ('/tmp/run.sh')" in result.unjudged
    assert "vllm-settings" in result.unjudged


def test_the_heredoc_finding_names_the_here_document() -> None:
    # the here-document's body holds a word known only at run time ($(nproc))
    script = "cat > /tmp/run.sh <<EOF2\nvllm serve m --tensor-parallel-size $(nproc)\nEOF2\n"
    (result,) = check(deployment(pod_spec(_container(script + "bash /tmp/run.sh\n", PLAIN_IMAGE))))
    assert result.verdict == UNJUDGED
    assert "here-document" in result.unjudged, result.unjudged


def test_an_unknown_vllm_entry_point_is_unjudged() -> None:
    # gaie/gpu-grpc-deployment.yaml: vLLM's gRPC front end, not a module the reader knows
    container = vllm(
        "--model", "Qwen/Qwen3-32B", "--tensor-parallel-size", "1",
        command=["python3", "-m", "vllm.entrypoints.grpc_server"], gpus=1,
    )  # fmt: skip
    (result,) = check(deployment(pod_spec(container)))
    assert result.verdict == UNJUDGED
    kinds = {s.kind for s in recognise(container, "c")}
    assert ENTRYPOINT in kinds
    assert IMAGE in kinds


CLIENTS: list[dict[str, Any]] = [
    # a client of the vLLM HTTP API
    {"command": ["sh", "-c", "curl -sf http://vllm:8000/v1/models"], "image": CLIENT_IMAGE},
    # waiting for the vLLM Service
    {"command": ["sh", "-c", "until nc -z vllm 8000; do sleep 1; done"], "image": "busybox"},
    # a sidecar whose env names the vLLM URL and engine
    {
        "command": ["python3", "router.py"],
        "image": PLAIN_IMAGE,
        "env": [
            {"name": "VLLM_URL", "value": "http://vllm:8000"},
            {"name": "INFERENCE_ENGINE", "value": "vllm"},
        ],
    },
    # vLLM's own clients, not servers
    {"command": ["vllm", "chat", "--url", "http://vllm:8000/v1"], "image": PLAIN_IMAGE},
    {"command": ["vllm", "bench", "serve", "--model", "m"], "image": PLAIN_IMAGE},
    # a router naming its engine
    {
        "args": ["--engine", "vllm", "--engine-base-url", "http://localhost:8000"],
        "image": "ghcr.io/volcano-sh/runtime:latest",
    },
    # printed, not run
    {"command": ["sh", "-c", "echo vllm serve is great"], "image": PLAIN_IMAGE},
    # SGLang shares some of vLLM's option names
    {
        "command": [
            "python3",
            "-m",
            "sglang.launch_server",
            "--tensor-parallel-size",
            "2",
            "--pipeline-parallel-size",
            "2",
        ],
        "image": "lmsysorg/sglang:latest",
    },
    # a Ray worker on vLLM's image: its head runs vLLM
    {
        "command": ["sh", "-c", "ray start --address=$(LEADER):6379 --block"],
        "image": "vllm/vllm-openai:v0.11.0",
    },
]


@pytest.mark.parametrize("container", CLIENTS)
def test_a_client_of_vllm_is_not_recognised(container: dict[str, Any]) -> None:
    container = {"name": "client", **container}
    assert recognise(container, "c", {"VLLM_URL": "http://vllm:8000"}) == ()
    assert check(deployment(pod_spec(container))) == []


def test_signals_are_each_named() -> None:
    container = {
        "name": "c",
        "image": "vllm/vllm-openai:v0.11.0",
        "command": ["/entrypoint.sh"],
        "args": ["--tensor-parallel-size", "2", "--max-model-len", "4096"],
    }
    env = {"CMD": "vllm serve m", "OTHER": "x"}
    signals = recognise(container, "spec.containers[0]", env)
    assert {s.kind for s in signals} == {IMAGE, OPTIONS, ENV}
    fields = {s.kind: s.field for s in signals}
    assert fields[IMAGE] == "spec.containers[0].image"
    assert fields[ENV] == "spec.containers[0].env[CMD]"
    assert fields[OPTIONS] == "spec.containers[0].args[0]"


def test_an_entrypoint_script_given_vllms_serve_is_recognised() -> None:
    """Issue 36: `args: [serve, M, --tensor-parallel-size, 8]` on an image of its own,
    whose entrypoint script hands them to vLLM: recognised (so checked at run time), while
    `serve` alone, or vLLM's option without `serve`, says nothing."""
    script = {"name": "c", "image": PLAIN_IMAGE, "command": ["/opt/start.sh"]}
    given = {**script, "args": ["serve", "m", "--tensor-parallel-size", "8"]}
    assert {s.kind for s in recognise(given, "c")} == {OPTIONS}
    assert recognise({**script, "args": ["serve", "--port", "8080"]}, "c") == ()
    assert recognise({**script, "args": ["--tensor-parallel-size", "8"]}, "c") == ()
    sglang = {**given, "command": ["python3", "-m", "sglang.launch_server"]}
    assert recognise(sglang, "c") == ()


def test_recognition_is_bounded() -> None:
    # a megabyte of text costs one linear scan, and what is past MAX_TEXT is not read
    huge = "x " * 600_000 + "vllm serve m"
    assert recognise({"command": ["sh", "-c", huge]}, "c") == ()


def test_a_kind_whose_template_cannot_be_read_is_named() -> None:
    # an InferenceService whose ServingRuntime is neither in the set nor in the cluster:
    # the webhook judged nothing and said nothing
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "llama", "namespace": "ns"},
        "spec": {
            "predictor": {
                "model": {
                    "modelFormat": {"name": "huggingface"},
                    "runtime": "team-runtime",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            }
        },
    }
    (result,) = check(isvc)
    assert result.verdict == UNJUDGED
    assert "serves with vLLM by default" in result.unjudged
    assert result.findings[0].severity == WARN
    # a kind the rules read that says nothing of vLLM stays silent
    isvc["spec"]["predictor"]["model"]["modelFormat"]["name"] = "sklearn"
    assert check(isvc) == []


def test_a_script_that_starts_with_vllm_is_recognised() -> None:
    container = {"image": PLAIN_IMAGE, "command": ["sh", "-c", "vllm --model m -tp 2"]}
    assert [s.kind for s in recognise(container, "c")] == [ENTRYPOINT]
    # a word that only names vLLM is not a script
    assert recognise({"image": PLAIN_IMAGE, "args": ["--engine", "vllm"]}, "c") == ()


@pytest.mark.parametrize(
    "text",
    [
        "-exec " * 40000,
        ("exec " + "-a " * 8) * 5000,
        "xargs " + "-a " * 80000,
        "$(" * 100000,
        "/" + "a/" * 100000,
        "echo vllm serve; " * 10000,
        ". " * 100000 + "x.sh",
    ],
)
def test_hostile_text_costs_one_pass(text: str) -> None:
    """Each of these was quadratic in a first version (12.7 s for the first, measured):
    now each pattern is bounded per match (at most 8 options after a launcher, at most
    MAX_MATCHES matches, 200 characters looked back) and MAX_TEXT bounds the text (0.03 to
    0.08 s each, measured). No timed assertion: what is asserted is that nothing past
    MAX_TEXT is read (the answer is the prefix's); a quadratic pattern shows as a slow test
    (--durations)."""
    container = {"command": ["sh", "-c", text]}
    assert recognise(container, "c", {"A": text}) == recognise(
        {"command": ["sh", "-c", text[:MAX_TEXT]]}, "c", {"A": text[:MAX_TEXT]}
    )
    unread_parts(container)
