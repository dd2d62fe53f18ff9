"""Reading a container's command as bash/dash run it (rules.shparse, rules.shrun,
rules.launchers): what is argv and what is not, which arm runs, what stays unknown."""

from __future__ import annotations

import time
from typing import Any

import pytest

from preflight_operator.core.rules.command import Invocation, Unparsed, find_invocation
from preflight_operator.core.rules.kubeenv import build_env, display, has_unknown, no_config_map
from preflight_operator.core.rules.launchers import Unknown, Unwrapped, unwrap
from preflight_operator.core.rules.shparse import ShellSyntax, parse


def read(command: list[str], args: list[str] | None = None, env: Any = ()) -> Any:
    container: dict[str, Any] = {"name": "v", "image": "img", "command": command}
    if args is not None:
        container["args"] = args
    if env:
        container["env"] = list(env)
    environment = build_env(container, "c", namespace=None, config_map=no_config_map)
    return find_invocation(container, "c", environment)


def argv(script: str, shell: str = "bash", env: Any = ()) -> tuple[str, ...]:
    found = read([shell, "-c", script], env=env)
    assert isinstance(found, Invocation), found
    return found.argv


# (script, the argv bash runs); tests/unit/test_shell_oracle.py runs each under bash as well
READS = [
    ("vllm serve m -tp 2 2>&1 | tee /tmp/log", "vllm serve m -tp 2"),
    ("vllm serve m -tp 2 >/tmp/log 2>&1 &\nwait", "vllm serve m -tp 2"),
    ("vllm serve m -tp 2 1>/tmp/o 2>/tmp/e </dev/null", "vllm serve m -tp 2"),
    ("vllm serve m -tp 2 &>/tmp/log", "vllm serve m -tp 2"),
    ("vllm serve m -tp 2 >>/tmp/log 2>&1", "vllm serve m -tp 2"),
    ("vllm serve m -tp 2 <<<'x'", "vllm serve m -tp 2"),
    ("(cd /m && vllm serve m -tp 2)", "vllm serve m -tp 2"),
    ("{ vllm serve m -tp 2; } 2>&1", "vllm serve m -tp 2"),
    ('A="-tp 2"; vllm serve m $A', "vllm serve m -tp 2"),
    ('A=(-tp 2); vllm serve m "${A[@]}"', "vllm serve m -tp 2"),
    ('f() { vllm serve m -tp 2 "$@"; }\nf --port 1', "vllm serve m -tp 2 --port 1"),
    ('start() { exec vllm serve m -tp 2 "$@"; }; start', "vllm serve m -tp 2"),
    ('set --; vllm serve m -tp 2 "$@"', "vllm serve m -tp 2"),
    ('function f { vllm serve m "$1" 2; }\nf -tp', "vllm serve m -tp 2"),
    ('set -- -tp 2\nvllm serve m "$@"', "vllm serve m -tp 2"),
    ("eval 'vllm serve m -tp 2'", "vllm serve m -tp 2"),
    ('X=2; eval "vllm serve m -tp $X"', "vllm serve m -tp 2"),
    ("cat <<EOF\nvllm serve x -tp 8\nEOF\nvllm serve m -tp 2", "vllm serve m -tp 2"),
    ("cat <<-EOF\n\tvllm serve x\n\tEOF\nvllm serve m -tp 2", "vllm serve m -tp 2"),
    ("if false; then vllm serve x; fi; vllm serve m -tp 2", "vllm serve m -tp 2"),
    ("M=a; case $M in b) vllm serve x ;; a) vllm serve m -tp 2 ;; esac", "vllm serve m -tp 2"),
    ('[ -n "" ] && vllm serve x; vllm serve m -tp 2', "vllm serve m -tp 2"),
    ("while true; do vllm serve m -tp 2; sleep 5; done", "vllm serve m -tp 2"),
    ("# vllm serve x\nvllm serve m -tp 2 # -tp 8", "vllm serve m -tp 2"),
    ("vllm serve m \\\n  -tp 2", "vllm serve m -tp 2"),
    ("echo 'it''s'; vllm serve m -tp 2", "vllm serve m -tp 2"),
    ("su vllm -c 'vllm serve m -tp 2'", "vllm serve m -tp 2"),
    ("sudo -u vllm -E vllm serve m -tp 2", "vllm serve m -tp 2"),
    ("exec tini -s -- vllm serve m -tp 2", "vllm serve m -tp 2"),
    ("timeout -k 5 -s KILL 1h vllm serve m -tp 2", "vllm serve m -tp 2"),
    ("nice -5 ionice -c 2 -n 0 vllm serve m -tp 2", "vllm serve m -tp 2"),
    ("numactl -N0 -m 0 --localalloc vllm serve m -tp 2", "vllm serve m -tp 2"),
    ("chrt --rr 10 setsid -fw vllm serve m -tp 2", "vllm serve m -tp 2"),
    ("env -u X A=1 vllm serve m -tp 2", "vllm serve m -tp 2"),
]


@pytest.mark.parametrize(("script", "expected"), READS)
def test_reads_the_argv_bash_runs(script: str, expected: str) -> None:
    assert argv(script) == tuple(expected.split(" "))


def test_quoted_expansion_is_one_word() -> None:
    assert argv('A="-tp 2"; vllm serve m "$A"') == ("vllm", "serve", "m", "-tp 2")
    assert argv("A='a  b'; vllm serve m --x \"$A\"c") == ("vllm", "serve", "m", "--x", "a  bc")
    assert argv('E=; vllm serve m $E "" -tp 2') == ("vllm", "serve", "m", "", "-tp", "2")
    # "$@" with no arguments is no field; glued to a quoted "" it is one empty field (bash,
    # dash; tests/unit/test_shell_oracle.py runs these)
    assert argv('set --; vllm serve m -tp 2 """$@"') == ("vllm", "serve", "m", "-tp", "2", "")
    assert argv('set --; vllm serve m -tp 2 "$@"""') == ("vllm", "serve", "m", "-tp", "2", "")
    assert argv('set --; vllm serve m -tp 2 "$@" ""') == ("vllm", "serve", "m", "-tp", "2", "")


def test_dash_reads_and_amp_greater_as_background() -> None:
    # in dash `a &> f` is `a &` then `> f`: the same argv, run in the background
    expected = ("vllm", "serve", "m", "-tp", "2")
    assert argv("vllm serve m -tp 2 &> /tmp/log", shell="sh") == expected


@pytest.mark.parametrize(
    "script", ["function f { vllm serve m; }\nf", "[[ -n x ]] && vllm serve m -tp 2"]
)
def test_bash_syntax_in_sh_is_unknown(script: str) -> None:
    # dash refuses `function` and runs `[[` as a program; an image whose /bin/sh is bash
    # takes both: not known here
    found = read(["sh", "-c", script])
    assert isinstance(found, Unparsed)


def test_uv_run_module_and_python_variable_are_vllm_but_not_exact() -> None:
    for script in (
        "uv run -m vllm.entrypoints.openai.api_server --model m -tp 2",
        "$PY -m vllm.entrypoints.openai.api_server --model m -tp 2",
    ):
        found = read(["bash", "-c", script])
        assert isinstance(found, Invocation)
        assert found.argv[0] == "python3"
        assert found.exact is False


def test_exec_of_another_program_ends_the_script() -> None:
    """exec replaces the shell: bash never runs the vllm line after ``exec sleep``, so no
    vLLM command line is read from it (a reader that went on would judge one that never
    runs; the mutation pass of issue 37 found no test saying so)."""
    assert read(["bash", "-c", "exec sleep 5\nvllm serve m -tp 8"]) is None
    assert read(["sh", "-c", "exec /app/start.sh; vllm serve m -tp 8"]) is None
    assert argv("exec vllm serve m -tp 2\nvllm serve m -tp 8") == ("vllm", "serve", "m", "-tp", "2")


def test_exec_dollar_at_with_args() -> None:
    found = read(["/bin/sh", "-c", 'exec "$@"', "sh"], ["vllm", "serve", "m", "-tp", "2"])
    assert isinstance(found, Invocation)
    assert found.argv == ("vllm", "serve", "m", "-tp", "2")


def test_launcher_in_the_container_command_keeps_its_paths() -> None:
    found = read(["timeout", "-s", "KILL", "3600", "vllm", "serve"], ["m", "-tp", "2"])
    assert isinstance(found, Invocation)
    assert found.argv == ("vllm", "serve", "m", "-tp", "2")
    assert found.paths == ("c.command[4]", "c.command[5]", "c.args[0]", "c.args[1]", "c.args[2]")


@pytest.mark.parametrize(
    "script",
    [
        'if [ -n "$BIG" ]; then vllm serve m -tp 8; else vllm serve m -tp 2; fi',
        'case "$S" in big) vllm serve m -tp 8 ;; *) vllm serve m -tp 2 ;; esac',
        "[ -f /x ] && vllm serve m -tp 8\nvllm serve m -tp 2",
        "f() { vllm serve m -tp 8; }\n[ -f /x ] && f\nvllm serve m -tp 2",
    ],
)
def test_differing_arms_are_unknown(script: str) -> None:
    found = read(["bash", "-c", script])
    assert isinstance(found, Unparsed)
    assert "branch" in found.reason


def test_same_command_on_every_arm_is_read() -> None:
    found = read(["bash", "-c", "if [ -f /x ]; then X=1; fi\nvllm serve m -tp 2"])
    assert isinstance(found, Invocation)
    assert found.conditional is False


def test_assignment_on_one_arm_is_unknown_after() -> None:
    found = read(["bash", "-c", "TP=2\n[ -f /big ] && TP=8\nvllm serve m -tp $TP"])
    assert isinstance(found, Invocation)
    assert has_unknown(found.argv[-1])
    # a shell variable, shown as the script writes it (a kubelet $(TP) would name the
    # container's env, which the kubelet and the injected check would then resolve)
    assert display(found.argv[-1]) == "${TP}"


def test_conditional_only_command_is_read_as_conditional() -> None:
    found = read(["bash", "-c", "pip install x && vllm serve m -tp 2"])
    assert isinstance(found, Invocation)
    assert found.conditional is True


def test_set_e_makes_what_follows_an_unknown_command_conditional() -> None:
    found = read(["bash", "-ec", "apt-get update\nvllm serve m -tp 2"])
    assert isinstance(found, Invocation)
    assert found.conditional is True
    found = read(["bash", "-c", "apt-get update\nvllm serve m -tp 2"])
    assert isinstance(found, Invocation)
    assert found.conditional is False


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ("numactl --weird 1 vllm serve m -tp 2", "numactl"),
        ("$LAUNCHER vllm serve m -tp 2", "not known"),
        ("mywrapper --x vllm serve m -tp 2", "mywrapper"),
        ("env -S 'vllm serve m' -tp 2", "env"),
        ("env -i A=1 vllm serve m -tp 2", "env -i"),
        ("accelerate launch vllm serve m -tp 2", "accelerate launch"),
        ("ray job submit -- vllm serve m -tp 2", "ray job submit"),
        ("torchrun --nproc-per-node 2 --no-python vllm serve m -tp 2", "torchrun"),
        ("strace -p 1 vllm serve m -tp 2", "strace"),
        ('eval "$CMD vllm serve m"', "eval"),
        ("select x in a; do vllm serve m; done", "parse"),
        ("vllm serve m -tp 2 'unbalanced", "parse"),
    ],
)
def test_what_is_not_modelled_is_unknown(script: str, why: str) -> None:
    found = read(["bash", "-c", script])
    assert isinstance(found, Unparsed), found
    assert why in found.reason


@pytest.mark.parametrize(
    "script",
    [
        "echo vllm serve is great",
        "command -v vllm >/dev/null || pip install vllm",
        "debug() { vllm serve m -tp 8; }\nray start --head --block",
        "cat <<EOF\nvllm serve m\nEOF",
        "if false; then vllm serve m; fi",
        "bash /scripts/start.sh",
    ],
)
def test_not_vllm(script: str) -> None:
    assert read(["bash", "-c", script]) is None


def test_undefined_reference_stays_literal_in_a_script() -> None:
    # the kubelet passes $(X) literally; the shell runs X as a command substitution
    found = read(["sh", "-c", "vllm serve m --served-model-name $(X) -tp 2"])
    assert isinstance(found, Invocation)
    assert display(found.argv[4]).startswith("$(")
    assert found.argv[5:] == ("-tp", "2")


def test_unknown_env_value_inside_a_script_stays_one_unknown_word() -> None:
    env = [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    found = read(["sh", "-c", "vllm serve m --api-key $(S) -tp 2"], env=env)
    assert isinstance(found, Invocation)
    assert has_unknown(found.argv[4])
    assert found.argv[5:] == ("-tp", "2")


@pytest.mark.parametrize(
    ("words", "start"),
    [
        (["timeout", "--signal=KILL", "10", "x"], 3),
        (["timeout", "-sKILL", "10", "x"], 3),
        (["taskset", "-c", "0-7", "x"], 3),
        (["taskset", "0xff", "x"], 2),
        (["stdbuf", "-oL", "-e", "0", "x"], 4),
        (["numactl", "--interleave=all", "x"], 2),
        (["tini", "-s", "-g", "--", "x"], 4),
        (["dumb-init", "--rewrite", "15:2", "x"], 3),
        (["gosu", "u", "x"], 2),
        (["su-exec", "u:g", "x"], 2),
        (["uv", "run", "--with", "a", "--frozen", "x"], 5),
        (["nohup", "nice", "-n", "1", "x"], 4),
        (["env", "--unset=A", "B=1", "x"], 3),
    ],
)
def test_launcher_option_syntax(words: list[str], start: int) -> None:
    found = unwrap(words)
    assert isinstance(found, Unwrapped)
    assert found.start == start


def test_launcher_pid_mode_runs_nothing() -> None:
    assert isinstance(unwrap(["taskset", "-p", "0x1", "42"]), Unknown)


def test_hostile_scripts_are_bounded() -> None:
    started = time.process_time()  # CPU spent, not wall time: a loaded machine waits more
    deep = "( " * 500 + "vllm serve m" + " )" * 500
    assert isinstance(read(["bash", "-c", deep]), Unparsed)
    many = "true\n" * 20000 + "vllm serve m -tp 2"
    assert isinstance(read(["bash", "-c", many]), Unparsed)
    recursive = "f() { f; }\nf\nvllm serve m"
    assert isinstance(read(["bash", "-c", recursive]), Unparsed)
    evals = "eval 'eval \"eval vllm serve m\"'"
    assert read(["bash", "-c", evals]) is not None
    assert time.process_time() - started < 20


def test_parse_errors_are_shell_syntax() -> None:
    for script in ("if true; then", "case x in", "a |", "f() {", "echo 'x"):
        with pytest.raises(ShellSyntax):
            parse(script)
