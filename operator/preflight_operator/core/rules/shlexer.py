"""The lexer of the rules' shell reader (shparse): a script's text as tokens, words
with their parts and quoting, operators (bash's or POSIX's), here-document bodies; and
heredoc_word, the body of a here-document with an unquoted delimiter as one word.

Where a ``$(...)``, ``${...}`` or backquoted part ends is shscan's; an unbalanced one
raises shscan.Unbalanced, which shparse.parse turns into ShellSyntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from preflight_operator.core.rules.shscan import Unbalanced, skip_backquote, skip_group
from preflight_operator.core.rules.shsyntax import Part, ShellSyntax, Word

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATOR_CHARS = ";&|()<>"
_BLANKS = " \t\r"


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
