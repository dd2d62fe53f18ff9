"""The fields one word of a script expands to (POSIX 2.6: expansion, then field
splitting), built part by part for shrun's Runner.fields; an unknown marker where
pathname, brace or tilde expansion might apply.
"""

from __future__ import annotations

import re

from preflight_operator.core.rules.kubeenv import has_unknown, unknown_marker


class Fields:
    """Fields being built from a word's parts (POSIX 2.6: expansion, then splitting)."""

    def __init__(self, splits: bool, split: bool) -> None:
        self.out: list[list[str]] = [[]]
        self.keep = [False]  # a quoted part makes a field even when empty ("")
        self.splits = splits  # IFS is the default: unquoted values split on blanks
        self.split = split  # False in assignments and case words: no splitting at all

    def add(self, text: str, solid: bool) -> None:
        self.out[-1].append(text)
        if solid or text:
            self.keep[-1] = True

    def new_field(self) -> None:
        self.out.append([])
        self.keep.append(False)

    def literal(self, text: str, quoted: bool, first: bool) -> None:
        if not quoted and first and text.startswith("~"):
            self.add(unknown_marker("tilde expansion"), True)
        elif not quoted and (_globby(text) or _braces(text)):  # a bash /bin/sh expands braces
            self.add(unknown_marker(f"pathname or brace expansion of {text!r}"), True)
        else:
            self.add(text, quoted)

    def value(self, value: str, quoted: bool) -> None:
        if quoted or has_unknown(value) or not self.split:
            self.add(value, quoted)
        elif not self.splits:
            self.add(unknown_marker("word splitting with a changed IFS"), False)
        elif _globby(value):
            self.add(unknown_marker(f"pathname expansion of {value!r}"), False)
        else:
            for k, piece in enumerate(re.split(r"[ \t\n]+", value)):
                if k > 0 and (self.keep[-1] or self.out[-1]):
                    self.new_field()
                if piece:
                    self.add(piece, True)

    def result(self) -> list[str]:
        return ["".join(f) for f, k in zip(self.out, self.keep) if k or "".join(f)]


def _globby(text: str) -> bool:
    if "*" in text or "?" in text:
        return True
    at = text.find("[")
    return at >= 0 and "]" in text[at + 1 :]


def _braces(text: str) -> bool:
    at = text.find("{")
    if at < 0:
        return False
    close = text.find("}", at)
    return close > at and ("," in text[at:close] or ".." in text[at:close])
