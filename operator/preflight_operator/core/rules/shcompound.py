"""The compound commands of one walk of a script (shrun): if, case and the loops, each
arm walked as a branch of the state, the rest of the script after it on the merged state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from preflight_operator.core.rules.kubeenv import has_unknown
from preflight_operator.core.rules.shparse import (
    Case,
    CommandList,
    Loop,
    Word,
)
from preflight_operator.core.rules.shstate import (
    State,
    merge_states,
    shell_unknown,
)

if TYPE_CHECKING:
    from preflight_operator.core.rules.shrun import Runner


class Compounds:
    """The compound commands of one walk: if, case and the loops (each arm walked as a
    branch of the state, the rest of the script after it on the merged state)."""

    def __init__(self, runner: Runner) -> None:
        self.r = runner

    def _if(
        self, clauses: list[tuple[CommandList, CommandList]], otherwise: CommandList | None
    ) -> None:
        if not clauses:
            if otherwise is not None:
                self.r._list(otherwise)
            return
        (condition, body), rest = clauses[0], clauses[1:]
        self.r.testing += 1
        status = self.r._list(condition)
        self.r.testing -= 1
        if self.r.halt:
            return
        if status is True:
            self.r._list(body)
        elif status is False:
            self._if(rest, otherwise)
        else:
            self.r._branches([lambda: self.r._list(body), lambda: self._if(rest, otherwise)])

    def _case(self, node: Case) -> None:
        subject = self.r.fields(node.word, split=False)
        text = subject[0] if subject else ""

        def arms_from(k: int) -> None:
            if k >= len(node.arms):
                return
            patterns, body = node.arms[k]
            matched = self._case_match(text, patterns)
            if matched is True:
                self.r._list(body)
            elif matched is False:
                arms_from(k + 1)
            else:
                self.r._branches([lambda: self.r._list(body), lambda: arms_from(k + 1)])

        arms_from(0)

    def _case_match(self, text: str, patterns: list[Word]) -> bool | None:
        if has_unknown(text):
            return None
        for pattern in patterns:
            plain = pattern.plain()
            if plain is None:
                return None
            if pattern.quoted or not any(c in plain for c in "*?[\\"):
                if plain == text:
                    return True
                continue
            if plain == "*":
                return True
            return None  # a glob pattern: not evaluated here
        return False

    def _loop(self, node: Loop) -> None:
        before = self.r.state.copy()
        if node.kind == "for":
            values = (
                self.r.state.positional[1:]
                if node.values is None
                else [f for w in node.values for f in self.r.fields(w)]
            )
            if any(has_unknown(v) for v in values):
                self.r.state.vars[node.variable or ""] = shell_unknown(node.variable or "")
                self.r._branches([lambda: self.r._list(node.body), lambda: None])
            elif values:
                self.r.state.vars[node.variable or ""] = values[0]
                self.r._list(node.body)
            self._after_loop(before)
            return
        assert node.condition is not None
        self.r.testing += 1
        status = self.r._list(node.condition)
        self.r.testing -= 1
        if self.r.halt:
            return
        if node.kind == "until" and status is not None:
            status = not status
        if status is False:
            return
        if status is True:
            self.r._list(node.body)
            if self.r.halt in ("break", "continue"):
                self.r.halt = None
            self.r.cond = True  # after an endless loop: only by `break`
        else:
            self.r._branches([lambda: self.r._list(node.body), lambda: None])
        self._after_loop(before)

    def _after_loop(self, before: State) -> None:
        if self.r.halt in ("break", "continue"):
            self.r.halt = None
        if self.r.halt is None:
            self.r.state = merge_states([before, self.r.state])
