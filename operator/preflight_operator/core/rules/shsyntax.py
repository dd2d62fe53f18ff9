"""The syntax tree of a shell script as shparse builds it: words and their parts (with
their quoting), redirections, simple commands, pipelines, and-or lists, command lists,
groups, if, case, loops, functions, and the tests whose outcome is not known here
(Opaque); and ShellSyntax, raised for what does not parse. shrun walks this tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


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
