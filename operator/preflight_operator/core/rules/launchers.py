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

Issue 36 item 3 added the launchers of environments and process tools, each by its own
manual (man pages of util-linux 2.39 for ``runuser``, ``flock``, ``setpriv``,
``prlimit``; strace(1) 6.x; systemd-run(1); runit's chpst(8),
http://smarden.org/runit/chpst.8.html; skarnet's s6-setuidgid,
https://skarnet.org/software/s6/s6-setuidgid.html; ``conda run --help``,
https://docs.conda.io/projects/conda/en/stable/commands/run.html; micromamba's user
guide, https://mamba.readthedocs.io/en/latest/user_guide/micromamba.html; pixi's CLI
reference, https://pixi.sh/latest/reference/cli/pixi/run/; poetry's CLI docs,
https://python-poetry.org/docs/cli/#run; pipenv's, https://pipenv.pypa.io/en/latest/commands.html;
uv's CLI reference for ``uvx`` = ``uv tool run``, https://docs.astral.sh/uv/reference/cli/;
torchrun's, https://pytorch.org/docs/stable/elastic/run.html; watchdog's
src/watchdog/watchmedo.py for ``watchmedo auto-restart``). ``env -i`` is read: the
program is then looked up on the PATH its own words give (execvp), so without a
``PATH=`` word and with a bare program name it is named unread (glibc's default
/bin:/usr/bin does not hold a pip-installed ``vllm``). Read with their caveat (a task
or script of the project's own file named like the program would run instead, and it
is not visible here): ``pixi run``, ``poetry run``, ``pipenv run``. Named unread, with
the launcher's name: ``accelerate launch`` (its process count is in a config file),
``torchrun`` with more than one process or a script (N copies of a Python script, not
one vLLM server), ``ray job submit`` (the entrypoint runs on the Ray cluster, not in this
container), ``strace -p`` and ``prlimit -p`` (they act on a running process), and any
option a table does not list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
    # strace(1): [-dDffhiqqrtttTvVwxxyyzZ] [-a col] [-b sys] [-e expr] [-E var[=val]]
    # [-I n] [-o file] [-O overhead] [-P path] [-s strsize] [-S sortby] [-U cols]
    # [-u user] [-X fmt] PROG [ARGS]; long options with an optional value take it only
    # glued (--quiet=attach): they are flags here. -p/--attach is refused in _launcher.
    "strace": _spec(
        "-a --columns -b --detach-on -e -E --env -I --interruptible -o --output -O "
        "--summary-syscall-overhead -P --trace-path -s --string-limit -S --summary-sort-by "
        "-U --summary-columns -u --user -X --const-print-style --trace --signal --status "
        "--abbrev --verbose --raw --read --write --fault --inject --kvm",
        "-c --summary-only -C --summary -d --debug -D --daemonize -DD -DDD -f --follow-forks "
        "-ff --output-separately -F -h -i --instruction-pointer -k --stack-trace -n "
        "--syscall-number -q --quiet -qq -qqq -r --relative-timestamps -t --absolute-timestamps "
        "-tt -ttt -T --syscall-times -v --no-abbrev -w --summary-wall-clock -x -xx -y "
        "--decode-fds -yy -Y --decode-pids -z --successful-only -Z --failed-only --seccomp-bpf "
        "--timestamps",
    ),
    # setpriv(1): [options] program [arguments]; -d/--dump and --list-caps run nothing
    "setpriv": _spec(
        "--ruid --euid --reuid --rgid --egid --regid --groups --inh-caps --ambient-caps "
        "--bounding-set --securebits --pdeathsig --selinux-label --apparmor-profile "
        "--landlock-access --landlock-rule --seccomp-filter",
        "--nnp --no-new-privs --keep-groups --clear-groups --init-groups --reset-env",
    ),
    # chpst(8): getopt "+u:U:b:e:m:d:o:p:f:c:r:t:/:C:n:l:L:vP012V" child
    "chpst": _spec("-u -U -b -e -m -d -o -p -f -c -r -t -/ -C -n -l -L", "-v -P -0 -1 -2"),
    # s6-setuidgid ACCOUNT PROG...
    "s6-setuidgid": _spec("", "", 1),
    # glibc's catchsegv PROGRAM [ARGS] (removed in glibc 2.35, still in older images)
    "catchsegv": _spec("", ""),
    # systemd-run(1): the --on-* timers and --shell are not listed (they start nothing now)
    "systemd-run": _spec(
        "-u --unit -p --property --description --slice --service-type --uid --gid --nice "
        "--working-directory -E --setenv -H --host -M --machine --path-property "
        "--socket-property",
        "--no-ask-password --scope --slice-inherit -r --remain-after-exit --send-sighup -d "
        "--same-dir -t --pty -P --pipe -q --quiet --no-block --wait -G --collect --user "
        "--system",
    ),
}
# `PROG SUBCOMMAND [options] COMMAND...`: (with value, flags, operands)
_SUBCOMMANDS: dict[tuple[str, str], _Spec] = {
    # conda run [-n ENV | -p PATH] [-v] [--dev] [--debug-wrapper-scripts] [--cwd CWD] [-s]
    ("conda", "run"): _spec(
        "-n --name -p --prefix --cwd",
        "-v --verbose --dev --debug-wrapper-scripts -s --no-capture-output --live-stream",
    ),
    ("micromamba", "run"): _spec(
        "-n --name -p --prefix -r --root-prefix --cwd", "--clean-env -q --quiet -v --verbose"
    ),
    ("mamba", "run"): _spec(
        "-n --name -p --prefix --cwd",
        "-v --verbose -s --no-capture-output --live-stream",
    ),
    ("pixi", "run"): _spec(
        "-e --environment --manifest-path --color",
        "--frozen --locked --no-install --clean-env --revalidate --force-activate -q --quiet "
        "-v --verbose",
    ),
    # poetry's global options may follow `run`
    ("poetry", "run"): _spec(
        "-C --directory -P --project",
        "-q --quiet -v -vv -vvv --verbose -n --no-interaction "
        "--no-plugins --no-cache --ansi --no-ansi",
    ),
    ("pipenv", "run"): _spec("", ""),
    ("watchmedo", "auto-restart"): _spec(
        "-d --directory -p --pattern --patterns -i --ignore-pattern --ignore-patterns "
        "--interval --timeout --signal --kill-after --debounce-interval",
        "-D --ignore-directories -R --recursive --no-restart-on-command-exit "
        "--debug-force-polling --debug-force-inotify",
    ),
}
# what may hide the program behind a name of the project's own file (a task, a script)
_SHADOWED = {
    "pixi": "a pixi task of that name in pixi.toml would run instead",
    "poetry": "a [tool.poetry.scripts] entry of that name would run instead",
    "pipenv": "a [scripts] entry of that name in the Pipfile would run instead",
}
_NOT_READ = {
    ("accelerate", "launch"): "`accelerate launch` takes its process count and launcher "
    "from a config file not visible here",
    ("ray", "job"): "`ray job submit` runs its entrypoint on the Ray cluster, not in this "
    "container",
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
# `uvx` (= `uv tool run`): uv run's options and --from PACKAGE
_UVX = (_UV_RUN[0] | {"--from"}, _UV_RUN[1], 0)
# prlimit(1): each resource option takes its limits only glued (-n1024, --nofile=1024)
_PRLIMIT_RESOURCES = _spec(
    "-c --core -d --data -e --nice -f --fsize -i --sigpending -l --memlock -m --rss -n "
    "--nofile -q --msgqueue -r --rtprio -s --stack -t --cpu -u --nproc -v --as -x --locks "
    "-y --rttime",
    "",
)[0]
_PRLIMIT = _spec("-o --output", "--noheadings --raw --verbose")
# torchrun (torch.distributed.run): options with a value, and flags; both spellings
_TORCHRUN_VALUES = (
    "nnodes nproc-per-node rdzv-backend rdzv-endpoint rdzv-id rdzv-conf max-restarts "
    "monitor-interval start-method role node-rank master-addr master-port local-addr log-dir "
    "redirects tee local-ranks-filter logs-specs"
)
_TORCHRUN = _spec(
    " ".join(f"--{n} --{n.replace('-', '_')}" for n in _TORCHRUN_VALUES.split()) + " -r -t",
    "--standalone --no-python --no_python -m --module --run-path --run_path",
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
    cleared: bool = False  # `env -i`, `setpriv --reset-env`: the shell's exports are gone
    caveat: str = ""  # why the reading is not exact (a task runner's own names)


@dataclass(frozen=True)
class Unknown:
    """A launcher whose words cannot be read with certainty (an unlisted option)."""

    reason: str


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isidentifier() and name.isascii()


def _skip_options(
    argv: Sequence[str], i: int, spec: _Spec, prog: str, glued: frozenset[str] = frozenset()
) -> int | Unknown:
    """Index of the first operand after ``prog``'s options at ``argv[i:]``; ``glued``:
    options whose optional value is only ever glued (``-n1024``, ``--nofile=1024``)."""
    with_value, flags, _ = spec
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return i + 1
        if not word.startswith("-") or word == "-":
            return i
        name = word.split("=", 1)[0] if word.startswith("--") else word
        if name in glued or (not word.startswith("--") and word[:2] in glued):
            i += 1
            continue
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
    cleared = no_path = False
    caveat = ""
    while i < len(argv):
        prog = argv[i].rsplit("/", 1)[-1]
        sub = argv[i + 1] if i + 1 < len(argv) else ""
        if prog == "env" and any(
            a in ("-i", "--ignore-environment", "-") for a in _env_options(argv, i + 1)
        ):
            cleared = no_path = True
            assignments.clear()
        if (prog, sub) in _NOT_READ:
            return Unknown(_NOT_READ[(prog, sub)])
        found = _one(argv, i, prog, sub, assignments)
        if found is None:
            break
        if (prog, sub) in _SUBCOMMANDS:
            caveat = _SHADOWED.get(prog, caveat)
        cleared = cleared or (prog == "setpriv" and "--reset-env" in argv[i + 1 : found_at(found)])
        if isinstance(found, Unwrapped):
            return Unwrapped(
                found.start,
                (*assignments, *found.assignments),
                found.script,
                found.uv_module,
                cleared or found.cleared,
                caveat,
            )
        if isinstance(found, Unknown):
            return found
        i = found
    if no_path and i < len(argv) and "/" not in argv[i] and "PATH" not in dict(assignments):
        return Unknown(
            "`env -i` without PATH: the program is looked up in glibc's default /bin:/usr/bin only"
        )
    return Unwrapped(i, tuple(assignments), cleared=cleared, caveat=caveat)


def found_at(found: int | Unwrapped | Unknown) -> int:
    return found if isinstance(found, int) else 0


def _one(
    argv: Sequence[str], i: int, prog: str, sub: str, assignments: list[tuple[str, str]]
) -> int | Unwrapped | Unknown | None:
    """Past the launcher ``prog`` at ``argv[i]``; None when it is no launcher."""
    handler = _HANDLERS.get(prog)
    if handler is not None:
        return handler(argv, i + 1, assignments)
    if prog == "uv" and sub == "run":
        return _uv_run(argv, i + 2, _UV_RUN, "uv run")
    if prog == "uvx" or (prog == "uv" and sub == "tool" and argv[i + 2 : i + 3] == ["run"]):
        return _uv_run(argv, i + (1 if prog == "uvx" else 3), _UVX, "uvx")
    if (prog, sub) in _SUBCOMMANDS:
        return _skip_options(argv, i + 2, _SUBCOMMANDS[(prog, sub)], f"{prog} {sub}")
    if prog in _SPECS:
        return _launcher(argv, i, prog)
    return None


def _env_options(argv: Sequence[str], i: int) -> list[str]:
    """The option words of ``env`` at ``argv[i:]`` (up to its first operand)."""
    out: list[str] = []
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        out.append(argv[i])
        i += 2 if argv[i] in _ENV_WITH_VALUE else 1
    return out


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
    if i < len(argv) and argv[i] == "-":
        i += 1  # `env -`: the same as -i
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
            i += 1  # the environment is emptied: unwrap() says so (cleared)
        else:
            return Unknown(f"`env` option {opt!r} (-S splits a string) is not read")
    while i < len(argv) and _is_assignment(argv[i]):
        name, _, value = argv[i].partition("=")
        assignments.append((name, value))
        i += 1
    return i


def _uv_run(argv: Sequence[str], i: int, spec: _Spec, prog: str) -> int | Unwrapped | Unknown:
    """After ``uv run`` (or ``uvx``): the command's index, or an Unwrapped module for
    ``-m MODULE``."""
    with_value, flags, _ = spec
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return i + 1
        if word in ("-m", "--module") and prog == "uv run":
            return Unwrapped(i + 1, uv_module=True)
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
            return Unknown(f"`{prog}` option {word!r} is not one vllm-preflight knows")
    return i


def _su(
    argv: Sequence[str], i: int, assignments: list[tuple[str, str]], prog: str = "su"
) -> int | Unwrapped | Unknown:
    """``su [options] [-] [USER] -c SCRIPT``: the script, read as ``sh -c``;
    ``runuser -u USER [options] [--] COMMAND`` (runuser(1)): the command itself."""
    if prog == "runuser" and any(
        a in ("-u", "--user") or a.startswith("--user=") for a in argv[i:]
    ):
        at = _skip_options(argv, i, _RUNUSER, prog)
        if (
            isinstance(at, int)
            and argv[at - 1] != "--"
            and any(a.startswith("-") for a in argv[at:])
        ):
            # GNU getopt permutes runuser's words: the command's options are runuser's
            return Unknown("`runuser -u` without `--` reads the command's options as its own")
        return at
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
        return Unknown(f"`{prog}` without -c starts an interactive shell")
    return Unwrapped(len(argv), (), script=script)


# runuser -u USER [options] [[--] COMMAND]: -c and --session-command belong to the su form
_RUNUSER = _spec(
    "-u --user -g --group -G --supp-group -w --whitelist-environment",
    "-m -p --preserve-environment -P --pty -f --fast",
)
_FLOCK = _spec(
    "-E --conflict-exit-code -w --wait --timeout",
    "-s --shared -x -e --exclusive -n --nb --nonblock -o --close -u --unlock -F --no-fork "
    "--verbose",
)


def _flock(
    argv: Sequence[str], i: int, assignments: list[tuple[str, str]]
) -> int | Unwrapped | Unknown:
    """flock(1): ``flock [options] FILE COMMAND...`` or ``flock [options] FILE -c STRING``
    (run by $SHELL, /bin/sh by default); ``flock [options] FD`` runs nothing. With -n or
    -w the command runs only when the lock is free (a fresh container's lock is)."""
    at = _skip_options(argv, i, _FLOCK, "flock")
    if isinstance(at, Unknown):
        return at
    if at + 1 < len(argv) and argv[at + 1] in ("-c", "--command"):
        if at + 2 >= len(argv):
            return Unknown("`flock -c` without a command")
        return Unwrapped(len(argv), (), script=argv[at + 2])
    return at + 1


def _prlimit(argv: Sequence[str], i: int, _: object = None) -> int | Unknown:
    """prlimit(1): ``prlimit [options] [--RESOURCE=limits] [--] COMMAND``; -p (a running
    process) is not listed, so it is named unread."""
    return _skip_options(argv, i, _PRLIMIT, "prlimit", _PRLIMIT_RESOURCES)


def _torchrun(argv: Sequence[str], i: int, _: object = None) -> int | Unwrapped | Unknown:
    """torchrun starts --nproc-per-node copies (default 1) of a Python script (``-m``: a
    module; ``--no-python``: a program). One copy on one node of a program or module is
    the bare command; anything else is not one vLLM server and is named unread."""
    at = _skip_options(argv, i, _TORCHRUN, "torchrun")
    if isinstance(at, Unknown):
        return at
    options = argv[i:at]
    values = _option_values(options, _TORCHRUN)
    nproc = values.get("--nproc-per-node", values.get("--nproc_per_node", "1"))
    nnodes = values.get("--nnodes", "1")
    if nproc != "1" or nnodes not in ("1", "1:1"):
        return Unknown(
            f"`torchrun --nproc-per-node {nproc} --nnodes {nnodes}` starts a copy per process "
            "(vLLM's external_launcher), not one vLLM server"
        )
    if "--no-python" in options or "--no_python" in options:
        return at
    if "-m" in options or "--module" in options:
        return Unwrapped(at, uv_module=True)
    return Unknown("`torchrun` runs a Python script file vllm-preflight cannot see")


def _runuser(
    argv: Sequence[str], i: int, assignments: list[tuple[str, str]]
) -> int | Unwrapped | Unknown:
    return _su(argv, i, assignments, "runuser")


_HANDLERS: dict[
    str, Callable[[Sequence[str], int, list[tuple[str, str]]], int | Unwrapped | Unknown]
] = {
    "env": _env,
    "su": _su,
    "runuser": _runuser,
    "flock": _flock,
    "prlimit": _prlimit,
    "torchrun": _torchrun,
}


def _option_values(options: Sequence[str], spec: _Spec) -> dict[str, str]:
    """``--name value`` / ``--name=value`` of the options with a value."""
    out: dict[str, str] = {}
    k = 0
    while k < len(options):
        name, eq, value = options[k].partition("=")
        if name in spec[0]:
            if not eq and k + 1 < len(options):
                value = options[k + 1]
                k += 1
            out[name] = value
        k += 1
    return out
