"""What one walk of a script (shrun) keeps and records: the shell's State (variables,
arrays, exports, functions, ``"$@"``, the files it wrote), its merge after a branch whose
taken arm is not known, and the events a walk records, Found and Doubt. Its bounds,
MAX_STEPS and MAX_DEPTH, and Halt, raised past MAX_STEPS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from preflight_operator.core.rules.kubeenv import unknown_marker
from preflight_operator.core.rules.shparse import Command

MAX_STEPS = 4000
MAX_DEPTH = 4
UNSET = "\x00unset\x00"


@dataclass(frozen=True)
class Found:
    argv: tuple[str, ...]
    exports: Mapping[str, str]
    conditional: bool
    exact: bool
    offset: int | None = None  # argv is the container's own words from this index


@dataclass(frozen=True)
class Doubt:
    reason: str


@dataclass
class State:
    vars: dict[str, str] = field(default_factory=dict)
    arrays: dict[str, list[str]] = field(default_factory=dict)
    exported: dict[str, str] = field(default_factory=dict)
    functions: dict[str, Command | None] = field(default_factory=dict)
    positional: list[str] = field(default_factory=list)
    ifs_set: bool = False
    errexit: bool = False  # set -e: a failing command ends the script
    opaque: bool = False  # a `source`/`.`: any variable may have changed
    # files the script wrote (`cat > /tmp/run.sh <<'EOF'`): path -> text, None if unknown
    files: dict[str, str | None] = field(default_factory=dict)
    executable: set[str] = field(default_factory=set)  # chmod +x after it was written

    def copy(self) -> State:
        return State(
            dict(self.vars),
            {k: list(v) for k, v in self.arrays.items()},
            dict(self.exported),
            dict(self.functions),
            list(self.positional),
            self.ifs_set,
            self.errexit,
            self.opaque,
            dict(self.files),
            set(self.executable),
        )


def shell_unknown(name: str) -> str:
    """The marker of a shell variable whose value is not known here: shown ``${NAME}``
    (a kubelet ``$(NAME)`` would name the container's env, which it is not)."""
    return unknown_marker("${" + name + "}")


def _merge_words(lists: list[list[str]], label: str) -> list[str]:
    """The words of ``"$@"`` (or an array) after one of several paths: each word the paths
    agree on stays; a word that differs is unknown; the words only some paths append are
    one unknown word that names them (bash: ``set -- "$@" --x`` in an ``if``)."""
    shortest = min(len(words) for words in lists)
    out: list[str] = []
    for k in range(shortest):
        values = {words[k] for words in lists}
        out.append(lists[0][k] if len(values) == 1 else shell_unknown(f"{label}: word {k + 1}"))
    tails = [words[shortest:] for words in lists if len(words) > shortest]
    if tails:
        shown = " | ".join(dict.fromkeys(" ".join(t)[:60] for t in tails))
        out.append(unknown_marker(f"${{{label}}} on some paths only: {shown}"))
    return out


def _merge_arrays_and_files(out: State, states: list[State]) -> None:
    first = states[0]
    for name in {n for s in states for n in s.arrays}:
        if all(name in s.arrays for s in states):
            out.arrays[name] = _merge_words([s.arrays[name] for s in states], f"{name}[@]")
        elif any(s.arrays.get(name) != first.arrays.get(name) for s in states):
            out.arrays.pop(name, None)
            out.vars[name] = shell_unknown(name)
    for name in {n for s in states for n in s.files}:
        if any(s.files.get(name) != first.files.get(name) for s in states):
            out.files[name] = None  # written differently on different paths
    out.executable = set.intersection(*(s.executable for s in states))


def merge_states(states: list[State]) -> State:
    """The state after one of ``states``: what differs between them is unknown."""
    first = states[0]
    if len(states) == 1:
        return first
    out = first.copy()
    for name in {n for s in states for n in s.vars}:
        values = {s.vars.get(name, "\x00none") for s in states}
        if len(values) > 1:
            out.vars[name] = shell_unknown(name)
    for name in {n for s in states for n in s.exported}:
        values = {s.exported.get(name, "\x00none") for s in states}
        if len(values) > 1:
            out.exported[name] = shell_unknown(name)
    _merge_arrays_and_files(out, states)
    for name in {n for s in states for n in s.functions}:
        if any(s.functions.get(name) is not first.functions.get(name) for s in states):
            out.functions[name] = None  # defined differently on different paths
    if any(s.positional != first.positional for s in states):
        out.positional = first.positional[:1] + _merge_words(
            [s.positional[1:] for s in states], "@"
        )
    out.ifs_set = any(s.ifs_set for s in states)
    out.errexit = any(s.errexit for s in states)
    out.opaque = any(s.opaque for s in states)
    return out


class Halt(Exception):
    """Too many steps: the walk stops and the answer is a Doubt."""
