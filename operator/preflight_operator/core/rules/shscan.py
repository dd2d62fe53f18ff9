"""Where a piece of shell text ends: a ``$(...)`` or ``${...}`` group, a backquoted
command, a double-quoted string (quotes and nested groups inside are skipped), or
Unbalanced when it has no end.

The one scanner of the rules' shell reader, under public names: the lexer (shlexer.py)
and the word expansion (shell.py) both find the end of a part with it.
"""

from __future__ import annotations


class Unbalanced(Exception):
    """A quote, ``$(``, ``${`` or backquote without its end."""


def skip_group(text: str, i: int, opener: str, closer: str) -> int:
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
                raise Unbalanced
            i = end + 1
            continue
        if ch == '"':
            i = skip_double(text, i + 1)
            continue
        if ch == "`":
            i = skip_backquote(text, i + 1)
            continue
        if ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise Unbalanced


def skip_backquote(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`":
            return i + 1
        i += 1
    raise Unbalanced


def skip_double(text: str, i: int) -> int:
    """Index just past the closing double quote; ``i`` is just after the opening one."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
        elif ch == '"':
            return i + 1
        elif ch == "$" and i + 1 < n and text[i + 1] in "({":
            i = skip_group(text, i + 2, text[i + 1], ")" if text[i + 1] == "(" else "}")
        elif ch == "`":
            i = skip_backquote(text, i + 1)
        else:
            i += 1
    raise Unbalanced
