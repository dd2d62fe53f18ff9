"""Just enough POSIX shell to find a command in a `sh -c` script and expand its words.

This is not a shell: it splits a script into simple commands (on ``;``, ``&&``, ``||``,
``|``, ``&`` and newlines), drops comments and line continuations, removes quotes, and
expands ``$VAR``, ``${VAR}``, ``${VAR:-default}``, ``$1``, ``$@`` and integer arithmetic
``$((...))`` in the words of the command we care about.

A ``$(...)``, ``$((...))``, ``${...}`` or backquoted part is one piece of its word even when
it holds spaces or separators, as in sh (``-dp $((LWS_GROUP_SIZE * 8))`` is two words, not
four). Arithmetic is evaluated when every operand is known (a literal, an env value, a
shell variable set earlier, LWS_GROUP_SIZE which the engine defines for LeaderWorkerSets);
anything else, command substitutions included, becomes an unknown marker, so the rules say
"unknown" and never fail on it.

Every expansion draws on the container's Budget (kubeenv): past its caps the word becomes an
unknown marker naming why, so a hostile script costs bounded time and memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from preflight_operator.core.rules.kubeenv import (
    MAX_VALUE_CHARS,
    Budget,
    has_unknown,
    is_too_long,
    too_long_marker,
    unknown_marker,
)

_SEPARATOR_CHARS = ";&|\n"
_BLANKS = " \t\r"
# Words that open or close a compound command; the simple command starts after them.
RESERVED = frozenset(
    ("if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "(", ")")
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A quoted or escaped "$" is a literal dollar: it travels through expansion as this
# character (never in a manifest string, see kubeenv) and becomes "$" again at the end.
_LITERAL_DOLLAR = "\x01"
_LITERAL_BACKQUOTE = "\x02"
MAX_ARITHMETIC_CHARS = 1024
_INT64 = 2**63
_MAX_NESTING = 64  # parentheses in $((...)); deeper is unknown, never a RecursionError


class _Unbalanced(Exception):
    """A quote, ``$(``, ``${`` or backquote without its end."""


def _skip_group(text: str, i: int, opener: str, closer: str) -> int:
    """Index just past the ``closer`` matching the ``opener`` at ``text[i - 1]``.

    Quotes and nested groups inside are skipped, so ``$(echo ")")`` ends at the last ``)``.
    """
    depth = 1
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'" and opener == "(":
            end = text.find("'", i + 1)
            if end < 0:
                raise _Unbalanced
            i = end + 1
            continue
        if ch == '"':
            i = _skip_double(text, i + 1)
            continue
        if ch == "`":
            i = _skip_backquote(text, i + 1)
            continue
        if ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise _Unbalanced


def _skip_backquote(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`":
            return i + 1
        i += 1
    raise _Unbalanced


def _skip_double(text: str, i: int) -> int:
    """Index just past the closing double quote; ``i`` is just after the opening one."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
        elif ch == '"':
            return i + 1
        elif ch == "$" and i + 1 < n and text[i + 1] in "({":
            i = _skip_group(text, i + 2, text[i + 1], ")" if text[i + 1] == "(" else "}")
        elif ch == "`":
            i = _skip_backquote(text, i + 1)
        else:
            i += 1
    raise _Unbalanced


def _dollar_part(text: str, i: int) -> tuple[str, int]:
    """The ``$...`` part starting at ``text[i] == "$"`` (kept whole in its word) and the
    index after it. ``$NAME`` and ``$1`` come out braced (``${NAME}``): quote removal must
    not join a name to what follows (``"$N"a`` is ``${N}a``, not ``$Na``)."""
    if i + 1 < len(text) and text[i + 1] in "({":
        end = _skip_group(text, i + 2, text[i + 1], ")" if text[i + 1] == "(" else "}")
        return text[i:end], end
    match = _NAME.match(text, i + 1)
    if match:
        return "${" + match.group() + "}", match.end()
    if i + 1 < len(text) and (text[i + 1].isdigit() or text[i + 1] in "@*#?$!-"):
        return "${" + text[i + 1] + "}", i + 2
    return "$", i + 1


def _double_quoted(text: str, i: int) -> tuple[str, int]:
    """The unquoted content of the double-quoted string opening at ``text[i - 1]``."""
    out: list[str] = []
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt in '$`"\\':
                out.append({"$": _LITERAL_DOLLAR, "`": _LITERAL_BACKQUOTE}.get(nxt, nxt))
                i += 2
                continue
            out.append(ch)
            i += 1
            continue
        if ch == "$":
            part, i = _dollar_part(text, i)
            out.append(part)
            continue
        if ch == "`":
            end = _skip_backquote(text, i + 1)
            out.append(text[i:end])
            i = end
            continue
        out.append(ch)
        i += 1
    raise _Unbalanced


def _tokens(script: str) -> list[str]:
    """Words (quotes removed, ``$``-parts whole) and separator runs, in order."""
    tokens: list[str] = []
    word: list[str] = []
    started = False  # a word is open (even an empty one, from "")
    text = script.replace("\\\n", "")  # a backslash-newline joins lines
    i, n = 0, len(text)

    def finish() -> None:
        nonlocal started
        if started:
            tokens.append("".join(word))
            word.clear()
            started = False

    while i < n:
        ch = text[i]
        if ch in _BLANKS:
            finish()
            i += 1
        elif ch in _SEPARATOR_CHARS:
            finish()
            end = i
            while end < n and text[end] in _SEPARATOR_CHARS:
                end += 1
            tokens.append(text[i:end])
            i = end
        elif ch == "#" and not started:
            end = text.find("\n", i)
            i = n if end < 0 else end  # a comment runs to the end of its line
        else:
            part, i = _word_part(text, i)
            word.append(part)
            started = True
    finish()
    return tokens


def _word_part(text: str, i: int) -> tuple[str, int]:
    """The piece of a word that starts at ``text[i]`` (a quoted string, an escape, a
    ``$``-part, a backquote command or one character), and the index after it."""
    ch = text[i]
    if ch == "'":
        end = text.find("'", i + 1)
        if end < 0:
            raise _Unbalanced
        quoted = text[i + 1 : end]
        return quoted.replace("$", _LITERAL_DOLLAR).replace("`", _LITERAL_BACKQUOTE), end + 1
    if ch == '"':
        return _double_quoted(text, i + 1)
    if ch == "\\":
        if i + 1 >= len(text):
            raise _Unbalanced  # no escaped character
        nxt = text[i + 1]
        return {"$": _LITERAL_DOLLAR, "`": _LITERAL_BACKQUOTE}.get(nxt, nxt), i + 2
    if ch == "$":
        return _dollar_part(text, i)
    if ch == "`":
        end = _skip_backquote(text, i + 1)
        return text[i:end], end
    return ch, i + 1


def split_commands(script: str) -> list[list[str]] | None:
    """The simple commands of a script, as word lists; None when it does not tokenize."""
    try:
        tokens = _tokens(script)
    except _Unbalanced:  # no closing quotation, no escaped character, an open $( or `
        return None
    commands: list[list[str]] = []
    words: list[str] = []
    for token in tokens:
        if token and all(c in _SEPARATOR_CHARS for c in token):
            if words:
                commands.append(words)
                words = []
            continue
        words.append(token)
    if words:
        commands.append(words)
    return commands


def is_assignment(word: str) -> bool:
    return bool(_ASSIGNMENT.match(word))


Variable = Callable[[str], "str | None"]


def expand_word(
    word: str,
    variable: Variable,
    positional: Sequence[str] = (),
    budget: Budget | None = None,
) -> str:
    """Shell parameter and arithmetic expansion of one (already unquoted) word.

    ``variable(name)`` returns the value, an unknown marker, or None when unset. The result
    is at most MAX_VALUE_CHARS long and is charged to ``budget``: past either, it is an
    unknown marker that says so.
    """
    if "$" not in word and "`" not in word:
        return _restore(word)
    if budget is not None and budget.left == 0:
        return budget.exhausted_marker("shell word")
    out: list[str] = []
    size = 0
    i, n = 0, len(word)
    while i < n:
        j = _next_special(word, i)
        if j < 0:
            out.append(word[i:])
            break
        out.append(word[i:j])
        size += j - i
        piece, i = _expand_at(word, j, variable, positional, budget)
        out.append(piece)
        size += len(piece)
        if size > MAX_VALUE_CHARS or is_too_long(piece):
            return too_long_marker("shell word")
    text = _restore("".join(out))
    if budget is not None and not budget.charge(len(text)):
        return budget.exhausted_marker("shell word")
    return text


def _restore(text: str) -> str:
    return text.replace(_LITERAL_DOLLAR, "$").replace(_LITERAL_BACKQUOTE, "`")


def _next_special(word: str, start: int) -> int:
    dollar = word.find("$", start)
    back = word.find("`", start)
    if dollar < 0:
        return back
    return dollar if back < 0 else min(dollar, back)


def _expand_at(
    word: str, i: int, variable: Variable, positional: Sequence[str], budget: Budget | None
) -> tuple[str, int]:
    """The expansion of the ``$``/backquote part at ``word[i]`` and the index after it."""
    n = len(word)
    if word[i] == "`":
        try:
            end = _skip_backquote(word, i + 1)
        except _Unbalanced:
            end = n
        return unknown_marker("command substitution"), end
    nxt = word[i + 1] if i + 1 < n else ""
    if nxt == "(":
        try:
            end = _skip_group(word, i + 2, "(", ")")
        except _Unbalanced:
            return unknown_marker("command substitution"), n
        inner = word[i + 2 : end - 1]
        if inner.startswith("(") and inner.endswith(")"):
            return _arithmetic(inner[1:-1], variable, positional, budget), end
        return unknown_marker("command substitution"), end
    if nxt == "{":
        close = word.find("}", i + 2)
        if close < 0:
            return word[i:], n
        return _braced(word[i + 2 : close], variable, positional, budget), close + 1
    match = _NAME.match(word, i + 1)
    if match:
        name = match.group()
        value = variable(name)
        return (unknown_marker(name) if value is None else value), match.end()
    if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
        return _special(nxt, positional), i + 2
    return "$", i + 1


def _special(char: str, positional: Sequence[str]) -> str:
    if char.isdigit():
        index = int(char)
        return positional[index] if index < len(positional) else ""
    if char in "@*":
        return " ".join(positional[1:])
    return unknown_marker("$" + char)


_BRACED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(?:(:?[-=])(.*))?", re.DOTALL)


def _braced(
    inner: str, variable: Variable, positional: Sequence[str], budget: Budget | None
) -> str:
    """``${NAME}``, ``${NAME:-default}``, ``${NAME-default}`` (and ``=`` forms)."""
    match = _BRACED.fullmatch(inner)
    if not match:
        return unknown_marker("${" + inner + "}")  # ${#X}, ${X%y}, ${X:+y}, ...
    name, op, default = match.groups()
    if name.isdigit():
        index = int(name)
        value: str | None = positional[index] if index < len(positional) else None
    elif not _NAME.fullmatch(name):
        return _special(name, positional)
    else:
        value = variable(name)
    if op is not None and (value is None or (op.startswith(":") and value == "")):
        return expand_word(default or "", variable, positional, budget)
    return unknown_marker(name) if value is None else value


# -- $((...)) ---------------------------------------------------------------------------------

_ARITH_TOKEN = re.compile(r"\s*(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|(\S))")


class _NotKnown(Exception):
    """An operand or operator we cannot evaluate: the result is unknown."""


def _arithmetic(
    expression: str, variable: Variable, positional: Sequence[str], budget: Budget | None
) -> str:
    """``$((expression))`` as a decimal integer, or an unknown marker naming it."""
    label = f"$(({expression.strip()}))"
    if len(expression) > MAX_ARITHMETIC_CHARS:
        return unknown_marker(f"$((...)): longer than {MAX_ARITHMETIC_CHARS} characters")
    # POSIX: parameter expansion first (``$(( ${I:-0} * N ))``), then the arithmetic
    expanded = expand_word(expression, variable, positional, budget)
    if has_unknown(expanded):
        return unknown_marker(label)
    try:
        tokens = _arith_tokens(expanded, variable)
        parser = _Arith(tokens)
        value = parser.expression()
        if parser.pos != len(tokens):
            raise _NotKnown
    except (_NotKnown, RecursionError):
        return unknown_marker(label)
    return str(value)


def _arith_tokens(expression: str, variable: Variable) -> list[int | str]:
    tokens: list[int | str] = []
    pos = 0
    text = _restore(expression)
    while pos < len(text):
        match = _ARITH_TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            break  # only blanks remain
        pos = match.end()
        number, name, op = match.groups()
        if number is not None:
            if len(number) > 1 and number.startswith("0"):
                raise _NotKnown  # octal (or hex) in sh
            tokens.append(_checked(int(number)))
        elif name is not None:
            value = variable(name)
            if value is None or has_unknown(value):
                raise _NotKnown  # unset here: the image's ENV may set it
            text_value = value.strip()
            if not re.fullmatch(r"-?(0|[1-9][0-9]{0,18})", text_value):
                raise _NotKnown  # sh would evaluate it as an expression; we do not
            tokens.append(_checked(int(text_value)))
        elif op is not None:
            if op not in "+-*/%()":
                raise _NotKnown  # ** << && ?: ... and $ we do not evaluate
            tokens.append(op)
    return tokens


def _checked(value: int) -> int:
    if not -_INT64 <= value < _INT64:
        raise _NotKnown  # sh wraps at 64 bits; we do not guess
    return value


class _Arith:
    """Recursive descent over + - * / % and parentheses, with sh's C-style division."""

    def __init__(self, tokens: list[int | str]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0

    def _peek(self) -> int | str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def expression(self) -> int:
        value = self.term()
        while self._peek() in ("+", "-"):
            op = self.tokens[self.pos]
            self.pos += 1
            right = self.term()
            value = _checked(value + right if op == "+" else value - right)
        return value

    def term(self) -> int:
        value = self.unary()
        while self._peek() in ("*", "/", "%"):
            op = self.tokens[self.pos]
            self.pos += 1
            right = self.unary()
            if op == "*":
                value = _checked(value * right)
            elif right == 0:
                raise _NotKnown  # sh: division by 0
            else:
                quotient = abs(value) // abs(right) * (1 if (value >= 0) == (right >= 0) else -1)
                value = _checked(quotient if op == "/" else value - right * quotient)
        return value

    def unary(self) -> int:
        token = self._peek()
        if token in ("+", "-"):
            self.pos += 1
            value = self.unary()
            return _checked(-value if token == "-" else value)
        if token == "(":
            self.depth += 1
            if self.depth > _MAX_NESTING:
                raise _NotKnown
            self.pos += 1
            value = self.expression()
            self.depth -= 1
            if self._peek() != ")":
                raise _NotKnown
            self.pos += 1
            return value
        if isinstance(token, int):
            self.pos += 1
            return token
        raise _NotKnown
