"""A shell script parsed the way bash (and dash, for ``sh``) parses it: words with their
quoting, redirections, pipelines, lists, compound commands, functions, here-documents.

The grammar is POSIX's (XCU 2.10) plus the bash forms found in serving manifests: ``|&``,
``&>``/``&>>`` (bash only: in dash ``a &> f`` is ``a &`` then ``> f``), ``[[ ... ]]``,
``(( ... ))``, ``function NAME``, ``NAME=(array words)``, here-strings ``<<<``. What it
does not know (a ``select``, ``coproc``, an unbalanced quote) raises ShellSyntax; the
reader of the script then says "unknown", never guesses. tests/unit/test_shell_oracle.py
checks every reading against the real bash and dash.

Bounded: the input is at most a container's expanded text (kubeenv budgets); nesting past
MAX_NESTING raises ShellSyntax instead of a RecursionError.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Union

from preflight_operator.core.rules.shscan import Unbalanced, skip_backquote, skip_group

MAX_NESTING = 60
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATOR_CHARS = ";&|()<>"
_BLANKS = " \t\r"


class ShellSyntax(Exception):
    """The script does not parse (or uses a form not modelled here)."""


@dataclass(frozen=True)
class Part:
    """A piece of a word. ``kind``: ``lit`` (text, escapes removed), ``param`` (a raw
    ``$...`` part: ``${X:-d}``, ``$((..))``, ``$(..)``, ``$X``), ``unknown`` (a backquote
    or process substitution, ``$'...'``: never evaluated), ``marker`` (a value unknown
    before the script ran, kubeenv's marker, kept as it is)."""

    kind: str
    text: str
    quoted: bool


@dataclass(frozen=True)
class Word:
    parts: tuple[Part, ...]
    array: tuple[Word, ...] | None = None  # NAME=(a b c)

    @property
    def literal(self) -> str | None:
        """The word's text when it is one unquoted literal (a reserved word candidate)."""
        if len(self.parts) == 1 and self.parts[0].kind == "lit" and not self.parts[0].quoted:
            return self.parts[0].text
        return None

    @property
    def quoted(self) -> bool:
        return any(p.quoted for p in self.parts)

    def plain(self) -> str | None:
        """The text when the word has no expansions (quotes removed), else None."""
        if all(p.kind == "lit" for p in self.parts):
            return "".join(p.text for p in self.parts)
        return None


@dataclass
class Redirect:
    op: str
    target: Word | None  # None for a here-document
    heredoc: str | None = None
    fd: str | None = None  # the io number before the operator (2>&1)
    expands: bool = False  # a here-document whose delimiter is unquoted: $, ` and \ act


@dataclass
class Simple:
    assigns: list[Word]
    words: list[Word]
    redirects: list[Redirect] = field(default_factory=list)


@dataclass
class Pipeline:
    commands: list[Command]
    negated: bool = False


@dataclass
class AndOr:
    first: Pipeline
    rest: list[tuple[str, Pipeline]]


@dataclass
class CommandList:
    items: list[tuple[AndOr, bool]]  # (and-or list, runs in the background)


@dataclass
class Group:
    body: CommandList
    subshell: bool


@dataclass
class If:
    clauses: list[tuple[CommandList, CommandList]]
    otherwise: CommandList | None


@dataclass
class Case:
    word: Word
    arms: list[tuple[list[Word], CommandList]]


@dataclass
class Loop:
    kind: str  # while, until, for
    condition: CommandList | None
    variable: str | None
    values: list[Word] | None  # for NAME in WORDS; None: "$@"
    body: CommandList


@dataclass
class Function:
    name: str
    body: Command


@dataclass
class Opaque:
    """``[[ ... ]]`` or ``(( ... ))``: a test whose outcome is not known here."""

    what: str


Command = Union[Simple, Group, If, Case, Loop, Function, Opaque]


# -- lexer ------------------------------------------------------------------------------------


@dataclass
class Token:
    kind: str  # word, op, newline, heredoc, eof
    text: str = ""
    word: Word | None = None
    fd: str | None = None  # io number before a redirection operator


_OPERATORS_BASH = (
    ";;&",
    "&>>",
    "<<<",
    "<<-",
    ";;",
    ";&",
    "&&",
    "||",
    "|&",
    "&>",
    ">>",
    "<<",
    "<&",
    ">&",
    "<>",
    ">|",
    ";",
    "&",
    "|",
    "(",
    ")",
    "<",
    ">",
)
_OPERATORS_POSIX = tuple(o for o in _OPERATORS_BASH if o not in (";;&", "&>>", "<<<", "|&", "&>"))
# operators by their first character, longest first: one dict lookup per operator
_BY_FIRST = {
    bash: {c: [o for o in ops if o[0] == c] for c in ";&|()<>"}
    for bash, ops in ((True, _OPERATORS_BASH), (False, _OPERATORS_POSIX))
}
# A script is the text of one manifest field (at most kubeenv.MAX_VALUE_CHARS); the largest
# script of the corpus (tests/data) has 573 tokens. Past MAX_TOKENS the reading stops
# (unknown): 10,000 tokens lex and parse in about 0.2 s on a loaded 2-core machine.
MAX_TOKENS = 10_000
REDIRECTIONS = frozenset(("<", ">", ">>", "<&", ">&", "<>", ">|", "&>", "&>>", "<<<"))


class Lexer:
    def __init__(self, text: str, bash: bool) -> None:
        self.text = text
        self.i = 0
        self.bash = bash
        self.operators = _OPERATORS_BASH if bash else _OPERATORS_POSIX
        self.pending: list[tuple[Token, bool, str, bool]] = []  # heredocs to read

    def tokens(self) -> list[Token]:
        out: list[Token] = []
        text, n = self.text, len(self.text)
        while True:
            self._skip_blanks()
            if self.i >= n:
                out.append(Token("eof"))
                return out
            if len(out) >= MAX_TOKENS:
                raise ShellSyntax(f"longer than {MAX_TOKENS} tokens")
            ch = text[self.i]
            if ch == "\n":
                self.i += 1
                out.append(Token("newline"))
                self._read_heredocs()
            elif self.bash and text.startswith("((", self.i) and _command_start(out):
                end = _skip_arith_command(text, self.i + 2)
                part = Part("unknown", text[self.i : end], False)
                out.append(Token("word", "((", Word((part,))))
                self.i = end
            elif ch in _OPERATORS_CHARS_SET and not self._process_substitution():
                out.append(self._operator(None))
            else:
                start = self.i
                word = self._word()
                fd = text[start : self.i]
                if (
                    self.i < n
                    and text[self.i] in "<>"
                    and fd.isdigit()
                    and not self._process_substitution()
                ):
                    out.append(self._operator(fd))  # an io number: 2>&1
                else:
                    out.append(Token("word", fd, word))

    def _skip_blanks(self) -> None:
        """Past blanks, line continuations and a comment (up to its newline)."""
        text, n = self.text, len(self.text)
        while self.i < n:
            if text[self.i] in _BLANKS:
                self.i += 1
            elif text.startswith("\\\n", self.i):
                self.i += 2
            elif text[self.i] == "#":
                end = text.find("\n", self.i)
                self.i = n if end < 0 else end
            else:
                return

    def _operator(self, fd: str | None) -> Token:
        ops = _BY_FIRST[self.bash].get(self.text[self.i], ())
        op = next(o for o in ops if self.text.startswith(o, self.i))
        self.i += len(op)
        token = Token("op", op, fd=fd)
        if op in ("<<", "<<-"):
            self._heredoc(token, op)
        return token

    def _process_substitution(self) -> bool:
        return self.bash and self.text.startswith(("<(", ">("), self.i)

    def _heredoc(self, token: Token, op: str) -> None:
        text, n = self.text, len(self.text)
        while self.i < n and text[self.i] in _BLANKS:
            self.i += 1
        if self.i >= n or text[self.i] in "\n" + _OPERATOR_CHARS:
            raise ShellSyntax("a here-document without its delimiter")
        start = self.i
        word = self._word()
        raw = text[start : self.i]
        plain = word.plain()
        delimiter = plain if plain is not None else re.sub(r"[\\'\"]", "", raw)
        token.word = word
        self.pending.append((token, op == "<<-", delimiter, word.quoted))

    def _read_heredocs(self) -> None:
        text, n = self.text, len(self.text)
        for token, strip, delimiter, _quoted in self.pending:
            lines: list[str] = []
            while self.i < n:
                end = text.find("\n", self.i)
                line = text[self.i : n if end < 0 else end]
                self.i = n if end < 0 else end + 1
                check = line.lstrip("\t") if strip else line
                if check == delimiter:
                    break
                lines.append(check)
            token.kind = "heredoc"
            token.text = "\n".join(lines)
        self.pending.clear()

    def _word(self) -> Word:
        parts: list[Part] = []
        try:
            while self.i < len(self.text):
                piece = self._piece(parts)
                if piece is None:
                    break
                parts.extend(piece)
        except Unbalanced:
            raise ShellSyntax("an unbalanced $(, ${ or backquote") from None
        if parts and parts[0].kind == "array":
            return self._array(parts[1:])
        return Word(tuple(_merge(parts)))

    def _piece(self, parts: list[Part]) -> list[Part] | None:
        """The parts of the next piece of the word at ``self.i``; None at its end (an
        ``array`` marker part first when ``NAME=(`` opens an array)."""
        text, n, i = self.text, len(self.text), self.i
        ch = text[i]
        if ch in _BLANKS or ch == "\n":
            return None
        if ch in _OPERATOR_CHARS:
            if self._process_substitution():
                end = skip_group(text, i + 2, "(", ")")
                self.i = end
                return [Part("unknown", text[i:end], False)]
            if ch == "(" and self.bash and _array_open(parts):
                parts.insert(0, Part("array", "", False))
            return None
        if ch == _MARK:
            return [self._marker(quoted=False)]
        if ch == "'":
            return [self._single()]
        if ch == '"':
            self.i += 1
            return self._double()
        if ch == "\\":
            self.i = min(n, i + 2)
            if i + 1 >= n:
                return [Part("lit", "\\", False)]
            return [] if text[i + 1] == "\n" else [Part("lit", text[i + 1], True)]
        if ch == "$":
            return [self._dollar(quoted=False)]
        if ch == "`":
            self.i = skip_backquote(text, i + 1)
            return [Part("unknown", text[i : self.i], False)]
        end = i + 1
        while end < n and text[end] not in _WORD_STOP:
            end += 1
        self.i = end
        return [Part("lit", text[i:end], False)]

    def _array(self, prefix: list[Part]) -> Word:
        """``NAME=( words )``: the elements, as words."""
        self.i += 1  # "("
        elements: list[Word] = []
        text, n = self.text, len(self.text)
        while True:
            while self.i < n and text[self.i] in _BLANKS + "\n":
                self.i += 1
            if self.i >= n:
                raise ShellSyntax("an unclosed array assignment")
            if text[self.i] == ")":
                self.i += 1
                break
            if text[self.i] == "#":
                end = text.find("\n", self.i)
                self.i = n if end < 0 else end
                continue
            if text[self.i] in _OPERATOR_CHARS:
                raise ShellSyntax("an operator in an array assignment")
            elements.append(self._word())
        return Word(tuple(_merge(prefix)), tuple(elements))

    def _single(self) -> Part:
        text, i = self.text, self.i
        end = text.find("'", i + 1)
        if end < 0:
            raise ShellSyntax("an unbalanced single quote")
        self.i = end + 1
        return Part("lit", text[i + 1 : end], True)

    def _double(self) -> list[Part]:
        return self._double_parts(end='"')

    def _double_parts(self, end: str | None) -> list[Part]:
        """The parts of double-quoted text up to ``end`` (None: the end of the text)."""
        parts: list[Part] = []
        text, n = self.text, len(self.text)
        buf: list[str] = []

        def flush() -> None:
            # Only text: an empty quoted part would make a field of "$@" with no
            # arguments, which expands to no field at all (bash and dash: `f() { exec
            # vllm serve m "$@"; }; f` passes vLLM no '' argument). `""` alone still
            # makes its empty field (below).
            if buf:
                parts.append(Part("lit", "".join(buf), True))
            buf.clear()

        while self.i < n:
            ch = text[self.i]
            if ch == end:
                self.i += 1
                flush()
                return parts or [Part("lit", "", True)]
            if ch == "\\" and self.i + 1 < n and text[self.i + 1] in '$`"\\\n':
                if text[self.i + 1] != "\n":
                    buf.append(text[self.i + 1])
                self.i += 2
            elif ch == _MARK:
                flush()
                parts.append(self._marker(quoted=True))
            elif ch == "$":
                flush()
                parts.append(self._dollar(quoted=True))
            elif ch == "`":
                flush()
                close = skip_backquote(text, self.i + 1)
                parts.append(Part("unknown", text[self.i : close], True))
                self.i = close
            else:
                buf.append(ch)
                self.i += 1
        if end is None:
            flush()
            return parts or [Part("lit", "", True)]
        raise ShellSyntax("an unbalanced double quote")

    def _marker(self, quoted: bool) -> Part:
        """An unknown value the kubelet expansion put in the script (kubeenv's marker):
        one opaque piece of its word."""
        end = self.text.find(_MARK, self.i + 1)
        if end < 0:
            raise ShellSyntax("a broken unknown-value marker")
        part = Part("marker", self.text[self.i : end + 1], quoted)
        self.i = end + 1
        return part

    def _dollar(self, quoted: bool) -> Part:
        text, i = self.text, self.i
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if nxt in "({":
            end = skip_group(text, i + 2, nxt, ")" if nxt == "(" else "}")
            self.i = end
            return Part("param", text[i:end], quoted)
        if nxt == "'" and not quoted:  # $'...': ANSI-C in bash (and a bash /bin/sh)
            end = text.find("'", i + 2)
            if end < 0:
                raise ShellSyntax("an unbalanced $'")
            self.i = end + 1
            return Part("unknown", text[i : end + 1], quoted)
        match = _NAME.match(text, i + 1)
        if match:
            self.i = match.end()
            return Part("param", "${" + match.group() + "}", quoted)
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            self.i = i + 2
            return Part("param", "${" + nxt + "}", quoted)
        self.i = i + 1
        return Part("lit", "$", quoted)


_OPERATORS_CHARS_SET = frozenset(_OPERATOR_CHARS)
_MARK = "\x00"  # kubeenv's unknown marker: \x00$(NAME)\x00
_WORD_STOP = frozenset(_BLANKS + "\n" + _OPERATOR_CHARS + "'\"\\$`" + _MARK)


def _array_open(parts: list[Part]) -> bool:
    return (
        len(parts) == 1
        and parts[0].kind == "lit"
        and not parts[0].quoted
        and bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\+?=", parts[0].text))
    )


def _merge(parts: list[Part]) -> list[Part]:
    out: list[Part] = []
    for part in parts:
        if out and part.kind == "lit" and out[-1].kind == "lit" and out[-1].quoted == part.quoted:
            out[-1] = Part("lit", out[-1].text + part.text, part.quoted)
        else:
            out.append(part)
    return out


def _command_start(tokens: list[Token]) -> bool:
    if not tokens:
        return True
    last = tokens[-1]
    if last.kind in ("newline", "heredoc"):
        return True
    if last.kind == "op":
        return last.text in (";", "&", "&&", "||", "|", "(", ";;", "|&")
    return last.text in ("then", "do", "else", "elif", "if", "while", "until", "!", "{")


def _skip_arith_command(text: str, i: int) -> int:
    depth = 0
    n = len(text)
    while i < n:
        if text.startswith("))", i) and depth == 0:
            return i + 2
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
        i += 1
    raise ShellSyntax("an unclosed (( ))")


# -- parser -----------------------------------------------------------------------------------

_LIST_END = frozenset(("then", "else", "elif", "fi", "do", "done", "esac", "}"))
_UNSUPPORTED = frozenset(("select", "coproc"))


class Parser:
    # reserved word -> the method that parses its compound command (set below the class)
    _COMPOUND: ClassVar[dict[str, Callable[[Parser], Command]]] = {}

    def __init__(self, tokens: list[Token], bash: bool = True) -> None:
        self.tokens = tokens
        self.bash = bash
        self.pos = 0
        self.depth = 0

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def next(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind != "eof":
            self.pos += 1
        return token

    def reserved(self, *names: str) -> bool:
        token = self.peek()
        return token.kind == "word" and token.word is not None and token.word.literal in names

    def op(self, *ops: str) -> bool:
        token = self.peek()
        return token.kind == "op" and token.text in ops

    def expect_reserved(self, name: str) -> None:
        if not self.reserved(name):
            raise ShellSyntax(f"expected {name!r}")
        self.next()

    def skip_newlines(self) -> None:
        while self.peek().kind in ("newline", "heredoc"):
            self.next()

    def program(self) -> CommandList:
        body = self.command_list()
        if self.peek().kind != "eof":
            raise ShellSyntax(f"unexpected {self.peek().text or self.peek().kind!r}")
        return body

    def command_list(self) -> CommandList:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ShellSyntax(f"nested deeper than {MAX_NESTING}")
        items: list[tuple[AndOr, bool]] = []
        while True:
            self.skip_newlines()
            token = self.peek()
            if token.kind == "eof" or self.op(")", ";;", ";&", ";;&") or self.reserved(*_LIST_END):
                break
            and_or = self.and_or()
            background = False
            if self.op(";", "&"):
                background = self.next().text == "&"
            elif self.peek().kind not in ("newline", "heredoc", "eof") and not (
                self.op(")", ";;", ";&", ";;&") or self.reserved(*_LIST_END)
            ):
                raise ShellSyntax(f"unexpected {self.peek().text!r}")
            items.append((and_or, background))
        self.depth -= 1
        return CommandList(items)

    def and_or(self) -> AndOr:
        first = self.pipeline()
        rest: list[tuple[str, Pipeline]] = []
        while self.op("&&", "||"):
            op = self.next().text
            self.skip_newlines()
            rest.append((op, self.pipeline()))
        return AndOr(first, rest)

    def pipeline(self) -> Pipeline:
        negated = False
        while self.reserved("!", "time"):
            negated ^= self.next().text == "!"
            while self.peek().kind == "word" and self.peek().text in ("-p", "--"):
                self.next()  # `time -p`
        commands = [self.command()]
        while self.op("|", "|&"):
            self.next()
            self.skip_newlines()
            commands.append(self.command())
        return Pipeline(commands, negated)

    def command(self) -> Command:
        token = self.peek()
        if token.kind == "op" and token.text == "(":
            self.next()
            body = self.command_list()
            if not self.op(")"):
                raise ShellSyntax("an unclosed subshell")
            self.next()
            self._trailing_redirects()
            return Group(body, subshell=True)
        if token.kind != "word" or token.word is None:
            if token.kind == "heredoc" or (
                token.kind == "op" and (token.text in REDIRECTIONS or token.text in ("<<", "<<-"))
            ):
                return self.simple()
            raise ShellSyntax(f"unexpected {token.text or token.kind!r}")
        literal = token.word.literal
        if token.text == "((":
            self.next()
            self._trailing_redirects()
            return Opaque("(( ))")
        if literal in _UNSUPPORTED:
            raise ShellSyntax(f"`{literal}` is not modelled")
        compound = self._COMPOUND.get(literal or "")
        if compound is not None and not self.bash and literal in ("function", "[["):
            # dash refuses `function`, and runs `[[` as a program; a /bin/sh that is bash
            # takes both: which one the image has is not known here
            raise ShellSyntax(f"bash syntax `{literal}` in a POSIX sh script")
        if compound is not None:
            return compound(self)
        if literal is not None and self._at(1, "(") and self._at(2, ")"):
            self.pos += 3  # NAME ( ) body
            self.skip_newlines()
            return Function(literal, self.command())
        return self.simple()

    def _at(self, offset: int, op: str) -> bool:
        at = self.pos + offset
        return at < len(self.tokens) and self.tokens[at].kind == "op" and self.tokens[at].text == op

    def _brace_group(self) -> Group:
        self.next()
        body = self.command_list()
        self.expect_reserved("}")
        self._trailing_redirects()
        return Group(body, subshell=False)

    def _while(self) -> Loop:
        kind = self.next().text
        condition = self.command_list()
        self.expect_reserved("do")
        body = self.command_list()
        self.expect_reserved("done")
        self._trailing_redirects()
        return Loop(kind, condition, None, None, body)

    def _function(self) -> Function:
        self.next()
        name = self.next()
        if name.kind != "word" or name.word is None or name.word.literal is None:
            raise ShellSyntax("a function without a name")
        if self.op("("):
            self.next()
            if not self.op(")"):
                raise ShellSyntax("function NAME( without )")
            self.next()
        self.skip_newlines()
        return Function(name.word.literal, self.command())

    def _trailing_redirects(self) -> None:
        while self.op(*REDIRECTIONS, "<<", "<<-") or self.peek().kind == "heredoc":
            self._redirect()

    def _redirect(self) -> Redirect:
        token = self.next()
        if token.kind == "heredoc" or token.text in ("<<", "<<-"):
            return Redirect(token.text, None, "")
        target = self.next()
        if target.kind != "word":
            raise ShellSyntax(f"a redirection {token.text!r} without its target")
        return Redirect(token.text, target.word, fd=token.fd)

    def simple(self) -> Simple:
        assigns: list[Word] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        while True:
            token = self.peek()
            if token.kind == "op" and (token.text in REDIRECTIONS or token.text in ("<<", "<<-")):
                redirects.append(self._redirect())
                continue
            if token.kind == "heredoc":
                # the here-document body sits where its operator was; it was read
                self.next()
                expands = token.word is not None and not token.word.quoted
                redirects.append(Redirect("<<", None, token.text, token.fd, expands))
                continue
            if token.kind != "word" or token.word is None:
                break
            if not words and is_assignment_word(token.word):
                assigns.append(token.word)
            else:
                words.append(token.word)
            self.next()
        if not assigns and not words and not redirects:
            raise ShellSyntax(f"unexpected {self.peek().text or self.peek().kind!r}")
        return Simple(assigns, words, redirects)

    def _double_bracket(self) -> Opaque:
        self.next()
        while True:
            token = self.next()
            if token.kind == "eof":
                raise ShellSyntax("an unclosed [[")
            if token.kind == "word" and token.word is not None and token.word.literal == "]]":
                break
        self._trailing_redirects()
        return Opaque("[[ ]]")

    def _if(self) -> If:
        self.next()
        clauses: list[tuple[CommandList, CommandList]] = []
        otherwise = None
        while True:
            condition = self.command_list()
            self.expect_reserved("then")
            clauses.append((condition, self.command_list()))
            if self.reserved("elif"):
                self.next()
                continue
            if self.reserved("else"):
                self.next()
                otherwise = self.command_list()
            self.expect_reserved("fi")
            break
        self._trailing_redirects()
        return If(clauses, otherwise)

    def _for(self) -> Loop:
        self.next()
        name = self.next()
        if name.kind != "word" or name.word is None or name.word.literal is None:
            raise ShellSyntax("`for` without a name (or an arithmetic for)")
        values: list[Word] | None = None
        self.skip_newlines()
        if self.reserved("in"):
            self.next()
            values = []
            while self.peek().kind == "word" and self.peek().word is not None:
                token = self.next()
                assert token.word is not None
                values.append(token.word)
        if self.op(";"):
            self.next()
        self.skip_newlines()
        self.expect_reserved("do")
        body = self.command_list()
        self.expect_reserved("done")
        self._trailing_redirects()
        return Loop("for", None, name.word.literal, values, body)

    def _case(self) -> Case:
        self.next()
        token = self.next()
        if token.kind != "word" or token.word is None:
            raise ShellSyntax("`case` without a word")
        subject = token.word
        self.skip_newlines()
        self.expect_reserved("in")
        arms: list[tuple[list[Word], CommandList]] = []
        while True:
            self.skip_newlines()
            if self.reserved("esac"):
                self.next()
                break
            if self.op("("):
                self.next()
            patterns: list[Word] = []
            while True:
                pattern = self.next()
                if pattern.kind != "word" or pattern.word is None:
                    raise ShellSyntax("a case pattern expected")
                patterns.append(pattern.word)
                if self.op("|"):
                    self.next()
                    continue
                break
            if not self.op(")"):
                raise ShellSyntax("a case pattern without )")
            self.next()
            body = self.command_list()
            if self.op(";&", ";;&"):
                raise ShellSyntax("case fall-through is not modelled")
            arms.append((patterns, body))
            if self.op(";;"):
                self.next()
                continue
            self.skip_newlines()
            self.expect_reserved("esac")
            break
        self._trailing_redirects()
        return Case(subject, arms)


Parser._COMPOUND = {
    "{": Parser._brace_group,
    "[[": Parser._double_bracket,
    "if": Parser._if,
    "while": Parser._while,
    "until": Parser._while,
    "for": Parser._for,
    "case": Parser._case,
    "function": Parser._function,
}


def is_assignment_word(word: Word) -> bool:
    first = word.parts[0] if word.parts else None
    if first is None or first.kind != "lit" or first.quoted:
        return False
    return bool(re.match(r"[A-Za-z_][A-Za-z0-9_]*\+?=", first.text))


def heredoc_word(body: str) -> Word:
    """The body of a here-document with an unquoted delimiter as one word: parameter
    expansion, command substitution and backslash before $ ` \\ and newline act, as in
    double quotes, but a double quote is text (POSIX 2.7.4)."""
    lexer = Lexer(body.replace('"', "\x01"), True)
    try:
        parts = lexer._double_parts(end=None)
    except Unbalanced:
        raise ShellSyntax("an unbalanced $(, ${ or backquote in a here-document") from None
    return Word(tuple(Part(p.kind, p.text.replace("\x01", '"'), True) for p in parts))


def parse(script: str, bash: bool = True) -> CommandList:
    """The script's syntax tree; ShellSyntax when it does not parse."""
    try:
        tokens = Lexer(script, bash).tokens()
    except Unbalanced:
        raise ShellSyntax("an unbalanced $(, ${ or backquote") from None
    return Parser(tokens, bash).program()
