"""Manifests read as kubectl reads them: the hardened YAML/JSON reader of `lint`, apart
from the command (issue 28).

Like kubectl: libyaml (PyYAML's CSafeLoader; the pure loader only where libyaml is
missing), which accepts what kubectl's Go YAML reader accepts (a trailing tab, for one);
each document on its own, so one bad document costs only itself; and go-yaml's limit on
alias expansion, so a billion-laughs file is an error for its document, not 3 GB. Every
object comes with where it was read (``Source``); what cannot be read is a ``Problem``
naming the file, the document and the line, and the rest is still read.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from preflight_contract import safejson
from preflight_operator.core.rules import (
    YAML_TOO_DEEP,
    YAML_TOO_MANY_NODES,
    YamlRefused,
    check_yaml,
)

SUFFIXES = (".yaml", ".yml", ".json")


class InputError(Exception):
    """The input cannot be read: the message names the file, the document and why."""


@dataclass(frozen=True)
class Source:
    obj: Mapping[str, Any]
    where: str  # "file.yaml (document 2)"
    file: str = "?"
    document: int = 1
    item: int | None = None  # index in a List kind's items
    # the document's first line (1-based) and its text: lint_lines finds the lines of
    # objects and fields in it for --format sarif|junit
    line: int = 1
    text: str = dataclasses.field(default="", repr=False, compare=False)


@dataclass(frozen=True)
class Problem:
    """One unreadable file or document; the rest of the input is still judged."""

    file: str
    document: int | None
    line: int | None
    message: str

    def text(self) -> str:
        return f"{self.file}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "document": self.document,
            "line": self.line,
            "message": self.message,
        }


# -- reading ---------------------------------------------------------------------------
#
# Like kubectl: libyaml (PyYAML's CSafeLoader; the pure loader only where libyaml is
# missing), which accepts what kubectl's Go YAML reader accepts (a trailing tab, for one);
# each document on its own, so one bad document costs only itself; and go-yaml's limit on
# alias expansion, so a billion-laughs file is an error for its document, not 3 GB.

MAX_DOCUMENT_CHARS = 4 * 1024 * 1024  # the API server takes requests up to 3 MiB
MAX_JSON_DEPTH = 1000
MAX_INT_DIGITS = 1000  # an int64 has 19; Python refuses int() of more than 4300 digits
MAX_EXPANDED_NODES = 4_000_000
_DOC_START = re.compile(r"^---(?=[ \t]|$)", re.MULTILINE)
# Go template actions ({{ .Values.x }}, {{- if }}, {{ include }}, {{ $v }}), not a bare
# {{PLACEHOLDER}} that a README asks to replace with sed
_TEMPLATE = re.compile(
    r"\{\{-?\s*(?:[.$]|/\*|(?:if|else|end|range|with|define|template|include|block|toYaml"
    r"|tpl|required|default|quote|printf|nindent|indent|print|len|index|not|and|or)\b)"
)
_DIRECTIVE = re.compile(r"^%(?:YAML|TAG)\b", re.MULTILINE)
_TAB_ERROR = "found character '\\t' that cannot start any token"


class _Unreadable(Exception):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def read_all(paths: Sequence[str], problems: list[Problem]) -> Iterator[Source]:
    for raw in paths:
        if raw == "-":
            data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else None
            text = sys.stdin.read() if data is None else _decode("<stdin>", data, problems)
            if text is not None:
                yield from _parse("<stdin>", text, json_file=False, problems=problems)
            continue
        path = Path(raw)
        if path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*")
                if p.suffix in SUFFIXES
                and p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            for file in files:
                yield from _read_file(file, problems)
        else:
            yield from _read_file(path, problems)


def _decode(name: str, data: bytes, problems: list[Problem]) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(
            Problem(name, None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
        )
        return None


def _read_file(path: Path, problems: list[Problem]) -> Iterator[Source]:
    name = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        problems.append(Problem(name, None, None, "no such file or directory"))
        return
    except OSError as exc:
        problems.append(Problem(name, None, None, f"cannot be read: {exc.strerror or exc}"))
        return
    text = _decode(name, data, problems)
    if text is not None:
        yield from _parse(name, text, json_file=path.suffix == ".json", problems=problems)


def _parse(name: str, text: str, *, json_file: bool, problems: list[Problem]) -> Iterator[Source]:
    chunks = [(1, 0, text)] if json_file else _documents(text)
    loaded: list[tuple[int, Any]] = []
    failed: list[Problem] = []
    spans = {number: (first_line + 1, chunk) for number, first_line, chunk in chunks}
    for number, first_line, chunk in chunks:
        try:
            loaded.append((number, _load_json(chunk) if json_file else load_yaml(chunk)))
        except _Unreadable as exc:
            line = None if exc.line is None else exc.line + first_line + 1
            at = "" if line is None else f" at line {line}"
            message = str(exc).replace("{at}", at)
            failed.append(Problem(name, number, line, f"document {number}: {message}"))
    if failed and _TEMPLATE.search(text):
        problems.append(
            Problem(
                name,
                None,
                failed[0].line,
                "this is a Helm/Go template: render it first "
                "(`helm template RELEASE CHART | vllm-preflight lint -`)",
            )
        )
        return
    problems.extend(failed)
    many = len(chunks) > 1
    for number, doc in loaded:
        where = f"{name} (document {number})" if many else name
        line, chunk = spans[number]
        for source in _objects(doc, where, name, number, item=None, problems=problems):
            yield dataclasses.replace(source, line=line, text=chunk)


def _documents(text: str) -> list[tuple[int, int, str]]:
    """The YAML stream cut at its `---` lines: (number, first line - 1, text) each.

    A document marker at the start of a line cannot occur inside a YAML scalar, so this is
    where the parser would cut too; each piece is then read alone. Leading directives and
    comments belong to the document they precede.
    """
    starts = [m.start() for m in _DOC_START.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    pieces: list[tuple[int, str]] = []
    for begin, end in zip(starts, [*starts[1:], len(text)]):
        pieces.append((text.count("\n", 0, begin), text[begin:end]))
    out: list[tuple[int, int, str]] = []
    carry = ""
    carry_line: int | None = None
    for line, piece in pieces:
        if not piece.startswith("---") and _only_comments(piece) and len(pieces) > 1:
            carry, carry_line = piece, line  # directives or comments before the first ---
            continue
        first = line if carry_line is None else carry_line
        out.append((len(out) + 1, first, carry + piece))
        carry, carry_line = "", None
    return out or [(1, 0, text)]


def _only_comments(piece: str) -> bool:
    return all(not ln.strip() or ln.lstrip().startswith(("#", "%")) for ln in piece.splitlines())


# How kubectl's reader (sigs.k8s.io/yaml on go-yaml v2) types a plain scalar, where PyYAML's
# YAML 1.1 rules differ: y/Y/n/N are booleans; 1e3 and 08 are numbers; 0o17 is octal;
# 1:30 (sexagesimal) and 2001-12-14 (a timestamp) stay strings. "_" is dropped first.
_GO_BOOL = re.compile(
    r"^(?:y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON|n|N|no|No|NO|false|False|FALSE|off|Off|OFF)$"
)
_GO_INT = re.compile(r"^[-+]?(?:[0-9][0-9_]*|0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+)$")
_GO_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_GO_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_TRUE = frozenset(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"))


def _go_int(text: str) -> int | float | None:
    """strconv.ParseInt(text, 0, 64) as go-yaml calls it; a decimal with a leading zero that
    is not octal ("08") is then ParseFloat's: 8.0. None when neither applies."""
    sign = -1 if text[:1] == "-" else 1
    body = text.lstrip("+-")
    for prefix, base in (("0x", 16), ("0o", 8), ("0b", 2)):
        if body[:2].lower() == prefix:
            return sign * int(body[2:], base)
    if len(body) > 1 and body[0] == "0":
        if all(c in "01234567" for c in body):
            return sign * int(body, 8)
        return float(text)
    return sign * int(body)


def _yaml_loader() -> type[Any]:

    base: type[Any] = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader

    class Loader(base):  # type: ignore[misc]
        """Safe loading with kubectl's scalar types; ints capped at MAX_INT_DIGITS and
        floats without a JSON form refused, each with the line that holds them."""

    Loader.yaml_implicit_resolvers = {}
    for tag, pattern, first in (
        ("bool", _GO_BOOL, "yYnNtTfFoO"),
        ("int", _GO_INT, "-+0123456789"),
        ("float", _GO_FLOAT, "-+0123456789."),
        ("null", _GO_NULL, ["~", "n", "N", ""]),
    ):
        Loader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", pattern, list(first))
    Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])

    def construct_bool(loader: Any, node: Any) -> bool:
        return str(loader.construct_scalar(node)) in _TRUE

    def construct_int(loader: Any, node: Any) -> Any:
        text = str(loader.construct_scalar(node)).replace("_", "")
        digits = sum(c.isdigit() for c in text)
        if digits > MAX_INT_DIGITS:
            raise _Unreadable(
                f"an integer of {digits} digits{{at}}: more than {MAX_INT_DIGITS} "
                "(no Kubernetes field holds one; quote it if it is a string)",
                node.start_mark.line,
            )
        try:
            return _go_int(text)
        except ValueError:
            raise _Unreadable(f"{text!r}{{at}} is not an integer", node.start_mark.line) from None

    def construct_float(loader: Any, node: Any) -> float:
        text = str(loader.construct_scalar(node)).replace("_", "")
        lowered = text.lower()
        if "inf" in lowered or "nan" in lowered:
            raise _Unreadable(
                f"{text}{{at}} has no JSON form: kubectl refuses it too ('json: unsupported "
                "value'); quote it if it is a string",
                node.start_mark.line,
            )
        if sum(c.isdigit() for c in text) > MAX_INT_DIGITS:
            raise _Unreadable(
                f"a number of more than {MAX_INT_DIGITS} digits{{at}}", node.start_mark.line
            )
        return float(text)

    Loader.add_constructor("tag:yaml.org,2002:bool", construct_bool)
    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    Loader.add_constructor("tag:yaml.org,2002:float", construct_float)
    return Loader


_LOADER: type[Any] | None = None


def load_yaml(chunk: str) -> Any:

    global _LOADER  # noqa: PLW0603  (built once, lazily: yaml is imported only by lint)
    if _LOADER is None:
        _LOADER = _yaml_loader()
    if len(chunk) > MAX_DOCUMENT_CHARS:
        raise _Unreadable(
            f"{len(chunk)} characters: larger than {MAX_DOCUMENT_CHARS} (the API server "
            "accepts requests up to 3 MiB)"
        )
    directive = _DIRECTIVE.search(chunk)
    if directive is not None:
        raise _Unreadable(
            "a %YAML/%TAG directive{at}: kubectl's reader refuses it ('did not find expected "
            "<document start>'); remove the line",
            chunk.count("\n", 0, directive.start()),
        )
    try:
        return _load_one(_LOADER, chunk)
    except YamlRefused as exc:
        raise _refused(exc) from None
    except yaml.YAMLError as exc:
        if _TAB_ERROR in str(exc) and not hasattr(yaml, "CSafeLoader"):
            # the pure loader refuses trailing tabs that libyaml (and kubectl) accept
            chunk = re.sub(r"[ \t]+$", _spaces, chunk, flags=re.MULTILINE)
            try:
                return _load_one(_LOADER, chunk)
            except YamlRefused as refused:
                raise _refused(refused) from None
        raise _yaml_error(exc) from None
    except RecursionError:
        raise _Unreadable("nested too deeply to read") from None
    except ValueError as exc:  # a constructor's int()/float() of a hostile scalar
        raise _Unreadable(f"invalid value: {exc}") from None


def _spaces(match: re.Match[str]) -> str:
    return " " * len(match.group())


def _refused(exc: YamlRefused) -> _Unreadable:
    if exc.reason == YAML_TOO_MANY_NODES:
        return _Unreadable(
            f"excessive aliasing: its aliases expand to more than {MAX_EXPANDED_NODES} nodes "
            "(kubectl refuses it too: 'document contains excessive aliasing')"
        )
    if exc.reason == YAML_TOO_DEEP:
        return _Unreadable(f"a nesting depth of more than {MAX_JSON_DEPTH} levels{{at}}", exc.line)
    return _Unreadable(str(exc), exc.line)


def _load_one(loader_class: type[Any], chunk: str) -> Any:
    # bounded first, from the parser's events (rules/boundedyaml.py): depth, and the
    # aliases' expansion counted before any node is built
    check_yaml(
        chunk, loader=loader_class, max_bytes=MAX_DOCUMENT_CHARS, max_depth=MAX_JSON_DEPTH,
        max_nodes=MAX_EXPANDED_NODES, max_aliases=None,
    )  # fmt: skip
    loader = loader_class(chunk)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_aliases(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_aliases(root: Any) -> None:
    """go-yaml's (kubectl's) rule against alias bombs, before anything is built.

    go-yaml fails a document whose decoded nodes are more than 100 aliased ones making up
    more than 99% of all it decodes (falling to 10% at 4M nodes). The counts are taken on
    the composed node graph, where an alias is the very node it refers to, memoised: linear
    in the file, whatever the expansion.
    """
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            continue
        if key in size:
            continue
        if key in on_path:
            raise _Unreadable("an alias refers to itself{at}", node.start_mark.line)
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)
    decoded = size[id(root)]
    aliased = 0
    seen: set[int] = set()
    walk = [root]
    while walk:  # document order; a node met again is an alias
        node = walk.pop()
        if id(node) in seen:
            aliased += size[id(node)]
            continue
        seen.add(id(node))
        walk.extend(reversed(_children(node)))
    if decoded > MAX_EXPANDED_NODES or (
        aliased > 100 and decoded > 1000 and aliased / decoded > _alias_ratio(decoded)
    ):
        raise _Unreadable(
            f"excessive aliasing: its aliases expand to {aliased} of {decoded} nodes "
            "(kubectl refuses it too: 'document contains excessive aliasing')"
        )


def _alias_ratio(decoded: int) -> float:
    low, high = 400_000, 4_000_000
    if decoded <= low:
        return 0.99
    if decoded >= high:
        return 0.10
    return 0.99 - 0.89 * (decoded - low) / (high - low)


def _children(node: Any) -> list[Any]:
    value = node.value
    if isinstance(value, list):
        if value and isinstance(value[0], tuple):  # a mapping: (key, value) pairs
            return [n for pair in value for n in pair]
        return value
    return []


def _load_json(text: str) -> Any:
    if len(text) > MAX_DOCUMENT_CHARS:
        raise _Unreadable(f"{len(text)} characters: larger than {MAX_DOCUMENT_CHARS}")
    if safejson.depth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise _Unreadable(f"nested more than {MAX_JSON_DEPTH} levels deep")

    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INT_DIGITS:
            raise _Unreadable(
                f"an integer of {len(digits.lstrip('-'))} digits: more than {MAX_INT_DIGITS} "
                "(no Kubernetes field holds one; quote it if it is a string)"
            )
        return int(digits)

    try:
        return json.loads(text, parse_int=parse_int)
    except json.JSONDecodeError as exc:
        raise _Unreadable(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise _Unreadable(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:
        raise _Unreadable(f"invalid value: {exc}") from None


def _yaml_error(exc: Exception) -> _Unreadable:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return _Unreadable(
            f"invalid YAML{{at}}, column {mark.column + 1}: {problem}",
            mark.line,
        )
    return _Unreadable(f"invalid YAML: {problem}")


def _objects(
    doc: object,
    where: str,
    file: str,
    document: int,
    *,
    item: int | None,
    problems: list[Problem],
) -> Iterator[Source]:
    if doc is None:
        return  # an empty document (a trailing ---)
    if not isinstance(doc, Mapping):
        problems.append(
            Problem(
                file,
                document,
                None,
                f"{where[len(file) :].strip() or 'document ' + str(document)}: is a "
                f"{type(doc).__name__}, not a Kubernetes object (a mapping with kind)",
            )
        )
        return
    kind = doc.get("kind")
    items = doc.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        for i, entry in enumerate(items):
            yield from _objects(
                entry, f"{where} items[{i}]", file, document, item=i, problems=problems
            )
        return
    if kind is None:
        return  # not a Kubernetes object (values files, kustomization fragments)
    yield Source(doc, where, file, document, item)
