"""The one bounded YAML reader of the operator: YAML text found in objects (a RayService's
``serveConfigV2``, a ``--config`` file in a ConfigMap) and the files ``lint`` reads.

Why: PyYAML's pure-Python scanner does work per token for every open flow level, so
``[`` nested 1,200 deep (2.7 KB) took 1.4 s to fail with a ``RecursionError`` (not a
``YAMLError``: it escaped the callers). The rules judge small objects inside the operator's
event loop (``rulesworker.plain``), so about 20 such RayServices stalled ``/healthz`` for
12.5 s and the webhook missed the API server's 10 s timeout (issue 23). And an alias is a
shared reference: a billion-laughs document loads cheaply and explodes later, in whatever
walks or prints it.

So :func:`load` (and :func:`check` for a caller with its own composer) first reads the
document's *events* (libyaml's parser, ``yaml.CSafeLoader``, when present: no per-level
cost, no recursion) and refuses, before any node is built:

* more than ``max_bytes`` of text (``too-large``), before reading anything;
* nesting deeper than ``max_depth`` (``too-deep``): flow ``[ {`` and block indentation
  both open a collection event, so one counter measures both;
* more aliases than ``max_aliases`` (``alias``; the rules take none);
* more than ``max_nodes`` nodes once every alias is expanded (``too-many-nodes``): an
  anchor's expanded size is known when its collection ends, so a billion laughs is refused
  at its first levels, with arithmetic, never expanded.

Only then does the loader compose and construct it (within the depth checked, no
recursion limit is near). One exception type, :class:`Refused`, a ``yaml.YAMLError`` whose
``reason`` says which limit: callers already catch ``YAMLError``, and a refused embedded
document is unknown to the rules (a warning naming the field), never a failure.

Measured (Python 3.11, libyaml 0.2.6, this repo's shared dev machine): the tester's
1,200-deep ``serveConfigV2`` is refused in under 1 ms (PyYAML's pure parser: 1.4 s, then a
RecursionError); the 9^9 alias bomb in 0.1 ms; 2 KB of the costliest shape (a flow
sequence of one-digit numbers) loads in about 4 ms, hence INLINE_BYTES; 32 KB in 66 ms,
which the event loop never pays (the rules worker does, within its budget).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator
from typing import Any

import yaml

# The fastest safe loader PyYAML has here: libyaml's parser with PyYAML's safe constructor.
SafeLoader: type[Any] = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
LIBYAML = SafeLoader is not yaml.SafeLoader

# The limits for YAML embedded in objects: far above any Ray Serve config or vLLM --config
# file (a few levels, a few hundred nodes) and below what costs the event loop more than a
# few milliseconds. A Kubernetes object, and so any string in it, is at most 1.5 MiB (etcd).
MAX_BYTES = 1 << 20
MAX_DEPTH = 100  # as preflight_contract.safejson.DEFAULT_MAX_DEPTH
MAX_NODES = 100_000

TOO_LARGE = "too-large"
TOO_DEEP = "too-deep"
TOO_MANY_NODES = "too-many-nodes"
ALIAS = "alias"
NOT_HERE = "not-here"  # larger than the rules read inline: the caller reads it elsewhere
REASONS = (TOO_LARGE, TOO_DEEP, TOO_MANY_NODES, ALIAS, NOT_HERE)

# What the rules may read in the operator's event loop (small objects are judged there,
# rulesworker.plain): at most INLINE_BYTES of YAML, about 4 ms of the worst shape measured
# (a flow sequence of one-digit numbers: 2 ms a KB, event pass and load together; a block
# mapping costs half). A larger document is not read inline: the call notes it (``inline``)
# and the caller sends the whole object to the budgeted rules worker instead.
INLINE_BYTES = 2048
# libyaml's own limit (1,000 levels), which it reports before our counter can
_LIBYAML_DEPTH = "exceeded maximum nesting depth"


class Refused(yaml.YAMLError):
    """YAML perhaps, but not read here (over a limit): unknown, not wrong. ``reason`` is one
    of :data:`REASONS`, ``line`` the 0-based line where it was refused (None: the size)."""

    def __init__(self, reason: str, detail: str, line: int | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        self.line = line


@dataclasses.dataclass
class Inline:
    """Set while the rules run in the event loop: ``deferred`` once a document was larger
    than ``max_bytes`` (the result of that run is then not to be used)."""

    max_bytes: int = INLINE_BYTES
    deferred: bool = False


_INLINE: contextvars.ContextVar[Inline | None] = contextvars.ContextVar(
    "preflight_boundedyaml_inline", default=None
)


@contextlib.contextmanager
def inline(max_bytes: int = INLINE_BYTES) -> Iterator[Inline]:
    """Within: YAML over ``max_bytes`` is refused (``not-here``) and noted on the yielded
    state, so an event-loop caller can run the same work in the rules worker instead."""
    state = Inline(max_bytes)
    token = _INLINE.set(state)
    try:
        yield state
    finally:
        _INLINE.reset(token)


def check(
    text: str,
    *,
    loader: type[Any] = SafeLoader,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
    max_aliases: int | None = 0,
) -> None:
    """Raises :class:`Refused` when ``text`` is over a limit (``max_aliases`` None: any
    number of aliases, their expansion still counted in ``max_nodes``), a
    ``yaml.YAMLError`` when its events are not YAML; returns when it may be loaded."""
    if len(text) > max_bytes:
        raise Refused(TOO_LARGE, f"{len(text)} characters, more than the {max_bytes} read here")
    here = _INLINE.get()
    if here is not None and len(text) > here.max_bytes:
        here.deferred = True
        raise Refused(NOT_HERE, f"{len(text)} characters: read in the rules worker, not inline")
    try:
        _check_events(text, loader, max_depth, max_nodes, max_aliases)
    except (yaml.scanner.ScannerError, yaml.parser.ParserError) as exc:
        if exc.problem != _LIBYAML_DEPTH:
            raise
        raise Refused(TOO_DEEP, f"nested deeper than {max_depth} levels", _mark_line(exc)) from None


def _mark_line(exc: yaml.MarkedYAMLError) -> int | None:
    mark = exc.problem_mark
    return int(mark.line) if mark is not None else None


def _check_events(
    text: str, loader: type[Any], max_depth: int, max_nodes: int, max_aliases: int | None
) -> None:
    depth = nodes = aliases = 0
    # per open collection: the node count at its start and its anchor
    opened: list[tuple[int, str | None]] = []
    sizes: dict[str, int] = {}  # anchor -> its node's size, aliases expanded
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            nodes += 1
            if depth > max_depth:
                raise Refused(TOO_DEEP, f"nested deeper than {max_depth} levels", _line(event))
            opened.append((nodes - 1, event.anchor))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            start, anchor = opened.pop()
            if anchor is not None:
                sizes[anchor] = nodes - start
        elif isinstance(event, yaml.ScalarEvent):
            nodes += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            if max_aliases is not None and aliases > max_aliases:
                raise Refused(
                    ALIAS,
                    f"an alias (*{event.anchor}) at line {_line(event) + 1}: "
                    + ("aliases are not read here" if not max_aliases else "too many aliases"),
                    _line(event),
                )
            nodes += sizes.get(str(event.anchor), 1)  # undefined: the composer says so
        elif isinstance(event, yaml.DocumentStartEvent):
            sizes.clear()  # anchors are the document's own
        if nodes > max_nodes:
            raise Refused(
                TOO_MANY_NODES,
                f"more than {max_nodes} values once its aliases are expanded",
                _line(event),
            )


def _line(event: Any) -> int:
    mark = getattr(event, "start_mark", None)
    return int(mark.line) if mark is not None else 0


def load(
    text: str,
    *,
    loader: type[Any] = SafeLoader,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
    max_aliases: int | None = 0,
) -> Any:
    """The one document in ``text`` within the limits (see :func:`check`); raises
    :class:`Refused` or another ``yaml.YAMLError`` (not YAML), nothing else."""
    check(
        text, loader=loader, max_bytes=max_bytes, max_depth=max_depth, max_nodes=max_nodes,
        max_aliases=max_aliases,
    )  # fmt: skip
    try:
        return yaml.load(text, Loader=loader)  # a safe loader: nothing but plain data
    except RecursionError:  # cannot happen within max_depth; kept as a backstop
        raise Refused(TOO_DEEP, "nested too deep to read") from None
