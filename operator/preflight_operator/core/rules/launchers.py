"""Programs that run their arguments as a command, and what they end up running.

``timeout -s KILL 3600 vllm serve m`` runs ``vllm serve m``; so do ``numactl
--cpunodebind=0 --membind=0 ...``, ``taskset -c 0-7 ...``, ``nice -n 5 ...``, ``stdbuf -oL
...``, ``chrt -f 10 ...``, ``setsid -w ...``, ``tini -s -- ...``, ``dumb-init -- ...``,
``gosu USER ...``, ``su-exec USER ...``, ``sudo -u U ...``, ``env A=b ...``, ``nohup``,
``time``, ``command``, ``exec [-a NAME]`` and ``uv run [options] ...``. Each has its own
option syntax, written out below from its manual (coreutils, util-linux, numactl(8),
tini and dumb-init's README, gosu, su-exec, uv's `uv run --help`): an option that takes a
value consumes it, glued (``-sKILL``, ``--signal=KILL``) or as the next word.

An option a table does not list cannot be skipped safely (it might take a value), so the
answer is "unknown", never a guess: the rules then warn (vllm-command-unparsed) rather than
judge or skip. ``su -c SCRIPT`` and ``env -S STRING`` hand a string to a shell or split it:
the first is a script (the caller reads it as ``sh -c``), the second is unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# GNU-style: (options that take a value, options that take none, positional operands the
# launcher itself consumes before the command, stops at the first non-option)
_Spec = tuple[frozenset[str], frozenset[str], int]


def _spec(with_value: str, flags: str, operands: int = 0) -> _Spec:
    return frozenset(with_value.split()), frozenset(flags.split()), operands


_SPECS: dict[str, _Spec] = {
    # coreutils timeout: [OPTION] DURATION COMMAND
    "timeout": _spec(
        "-s --signal -k --kill-after", "--preserve-status --foreground -v --verbose", 1
    ),
    "nice": _spec("-n --adjustment", ""),
    "nohup": _spec("", ""),
    "stdbuf": _spec("-i --input -o --output -e --error", ""),
    # util-linux setsid, taskset (MASK or, with -c, a cpu list), chrt (PRIORITY)
    "setsid": _spec("", "-c --ctty -f --fork -w --wait"),
    "taskset": _spec("", "-a --all-tasks -c --cpu-list", 1),
    "chrt": _spec(
        "-T --sched-runtime -P --sched-period -D --sched-deadline",
        "-a --all-tasks -b --batch -d --deadline -f --fifo -i --idle -o --other -r --rr -R "
        "--reset-on-fork -v --verbose",
    ),
    "ionice": _spec("-c --class -n --classdata", "-t --ignore"),
    # numactl(8): [options] command {arguments}
    "numactl": _spec(
        "-i --interleave -w --weighted-interleave -m --membind -N --cpunodebind -C "
        "--physcpubind -p --preferred -P --preferred-many",
        "-a --all -l --localalloc -b --balancing",
    ),
    # tini [-s] [-v] [-g] [-l] [-w] [-p SIG] [-e CODE] [--] program
    "tini": _spec("-p -e", "-s -v -vv -vvv -g -l -w"),
    "tini-static": _spec("-p -e", "-s -v -vv -vvv -g -l -w"),
    # dumb-init [-c|--single-child] [-r|--rewrite s:r] [-v|--verbose] [--] program
    "dumb-init": _spec("-r --rewrite", "-c --single-child -v --verbose"),
    # gosu USER command; su-exec USER[:GROUP] command
    "gosu": _spec("", "", 1),
    "su-exec": _spec("", "", 1),
    "sudo": _spec(
        "-u --user -g --group -C --close-from -h --host -p --prompt -r --role -t --type -D "
        "--chdir -R --chroot -T --command-timeout",
        "-E --preserve-env -H --set-home -n --non-interactive -S --stdin -b --background -k "
        "-P --preserve-groups",
    ),
    # /usr/bin/time [-p] [-v] [-a] [-q] [-o FILE] [-f FORMAT]; the bash keyword takes -p
    "time": _spec("-o --output -f --format", "-p --portability -v --verbose -a --append -q"),
    "command": _spec("", "-p"),
    "exec": _spec("-a", "-c -l -cl -lc"),
}
# `uv run`: options with a value, and flags (uv run --help, uv 0.8)
_UV_RUN = _spec(
    "--with --with-editable --with-requirements -p --python --package --extra --group "
    "--only-group --no-group --env-file --index --default-index --index-url "
    "--extra-index-url --find-links -f --directory --project --config-file --cache-dir "
    "--python-platform --refresh-package --reinstall-package --no-binary-package "
    "--no-build-package --upgrade-package -P --index-strategy --keyring-provider "
    "--resolution --prerelease --exclude-newer --link-mode --color",
    "--no-project --frozen --locked --isolated --no-sync --all-extras --no-extra --no-dev "
    "--dev --active --no-active -q --quiet -v --verbose --offline --no-cache -n --exact "
    "--no-default-groups --all-packages --all-groups --no-editable --native-tls --preview "
    "--no-config --compile-bytecode --refresh --no-env-file --no-build-isolation "
    "--upgrade -U --reinstall --no-build --no-binary --no-sources --only-dev --inexact "
    "--no-progress --managed-python --no-managed-python --no-python-downloads",
)
# Programs that run nothing of theirs (a vLLM command in their words is text, not a run).
TEXT_ONLY = frozenset(
    [
        "echo",
        "printf",
        "logger",
        "cat",
        "grep",
        "egrep",
        "sed",
        "awk",
        "tee",
        "test",
        "[",
        "true",
        "false",
        ":",
        "ls",
        "mkdir",
        "cp",
        "mv",
        "rm",
        "chmod",
        "chown",
        "touch",
        "sleep",
        "curl",
        "wget",
        "pip",
        "pip3",
        "apt-get",
        "apt",
        "yum",
        "dnf",
        "apk",
        "cd",
        "pwd",
        "set",
        "trap",
        "wait",
        "kill",
        "ray",
        "huggingface-cli",
        "hf",
        "export",
        "unset",
        "readonly",
        "local",
        "declare",
        "typeset",
        "shift",
        "exit",
        "return",
        "source",
        ".",
        "umask",
        "ulimit",
        "hostname",
        "nvidia-smi",
        "find",
        "head",
        "tail",
        "cut",
        "tr",
        "wc",
        "sort",
        "uniq",
        "xargs",
        "jq",
        "yq",
        "python-c",
        "getent",
        "nslookup",
        "dig",
        "ping",
        "date",
        "id",
        "whoami",
        "which",
        "type",
        "hash",
        "alias",
        "mount",
        "ln",
        "git",
        "tar",
        "gzip",
        "unzip",
        "df",
        "du",
        "ps",
        "top",
        "free",
        "env-print",
        "rsync",
        "scp",
    ]
)


@dataclass(frozen=True)
class Unwrapped:
    """``argv[start:]`` is what the launchers in front end up running; ``assignments``
    are the ``NAME=value`` words ``env`` put in its environment."""

    start: int
    assignments: tuple[tuple[str, str], ...] = ()
    script: str | None = None  # `su -c SCRIPT`: a shell script to read
    uv_module: bool = False  # `uv run -m MODULE`: a Python module, as `python -m`


@dataclass(frozen=True)
class Unknown:
    """A launcher whose words cannot be read with certainty (an unlisted option)."""

    reason: str


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isidentifier() and name.isascii()


def _skip_options(argv: Sequence[str], i: int, spec: _Spec, prog: str) -> int | Unknown:
    """Index of the first operand after ``prog``'s options at ``argv[i:]``."""
    with_value, flags, _ = spec
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return i + 1
        if not word.startswith("-") or word == "-":
            return i
        name = word.split("=", 1)[0] if word.startswith("--") else word
        if name in with_value:
            i += 1 if "=" in word else 2
            continue
        if name in flags:
            i += 1
            continue
        if not word.startswith("--") and word[:2] in with_value:
            i += 1  # glued short value: -sKILL, -n5, -oL, -N0
            continue
        if prog == "nice" and word[1:].isdigit():
            i += 1  # obsolete `nice -5`
            continue
        if not word.startswith("--") and len(word) > 2 and all(f"-{c}" in flags for c in word[1:]):
            i += 1  # grouped short flags: -fw
            continue
        return Unknown(f"`{prog}` option {word!r} is not one vllm-preflight knows")
    return i


def unwrap(argv: Sequence[str]) -> Unwrapped | Unknown:
    """Skip leading ``NAME=value`` words and launchers; where the real command starts."""
    i = 0
    assignments: list[tuple[str, str]] = []
    while i < len(argv):
        prog = argv[i].rsplit("/", 1)[-1]
        found: int | Unknown
        if prog == "env":
            found = _env(argv, i + 1, assignments)
        elif prog == "uv" and i + 1 < len(argv) and argv[i + 1] == "run":
            uv = _uv_run(argv, i + 2)
            if isinstance(uv, tuple):
                return Unwrapped(uv[0], tuple(assignments), uv_module=True)
            found = uv
        elif prog == "su":
            return _su(argv, i + 1, assignments)
        elif prog in _SPECS:
            found = _launcher(argv, i, prog)
        else:
            break
        if isinstance(found, Unknown):
            return found
        i = found
    return Unwrapped(i, tuple(assignments))


def _launcher(argv: Sequence[str], i: int, prog: str) -> int | Unknown:
    """Past a launcher of _SPECS at ``argv[i]``: its options and operands."""
    spec = _SPECS[prog]
    if prog in ("taskset", "chrt") and any(a in ("-p", "--pid") for a in argv[i + 1 : i + 3]):
        return Unknown(f"`{prog} -p` changes a running process; it starts nothing")
    found_at = _skip_options(argv, i + 1, spec, prog)
    if isinstance(found_at, Unknown):
        return found_at
    i = found_at + spec[2]
    if prog == "chrt" and i < len(argv) and argv[i].isdigit():
        i += 1  # the priority
    return i


_ENV_WITH_VALUE = ("-u", "--unset", "-C", "--chdir", "-P")
_ENV_FLAGS = ("-0", "--null", "-v", "--debug")


def _env(argv: Sequence[str], i: int, assignments: list[tuple[str, str]]) -> int | Unknown:
    """``env [-u NAME] [-C DIR] [NAME=value]... COMMAND``: where COMMAND is."""
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        opt = argv[i]
        if opt == "--":
            i += 1
            break
        if opt in _ENV_WITH_VALUE:
            i += 2
        elif opt.startswith(("--unset=", "--chdir=", "-u", "-C")) or opt in _ENV_FLAGS:
            i += 1
        elif opt in ("-i", "--ignore-environment"):
            # the program is then looked up without PATH (execvp's default), and runs
            # without the container's env: not read here
            return Unknown("`env -i` empties the environment, PATH included")
        else:
            return Unknown(f"`env` option {opt!r} (-S splits a string) is not read")
    while i < len(argv) and _is_assignment(argv[i]):
        name, _, value = argv[i].partition("=")
        assignments.append((name, value))
        i += 1
    return i


def _uv_run(argv: Sequence[str], i: int) -> int | tuple[int] | Unknown:
    """After ``uv run``: the command's index, or (module index,) for ``-m MODULE``."""
    with_value, flags, _ = _UV_RUN
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return i + 1
        if word in ("-m", "--module"):
            return (i + 1,)
        if word in ("-s", "--script", "--gui-script"):
            return Unknown("`uv run --script` runs a file vllm-preflight cannot see")
        if not word.startswith("-"):
            return i
        name = word.split("=", 1)[0]
        if name in with_value:
            i += 1 if "=" in word else 2
        elif name in flags:
            i += 1
        else:
            return Unknown(f"`uv run` option {word!r} is not one vllm-preflight knows")
    return i


def _su(argv: Sequence[str], i: int, assignments: list[tuple[str, str]]) -> Unwrapped | Unknown:
    """``su [options] [-] [USER] -c SCRIPT``: the script, read as ``sh -c``."""
    script = None
    while i < len(argv):
        word = argv[i]
        if word in ("-c", "--command", "--session-command"):
            if i + 1 >= len(argv):
                return Unknown("`su -c` without a command")
            script = argv[i + 1]
            i += 2
        elif word.startswith(("--command=", "--session-command=")):
            script = word.split("=", 1)[1]
            i += 1
        elif word in ("-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w"):
            i += 2
        elif word.startswith("-"):
            i += 1  # -, -l, --login, -m, -p, -P, -f
        else:
            i += 1  # the user
    if script is None:
        return Unknown("`su` without -c starts an interactive shell")
    return Unwrapped(len(argv), tuple(assignments), script=script)
