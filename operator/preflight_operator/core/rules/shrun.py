"""Which vLLM command a shell script runs, read as bash (or dash) would run it.

The script is parsed (shparse) and walked in execution order with what the manifest tells:
the container's env, the script's own assignments (with word splitting of unquoted
expansions), functions (a body runs where the function is called, never where it is
defined), ``"$@"``, ``set --``, ``eval``, nested ``sh -c``/``bash -c``/``su -c`` and the
launchers of rules.launchers. Redirections and here-documents are not words of a command;
what flows through a pipe or into a file is followed where its text is certain
(rules.shio: ``echo ... | xargs vllm``, ``read <<<``, a script written by a here-document
then run).

A branch whose taken arm is not known here (``if``, ``case``, ``&&``/``||``, a loop
condition) is walked on every arm; assignments that differ between arms become unknown
(``"$@"`` and arrays word by word: the words the arms agree on stay, the words only some
arms append are one unknown word), and the commands met on an arm are *conditional*.
The result is the first vLLM command that runs on every path, with the conditional ones
met before it: when they all have the same argv that argv is the answer, else the answer
is "unknown" (Doubt), never a guess.
An unknown value stays an unknown marker (kubeenv) inside the argv, so the rules warn and
never fail on it. ``exact`` says no part of the argv is a guess; the oracle test
(tests/unit/test_shell_oracle.py) runs the scripts under the real bash and dash and holds
every exact reading to what they pass to vLLM.

Bounded: MAX_STEPS commands walked, MAX_DEPTH nested scripts, the container's expansion
Budget; past any of them the answer is a Doubt naming the bound.

The walk is here (Runner, and Programs: what runs as a program); its parts beside it:
shstate.py (the State, Found and Doubt), shfields.py (a word's fields), shcompound.py (if,
case, loops), shcommands.py (simple commands and builtins), shio.py (pipes and files).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial

from preflight_contract.vllm_args import vllm_args_start
from preflight_operator.core.rules import launchers, shell
from preflight_operator.core.rules.kubeenv import Budget, has_unknown, unknown_marker
from preflight_operator.core.rules.shcommands import Commands
from preflight_operator.core.rules.shcompound import Compounds
from preflight_operator.core.rules.shfields import Fields
from preflight_operator.core.rules.shio import Streams
from preflight_operator.core.rules.shparse import (
    AndOr,
    Case,
    Command,
    CommandList,
    Function,
    Group,
    If,
    Loop,
    Opaque,
    Pipeline,
    ShellSyntax,
    Simple,
    Word,
    parse,
)
from preflight_operator.core.rules.shstate import (
    MAX_DEPTH,
    MAX_STEPS,
    UNSET,
    Doubt,
    Found,
    Halt,
    State,
    merge_states,
    shell_unknown,
)

# the walk's public names, here and in its parts (importers need no other module)
__all__ = [
    "MAX_DEPTH",
    "MAX_STEPS",
    "SHELLS",
    "Doubt",
    "Found",
    "Programs",
    "Runner",
    "State",
    "literal_references",
    "resolve",
    "script_index",
    "shell_unknown",
    "undefined_reference",
]

SHELLS = frozenset(("sh", "bash", "dash", "ash", "zsh", "ksh", "busybox"))
_ASSIGN_DEFAULT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:?)=(.*)\}", re.DOTALL)
_ARRAY_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\[([@*])\]\}")


class Runner:
    """Walks one script (and the scripts it starts) and records the vLLM commands."""

    def __init__(
        self,
        lookup: Callable[[str], str | None],
        budget: Budget,
        events: list[Found | Doubt],
        *,
        depth: int = 0,
        steps: list[int] | None = None,
        dialect: str = "bash",
    ) -> None:
        self.lookup = lookup  # the process env the script starts with
        self.budget = budget
        self.events = events
        self.depth = depth
        self.steps = steps if steps is not None else [0]
        self.dialect = dialect
        self.state = State()
        self.cond = False  # reached on some paths only
        self.halt: str | None = None  # exit, return, break, found
        self.testing = 0  # inside an if/while condition: set -e does not apply
        # env values the script may run as words ($CMD): a script that names vLLM nowhere,
        # and is given nothing that does, is not read at all (sidecars cost nothing)
        self.mentions: tuple[str, ...] = ()
        # the walk's three helpers, each a part of the shell's grammar
        self.compounds = Compounds(self)
        self.commands = Commands(self)
        self.programs = Programs(self)
        self.streams = Streams(self)

    # -- entry points -------------------------------------------------------------------

    def run_script(self, script: str, positional: Sequence[str]) -> None:
        try:
            tree = parse(script, bash=self.dialect == "bash")
        except (ShellSyntax, RecursionError) as exc:
            if "vllm" in script:
                self.events.append(Doubt(f"the shell script does not parse: {exc}"))
            return
        self.state.positional = list(positional)
        try:
            self._list(tree)
        except Halt:
            self.events.append(Doubt(f"the script runs more than {MAX_STEPS} commands before vLLM"))
            self.halt = "found"
        except RecursionError:
            self.events.append(Doubt("the script nests too deeply to be read"))
            self.halt = "found"

    def run_argv(self, argv: Sequence[str], exports: Mapping[str, str], offset: int | None) -> None:
        """A command already split into words (a container's command + args)."""
        self.programs._program(list(argv), dict(exports), offset)

    # -- variables ----------------------------------------------------------------------

    def variable(self, name: str) -> str | None:
        if name in self.state.vars:
            value = self.state.vars[name]
            return None if value == UNSET else value
        if self.state.opaque:
            return shell_unknown(name)
        if name in self.state.exported:
            return self.state.exported[name]
        return self.lookup(name)

    def _expand_param(self, text: str) -> str:
        return shell.expand_word(text, self.variable, self.state.positional, self.budget)

    def fields(self, word: Word, split: bool = True) -> list[str]:
        """The fields a word expands to (parameter expansion, word splitting, and
        unknown markers where pathname, brace or tilde expansion might apply)."""
        out = Fields(split and not self.state.ifs_set and self.dialect != "zsh", split)
        for index, part in enumerate(word.parts):
            if part.kind == "lit":
                out.literal(part.text, part.quoted, index == 0)
            elif part.kind == "unknown":
                out.add(unknown_marker(part.text), True)
            elif part.kind == "marker":
                out.add(part.text, True)
            else:
                multi = self._multi(part.text)
                if multi is None:
                    out.value(self._assign_default(part.text), part.quoted)
                elif multi[1]:  # $* or ${A[*]}: one string
                    out.value(" ".join(multi[0]), part.quoted)
                else:
                    for k, item in enumerate(multi[0]):
                        if k > 0:
                            out.new_field()
                        out.value(item, part.quoted)
        return out.result()

    def _assign_default(self, text: str) -> str:
        """``${NAME:=word}`` / ``${NAME=word}`` assign the word when NAME is unset (or, with
        the colon, empty), then expand to NAME's value (POSIX 2.6.2); other parts expand."""
        match = _ASSIGN_DEFAULT.fullmatch(text)
        if match is None:
            return self._expand_param(text)
        name, colon, default = match.groups()
        value = self.variable(name)
        if value is not None and has_unknown(value) and value == unknown_marker(name):
            # the env may define it (an envFrom not read here): its value, else the default
            value = unknown_marker(text)
            self.commands._set(name, value, export=False)
            return value
        if value is not None and not (colon and value == ""):
            return value
        if any(c in default for c in "'\"\\`"):
            value = shell_unknown(name)  # a quoted default: not modelled
        else:
            value = self._expand_param(default)
        self.commands._set(name, value, export=False)
        return value

    def _multi(self, text: str) -> tuple[list[str], bool] | None:
        """``$@``/``$*``/``${A[@]}``/``${A[*]}``: (items, joined), else None."""
        if text in ("${@}", "${*}"):
            return list(self.state.positional[1:]), text == "${*}"
        match = _ARRAY_REF.fullmatch(text)
        if match:
            name = match.group(1)
            if name in self.state.arrays:
                return list(self.state.arrays[name]), match.group(2) == "*"
            value = self.variable(name)
            return ([] if value is None else [value]), match.group(2) == "*"
        return None

    # -- walking ------------------------------------------------------------------------

    def _list(self, body: CommandList) -> bool | None:
        status: bool | None = True
        for and_or, background in body.items:
            if self.halt:
                break
            status = self._and_or(and_or)
            if background:
                status = True
        return status

    def _and_or(self, node: AndOr) -> bool | None:
        status = self._pipeline(node.first)
        last = not node.rest  # the status comes from the list's last pipeline
        for k, (op, pipeline) in enumerate(node.rest):
            if self.halt:
                break
            runs = status if op == "&&" else (None if status is None else not status)
            if runs is False:
                continue
            final = k == len(node.rest) - 1
            if runs:
                status = self._pipeline(pipeline)
                last = final
            else:
                self._branches([partial(self._pipeline, pipeline), _nothing])
                status = None
                last = False
        if last and not node.rest and node.first.negated:
            last = False
        self._errexit(status if last else True)
        return status

    def _errexit(self, status: bool | None) -> None:
        """``set -e``: a failure ends the script; a command whose status is not known
        here makes what follows conditional (it runs only if that command succeeded)."""
        if not self.state.errexit or self.testing or self.halt or status is True:
            return
        if status is False:
            self.halt = "exit"
        else:
            self.cond = True

    def _pipeline(self, node: Pipeline) -> bool | None:
        if len(node.commands) == 1:
            status = self._command(node.commands[0])
        else:
            status = None
            for command in node.commands:
                self._subshell(partial(self._command, command))
                # what the next command reads: the output of this one, where known
                self.streams.piped = self.streams.output if isinstance(command, Simple) else None
                self.streams.output = None
                if self.halt:
                    break
            self.streams.piped = None
        if node.negated and status is not None:
            return not status
        return None if node.negated else status

    def _subshell(self, run: Callable[[], bool | None]) -> bool | None:
        saved = self.state
        self.state = saved.copy()
        status = run()
        self.state = saved
        if self.halt != "found":
            self.halt = None  # an `exit` or `exec` ends the subshell only
        return status

    def _arm(self, run: Callable[[], object]) -> tuple[State, str | None]:
        saved_state, saved_cond = self.state, self.cond
        self.state, self.cond = saved_state.copy(), True
        run()
        result = (self.state, self.halt)
        self.state, self.cond, self.halt = saved_state, saved_cond, None
        return result

    def _branches(self, arms: list[Callable[[], object]]) -> None:
        """One of ``arms`` runs and which is not known: walk each, then merge."""
        results = [self._arm(arm) for arm in arms]
        live = [state for state, halt in results if halt is None]
        halts = [halt for _, halt in results if halt is not None]
        if "found" in halts:
            self.halt = "found"
            return
        if not live:
            self.halt = halts[0]
            return
        if len(live) < len(results):
            self.cond = True  # what follows runs only on some paths
        self.state = merge_states(live)

    def _command(self, node: Command) -> bool | None:
        self.steps[0] += 1
        if self.steps[0] > MAX_STEPS:
            raise Halt
        if isinstance(node, Simple):
            return self.commands._simple(node)
        if isinstance(node, Group):
            if node.subshell:
                return self._subshell(lambda: self._list(node.body))
            return self._list(node.body)
        if isinstance(node, If):
            self.compounds._if(node.clauses, node.otherwise)
            return None
        if isinstance(node, Case):
            self.compounds._case(node)
            return None
        if isinstance(node, Loop):
            self.compounds._loop(node)
            return None
        if isinstance(node, Function):
            self.state.functions[node.name] = node.body
            return True
        if isinstance(node, Opaque):
            return None
        return None


class Programs:
    """What one walk runs as a program: vLLM found (or doubted), a wrapper that runs its
    arguments, a nested shell with its own script."""

    def __init__(self, runner: Runner) -> None:
        self.r = runner

    def _program(self, words: list[str], exports: dict[str, str], offset: int | None) -> None:
        """A program (not a builtin): through its launchers to a shell, vLLM or other."""
        unwrapped = launchers.unwrap(words)
        if isinstance(unwrapped, launchers.Unknown):
            if any("vllm" in w for w in words[1:]):
                self.r.events.append(
                    Doubt(f"vLLM may run behind something not read here: {unwrapped.reason}")
                )
            return None
        if unwrapped.cleared:
            cleared = self._cleared(unwrapped.assignments)
            if cleared:
                self.r.events.append(
                    Doubt(
                        f"`env -i` clears the container's {cleared}, which the rules read from "
                        "the manifest's env"
                    )
                )
                return None
            exports.clear()  # `env -i`: vLLM gets only the words' own NAME=value
        for name, value in unwrapped.assignments:
            exports[name] = value
        start = unwrapped.start
        if offset is not None:
            offset += start
        if unwrapped.script is not None:
            self._nested("sh", unwrapped.script, ["sh"], exports)
            return None
        rest = words[start:]
        if not rest:
            return None
        base = rest[0].rsplit("/", 1)[-1]
        if base in SHELLS:
            self._shell(rest, exports)
            return None
        if "/" in rest[0] and rest[0] in self.r.state.files:  # (a bare name: PATH's)
            self._written(rest, exports)
            return None
        if self._python_forms(rest, exports, unwrapped.uv_module):
            return None
        if vllm_args_start(rest) is not None:
            exact = not unwrapped.caveat and not any(has_unknown(w) for w in rest)
            self._found(rest, exports, offset, exact)
            return None
        self._other(rest, base)
        return None

    def _cleared(self, assignments: Sequence[tuple[str, str]]) -> str | None:
        """A variable the rules read from the container's env that ``env -i`` takes from
        vLLM (the rules would judge the manifest's value, which vLLM never sees)."""
        given = {name for name, _ in assignments}
        for name in _RULES_ENV:
            value = self.r.lookup(name)
            if name not in given and value is not None and not has_unknown(value):
                return name
        return None

    def _other(self, rest: list[str], base: str) -> None:
        """A program that is not vLLM: named when vLLM may run behind it."""
        if base not in launchers.TEXT_ONLY and not has_unknown(base):
            self._doubt_if_vllm(rest, f"`{base}` is not a program vllm-preflight models")
        elif has_unknown(base):
            self._doubt_if_vllm(rest, "the program is not known here")

    def _found(
        self, argv: list[str], exports: Mapping[str, str], offset: int | None, exact: bool
    ) -> None:
        self.r.events.append(Found(tuple(argv), dict(exports), self.r.cond, exact, offset))
        if not self.r.cond:
            self.r.halt = "found"

    def _python_forms(self, rest: list[str], exports: dict[str, str], module: bool) -> bool:
        """vLLM as a Python module whose interpreter is not named exactly (``uv run -m``,
        ``torchrun -m``, ``$PYTHON -m``, runpy): read, never exact."""
        argv = None
        if module:
            argv = ["python3", "-m", *rest]
        elif _runpy_module(rest) is not None:
            argv = ["python3", "-m", _runpy_module(rest) or "", *rest[3:]]
        elif has_unknown(rest[0]) and vllm_args_start(["python3", *rest[1:]]) is not None:
            argv = ["python3", *rest[1:]]
        if argv is None:
            return False
        self._found(argv, exports, None, exact=False)
        return True

    def _written(self, words: list[str], exports: dict[str, str]) -> None:
        """A file the script wrote, run as a program: by its ``#!`` shell."""
        text, why = self.r.streams.script_of(words[0])
        shell_name = None
        if text is not None:
            shell_name, why = self.r.streams.interpreter(words[0], text)
        if text is None or shell_name is None:
            if "vllm" in (text or " ".join(words)):
                self.r.events.append(Doubt(f"vLLM may run behind something not read here: {why}"))
            return
        self._nested(shell_name, text, list(words), exports)

    def _doubt_if_vllm(self, words: list[str], reason: str) -> None:
        for i in range(1, len(words)):
            if vllm_args_start(words[i:]) is not None or (
                words[i] == "-m" and vllm_args_start(["python3", *words[i:]]) is not None
            ):
                self.r.events.append(Doubt(f"vLLM runs behind something not read here: {reason}"))
                return

    def _shell(self, words: list[str], exports: dict[str, str]) -> None:
        program = words[0].rsplit("/", 1)[-1]
        at = script_index(words)
        operand = _file_operand(words)
        stdin = self.r.commands.stdin
        if at is None and operand is not None and words[operand] in self.r.state.files:
            text, why = self.r.streams.script_of(words[operand])
            if text is None:
                self._doubt_if_vllm(words, why or "")
                return
            self._nested(program, text, words[operand:], exports)
            return
        if at is None and stdin is not None and (operand is None or "-s" in words[1:operand]):
            # `bash <<'EOF' ... EOF`, `echo "vllm serve ..." | sh`, `sh -s ARGS`: the
            # script is the shell's input
            args = words[operand:] if operand is not None else []
            self._nested(program, stdin, [program, *args], exports)
            return
        if at is None:
            if any("vllm" in w for w in words):
                self._doubt_if_vllm(words, f"`{program}` runs a file, not a -c script")
            return
        if program == "busybox" and len(words) > 1:
            program = words[1]
        options = words[1:at]
        errexit = any(
            w.startswith("-") and not w.startswith("--") and "e" in w[1:] for w in options
        ) or any(options[k : k + 2] == ["-o", "errexit"] for k in range(len(options)))
        self._nested(program, words[at], words[at + 1 :] or [program], exports, errexit)

    def _nested(
        self,
        program: str,
        script: str,
        positional: list[str],
        exports: dict[str, str],
        errexit: bool = False,
    ) -> None:
        if self.r.depth + 1 >= MAX_DEPTH:
            if "vllm" in script:
                self.r.events.append(Doubt(f"shells nested deeper than {MAX_DEPTH}"))
            return
        script = literal_references(script)
        if "vllm" not in script and not any(
            "vllm" in v for v in (*positional, *exports.values(), *self.r.mentions)
        ):
            return  # nothing in it or given to it names vLLM: it cannot start it
        environment = dict(exports)

        def lookup(name: str) -> str | None:
            if name in environment:
                return environment[name]
            return self.r.lookup(name)

        child = Runner(
            lookup,
            self.r.budget,
            [],
            depth=self.r.depth + 1,
            steps=self.r.steps,
            dialect="bash" if program == "bash" else ("zsh" if program == "zsh" else "sh"),
        )
        child.cond = self.r.cond
        child.mentions = self.r.mentions
        child.state.exported = dict(exports)
        child.state.errexit = errexit
        child.state.files = dict(self.r.state.files)  # the same file system
        child.state.executable = set(self.r.state.executable)
        child.run_script(script, positional)
        for event in child.events:
            if isinstance(event, Found):
                self.r.events.append(
                    Found(
                        event.argv,
                        {**exports, **event.exports},
                        event.conditional or self.r.cond,
                        event.exact,
                        None,
                    )
                )
            else:
                self.r.events.append(event)
        if child.halt == "found":
            self.r.halt = "found"


# python -c "import runpy; runpy.run_module('vllm....', run_name='__main__')" ARGS: the
# module runs with sys.argv = ['-c', *ARGS] (run_module leaves sys.argv alone unless
# alter_sys=True, which replaces only argv[0]): what `python -m MODULE ARGS` runs
_RUNPY = re.compile(
    r"\s*import\s+runpy\s*[;\n]\s*runpy\.run_module\(\s*(['\"])(vllm(?:\.\w+)+)\1\s*,"
    r"\s*run_name\s*=\s*(['\"])__main__\3\s*(?:,\s*alter_sys\s*=\s*(?:True|False)\s*)?\)"
    r"\s*;?\s*"
)


def _runpy_module(argv: Sequence[str]) -> str | None:
    """The module of ``python -c "import runpy; runpy.run_module('vllm...', ...)"``."""
    if len(argv) < 3 or not argv[0].rsplit("/", 1)[-1].startswith("python") or argv[1] != "-c":
        return None
    match = _RUNPY.fullmatch(argv[2])
    return match.group(2) if match else None


# the container env names the rules read as vLLM's process env (rules/ruleset: env.py,
# service.py, probes.py, modelfit.py through ContainerContext.process_env).
# NVIDIA_VISIBLE_DEVICES is not one: the container runtime reads it when it creates the
# container (and the device plugin's value replaces it); `env -i` inside changes no device.
_RULES_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "VLLM_PORT",
    "HF_HUB_OFFLINE",
    "HF_HUB_CACHE",
    "HF_HOME",
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
)


def _file_operand(words: Sequence[str]) -> int | None:
    """The index of the script file of ``bash [options] FILE ARGS``, if any."""
    i = 1
    while i < len(words) and words[i].startswith(("-", "+")):
        if words[i] == "--":
            return i + 1 if i + 1 < len(words) else None
        i += 2 if words[i] in ("-o", "+o", "-O", "+O") else 1
    return i if i < len(words) else None


def undefined_reference(name: str) -> str:
    """The marker of a ``$(NAME)`` in command/args that no env of the manifest defines
    (shown as ``$(NAME)``): the kubelet leaves it literally, a controller may define it."""
    return unknown_marker(f"$({name})")


_UNDEFINED = re.compile(r"\x00\$\(\$\(([^\x00)]*)\)\)\x00")


def literal_references(text: str) -> str:
    """A script's text as the shell gets it: an undefined ``$(NAME)`` stays literal (the
    shell then runs NAME as a command substitution, unknown to the walk)."""
    return _UNDEFINED.sub(lambda m: f"$({m.group(1)})", text)


def _nothing() -> None:
    """The arm of a branch that runs nothing."""


def script_index(words: Sequence[str]) -> int | None:
    """Where the script of `sh -c SCRIPT` (any shell, its options before) is, or None."""
    i = 1
    if words[0].rsplit("/", 1)[-1] == "busybox":
        i = 2  # busybox sh -c ...
    script_at = None
    while i < len(words):
        word = words[i]
        if word in ("-o", "+o", "-O", "+O"):
            i += 2
            continue
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            script_at = i + 1
            break
        if word.startswith("--") and word != "--":
            i += 1  # bash --noprofile, --norc, --login
            continue
        if not word.startswith(("-", "+")):
            break  # `bash script.sh`: a file we cannot see
        i += 1
    if script_at is not None and script_at < len(words) and words[script_at] == "--":
        script_at += 1  # `bash -lc -- "script"`: `--` ends the shell's options
    if script_at is None or script_at >= len(words):
        return None
    return script_at


def resolve(events: Sequence[Found | Doubt]) -> Found | Doubt | None:
    """The vLLM command of the walk: the one every path agrees on, else a Doubt."""
    doubts = [e for e in events if isinstance(e, Doubt)]
    found = [e for e in events if isinstance(e, Found)]
    if doubts:
        return doubts[0]
    if not found:
        return None
    argvs = {f.argv for f in found}
    if len(argvs) > 1:
        shown = " | ".join(
            " ".join(a)[:120] for a in list(dict.fromkeys(f.argv for f in found))[:3]
        )
        return Doubt(
            "the vLLM command depends on a branch taken at run time, which is not known "
            f"here: {shown}"
        )
    first = found[0]
    if any(not f.conditional for f in found):
        first = next(f for f in found if not f.conditional)
    return Found(
        first.argv,
        first.exports,
        all(f.conditional for f in found),
        all(f.exact for f in found),
        first.offset,
    )
