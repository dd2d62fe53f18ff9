"""Just enough POSIX shell to find a command in a `sh -c` script and expand its words.

This is not a shell: it splits a script into simple commands (on ``;``, ``&&``, ``||``,
``|``, ``&`` and newlines), drops comments and line continuations, and expands ``$VAR``,
``${VAR}``, ``${VAR:-default}``, ``$1``, ``$@`` in the words of the command we care
about. Command substitutions and anything else it cannot know become unknown markers.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence

from preflight_operator.rules.kubeenv import unknown_marker

_SEPARATOR_CHARS = ";&|\n"
# Words that open or close a compound command; the simple command starts after them.
RESERVED = frozenset(
    ("if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "(", ")")
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_REF = re.compile(
    r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=])([^}]*))?\}"  # ${NAME}, ${NAME:-default}
    r"|\$([A-Za-z_][A-Za-z0-9_]*)"  # $NAME
    r"|\$([0-9@*#?$!])"  # $1, $@, $*, ...
    r"|\$\("  # $( command substitution
    r"|`"  # `command substitution`
)


def split_commands(script: str) -> list[list[str]] | None:
    """The simple commands of a script, as word lists; None when it does not tokenize."""
    # A backslash-newline joins lines (outside single quotes, which we ignore).
    text = script.replace("\\\n", "")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_SEPARATOR_CHARS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    commands: list[list[str]] = []
    words: list[str] = []
    in_comment = False
    try:
        for token in lexer:
            if token and all(c in _SEPARATOR_CHARS for c in token):
                if "\n" in token:
                    in_comment = False
                if words:
                    commands.append(words)
                    words = []
                continue
            if in_comment:
                continue
            if token.startswith("#") and not words:
                in_comment = True
                continue
            words.append(token)
    except ValueError:  # no closing quotation, no escaped character
        return None
    if words:
        commands.append(words)
    return commands


def is_assignment(word: str) -> bool:
    return bool(_ASSIGNMENT.match(word))


def expand_word(
    word: str,
    variable: Callable[[str], str | None],
    positional: Sequence[str] = (),
) -> str:
    """Shell parameter expansion of one (already unquoted) word.

    ``variable(name)`` returns the value, an unknown marker, or None when unset.
    """
    if "$" not in word and "`" not in word:
        return word

    def replace(match: re.Match[str]) -> str:
        braced, op, default, plain, special = match.groups()
        name = braced or plain
        if name:
            value = variable(name)
            if op is not None and (value is None or (op.startswith(":") and value == "")):
                return default or ""
            return unknown_marker(name) if value is None else value
        if special is not None:
            if special.isdigit():
                index = int(special)
                return positional[index] if index < len(positional) else ""
            if special in "@*":
                return " ".join(positional[1:])
            return unknown_marker("$" + special)
        return unknown_marker("command substitution")

    return _SHELL_REF.sub(replace, word)
