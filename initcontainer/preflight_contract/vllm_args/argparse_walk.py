"""The parser's second step: argparse's reading of the rewritten tokens. Which token
starts an option (``is_option``), unique-prefix abbreviations and short aliases
(``resolve``), attached values, and the values of tracked options recorded raw; the
options not tracked are skipped by their arity.

Separate from the rewriting before it (vLLM's) and the conversion after it (``plan``):
this step mirrors argparse alone.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from preflight_contract.vllm_args.options import (
    _ALL_LONG,
    _ALL_SHORT,
    _BOOL,
    _BY_NAME,
    _FLAG,
    _NEGATIVE_NUMBER,
    _OTHER_LONG,
    _OTHER_MANY_VALUES,
    _OTHER_NO_VALUE,
    _OTHER_SHORT_WITH_VALUE,
    _SHORT_ALIAS_WORDS,
    _TRACKED,
    _UNKNOWN_MARK,
    _known_option,
)
from preflight_contract.vllm_args.parser_state import _ParserBase, _Tok
from preflight_contract.vllm_args.results import Origin


class _ArgparseSteps(_ParserBase):
    """argparse's reading of the tokens: options, abbreviations, values (raw)."""

    # -- argparse -----------------------------------------------------------------------
    def resolve(self, name: str, spelling: str) -> Tuple[Optional[str], bool]:
        """Option string for `name` (exact or a unique prefix), and whether it is one."""
        if name in _BY_NAME or name in _OTHER_NO_VALUE or name in _OTHER_MANY_VALUES:
            return name, True
        if name in _OTHER_LONG or name in _OTHER_SHORT_WITH_VALUE:
            return name, True
        if name.startswith("--no-"):
            # vLLM registers --no-X for every boolean option; we do not list them all, so
            # an abbreviated --no- form is left unresolved rather than guessed.
            return None, False
        if name.startswith("--"):
            word = name[2:]
            if word in _SHORT_ALIAS_WORDS:
                self.problem(
                    spelling,
                    "",
                    f"`--{word}` is not a vLLM option; the short form is `-{word}` and the "
                    f"long one `{_SHORT_ALIAS_WORDS[word]}`",
                    _BY_NAME[_SHORT_ALIAS_WORDS[word]][0].dest,
                )
                return None, True
            candidates = [o for o in _ALL_LONG if o.startswith(name)]
        else:
            candidates = [o for o in _ALL_SHORT if o.startswith(name)]
        if len(candidates) == 1:
            return candidates[0], True
        tracked = [c for c in candidates if c in _BY_NAME]
        if len(candidates) > 1 and tracked:
            self.problem(
                spelling,
                "",
                f"ambiguous abbreviation: it could match {', '.join(candidates[:4])}; "
                "argparse refuses it",
                _BY_NAME[tracked[0]][0].dest,
            )
            return None, True
        return None, False

    def check_glued_value(self, tok: _Tok) -> None:
        """`-tp2`: argparse knows no `-t`, so this is an unrecognized argument."""
        for opt in _TRACKED:
            for alias in opt.names[1:]:
                rest = tok.text[len(alias) :]
                if len(alias) > 2 and tok.text.startswith(alias) and rest.isdigit():
                    self.problem(
                        tok.spelling,
                        rest,
                        f"argparse does not split `{tok.text}`; write `{alias} {rest}`",
                        opt.dest,
                    )
                    return

    def is_option(self, text: str) -> bool:
        """argparse's test (`_parse_optional`): does this token start an option (else it
        is a value)? Its order matters: the name before a `=`, and a long prefix of a
        known option, are looked up before a word holding a space is taken as a
        positional, so `--limit-mm-per-prompt={"image": 0}` is an option."""
        if not text.startswith("-") or text == "-":
            return False
        name, eq, _ = text.partition("=")
        if _known_option(text) or (eq and _known_option(name)):
            return True
        if text.startswith("--") and any(o.startswith(name) for o in _ALL_LONG):
            return True  # an abbreviation (or an ambiguous one argparse refuses)
        if _NEGATIVE_NUMBER.match(text):
            return False
        name, eq, _ = text.partition("=")
        if eq and name.startswith("--") and " " not in name:
            # argparse splits `--opt=value` at `=` before its "a space means a positional"
            # test: `--kv-transfer-config={"a": 1, "b": 2}` is an option
            return True
        return " " not in text

    def walk(self, toks: List[_Tok]) -> None:
        i = 0
        doubt = False  # since the last option we know: could this token be a value?
        while i < len(toks):
            tok = toks[i]
            text = tok.text
            if text == "--":
                self.positionals.extend(toks[i + 1 :])
                return
            if not self.is_option(text):
                self.positionals.append(tok)
                if doubt or _UNKNOWN_MARK in text:
                    self.uncertain.append(tok)
                    doubt = True
                i += 1
                continue
            resolved, value, known = self.read_option(tok)
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            doubt = resolved is None and not known
            if resolved is not None and resolved in _BY_NAME:
                i += self.take_tracked(tok, resolved, value, nxt)
            else:
                next_is_value = nxt is not None and not self.is_option(nxt.text)
                i = self.skip_untracked(toks, i + 1, resolved, value, next_is_value)

    def read_option(self, tok: _Tok) -> Tuple[Optional[str], Optional[str], bool]:
        """An option token as argparse splits it: (option string, its value, known?).

        The option string is None when it matches nothing; `known` says it is a vLLM
        option all the same (one we do not track, or one already reported).
        """
        text = tok.text
        name, eq, explicit = text.partition("=")
        if eq and not name.startswith("--") and name not in _BY_NAME:
            # argparse splits `-x=v` only for a registered short option; `-t=2` is
            # looked up whole (and matches nothing)
            name, eq, explicit = text, "", ""
        value: Optional[str] = explicit if eq else None
        resolved, known = self.resolve(name, tok.spelling)
        if resolved is not None or known or name.startswith("--"):
            return resolved, value, known
        short = name[:2]
        if len(name) > 2 and (short in _BY_NAME or short in _OTHER_SHORT_WITH_VALUE):
            # `-n2`: a two-character option with its value attached
            return short, text[2:], known
        self.check_glued_value(tok)
        return resolved, value, known

    def take_tracked(
        self, tok: _Tok, resolved: str, value: Optional[str], nxt: Optional[_Tok]
    ) -> int:
        """Record a tracked option's value; returns the tokens it used (1 or 2)."""
        opt, negated = _BY_NAME[resolved]
        origin = Origin(tok.spelling, tok.index, tok.from_config)
        if opt.kind in (_BOOL, _FLAG):
            if value is not None:
                self.problem(
                    tok.spelling,
                    value,
                    f"{opt.names[0]} takes no value (argparse: ignored explicit argument)",
                    opt.dest,
                )
            else:
                self.raw[opt.dest] = (not negated, origin)
            return 1
        used = 1
        if value is None:
            if nxt is None or self.is_option(nxt.text):
                self.problem(tok.spelling, "", "expects one value", opt.dest)
                return 1
            value = nxt.text
            used = 2
        self.raw[opt.dest] = (value, origin)
        return used

    def skip_untracked(
        self,
        toks: List[_Tok],
        i: int,
        resolved: Optional[str],
        value: Optional[str],
        next_is_value: bool,
    ) -> int:
        """Index past the values of an option we do not track (`i`: the token after it)."""
        if value is not None or resolved in _OTHER_NO_VALUE:
            return i
        if resolved in _OTHER_MANY_VALUES:
            while i < len(toks) and toks[i].text != "--" and not self.is_option(toks[i].text):
                i += 1
            return i
        # an option we do not track, taking one value (the common case)
        return i + 1 if next_is_value else i
