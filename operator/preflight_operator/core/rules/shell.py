"""Shell parameter and arithmetic expansion of one word of a script the rules read.

The script is parsed by shparse (words with their quoting) and run by shrun; this module
expands a word's ``$`` parts: ``$VAR``, ``${VAR}``, ``${VAR:-default}``, ``$1``, ``$@`` and
integer arithmetic ``$((...))`` (shscan finds where each part ends). Arithmetic is
evaluated when every operand is known (a literal, an env value, a shell variable set
earlier, LWS_GROUP_SIZE which the engine defines for LeaderWorkerSets); anything else,
command substitutions included, becomes an unknown marker, so the rules say "unknown" and
never fail on it.

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
from preflight_operator.core.rules.shscan import Unbalanced, skip_backquote, skip_group

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A quoted or escaped "$" is a literal dollar: it travels through expansion as this
# character (never in a manifest string, see kubeenv) and becomes "$" again at the end.
_LITERAL_DOLLAR = "\x01"
_LITERAL_BACKQUOTE = "\x02"
MAX_ARITHMETIC_CHARS = 1024
_INT64 = 2**63
_MAX_NESTING = 64  # parentheses in $((...)); deeper is unknown, never a RecursionError


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
            end = skip_backquote(word, i + 1)
        except Unbalanced:
            end = n
        return unknown_marker("command substitution"), end
    nxt = word[i + 1] if i + 1 < n else ""
    if nxt == "(":
        try:
            end = skip_group(word, i + 2, "(", ")")
        except Unbalanced:
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
