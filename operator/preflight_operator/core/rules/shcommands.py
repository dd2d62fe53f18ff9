"""The simple commands of one walk of a script (shrun): assignments, declarations, and
the builtins that change the shell (set, shift, unset, source, eval, exec, test).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from preflight_operator.core.rules.kubeenv import has_unknown
from preflight_operator.core.rules.shparse import (
    Redirect,
    ShellSyntax,
    Simple,
    Word,
    is_assignment_word,
    parse,
)
from preflight_operator.core.rules.shstate import (
    MAX_DEPTH,
    UNSET,
    Doubt,
    Halt,
    shell_unknown,
)

if TYPE_CHECKING:
    from preflight_operator.core.rules.shrun import Runner


_DECLARATIONS = frozenset(("export", "readonly", "declare", "typeset", "local"))
_SETS_NAMES = frozenset(("read", "mapfile", "readarray", "getopts", "let"))


class Commands:
    """The simple commands of one walk: assignments, declarations and the builtins that
    change the shell (set, shift, unset, source, eval, exec)."""

    def __init__(self, runner: Runner) -> None:
        self.r = runner
        self.stdin: str | None = None  # the input of the command being run, where known

    def _simple(self, node: Simple) -> bool | None:
        prefix: dict[str, str] = {}
        arrays: dict[str, list[str]] = {}
        for word in node.assigns:
            name, value, items = self._assignment(word)
            prefix[name] = value
            if items is not None:
                arrays[name] = items
        if not node.words:
            for name, value in prefix.items():
                self._set(name, value, export=False, items=arrays.get(name))
            return None if any(has_unknown(v) for v in prefix.values()) else True
        head = node.words[0].literal
        if head in _DECLARATIONS:
            return self._declare(head, node.words[1:])
        words: list[str] = []
        for word in node.words:
            words.extend(self.r.fields(word))
        self.stdin = self.r.streams.stdin(node.redirects)
        self.r.streams.piped = None
        if not words:
            return True
        self.r.streams.run(words, node.redirects, self.stdin)
        exports = {**self.r.state.exported, **prefix}
        if any(_may_fail(r, self.r) for r in node.redirects):
            saved = self.r.cond
            self.r.cond = True  # it runs only if the file opens
            try:
                return self._argv(words, exports)
            finally:
                self.r.cond = saved or self.r.cond
        return self._argv(words, exports)

    def _assignment(self, word: Word) -> tuple[str, str, list[str] | None]:
        """(name, value, array items) of a NAME=value word."""
        first = word.parts[0].text
        name, _, rest = first.partition("=")
        name = name.rstrip("+")
        if word.array is not None:
            items = [f for w in word.array for f in self.r.fields(w)]
            if first.startswith(name + "+="):  # ARGS+=(more): appended
                before = self.r.state.arrays.get(name)
                if before is None:
                    scalar = self.r.variable(name)
                    before = [] if scalar is None else [scalar]
                items = [*before, *items]
            return name, items[0] if items else "", items
        from preflight_operator.core.rules.shparse import Part  # noqa: PLC0415

        tail = Word((Part("lit", rest, word.parts[0].quoted), *word.parts[1:]))
        values = self.r.fields(tail, split=False)
        value = "".join(values)
        if first.startswith(name + "+="):
            old = self.r.variable(name) or ""
            value = old + value
        return name, value, None

    def _set(self, name: str, value: str, export: bool, items: list[str] | None = None) -> None:
        self.r.state.arrays.pop(name, None)
        if items is not None:
            self.r.state.arrays[name] = items
        self.r.state.vars[name] = value
        if name == "IFS":
            self.r.state.ifs_set = True
        if export or name in self.r.state.exported or self.r.lookup(name) is not None:
            self.r.state.exported[name] = value

    def _declare(self, head: str, args: list[Word]) -> bool | None:
        export = head == "export"
        for word in args:
            literal = word.literal
            if literal is not None and literal.startswith(("-", "+")):
                if "x" in literal and literal.startswith("-"):
                    export = True
                if any(c in literal for c in "inAlu"):
                    for w in args:  # -i, -A, -l, -u change values: not modelled (-a
                        # is an indexed array: NAME=(...) as without it)
                        if is_assignment_word(w):
                            name = w.parts[0].text.split("=")[0]
                            self.r.state.vars[name] = shell_unknown(name)
                    return None
                continue
            if is_assignment_word(word):
                name, value, items = self._assignment(word)
                self._set(name, value, export, items)
            else:
                for name in self.r.fields(word):
                    known = self.r.variable(name)
                    if export and known is not None and re.fullmatch(r"[A-Za-z_]\w*", name):
                        self.r.state.exported[name] = known
        return True

    def _argv(self, words: list[str], exports: dict[str, str]) -> bool | None:
        """Run the command ``words`` (expanded): a builtin, a function, a launcher, a
        nested shell, vLLM, or another program."""
        program = words[0]
        if program in self.r.state.functions:
            return self._call(program, words)
        builtin = self._builtin(words, exports)
        if builtin != "no":
            return builtin  # type: ignore[return-value]
        if program == "xargs":
            self.r.streams.xargs(words, self.stdin, exports)
            return None
        self.r.programs._program(words, exports, None)
        return None

    def _call(self, name: str, words: list[str]) -> bool | None:
        body = self.r.state.functions[name]
        if body is None:
            self.r.programs._doubt_if_vllm(
                ["?", *words], f"function {name} is defined on some paths only"
            )
            return None
        if self.r.depth + 1 > MAX_DEPTH * 4:
            raise Halt
        saved = self.r.state.positional
        self.r.state.positional = [saved[0] if saved else "sh", *words[1:]]
        self.r.depth += 1
        try:
            status = self.r._command(body)
        finally:
            self.r.depth -= 1
        self.r.state.positional = saved
        if self.r.halt == "return":
            self.r.halt = None
        return status

    def _builtin(self, words: list[str], exports: dict[str, str]) -> object:
        """The status of a builtin that matters here, or "no"."""
        name = words[0]
        if name in _STATUS:
            return _STATUS[name]
        if name in _HALTS:
            self.r.halt = _HALTS[name]
            return None
        if name in ("test", "["):
            return _test(words[1:-1] if name == "[" and words[-1:] == ["]"] else words[1:])
        handler = _BUILTINS.get(name)
        if handler is not None:
            return handler(self, words, exports)
        if name == "read":
            return self.r.streams.read(words, self.stdin)
        if name == "printf" and words[1:2] == ["-v"]:
            return self.r.streams.printf_v(words)
        if name == "builtin" and len(words) > 1:
            if self.r.dialect != "bash":  # dash has no `builtin`; a bash /bin/sh has
                self.r.programs._doubt_if_vllm(words, "`builtin` in a POSIX sh script")
                return None
            inner = self._builtin(words[1:], exports)
            return None if inner == "no" else inner
        if name in _SETS_NAMES or (name == "printf" and "-v" in words):
            for var in words[1:]:
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var):
                    self.r.state.vars[var] = shell_unknown(var)
            return None
        if name == "cd" or (name == "command" and words[1:2] in (["-v"], ["-V"])):
            return None  # `command -v NAME` looks NAME up; it runs nothing
        return "no"

    def _exec(self, words: list[str], exports: dict[str, str]) -> bool | None:
        if len(words) == 1:
            return True  # only redirections
        self.r.programs._program(words, exports, None)
        if self.r.halt is None:
            self.r.halt = "exit"  # the shell is replaced: nothing after it runs
        return None

    def _eval_builtin(self, words: list[str], exports: dict[str, str]) -> bool | None:
        text = " ".join(words[1:])
        if has_unknown(text):
            if "vllm" in text:
                self.r.events.append(Doubt("`eval` of a value not known here"))
            return None
        return self._eval(text)

    def _source(self, words: list[str], exports: dict[str, str]) -> bool | None:
        # a name without a slash is looked up on PATH (dash; bash first): not that file
        path = words[1] if len(words) > 1 and "/" in words[1] else ""
        text, _ = self.r.streams.script_of(path)
        if text is None:
            self.r.state.opaque = True  # a file we cannot see: any variable may change
            return None
        saved = self.r.state.positional
        if len(words) > 2:
            self.r.state.positional = [saved[0] if saved else "sh", *words[2:]]
        status = self._eval(text)  # a file the script wrote: run here, as `.` does
        if len(words) > 2:
            self.r.state.positional = saved
        if self.r.halt == "return":
            self.r.halt = None
        return status

    def _set_builtin(self, words: list[str], exports: dict[str, str]) -> bool | None:
        args = words[1:]
        for k, arg in enumerate(args):
            if arg.startswith(("-", "+")) and arg not in ("-", "--", "-o", "+o"):
                if "e" in arg[1:]:
                    self.r.state.errexit = arg[0] == "-"
            elif args[k - 1 : k] in (["-o"], ["+o"]) and arg == "errexit":
                self.r.state.errexit = args[k - 1] == "-o"
        if args and args[0] == "--":
            self.r.state.positional = self.r.state.positional[:1] + args[1:]
        elif args and not args[0].startswith(("-", "+")):
            self.r.state.positional = self.r.state.positional[:1] + args
        return True

    def _shift(self, words: list[str], exports: dict[str, str]) -> bool | None:
        count = int(words[1]) if len(words) > 1 and words[1].isdigit() else 1
        del self.r.state.positional[1 : 1 + count]
        return True

    def _unset(self, words: list[str], exports: dict[str, str]) -> bool | None:
        for var in words[1:]:
            if not var.startswith("-"):
                self.r.state.vars[var] = UNSET
                self.r.state.exported.pop(var, None)
        return True

    def _eval(self, text: str) -> bool | None:
        if self.r.depth + 1 > MAX_DEPTH:
            self.r.events.append(Doubt("`eval` nested too deeply"))
            return None
        try:
            tree = parse(text, bash=self.r.dialect == "bash")
        except ShellSyntax as exc:
            if "vllm" in text:
                self.r.events.append(Doubt(f"`eval` of text that does not parse: {exc}"))
            return None
        self.r.depth += 1
        try:
            return self.r._list(tree)
        finally:
            self.r.depth -= 1


_STATUS = {":": True, "true": True, "false": False}
_HALTS = {"exit": "exit", "return": "return", "break": "break", "continue": "break"}
_BUILTINS: dict[str, Callable[[Commands, list[str], dict[str, str]], bool | None]] = {
    "exec": Commands._exec,
    "eval": Commands._eval_builtin,
    "source": Commands._source,
    ".": Commands._source,
    "set": Commands._set_builtin,
    "shift": Commands._shift,
    "unset": Commands._unset,
}


def _may_fail(redirect: Redirect, runner: Runner) -> bool:
    """An input redirection from a file other than /dev/null: bash does not run the
    command when the file cannot be opened, and whether it exists is not known here."""
    if redirect.op not in ("<", "<>") or redirect.target is None:
        return False
    return runner.fields(redirect.target, split=False) != ["/dev/null"]


def _test(args: list[str]) -> bool | None:
    """``test``/``[`` over known strings: -n, -z, =, ==, != and !; else unknown."""
    if any(has_unknown(a) for a in args):
        return None
    if args[:1] == ["!"]:
        inner = _test(args[1:])
        return None if inner is None else not inner
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2 and args[0] in ("-n", "-z"):
        return (args[1] != "") == (args[0] == "-n")
    if len(args) == 3 and args[1] in ("=", "==", "!="):
        return (args[0] == args[2]) == (args[1] != "!=")
    return None
