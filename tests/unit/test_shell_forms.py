"""Shell forms of a correct vLLM command (issue 24 items 2, 3, 6): each reported false
denial and each bypass, as a pair. The good idiom (`-tp 2` with 2 GPUs and /dev/shm) must
give no FAIL and must be found as vLLM; the same idiom with 1 GPU must still FAIL
`gpu-count-too-low` (the command is read, not skipped)."""

from __future__ import annotations

from typing import Any

import pytest
from test_rules_support import check, deployment, ids, pod_spec, vllm

from preflight_contract.verdicts import FAIL

CMD = "vllm serve m --tensor-parallel-size 2"
API = "python3 -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 2"

# (id, command list); every script runs the command CMD (or its api_server spelling) once.
FORMS: list[tuple[str, list[str]]] = [
    ("pipe-tee", ["bash", "-c", f"{CMD} 2>&1 | tee /tmp/log"]),
    ("background-wait", ["bash", "-c", f"{CMD} > /tmp/log 2>&1 &\nwait"]),
    ("exec-redirect", ["bash", "-c", f"exec {CMD} 2>&1"]),
    ("fd-redirects", ["bash", "-c", f"{CMD} 1>/tmp/o 2>/tmp/e"]),
    ("stdin-redirect", ["bash", "-c", f"{CMD} < /dev/null"]),
    ("api-tee-append", ["bash", "-c", f"{API} 2>&1 | tee -a log"]),
    ("timeout", ["bash", "-c", f"timeout 3600 {CMD}"]),
    ("subshell", ["bash", "-c", f"({CMD})"]),
    ("cd-subshell", ["bash", "-c", f"(cd /m && {CMD})"]),
    (
        "word-splitting",
        ["bash", "-c", 'ARGS="--tensor-parallel-size 2 --port 8000"\nvllm serve m $ARGS'],
    ),
    (
        "uncalled-function",
        ["bash", "-c", "debug() { vllm serve m --tensor-parallel-size 8; }\n" + CMD],
    ),
    ("called-function", ["bash", "-c", f'start() {{ {CMD} "$@"; }}\nstart --port 8000']),
    (
        "heredoc-line",
        ["bash", "-c", f"cat > /tmp/n <<'EOF'\nvllm serve m -tp 8\nEOF\n{CMD}"],
    ),
    (
        "dead-if-arm",
        ["bash", "-c", f"if false; then vllm serve m -tp 8; fi\n{CMD}"],
    ),
    (
        "dead-case-arm",
        [
            "bash",
            "-c",
            f"MODE=serve\ncase $MODE in\n  debug) vllm serve m -tp 8 ;;\n  serve) {CMD} ;;\nesac",
        ],
    ),
    ("timeout-signal", ["bash", "-c", f"timeout -s KILL 3600 {CMD}"]),
    ("numactl", ["bash", "-c", f"numactl --cpunodebind=0 --membind=0 {CMD}"]),
    ("taskset", ["bash", "-c", f"taskset -c 0-7 {CMD}"]),
    ("nice", ["bash", "-c", f"nice -n 5 {CMD}"]),
    ("stdbuf", ["bash", "-c", f"stdbuf -oL {CMD}"]),
    ("gosu", ["bash", "-c", f"exec gosu vllm {CMD}"]),
    ("su-exec", ["sh", "-c", f"exec su-exec vllm:vllm {CMD}"]),
    ("tini-s", ["tini", "-s", "--", *CMD.split()]),
    ("dumb-init", ["dumb-init", "--", "bash", "-c", CMD]),
    ("uv-run", ["bash", "-c", f"uv run {CMD}"]),
    ("eval", ["bash", "-c", f'eval "{CMD}"']),
    (
        "python-var",
        [
            "bash",
            "-c",
            "PYTHON=python3\n$PYTHON -m vllm.entrypoints.openai.api_server --model m -tp 2",
        ],
    ),
    ("exec-dollar-at", ["bash", "-c", 'exec "$@"', "--", *CMD.split()]),
    ("chrt-setsid", ["bash", "-c", f"chrt -f 10 setsid {CMD}"]),
    ("su-c", ["su", "vllm", "-c", CMD]),
    ("nested-sh", ["bash", "-c", f"sh -c '{CMD} 2>&1' | tee /tmp/x"]),
    ("and-or-list", ["bash", "-c", f"pip install -q x && {CMD} || echo failed"]),
    # issue 34: "$@" of a function called without arguments is no word at all; it was read
    # as one empty argument ('') and the workload denied (vllm-args-invalid)
    ("function-no-args", ["bash", "-c", f'start() {{ exec {CMD} "$@"; }}; start']),
    ("function-no-args-sh", ["sh", "-c", f'start() {{ exec {CMD} "$@"; }}\nstart']),
    ("dollar-at-no-args", ["bash", "-c", f'exec {CMD} "${{@}}"']),
    # issue 35 item 4: argv built with set --/arrays and a runtime if, here-strings,
    # printf -v, ${X:=d}, a script written by a here-document then run
    (
        "set-args-if-append",
        [
            "bash",
            "-c",
            f'set -- {CMD.split(" ", 1)[1]}\nif [ -n "$X" ]; then set -- "$@" --enforce-eager; fi\n'
            'exec vllm "$@"',
        ],
    ),
    (
        "array-append-if",
        [
            "bash",
            "-c",
            f'A=({CMD.split(" ", 1)[1]})\n[ -f /x ] && A+=(--enforce-eager)\nvllm "${{A[@]}}"',
        ],
    ),
    (
        "read-herestring",
        ["bash", "-c", 'read -r M T <<< "m 2"\nvllm serve $M --tensor-parallel-size $T'],
    ),
    ("printf-v", ["bash", "-c", "printf -v T '%s' 2; vllm serve m --tensor-parallel-size $T"]),
    ("colon-assign-default", ["sh", "-c", ': "${T:=2}"; vllm serve m --tensor-parallel-size "$T"']),
    ("heredoc-written-run", ["bash", "-c", f"cat > r.sh <<'EOF'\nexec {CMD}\nEOF\nbash r.sh"]),
    ("bash-stdin-heredoc", ["bash", "-c", f"bash <<'EOF'\nexec {CMD}\nEOF"]),
]


def _check(command: list[str], gpus: int) -> list[Any]:
    container = vllm(gpus=gpus, command=command)
    return check(deployment(pod_spec(container)))


@pytest.mark.parametrize(("name", "command"), FORMS, ids=[n for n, _ in FORMS])
def test_good_idiom_is_found_and_passes(name: str, command: list[str]) -> None:
    results = _check(command, gpus=2)
    assert len(results) == 1, f"{name}: not judged as vLLM"
    [result] = results
    fails = [f for f in result.findings if f.severity == FAIL]
    assert not fails, [f"{f.id}: {f.message}" for f in fails]
    assert result.plan is not None, ids(result)
    assert result.plan.tp == 2


@pytest.mark.parametrize(("name", "command"), FORMS, ids=[n for n, _ in FORMS])
def test_short_gpu_request_still_fails(name: str, command: list[str]) -> None:
    results = _check(command, gpus=1)
    assert len(results) == 1, f"{name}: not judged as vLLM"
    assert "gpu-count-too-low" in ids(results[0])


# -- branches whose taken arm is unknown -------------------------------------------------


@pytest.mark.parametrize(
    "script",
    [
        'if [ -n "$BIG" ]; then vllm serve m -tp 8; else vllm serve m -tp 2; fi',
        'case "$SIZE" in big) vllm serve m -tp 8 ;; *) vllm serve m -tp 2 ;; esac',
        "test -f /big || vllm serve m -tp 2 && true\n[ -f /big ] && vllm serve m -tp 8",
    ],
)
def test_differing_arms_are_unknown_never_fail(script: str) -> None:
    results = _check(["bash", "-c", script], gpus=1)
    assert len(results) == 1
    assert not [f for f in results[0].findings if f.severity == FAIL], ids(results[0])
    assert {"plan-unresolved", "vllm-command-unparsed"} & set(ids(results[0]))


# -- $(VAR) a controller injects -------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["m", "--tensor-parallel-size", "$(TENSOR_PARALLEL_SIZE)"],
        ["m", "-tp", "2", "--pipeline-parallel-size", "$(PIPELINE_PARALLEL_SIZE)"],
        ["m", "-tp", "2", "--nnodes", "2", "--node-rank", "$(JOB_COMPLETION_INDEX)"],
    ],
)
def test_undefined_reference_is_unknown(args: list[str]) -> None:
    results = check(deployment(pod_spec(vllm(*args, gpus=2))))
    [result] = results
    assert "vllm-args-invalid" not in ids(result)
    assert not [f for f in result.findings if f.severity == FAIL], ids(result)


def test_indexed_job_node_rank() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {
            "completionMode": "Indexed",
            "completions": 2,
            "parallelism": 2,
            "template": {
                "spec": pod_spec(
                    vllm(
                        "m",
                        "-tp",
                        "2",
                        "--nnodes",
                        "2",
                        "--node-rank",
                        "$(JOB_COMPLETION_INDEX)",
                        gpus=1,
                    )
                )
            },
        },
    }
    [result] = check(job)
    assert "vllm-args-invalid" not in ids(result)


# -- args only on an image not known to be vLLM ----------------------------------------


@pytest.mark.parametrize(
    ("image", "args"),
    [
        ("registry.example/acme/vllm-custom:1", ["--model", "m", "--tensor-parallel-size", "2"]),
        ("ghcr.io/acme/server:1", ["--model", "m", "--tensor-parallel-size", "2"]),
        ("ghcr.io/acme/vllm:1", ["serve", "m", "-tp", "2"]),
    ],
)
def test_looks_like_vllm_is_never_silent(image: str, args: list[str]) -> None:
    container = vllm(*args, gpus=1, command=None, image=image)
    results = check(deployment(pod_spec(container)))
    assert len(results) == 1, "skipped silently"
    # the entrypoint is a guess: a warning, never a denial
    assert not [f for f in results[0].findings if f.severity == FAIL], ids(results[0])
    assert results[0].findings
