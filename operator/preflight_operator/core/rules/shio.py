"""What flows through a script's pipes and files, where the text is known here (issue 35
item 4): ``echo "serve m -tp 4" | xargs vllm``, ``read -r A B <<< "m 4"``, ``printf -v TP
'%s' 4``, and a script written by a here-document then run (``cat > /tmp/run.sh
<<'EOF' ... EOF`` then ``bash /tmp/run.sh``, or ``chmod +x /tmp/run.sh; /tmp/run.sh``).

Only the commands whose output is certain are modelled: ``echo`` (without backslashes:
dash's echo interprets them, bash's does not), ``printf`` with ``%s``/``%d``/``%%`` and
the escapes ``\\n``, ``\\t``, ``\\\\``, ``cat`` of its input or of files the script wrote,
``tee``. Anything else has an unknown output, and what reads it (``xargs``, ``read``, a
file run as a script) is unknown too: a Doubt that names it when it may start vLLM, never a
guess. Files live in the walk's State (a branch that writes differently makes the file
unknown); a relative path is forgotten at ``cd``. tests/unit/test_shell_launchers.py runs
every form under the real bash and dash.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from preflight_operator.core.rules import launchers
from preflight_operator.core.rules.kubeenv import MAX_VALUE_CHARS, has_unknown
from preflight_operator.core.rules.shparse import Redirect, ShellSyntax, heredoc_word

if TYPE_CHECKING:
    from preflight_operator.core.rules.shrun import Runner

# bounds: a file the walk keeps is at most a script's size (kubeenv.MAX_VALUE_CHARS), and
# its text is charged to the container's expansion Budget; at most MAX_FILES paths
MAX_FILE_CHARS = MAX_VALUE_CHARS
MAX_FILES = 64
_OUT_OPS = frozenset((">", ">|", ">>", "&>", "&>>"))
# programs that read the files they are given and write none of them (a shell runs one)
_READER_NAMES = (
    "cat echo printf chmod chown tee test [ ls head tail grep egrep fgrep wc stat file md5sum "
    "sha256sum diff cmp sh bash dash ash zsh ksh busybox source . exec command xargs sleep "
    "true false :"
)
_READERS = frozenset(_READER_NAMES.split())
_SHEBANG = re.compile(r"#!\s*(\S+)(?:[ \t]+(\S+))?[ \t]*(?:\n|$)")
# GNU xargs options that keep "one run with every input word": the rest (-n, -L, -I, -d,
# -0, -a, -P, ...) change how many runs or which words, and are named unread
_XARGS_FLAGS = frozenset(("-r", "--no-run-if-empty", "-t", "--verbose", "-x", "--exit"))


class Streams:
    """Pipes and files of one walk (Runner)."""

    def __init__(self, runner: Runner) -> None:
        self.r = runner
        self.piped: str | None = None  # what the previous command of a pipeline wrote
        self.output: str | None = None  # what the last simple command wrote to its stdout
        self.named: set[str] = set()  # files whose known text once named vLLM

    # -- input ----------------------------------------------------------------------------

    def stdin(self, redirects: Sequence[Redirect]) -> str | None:
        """The text a command reads on its standard input, or None when not known."""
        text = self.piped
        for redirect in redirects:
            if redirect.fd not in (None, "0"):
                continue
            if redirect.op == "<<<" and redirect.target is not None:
                text = "".join(self.r.fields(redirect.target, split=False)) + "\n"
            elif redirect.op == "<<" and redirect.heredoc is not None:
                text = self._heredoc(redirect)
            elif redirect.op == "<" and redirect.target is not None:
                text = self.r.state.files.get(self._path(redirect))
        return None if text is None or has_unknown(text) else text

    def _heredoc(self, redirect: Redirect) -> str | None:
        body = redirect.heredoc or ""
        if redirect.expands:
            try:
                body = "".join(self.r.fields(heredoc_word(body), split=False))
            except ShellSyntax:
                return None
        return body + "\n"

    def _path(self, redirect: Redirect) -> str:
        assert redirect.target is not None
        return "".join(self.r.fields(redirect.target, split=False))

    # -- output ---------------------------------------------------------------------------

    def run(self, words: list[str], redirects: Sequence[Redirect], stdin: str | None) -> None:
        """Record what ``words`` writes: to its stdout (self.output) and to files."""
        name = words[0]
        out: str | None = None
        if name == "echo":
            out = _echo(words[1:], self.r.dialect)
        elif name == "printf" and words[1:2] != ["-v"]:
            out = printf(words[1:])
        elif name == "cat":
            out = self._cat(words[1:], stdin)
        elif name == "tee":
            out = stdin
            self._tee(words[1:], stdin)
        elif name == "chmod":
            self._chmod(words[1:])
        elif name == "cd":
            for path in [p for p in self.r.state.files if not p.startswith("/")]:
                self.r.state.files[path] = None
        else:
            self._may_change(words)
        self.output = out
        for redirect in redirects:
            if redirect.op in _OUT_OPS and redirect.fd in (None, "1") and redirect.target:
                path = self._path(redirect)
                if not has_unknown(path):
                    self._write(path, out, append=redirect.op.endswith(">>"))
                self.output = ""  # the pipe gets nothing

    def _may_change(self, words: list[str]) -> None:
        """A program that may rewrite a file it is given (``sed -i ... /tmp/run.sh``, ``cp
        x /tmp/run.sh``, a Python script): that file's text is no longer known. (A program
        that writes a file it is not given by name is not seen.)"""
        if not self.r.state.files:
            return
        unwrapped = launchers.unwrap(words)
        start = unwrapped.start if isinstance(unwrapped, launchers.Unwrapped) else 0
        if start >= len(words) or words[start].rsplit("/", 1)[-1] in _READERS:
            return
        for path in list(self.r.state.files):
            if any(path in word for word in words[start + 1 :]):
                self.r.state.files[path] = None

    def _write(self, path: str, text: str | None, append: bool) -> None:
        files = self.r.state.files
        if append:
            before = files.get(path)
            text = None if before is None or text is None else before + text
        if text is not None and (len(text) > MAX_FILE_CHARS or not self.r.budget.charge(len(text))):
            text = None  # `cat a a > b; cat b b > a; ...` doubles: bounded, then unknown
        if text is not None and "vllm" in text and len(self.named) < MAX_FILES:
            self.named.add(path)
        if len(files) >= MAX_FILES and path not in files:
            return
        files[path] = text

    def _cat(self, args: list[str], stdin: str | None) -> str | None:
        if any(a.startswith("-") and a != "-" for a in args):
            return None
        pieces = [stdin if a == "-" else self.r.state.files.get(a) for a in args or ["-"]]
        return None if any(p is None for p in pieces) else "".join(p or "" for p in pieces)

    def _tee(self, args: list[str], stdin: str | None) -> None:
        append = any(a in ("-a", "--append") for a in args)
        for path in args:
            if not path.startswith("-") and not has_unknown(path):
                self._write(path, stdin, append)

    def _chmod(self, args: list[str]) -> None:
        operands = [a for a in args if not a.startswith("-")]
        if len(operands) < 2:
            return
        mode, paths = operands[0], operands[1:]
        executable = ("x" in mode and "-x" not in mode) or (
            mode.isdigit() and len(mode) >= 3 and int(mode[-3]) % 2 == 1
        )
        for path in paths:
            if executable:
                self.r.state.executable.add(path)
            else:
                self.r.state.executable.discard(path)

    # -- readers --------------------------------------------------------------------------

    def read(self, words: list[str], stdin: str | None) -> bool | None:
        """``read [-r] NAME...``: splits one line of known input as bash and dash do
        (default IFS; the last name takes the rest); else the names are unknown."""
        options = [w for w in words[1:] if w.startswith("-")]
        names = [w for w in words[1:] if not w.startswith("-")]
        line = None if stdin is None else stdin.split("\n", 1)[0]
        raw = "-r" in options
        known = (
            line is not None
            and set(options) <= {"-r"}
            and (raw or "\\" not in line)
            and not self.r.state.ifs_set
            and all(re.fullmatch(r"[A-Za-z_]\w*", n) for n in names)
        )
        if not known or line is None:
            return self._unknown(names)
        # default IFS: space, tab, newline (not \r: a CRLF line keeps it, as bash does)
        stripped = line.strip(" \t")
        fields = re.split(r"[ \t]+", stripped, maxsplit=max(len(names) - 1, 0)) if stripped else []
        for k, name in enumerate(names):
            value = fields[k].rstrip(" \t") if k < len(fields) else ""
            self.r.commands._set(name, value, export=False)
        return "\n" in (stdin or "")

    def printf_v(self, words: list[str]) -> bool | None:
        """bash's ``printf -v NAME FORMAT ARGS``: NAME gets the formatted text (dash's
        printf has no -v: an error, NAME unchanged)."""
        if len(words) < 4 or words[1] != "-v" or self.r.dialect != "bash":
            return self._unknown([w for w in words[1:] if not w.startswith("-")])
        value = printf(words[3:])
        if value is None or not re.fullmatch(r"[A-Za-z_]\w*", words[2]):
            return self._unknown([words[2]])
        self.r.commands._set(words[2], value, export=False)
        return True

    def _unknown(self, names: list[str]) -> bool | None:
        from preflight_operator.core.rules.shrun import shell_unknown  # noqa: PLC0415

        for name in names:
            if re.fullmatch(r"[A-Za-z_]\w*", name):
                self.r.state.vars[name] = shell_unknown(name)
        return None

    def xargs(self, words: list[str], stdin: str | None, exports: dict[str, str]) -> None:
        """GNU ``xargs [-r] [-t] [-x] [--] COMMAND ARGS``: COMMAND ARGS and the input's
        words, run once (the input holds no quote or backslash, which xargs would read)."""
        i = 1
        while i < len(words) and words[i].startswith("-"):
            if words[i] == "--":
                i += 1
                break
            if words[i] not in _XARGS_FLAGS:
                what = (
                    "reads a file not visible here"
                    if words[i].startswith(("-a", "--arg-file"))
                    else "is not read here"
                )
                return self._doubt(words, stdin, f"`xargs` option {words[i]!r} {what}")
            i += 1
        if stdin is None:
            return self._doubt(
                words, stdin, "`xargs` reads its arguments from input not known here"
            )
        if any(c in stdin for c in "'\"\\"):
            return self._doubt(words, stdin, "`xargs` input with quotes or backslashes")
        items = [w for w in re.split(r"[ \t\n]+", stdin) if w]  # xargs' blanks and newlines
        if not items and any(w in ("-r", "--no-run-if-empty") for w in words[1:i]):
            return None
        command = words[i:] or ["echo"]
        self.r.programs._program([*command, *items], exports, None)
        return None

    def _doubt(self, words: list[str], stdin: str | None, reason: str) -> None:
        from preflight_operator.core.rules.shrun import Doubt  # noqa: PLC0415

        if any("vllm" in w for w in words) or "vllm" in (stdin or ""):
            self.r.events.append(Doubt(f"vLLM may run behind something not read here: {reason}"))

    # -- written files run ----------------------------------------------------------------

    def script_of(self, path: str) -> tuple[str | None, str | None]:
        """(text, why not) of a file the script wrote; (None, None) when it wrote none."""
        if path not in self.r.state.files:
            return None, None
        text = self.r.state.files[path]
        if text is None:
            if path in self.named:  # it held a vLLM command, then changed: say so
                self._doubt(
                    ["vllm"], None, f"`{path}` is changed by the script in a way not read here"
                )
            return None, f"`{path}` is written by the script with text not known here"
        return text, None

    def interpreter(self, path: str, text: str) -> tuple[str | None, str | None]:
        """(shell, why not) for running ``path`` directly: its ``#!`` line, else the
        calling shell (bash and dash run a file without one as a script of their own)."""
        if path not in self.r.state.executable:
            return None, f"`{path}` is written by the script but no `chmod +x` of it is seen"
        match = _SHEBANG.match(text)
        if not text.startswith("#!"):
            return ("bash" if self.r.dialect == "bash" else "sh"), None
        if match is None:
            return None, f"the `#!` line of `{path}` is not read here"
        program, argument = match.groups()
        if program.rsplit("/", 1)[-1] == "env" and argument is not None:
            program, argument = argument, None
        base = program.rsplit("/", 1)[-1]
        if base in ("sh", "bash", "dash") and argument in (None, "-e", "-x", "-ex", "-xe"):
            return base, None
        return None, f"`{path}` runs with `#!{program}`, not read here"


def _echo(args: list[str], dialect: str) -> str | None:
    newline = "\n"
    if args[:1] == ["-n"]:
        args, newline = args[1:], ""
    if dialect == "bash" and args and re.fullmatch(r"-[neE]+", args[0]):
        return None  # bash's echo takes -e, -E and groups (-ne); dash's only -n
    text = " ".join(args)
    if "\\" in text or (dialect == "bash" and args[:1] in (["-e"], ["-E"])):
        return None  # escapes: dash's echo reads them, bash's (without -e) does not
    return text + newline


_PRINTF_PIECE = re.compile(r"%%|%[sdi]|\\[nt\\]|%|\\")


def printf(args: Sequence[str]) -> str | None:
    """``printf FORMAT ARGS`` for %s, %d/%i, %%, \\n, \\t, \\\\ (the format repeats while
    arguments are left, as POSIX says); None for anything else."""
    if not args or any(has_unknown(a) for a in args):
        return None
    fmt, rest = args[0], list(args[1:])
    out: list[str] = []
    while True:
        used = 0
        at = 0
        for match in _PRINTF_PIECE.finditer(fmt):
            out.append(fmt[at : match.start()])
            at = match.end()
            piece = match.group()
            if piece in ("%", "\\"):
                return None
            if piece.startswith("\\"):
                out.append({"\\n": "\n", "\\t": "\t", "\\\\": "\\"}[piece])
            elif piece == "%%":
                out.append("%")
            else:
                value = rest[used] if used < len(rest) else ""
                used += 1
                if piece != "%s":
                    # (a leading 0 is octal to printf, 0x hex: not modelled)
                    if not re.fullmatch(r"[-+]?(?:0|[1-9][0-9]*)", value or "0"):
                        return None
                    value = str(int(value or "0"))
                out.append(value)
        out.append(fmt[at:])
        rest = rest[used:]
        if not rest or used == 0:
            return "".join(out)
