"""Line numbers for `vllm-preflight lint --format sarif|junit`: where in its file an object,
a container or a finding's field is.

Code-scanning UIs (SARIF) and CI test reports (JUnit ``file``/``line``) show a finding at
a line. The rules work on plain objects, which carry no lines; so a document that has
results is composed once more, to YAML nodes (which keep their marks), and the finding's
``field`` (``spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]``) is
walked through them as far as the document has it. Anything that does not resolve gives
the deepest part that does, and at worst the document's first line: a line is a pointer
for a person, never a verdict.

Only documents lint already read are composed here: they passed its bounded reader
(rules/boundedyaml.py: depth, alias expansion, size) first, and composing keeps an alias
as the one node it names, so this costs what reading the text once costs and no more.
Nothing here can fail lint: any error of the second reading gives the document's line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Protocol

# one step of a finding's field: `.name` (the first without the dot), `[3]`, `["a/b"]`
_STEP = re.compile(r'\.?([A-Za-z_$][\w$-]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')
CONTAINER_KEYS = ("containers", "initContainers")
MAX_VISITED = 200_000  # nodes looked at for a container's line (a document has far fewer)


class Located(Protocol):
    """What lint knows of an object's place (lint.Source)."""

    @property
    def text(self) -> str: ...

    @property
    def line(self) -> int: ...

    @property
    def item(self) -> int | None: ...


def field_steps(field: str) -> list[str | int]:
    """The keys and indexes a field path names, up to the first part that is not one
    (`[*]`, a space, prose after the path)."""
    steps: list[str | int] = []
    at = 0
    while at < len(field):
        match = _STEP.match(field, at)
        if match is None:
            break
        name, index, quoted = match.groups()
        if name is not None and steps and not match.group(0).startswith("."):
            break  # `a[0]b`: not a path
        if name is not None:
            steps.append(name)
        elif index is not None:
            steps.append(int(index))
        else:
            try:
                steps.append(str(json.loads(quoted)))
            except ValueError:
                break
        at = match.end()
    return steps


class Lines:
    """Lines of the objects lint read, each document composed at most once."""

    def __init__(self) -> None:
        self._roots: dict[int, Any] = {}

    def object_line(self, source: Located) -> int:
        node = self._object_node(source)
        return source.line if node is None else self._line(source, node)

    def field_line(self, source: Located, field: str) -> int:
        node = self._object_node(source)
        if node is None:
            return source.line
        at, shown = node, node  # shown: the key of a mapping's value, where a person looks
        for step in field_steps(field):
            child = _child(at, step)
            if child is None:
                break
            at, shown = child, _key(at, step) or child
        return self._line(source, shown)

    def container_line(self, source: Located, container: str) -> int:
        """The line of the container named ``container`` (``leader/NAME`` and
        ``worker/NAME`` in a LeaderWorkerSet), else the object's."""
        node = self._object_node(source)
        if node is None:
            return source.line
        side, _, name = container.rpartition("/")
        start = node
        if side in ("leader", "worker"):
            start = _find_key(node, f"{side}Template") or node
        found = _find_container(start, name)
        return self._line(source, found if found is not None else node)

    @staticmethod
    def _line(source: Located, node: Any) -> int:
        # the document's text starts at source.line; its nodes' marks count from 0 there
        return source.line + int(node.start_mark.line)

    def _object_node(self, source: Located) -> Any:
        root = self._root(source)
        if root is None or source.item is None:
            return root
        items = _child(root, "items")
        return _child(items, source.item) if items is not None else None

    def _root(self, source: Located) -> Any:
        key = id(source.text)
        if key not in self._roots:
            self._roots[key] = _compose(source.text)
        return self._roots[key]


def _compose(text: str) -> Any:
    if not text:
        return None
    try:
        import yaml  # noqa: PLC0415  (lint only)

        loader_class = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
        loader = loader_class(text)
        try:
            return loader.get_single_node()
        finally:
            loader.dispose()
    except Exception:  # the line falls back to the document's: never an error of lint
        return None


def _child(node: Any, step: str | int) -> Any:
    value = getattr(node, "value", None)
    if not isinstance(value, list):
        return None
    if isinstance(step, int):
        if value and isinstance(value[0], tuple):
            return None  # a mapping
        return value[step] if step < len(value) else None
    for key, child in value if value and isinstance(value[0], tuple) else ():
        if isinstance(key.value, str) and key.value == step:
            return child
    return None


def _key(node: Any, step: str | int) -> Any:
    """The key node of ``step`` in a mapping node; None for a sequence."""
    if isinstance(step, int):
        return None
    for key, _ in node.value:
        if isinstance(key.value, str) and key.value == step:
            return key
    return None


def _walk(root: Any) -> Iterator[Any]:
    """Every node once (an alias is the node it names), at most MAX_VISITED."""
    seen: set[int] = set()
    stack = [root]
    while stack and len(seen) < MAX_VISITED:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        value = node.value
        if isinstance(value, list):
            children = (
                [n for pair in value for n in pair]
                if value and isinstance(value[0], tuple)
                else value
            )
            stack.extend(reversed(children))


def _find_key(root: Any, key: str) -> Any:
    for node in _walk(root):
        found = _child(node, key)
        if found is not None and node.value and isinstance(node.value[0], tuple):
            return found
    return None


def _find_container(root: Any, name: str) -> Any:
    for node in _walk(root):
        for key in CONTAINER_KEYS:
            containers = _child(node, key)
            if containers is None or not isinstance(containers.value, list):
                continue
            for entry in containers.value:
                named = _child(entry, "name")
                if named is not None and named.value == name:
                    return entry
    return None
