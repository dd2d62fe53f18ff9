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

The parser is here; the syntax tree's types are shsyntax.py's and the lexer shlexer.py's,
their public names importable from here as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from preflight_operator.core.rules.shlexer import REDIRECTIONS, Lexer, Token, heredoc_word
from preflight_operator.core.rules.shscan import Unbalanced
from preflight_operator.core.rules.shsyntax import (
    AndOr,
    Case,
    Command,
    CommandList,
    Function,
    Group,
    If,
    Loop,
    Opaque,
    Part,
    Pipeline,
    Redirect,
    ShellSyntax,
    Simple,
    Word,
)

# the reader's public names, here and in its parts (importers need no other module)
__all__ = [
    "MAX_NESTING",
    "AndOr",
    "Case",
    "Command",
    "CommandList",
    "Function",
    "Group",
    "If",
    "Loop",
    "Opaque",
    "Parser",
    "Part",
    "Pipeline",
    "Redirect",
    "ShellSyntax",
    "Simple",
    "Word",
    "heredoc_word",
    "is_assignment_word",
    "parse",
]

MAX_NESTING = 60


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


def parse(script: str, bash: bool = True) -> CommandList:
    """The script's syntax tree; ShellSyntax when it does not parse."""
    try:
        tokens = Lexer(script, bash).tokens()
    except Unbalanced:
        raise ShellSyntax("an unbalanced $(, ${ or backquote") from None
    return Parser(tokens, bash).program()
