"""Shell forms and launchers of issues 35 (item 4) and 36 (item 3), each run under the real
bash and dash with stub executables (the pattern of test_shell_oracle).

Every form is one of three: read *exactly* (the argv vLLM receives; the oracle holds the
reading to what bash/dash pass, and TP 8 on 2 GPUs FAILs as it would bare), read *with
unknown words* (the words a branch, an env or an input not known here decides: a WARN,
never a FAIL on them), or *unread* (a Doubt that names the launcher or form: the rules say
vllm-command-unparsed, never "no vLLM").

Launchers installed here run for real in the oracle (env, flock, setpriv, prlimit,
runuser, strace, xargs). The others are stubs that exec their command after skipping
the options their own documentation lists as taking a value (_STUB_SPECS below, written
from that documentation, not imported from rules.launchers): the oracle then checks the
shell's part (quoting, expansion, pipes, files) and the option table's reading of the
same words, not the tool's other behaviour.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_rules_support import check, deployment, ids, pod_spec, vllm
from test_shell_oracle import _REAL, _RECORDER, BASH, DASH, Case, _judge_all, _script

from preflight_contract.verdicts import FAIL
from preflight_operator.core.rules.command import Invocation, Unparsed, find_invocation
from preflight_operator.core.rules.kubeenv import build_env, display, has_unknown, no_config_map

pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

TP2 = "serve m --tensor-parallel-size 2"
V = f"vllm {TP2}"
WANT = ("vllm", "serve", "m", "--tensor-parallel-size", "2")
PY_WANT = (
    "python3",
    "-m",
    "vllm.entrypoints.cli.main",
    "serve",
    "m",
    "--tensor-parallel-size",
    "2",
)
RUNPY = (
    "python3 -c \"import runpy; runpy.run_module('vllm.entrypoints.cli.main', "
    f"run_name='__main__')\" {TP2}"
)

# (id, shell, script, expected argv) read exactly: the oracle runs each
EXACT: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("array", "bash", f'ARGS=({TP2}); vllm "${{ARGS[@]}}"', WANT),
    (
        "array-append-if",
        "bash",
        'A=(serve m); A+=(--tensor-parallel-size 2)\nif [ -n "" ]; then A+=(--x); fi\n'
        'exec vllm "${A[@]}"',
        WANT,
    ),
    ("declare-a", "bash", f'declare -a A=({TP2})\nexec vllm "${{A[@]}}"', WANT),
    ("local-a", "bash", f'f() {{ local -a A=({TP2}); vllm "${{A[@]}}"; }}\nf', WANT),
    ("set-args", "sh", f'set -- {TP2}\nexec vllm "$@"', WANT),
    ("xargs-echo", "bash", f'echo "{TP2}" | xargs vllm', WANT),
    ("xargs-echo-sh", "sh", f'echo "{TP2}" | xargs vllm', WANT),
    ("xargs-printf", "bash", f"printf '%s\\n' {TP2} | xargs -r vllm", WANT),
    ("xargs-herestring", "bash", f'xargs vllm <<< "{TP2}"', WANT),
    (
        "heredoc-bash-file",
        "bash",
        f"cat > run.sh <<'EOF2'\nexec {V}\nEOF2\nbash run.sh",
        WANT,
    ),
    (
        "heredoc-chmod-run",
        "bash",
        f"cat > ./run.sh <<'EOF2'\n#!/bin/sh\nexec {V}\nEOF2\nchmod +x ./run.sh; ./run.sh",
        WANT,
    ),
    (
        "heredoc-expands",
        "sh",
        "TP=2\ncat > run.sh <<EOF\nexec vllm serve m --tensor-parallel-size $TP\nEOF\nsh run.sh",
        WANT,
    ),
    (
        "heredoc-source",
        "bash",
        "cat > ./env.sh <<'EOF'\nTP=2\nEOF\n. ./env.sh\nvllm serve m --tensor-parallel-size $TP",
        WANT,
    ),
    ("bash-heredoc", "bash", f"bash <<'EOF'\nexec {V}\nEOF", WANT),
    (
        "sh-s-heredoc",
        "sh",
        "sh -s -- --tensor-parallel-size 2 <<'EOF'\nexec vllm serve m \"$@\"\nEOF",
        WANT,
    ),
    ("echo-pipe-sh", "sh", f'echo "exec {V}" | sh', WANT),
    (
        "read-blanks",
        "bash",
        'read -r M R <<< "m  --tensor-parallel-size 2\t--port 8000 "\nvllm serve $M $R',
        (*WANT, "--port", "8000"),
    ),
    ("xargs-echo-n", "sh", f'echo -n "{TP2}" | xargs vllm', WANT),
    (
        "xargs-newlines",
        "bash",
        "printf 'serve\\nm\\n--tensor-parallel-size 2\\n' | xargs vllm",
        WANT,
    ),
    ("printf-v", "bash", "printf -v TP '%d' 2; vllm serve m --tensor-parallel-size \"$TP\"", WANT),
    (
        "read-herestring",
        "bash",
        'read -r M T <<< "m 2"; vllm serve $M --tensor-parallel-size $T',
        WANT,
    ),
    (
        "read-heredoc",
        "sh",
        "read -r M T <<EOF\nm 2\nEOF\nvllm serve $M --tensor-parallel-size $T",
        WANT,
    ),
    ("colon-assign-default", "sh", ': "${TP:=2}"; vllm serve m --tensor-parallel-size "$TP"', WANT),
    (
        "assign-default-inline",
        "bash",
        "vllm serve m --tensor-parallel-size ${TP=2}; echo $TP",
        WANT,
    ),
    ("dash-default", "sh", 'vllm serve m --tensor-parallel-size "${TP:-2}"', WANT),
    ("builtin-exec", "bash", f"builtin exec {V}", WANT),
    # ORACLE_LOG: where the oracle's stub vllm writes what it was given (env -i empties it)
    ("env-i-path", "bash", f'env -i PATH="$PATH" ORACLE_LOG="$ORACLE_LOG" {V}', WANT),
    ("env-dash-path", "sh", f'exec env - PATH="$PATH" ORACLE_LOG="$ORACLE_LOG" {V}', WANT),
    ("runuser-u", "bash", f"runuser -u root -- {V}", WANT),
    ("runuser-u-m", "bash", f"exec runuser -m -u root -- {V}", WANT),
    ("runuser-u-no-options", "bash", "exec runuser -u root vllm serve m", ("vllm", "serve", "m")),
    ("strace-f-o", "bash", f"strace -f -o trace.txt {V}", WANT),
    ("strace-e", "bash", f"strace -qq -e trace=none -s 64 {V}", WANT),
    ("flock", "bash", f"flock -n lockfile {V}", WANT),
    ("flock-w-c", "bash", f"flock -w 5 lockfile -c '{V}'", WANT),
    ("setpriv", "bash", f"setpriv --reuid=0 --regid=0 --clear-groups -- {V}", WANT),
    ("setpriv-nnp", "sh", f"exec setpriv --no-new-privs {V}", WANT),
    # lowering limits only: raising one needs CAP_SYS_RESOURCE (prlimit then runs nothing)
    ("prlimit", "bash", f"prlimit --nofile=1024 -c0 -- {V}", WANT),
    ("prlimit-bare", "bash", f"prlimit --core=0 {V}", WANT),
    ("conda-run", "bash", f"conda run -n vllm --no-capture-output {V}", WANT),
    ("conda-run-prefix", "bash", f"exec conda run -p /opt/env --live-stream -- {V}", WANT),
    ("micromamba-run", "bash", f"micromamba run -n base {V}", WANT),
    ("uvx", "bash", f"uvx --from vllm {V}", WANT),
    ("catchsegv", "bash", f"catchsegv {V}", WANT),
    ("s6-setuidgid", "sh", f"exec s6-setuidgid vllm {V}", WANT),
    ("chpst", "sh", f"exec chpst -u vllm:vllm -o 65536 {V}", WANT),
    ("systemd-run-scope", "bash", f"systemd-run --scope -p MemoryMax=100G --quiet {V}", WANT),
    ("watchmedo", "bash", f"watchmedo auto-restart -d /app -p '*.py' -R -- {V}", WANT),
    ("torchrun-one-no-python", "bash", f"torchrun --nproc-per-node 1 --no-python {V}", WANT),
]

# read, not exact (the program is named through a Python module, or a task runner could
# shadow the name): the argv is what the rules judge
LOOSE: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("runpy", "bash", RUNPY, PY_WANT),
    ("pixi-run", "bash", f"pixi run -e cuda {V}", WANT),
    ("poetry-run", "bash", f"poetry run {V}", WANT),
    ("pipenv-run", "bash", f"pipenv run {V}", WANT),
    (
        "torchrun-one-module",
        "bash",
        f"torchrun --nproc_per_node=1 -m vllm.entrypoints.cli.main {TP2}",
        PY_WANT,
    ),
]


def test_scripts_of_unknown_text_are_silent_unless_they_name_vllm() -> None:
    # a sidecar that renders and runs its own script is no vLLM (as `bash /x.sh` is not)
    assert _read("bash", "envsubst < /t > /tmp/a.sh\nbash /tmp/a.sh") is None
    assert _read("bash", "envsubst < /t > /tmp/a.sh\nchmod +x /tmp/a.sh\n/tmp/a.sh") is None
    # as any script file not seen here: named when its words start vLLM
    found = _read("bash", f"cat /t > /tmp/a.sh\nbash /tmp/a.sh {V}")
    assert isinstance(found, Unparsed)


# read with unknown words: (id, shell, script, the words that stay known)
UNKNOWN: list[tuple[str, str, str, tuple[str, ...]]] = [
    (
        "set-args-append-if-envfrom",
        "bash",
        'set -- serve "$MODEL" --tensor-parallel-size 2\n'
        'if [ -n "$X" ]; then set -- "$@" --enable-x; fi\nexec vllm "$@"',
        ("vllm", "serve", "--tensor-parallel-size", "2"),
    ),
    (
        "array-append-unknown-if",
        "bash",
        'A=(serve m --tensor-parallel-size 2)\n[ -f /x ] && A+=(--enforce-eager)\nvllm "${A[@]}"',
        WANT,
    ),
    # `. e.sh` looks e.sh up on PATH (dash; bash after PATH): not the file written here
    (
        "source-no-slash",
        "sh",
        "cat > e.sh <<'E'\nT=2\nE\n. e.sh\nvllm serve m -tp $T",
        ("vllm", "serve", "m", "-tp"),
    ),
    ("colon-assign-envfrom", "sh", ': "${TP:=2}"; vllm serve m --tensor-parallel-size "$TP"', ()),
    (
        "read-unknown-input",
        "bash",
        "read -r T < /etc/tp; vllm serve m --tensor-parallel-size $T",
        (),
    ),
    ("printf-v-octal", "bash", "printf -v T '%d' 02; vllm serve m --tensor-parallel-size $T", ()),
    ("printf-v-unknown", "bash", 'printf -v T "%x" 2; vllm serve m --tensor-parallel-size $T', ()),
]

# unread, named: (id, shell, script, what the reason names)
UNREAD: list[tuple[str, str, str, str]] = [
    ("xargs-a", "bash", "xargs -a /etc/args vllm", "xargs"),
    ("xargs-n", "bash", f'echo "{TP2}" | xargs -n 2 vllm', "xargs"),
    ("echo-e-bash", "bash", f'echo -e "{TP2}" | xargs vllm', "xargs"),
    ("xargs-unknown-input", "bash", "cat /etc/args | xargs vllm", "xargs"),
    (
        "heredoc-then-sed-i",
        "bash",
        f"cat > /tmp/r.sh <<'E'\n{V}\nE\nsed -i s/2/8/ /tmp/r.sh\nbash /tmp/r.sh",
        "is changed by the script",
    ),
    (
        "heredoc-then-cp",
        "bash",
        f"cat > /tmp/r.sh <<'E'\n{V}\nE\ncp /etc/x /tmp/r.sh\nbash /tmp/r.sh {V}",
        "is changed by the script",
    ),
    ("heredoc-not-chmod", "bash", f"cat > /tmp/r.sh <<'E'\n{V}\nE\n/tmp/r.sh", "chmod"),
    (
        "heredoc-python",
        "bash",
        f"cat > /tmp/r <<'E'\n#!/usr/bin/python3\n{V}\nE\nchmod +x /tmp/r\n/tmp/r",
        "#!",
    ),
    ("env-i-no-path", "bash", f"env -i {V}", "env -i"),
    ("builtin-in-sh", "sh", f"builtin exec {V}", "builtin"),
    ("accelerate-launch", "bash", f"accelerate launch {V}", "accelerate launch"),
    (
        "accelerate-launch-opts",
        "bash",
        f"accelerate launch --num_processes 2 -m {V}",
        "accelerate launch",
    ),
    ("torchrun-n", "bash", f"torchrun --nproc-per-node 2 --no-python {V}", "torchrun"),
    ("torchrun-script", "bash", f"torchrun --nproc-per-node 1 {V}", "torchrun"),
    ("ray-job-submit", "bash", f"ray job submit --address http://h:8265 -- {V}", "ray job submit"),
    ("strace-p", "bash", f"strace -p 1 {V}", "strace"),
    # runuser permutes its arguments (GNU getopt): without --, vLLM's options are its own
    ("runuser-no-dashdash", "bash", f"runuser -u root {V}", "runuser"),
    ("prlimit-pid", "bash", f"prlimit --pid 1 --nofile=1 {V}", "prlimit"),
    ("systemd-run-timer", "bash", f"systemd-run --on-active=30 {V}", "systemd-run"),
    ("conda-run-unknown-option", "bash", f"conda run --weird x {V}", "conda run"),
    ("flock-unknown-option", "bash", f"flock --bogus f {V}", "flock"),
]


def _read(shell: str, script: str, env_from: bool = False) -> Any:
    container: dict[str, Any] = {"name": "v", "image": "img", "command": [shell, "-c", script]}
    if env_from:
        container["envFrom"] = [{"configMapRef": {"name": "not-here"}}]
    env = build_env(container, "c", namespace=None, config_map=no_config_map)
    return find_invocation(container, "c", env)


@pytest.mark.parametrize(("name", "shell", "script", "want"), EXACT, ids=[c[0] for c in EXACT])
def test_exact_forms_are_read(name: str, shell: str, script: str, want: tuple[str, ...]) -> None:
    found = _read(shell, script)
    assert isinstance(found, Invocation), found
    assert found.argv == want
    assert found.exact, name


@pytest.mark.parametrize(("name", "shell", "script", "want"), LOOSE, ids=[c[0] for c in LOOSE])
def test_loose_forms_are_read_not_exact(
    name: str, shell: str, script: str, want: tuple[str, ...]
) -> None:
    found = _read(shell, script)
    assert isinstance(found, Invocation), found
    assert found.argv == want
    assert not found.exact


@pytest.mark.parametrize(("name", "shell", "script", "known"), UNKNOWN, ids=[c[0] for c in UNKNOWN])
def test_unknown_words_stay_words(
    name: str, shell: str, script: str, known: tuple[str, ...]
) -> None:
    found = _read(shell, script, env_from=True)
    assert isinstance(found, Invocation), found
    assert any(has_unknown(w) for w in found.argv)
    plain = [w for w in found.argv if not has_unknown(w)]
    assert list(known) == [w for w in plain if w in known][: len(known)]


@pytest.mark.parametrize(("name", "shell", "script", "why"), UNREAD, ids=[c[0] for c in UNREAD])
def test_unread_forms_are_named(name: str, shell: str, script: str, why: str) -> None:
    found = _read(shell, script)
    assert isinstance(found, Unparsed), found
    assert why in found.reason


def test_shell_variables_are_shown_as_the_script_writes_them() -> None:
    found = _read("sh", ': "${TP:=4}"; vllm serve m --tensor-parallel-size "$TP"', True)
    assert isinstance(found, Invocation)
    assert display(found.argv[-1]) == "${TP:=4}"  # the env's TP if the ConfigMap has it, else 4
    found = _read("bash", "read -r T < /etc/tp; vllm serve m --tensor-parallel-size $T")
    assert isinstance(found, Invocation)
    assert display(found.argv[-1]) == "${T}"


def test_env_i_over_a_device_env_of_the_manifest_is_unread() -> None:
    """env -i takes CUDA_VISIBLE_DEVICES=0 from vLLM: judging the manifest's value would
    deny a healthy TP 2 (cvd-too-few); not judged, and said."""
    container = vllm(
        gpus=2,
        command=["bash", "-c", f'env -i PATH="$PATH" {V}'],
        env=[{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}],
    )
    [result] = check(deployment(pod_spec(container)))
    assert not [f.id for f in result.findings if f.severity == FAIL], ids(result)
    [finding] = [f for f in result.findings if f.id == "vllm-command-unparsed"]
    assert "CUDA_VISIBLE_DEVICES" in finding.message
    container["command"] = ["bash", "-c", f'env -i PATH="$PATH" CUDA_VISIBLE_DEVICES=0,1 {V}']
    [result] = check(deployment(pod_spec(container)))
    assert "vllm-command-unparsed" not in ids(result)


def test_written_files_are_bounded() -> None:
    """Each `cat a a > b` doubles a file: the walk keeps a bounded text, then unknown."""
    doubling = "echo x > a\n" + "cat a a > b\ncat b b > a\n" * 40 + "cat a | xargs vllm serve m"
    found = _read("bash", doubling)
    assert isinstance(found, Unparsed)
    assert "xargs" in found.reason


def test_env_i_clears_the_exports() -> None:
    found = _read("bash", f'export CUDA_VISIBLE_DEVICES=0\nenv -i PATH="$PATH" A=1 {V}')
    assert isinstance(found, Invocation)
    assert dict(found.exports) == {"PATH": found.exports["PATH"], "A": "1"}


# -- the verdicts: exact forms judge as bare vLLM, the rest never FAIL -----------------


def _verdict(shell: str, script: str, gpus: int, env_from: bool = False) -> list[Any]:
    container = vllm(gpus=gpus, command=[shell, "-c", script])
    if env_from:
        container["envFrom"] = [{"configMapRef": {"name": "not-here"}}]
    return check(deployment(pod_spec(container)))


READ = [c for c in EXACT + LOOSE if "--tensor-parallel-size" in c[3]]


@pytest.mark.parametrize(("name", "shell", "script", "want"), READ, ids=[c[0] for c in READ])
def test_read_forms_pass_with_two_gpus_and_fail_with_too_few(
    name: str, shell: str, script: str, want: tuple[str, ...]
) -> None:
    [good] = _verdict(shell, script, gpus=2)
    assert not [f.id for f in good.findings if f.severity == FAIL], ids(good)
    assert good.plan is not None
    assert good.plan.tp == 2
    [bad] = _verdict(shell, _tp8(script), gpus=2)
    fails = [f for f in bad.findings if f.severity == FAIL]
    assert [f.id for f in fails] == ["gpu-count-too-low"], ids(bad)
    assert "TP=8" in fails[0].message


def _tp8(script: str) -> str:
    """The same form with TP 8 wherever it writes the 2."""
    for old, new in (
        ("--tensor-parallel-size 2", "--tensor-parallel-size 8"),
        ("'%d' 2", "'%d' 8"),
        ('"m 2"', '"m 8"'),
        ("m 2\n", "m 8\n"),
        ("TP:=2", "TP:=8"),
        ("TP=2", "TP=8"),
        ("TP:-2", "TP:-8"),
    ):
        script = script.replace(old, new)
    return script


@pytest.mark.parametrize(("name", "shell", "script", "known"), UNKNOWN, ids=[c[0] for c in UNKNOWN])
def test_unknown_forms_are_judged_never_failed(
    name: str, shell: str, script: str, known: tuple[str, ...]
) -> None:
    results = _verdict(shell, script.replace("2", "8"), gpus=2, env_from=True)
    assert len(results) == 1, "not judged as vLLM"
    assert not [f.id for f in results[0].findings if f.severity == FAIL], ids(results[0])
    assert results[0].findings, "an unknown word must be said"


@pytest.mark.parametrize(("name", "shell", "script", "why"), UNREAD, ids=[c[0] for c in UNREAD])
def test_unread_forms_warn_naming_it(name: str, shell: str, script: str, why: str) -> None:
    [result] = _verdict(shell, script.replace("2", "8"), gpus=2)
    assert "vllm-command-unparsed" in ids(result)
    assert not [f.id for f in result.findings if f.severity == FAIL], ids(result)
    [finding] = [f for f in result.findings if f.id == "vllm-command-unparsed"]
    assert why in finding.message


# -- the oracle --------------------------------------------------------------------------

# (subcommand words, options that take a value, flags that end the options' reading:
# python module / no python, operands the tool itself takes)
_STUB_SPECS: dict[str, dict[str, Any]] = {
    # conda run --help (docs.conda.io, commands/run.html)
    "conda": {"sub": ["run"], "value": ["-n", "--name", "-p", "--prefix", "--cwd"]},
    # micromamba run --help
    "micromamba": {"sub": ["run"], "value": ["-n", "--name", "-p", "--prefix", "-r", "--cwd"]},
    # pixi run (pixi.sh/latest/reference/cli/pixi/run)
    "pixi": {"sub": ["run"], "value": ["-e", "--environment", "--manifest-path"]},
    "poetry": {"sub": ["run"], "value": ["-C", "--directory", "-P", "--project"]},
    "pipenv": {"sub": ["run"], "value": []},
    # uv tool run --help
    "uvx": {"sub": [], "value": ["--from", "--with", "-p", "--python"]},
    # catchsegv PROGRAM [ARGS]
    "catchsegv": {"sub": [], "value": []},
    # s6-setuidgid ACCOUNT PROG...
    "s6-setuidgid": {"sub": [], "value": [], "operands": 1},
    # chpst(8)
    "chpst": {"sub": [], "value": ["-u", "-U", "-b", "-e", "-o", "-p", "-m", "-n", "-l", "-L"]},
    # systemd-run(1) (needs a running systemd: a stub here)
    "systemd-run": {"sub": [], "value": ["-p", "--property", "-u", "--unit", "-E", "--setenv"]},
    # watchdog's watchmedo auto-restart
    "watchmedo": {
        "sub": ["auto-restart"],
        "value": ["-d", "--directory", "-p", "--patterns", "-i", "--ignore-patterns", "--signal"],
    },
    # torch.distributed.run
    "torchrun": {"sub": [], "value": ["--nproc-per-node", "--nproc_per_node", "--nnodes"]},
}
_STUB = """#!{python} -S
import json, os, sys
name = os.path.basename(sys.argv[0])
spec = json.loads({specs!r})[name]
args = sys.argv[1:]
i = len(spec["sub"])
assert args[:i] == spec["sub"], args
module = False
while i < len(args) and args[i].startswith("-"):
    if args[i] == "--":
        i += 1
        break
    if args[i] in ("-m", "--module"):
        module = True
    opt = args[i].split("=", 1)[0]
    i += 2 if opt in spec["value"] and "=" not in args[i] else 1
i += spec.get("operands", 0)
if module:
    os.execvp("python3", ["python3", "-m"] + args[i:])
os.execvp(args[i], args[i:])
"""
_REAL_LAUNCHERS = ("env", "flock", "setpriv", "prlimit", "runuser", "strace", "xargs", "chmod")


@pytest.fixture(scope="module")
def launcher_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bin_ = tmp_path_factory.mktemp("launchers") / "bin"
    bin_.mkdir()
    for name in ("vllm", "python", "python3"):
        _script(bin_ / name, _RECORDER.format(python=sys.executable))
    specs = json.dumps(_STUB_SPECS)
    for name in _STUB_SPECS:
        _script(bin_ / name, _STUB.format(python=sys.executable, specs=specs))
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    for name in (*_REAL, *_REAL_LAUNCHERS):
        real = shutil.which(name, path=path)
        if real and not (bin_ / name).exists():
            (bin_ / name).symlink_to(real)
    (bin_ / "bash").symlink_to(BASH or "/bin/bash")
    (bin_ / "sh").symlink_to(DASH or BASH or "/bin/sh")
    return bin_


def _oracle_cases() -> list[Case]:
    cases = []
    for name, shell, script, _ in EXACT:
        if shell == "sh" and DASH is None:
            continue
        needs = _needs(script)
        if any(shutil.which(t, path="/usr/bin:/bin:/usr/sbin:/sbin") is None for t in needs):
            continue
        if not all(_runs_here(t) for t in needs):
            continue
        cases.append(Case(name, {"name": "v", "image": "i", "command": [shell, "-c", script]}))
    return cases


def _needs(script: str) -> list[str]:
    return [t for t in _REAL_LAUNCHERS if script.startswith((t + " ", "exec " + t + " "))]


@functools.cache
def _runs_here(tool: str) -> bool:
    """runuser and setpriv --reuid need root; strace needs ptrace (a container's seccomp
    profile may refuse it): their oracle cases run only where they can."""
    if tool in ("runuser", "setpriv") and os.geteuid() != 0:
        return False
    if tool == "strace":
        probe = subprocess.run(
            ["strace", "-o", os.devnull, "true"], capture_output=True, check=False
        )
        return probe.returncode == 0
    return True


def test_exact_forms_match_bash_and_dash(launcher_bin: Path, tmp_path: Path) -> None:
    cases = _oracle_cases()
    assert len(cases) >= len(EXACT) - 8
    problems = _judge_all(cases, launcher_bin, tmp_path)
    assert not problems, "\n".join(problems[:10])


def test_the_oracle_runs_the_launchers(launcher_bin: Path, tmp_path: Path) -> None:
    """The oracle can fail: a stub that skips a value-taking option as a flag runs the
    value as the program (and vLLM never starts)."""
    from test_shell_oracle import run_container

    for options in ("-n env", "--cwd=/x", "--cwd /x --no-capture-output"):
        script = f"conda run {options} {V}"
        assert run_container(
            launcher_bin, ["bash", "-c", script], {}, tmp_path
        ).first_vllm() == list(WANT)
    # a value read as a program: nothing starts, and a reading that skipped it would differ
    script = f"conda run --no-capture-output /x {V}"
    assert run_container(launcher_bin, ["bash", "-c", script], {}, tmp_path).first_vllm() is None


def test_runpy_runs_the_module_with_the_arguments(tmp_path: Path) -> None:
    """The oracle of the runpy form is Python itself: a module at the same dotted path
    sees sys.argv[1:] == the words after the -c string."""
    main = tmp_path / "vllm" / "entrypoints" / "cli"
    main.mkdir(parents=True)
    for folder in (tmp_path / "vllm", tmp_path / "vllm" / "entrypoints", main):
        (folder / "__init__.py").write_text("")
    (main / "main.py").write_text("import sys, json\nprint(json.dumps(sys.argv[1:]))\n")
    code = RUNPY.split('"')[1]
    out = subprocess.run(
        [sys.executable, "-c", code, *TP2.split()],
        env={"PYTHONPATH": str(tmp_path), "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert json.loads(out.stdout) == list(PY_WANT[3:])
