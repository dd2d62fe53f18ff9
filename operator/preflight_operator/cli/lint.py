"""`vllm-preflight lint FILE|DIR|-`: check vLLM manifests before they reach a cluster.

Reads multi-document YAML (and JSON) files, directories of them (*.yaml, *.yml, *.json,
recursively, hidden directories skipped) or standard input; expands List kinds; runs the
rules engine over all objects together (so a ConfigMap or Service in another file of the
same set is seen); prints a report grouped by workload, or the JSON document.

Reading is kubectl's: libyaml, one document at a time, go-yaml's alias limit. An unreadable
file or document is reported with its file, document and line, the rest is still judged,
and the exit code is 2 at the end. Results name the file and document they came from.

Exit codes: 0 nothing fails, 1 something fails, 2 the input (or the options, or the
--policy file) cannot be read. "Fails" is --fail-on's: by default a failure admission would
deny (lint_policy.py), so a failure of a rule whose certainty source is a heuristic (its
default action is Warn, docs/RULES.md) is reported and does not exit 1. --format sarif and
junit are lint_sarif.py and lint_junit.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from preflight_contract import safejson
from preflight_contract.modelsource import directory_lookup
from preflight_operator.cli.lint_junit import junit_document
from preflight_operator.cli.lint_policy import (
    FAIL_ON,
    FAIL_ON_DENY,
    Judged,
    PolicyFileError,
    annotate,
    judge,
    parse_policies,
)
from preflight_operator.cli.lint_sarif import sarif_document
from preflight_operator.core.policy import Policy as PreflightPolicy
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.rules import (
    RULE_ALIASES,
    RULE_INFO,
    ContainerResult,
    Policy,
    boundedyaml,
    results_document,
)
from preflight_operator.core.rules.embedded import embedded_pod_specs, runs_vllm, vllm_mentions
from preflight_operator.core.rules.kinds import kind_spec
from preflight_operator.core.rules.model import NO_LOOKUP, ClusterLookup
from preflight_operator.core.rules.quantity import parse_quantity

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_UNREADABLE = 2
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vllm-preflight lint",
        description="Statically check vLLM workloads (Deployment, StatefulSet, Job, Pod, "
        "LeaderWorkerSet, ...) for GPU, /dev/shm, CUDA_VISIBLE_DEVICES and VLLM_PORT "
        "mistakes. Exit 0: nothing fails; 1: something fails; 2: unreadable input.",
    )
    parser.add_argument("paths", nargs="*", metavar="FILE|DIR|-", help="manifests; - is stdin")
    parser.add_argument("--format", choices=("text", "json", "sarif", "junit"), default="text")
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default=FAIL_ON_DENY,
        help="what exits 1: deny (default) a failure admission would deny under the policy; "
        "fail any failure; warn any failure or warning",
    )
    parser.add_argument(
        "--policy",
        metavar="FILE",
        help="PreflightPolicy objects (YAML): each workload is judged under the policy "
        "admission would pick for it (its namespace, selector, priority, rules)",
    )
    parser.add_argument(
        "--shm-min",
        default="1Gi",
        metavar="QUANTITY",
        help="smallest acceptable /dev/shm sizeLimit with several GPU processes (default 1Gi)",
    )
    parser.add_argument(
        "--allow-extra-gpus",
        type=int,
        default=0,
        metavar="N",
        help="GPUs a pod may request beyond what vLLM uses before it warns (default 0)",
    )
    parser.add_argument(
        "--disable",
        action="append",
        default=[],
        metavar="RULE",
        help="do not report this rule id (repeatable, or comma-separated)",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        default=None,
        help="namespace of objects that name none (as kubectl apply -n would)",
    )
    parser.add_argument(
        "--model-config",
        metavar="DIR",
        help="model configs laid out by Hub repo id (DIR/<org>/<name>/config.json): turns "
        "on the model rules (heads vs TP, layers vs PP, max length, fit, GPU capability)",
    )
    parser.add_argument("--list-rules", action="store_true", help="print the rule ids and exit")
    return parser


def main(argv: list[str]) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on a usage error, 0 on --help
        return exc.code if isinstance(exc.code, int) else EXIT_UNREADABLE
    if args.list_rules:
        for info in sorted(RULE_INFO.values(), key=lambda i: i.id):
            print(f"{info.id:<28} {info.severity:<5} {info.summary}")
        return EXIT_OK
    try:
        policy = _policy(args)
        if not args.paths:
            raise InputError("no input: give FILE, DIR or - (standard input)")
        lookup = _lookup(args.model_config)
        policies = _policies(args)
    except (InputError, PolicyFileError) as exc:
        for line in str(exc).splitlines():
            _write(sys.stderr, f"vllm-preflight lint: {line}\n")
        return EXIT_UNREADABLE
    problems: list[Problem] = []
    sources = list(_read_all(args.paths, problems))
    for problem in problems:
        _write(sys.stderr, f"vllm-preflight lint: {problem.text()}\n")
    judged = judge(
        [s.obj for s in sources], policies, policy, lookup=lookup, default_namespace=args.namespace
    )
    _report(args, judged, sources, problems, with_policy=policies is not None)
    if problems:
        return EXIT_UNREADABLE
    return EXIT_FAILED if judged.failed(args.fail_on) else EXIT_OK


def _report(
    args: argparse.Namespace,
    judged: Judged,
    sources: Sequence[Source],
    problems: Sequence[Problem],
    *,
    with_policy: bool,
) -> None:
    if args.format == "json":  # always a document: CI reads the errors from it too
        doc = _json_document(judged.results, sources, problems)
        if with_policy:
            annotate(doc, judged)
        _write(sys.stdout, json.dumps(doc, indent=2) + "\n")
    elif args.format == "sarif":
        _write(sys.stdout, json.dumps(sarif_document(judged, sources, problems), indent=2) + "\n")
    elif args.format == "junit":
        _write(sys.stdout, junit_document(judged, sources, problems, args.fail_on))
    elif sources or not problems:
        shown = judged.policy_of if with_policy else None
        _write(sys.stdout, _text_report(judged.results, sources, args.namespace, shown))


def _policies(args: argparse.Namespace) -> list[PreflightPolicy] | None:
    """--policy FILE read as the manifests are (the same reader and limits)."""
    if args.policy is None:
        return None
    if args.policy == "-" and "-" in args.paths:
        raise InputError("--policy - and - among the manifests: standard input is read once")
    problems: list[Problem] = []
    objects = [(s.where, s.obj) for s in _read_all([args.policy], problems)]
    if problems:
        raise PolicyFileError("\n".join(f"--policy {p.text()}" for p in problems))
    if not objects:
        raise PolicyFileError(f"--policy {args.policy}: no PreflightPolicy in it")
    try:
        return parse_policies(objects, args.namespace)
    except PolicyFileError as exc:
        lines = str(exc).splitlines()
        raise PolicyFileError("\n".join(f"--policy {line}" for line in lines)) from None


def enforced_failures(results: Sequence[ContainerResult]) -> bool:
    """Something fails that the default policy would deny: a fail of a rule whose action
    under Enforce is Enforce. A heuristic rule's fail (its default action is Warn,
    rules.certainty) is reported and does not make lint exit 1."""
    return Judged(list(results), {}).failed(FAIL_ON_DENY)


def _write(out: TextIO, text: str) -> None:
    """Write text that may hold lone surrogates (JSON allows "\\ud800"): escaped, never a
    UnicodeEncodeError, whatever the stream's encoding."""
    try:
        out.write(text)
    except UnicodeEncodeError:
        encoding = getattr(out, "encoding", None) or "utf-8"
        out.write(text.encode(encoding, "backslashreplace").decode(encoding, "replace"))


def _lookup(model_config: str | None) -> ClusterLookup:
    if model_config is None:
        return NO_LOOKUP
    if not Path(model_config).is_dir():
        raise InputError(f"--model-config {model_config!r} is not a directory")
    return ClusterLookup(model=directory_lookup(model_config))


def _policy(args: argparse.Namespace) -> Policy:
    shm = parse_quantity(args.shm_min)
    if shm is None or shm < 0:
        raise InputError(f"--shm-min {args.shm_min!r} is not a quantity such as 1Gi or 512Mi")
    if args.allow_extra_gpus < 0:
        raise InputError("--allow-extra-gpus must be >= 0")
    disabled = {r.strip() for item in args.disable for r in item.split(",") if r.strip()}
    unknown = sorted(disabled - set(RULE_INFO) - set(RULE_ALIASES))
    if unknown:
        raise InputError(f"--disable: unknown rule id(s) {', '.join(unknown)} (see --list-rules)")
    return Policy(int(shm), args.allow_extra_gpus, frozenset(disabled))


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


def _read_all(paths: Sequence[str], problems: list[Problem]) -> Iterator[Source]:
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
            loaded.append((number, _load_json(chunk) if json_file else _load_yaml(chunk)))
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
    import yaml  # noqa: PLC0415  (lint only: the webhook never reads YAML text)

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


def _load_yaml(chunk: str) -> Any:
    import yaml  # noqa: PLC0415

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
    except boundedyaml.Refused as exc:
        raise _refused(exc) from None
    except yaml.YAMLError as exc:
        if _TAB_ERROR in str(exc) and not hasattr(yaml, "CSafeLoader"):
            # the pure loader refuses trailing tabs that libyaml (and kubectl) accept
            chunk = re.sub(r"[ \t]+$", _spaces, chunk, flags=re.MULTILINE)
            try:
                return _load_one(_LOADER, chunk)
            except boundedyaml.Refused as refused:
                raise _refused(refused) from None
        raise _yaml_error(exc) from None
    except RecursionError:
        raise _Unreadable("nested too deeply to read") from None
    except ValueError as exc:  # a constructor's int()/float() of a hostile scalar
        raise _Unreadable(f"invalid value: {exc}") from None


def _spaces(match: re.Match[str]) -> str:
    return " " * len(match.group())


def _refused(exc: boundedyaml.Refused) -> _Unreadable:
    if exc.reason == boundedyaml.TOO_MANY_NODES:
        return _Unreadable(
            f"excessive aliasing: its aliases expand to more than {MAX_EXPANDED_NODES} nodes "
            "(kubectl refuses it too: 'document contains excessive aliasing')"
        )
    if exc.reason == boundedyaml.TOO_DEEP:
        return _Unreadable(f"a nesting depth of more than {MAX_JSON_DEPTH} levels{{at}}", exc.line)
    return _Unreadable(str(exc), exc.line)


def _load_one(loader_class: type[Any], chunk: str) -> Any:
    # bounded first, from the parser's events (rules/boundedyaml.py): depth, and the
    # aliases' expansion counted before any node is built
    boundedyaml.check(
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


# -- reports -----------------------------------------------------------------------------


def _source_of(result: ContainerResult, sources: Sequence[Source]) -> Source | None:
    index = result.object_index
    return sources[index] if index is not None and 0 <= index < len(sources) else None


def _json_document(
    results: Sequence[ContainerResult], sources: Sequence[Source], problems: Sequence[Problem]
) -> dict[str, Any]:
    """results_document, each result with the file and document it came from (additive:
    the schema stays 1), and the unreadable inputs when there are any."""
    doc = results_document(results)
    for result, entry in zip(results, doc["results"]):
        source = _source_of(result, sources)
        if source is not None:
            where: dict[str, Any] = {"file": source.file, "document": source.document}
            if source.item is not None:
                where["item"] = source.item
            entry["source"] = where
    if problems:
        doc["errors"] = [p.to_dict() for p in problems]
    return doc


def _plan_line(result: ContainerResult) -> str:
    if result.plan is None:
        return "parallel plan unknown"
    plan = result.plan
    text = f"TP={plan.tp} PP={plan.pp} DP={plan.dp} (local {plan.dp_local})"
    if plan.pcp > 1:
        text += f" PCP={plan.pcp}"
    if plan.dcp > 1:
        text += f" DCP={plan.dcp}"
    unit = "GPU(s)" if result.platform in (None, "cuda", "rocm") else f"{result.platform} device(s)"
    return f"{text} -> needs {result.gpus_needed} {unit}"


def _is_builtin(obj: Mapping[str, Any]) -> bool:
    """A kind Kubernetes itself serves (core, apps, batch, *.k8s.io): never "not checked"."""
    api = obj.get("apiVersion")
    group = api.rpartition("/")[0] if isinstance(api, str) else ""
    return "." not in group or group.endswith(".k8s.io")


def _default_runtime(obj: Mapping[str, Any]) -> str | None:
    """Kinds whose controller serves with vLLM unless told otherwise (nothing in the object
    names it): why, or None."""
    api, kind = obj.get("apiVersion"), obj.get("kind")
    group = api.rpartition("/")[0] if isinstance(api, str) else ""
    if (group, kind) == ("kaito.sh", "Workspace") and isinstance(obj.get("inference"), Mapping):
        return "runs an inference preset, which KAITO serves with vLLM by default"
    if (group, kind) == ("serving.kserve.io", "InferenceService"):
        spec = obj.get("spec")
        predictor = spec.get("predictor") if isinstance(spec, Mapping) else None
        model = predictor.get("model") if isinstance(predictor, Mapping) else None
        model_format = model.get("modelFormat") if isinstance(model, Mapping) else None
        name = model_format.get("name") if isinstance(model_format, Mapping) else None
        if isinstance(name, str) and name.lower() == "huggingface":
            return (
                "has spec.predictor.model.modelFormat huggingface, which KServe's "
                "huggingface runtime serves with vLLM by default"
            )
    return None


def _not_checked(
    results: Sequence[ContainerResult], sources: Sequence[Source], namespace: str | None
) -> list[tuple[Source, str, str]]:
    """Objects the rules returned nothing for although they run vLLM: a pod spec in them
    does, or (a kind whose controller builds the pods) their spec names vLLM."""
    judged = {r.object_index for r in results}
    out: list[tuple[Source, str, str]] = []
    for index, source in enumerate(sources):
        if index in judged:
            continue
        paths = [path for path, spec in embedded_pod_specs(source.obj) if runs_vllm(spec)]
        if paths:
            why = f"embeds a pod spec running vLLM at {', '.join(paths)}"
        elif not _is_builtin(source.obj) and (mentions := vllm_mentions(source.obj)):
            why = f"names vLLM at {', '.join(mentions)}; its controller builds the pods"
        elif (default := _default_runtime(source.obj)) is not None:
            why = default
        else:
            continue
        meta = source.obj.get("metadata")
        ns = meta.get("namespace") if isinstance(meta, Mapping) else None
        out.append((source, str(ns or namespace or "(unset)"), why))
    return out


def _text_report(
    results: Sequence[ContainerResult],
    sources: Sequence[Source],
    namespace: str | None,
    policy_of: Callable[[ContainerResult], ResolvedPolicy] | None = None,
) -> str:
    lines: list[str] = []
    skipped = _not_checked(results, sources, namespace)
    if not results and not skipped:
        return f"no vLLM workloads found ({len(sources)} objects read)\n"
    current: int | None = -1
    for result in results:
        if result.object_index != current:
            current = result.object_index
            source = _source_of(result, sources)
            origin = source.where if source is not None else "?"
            ns = result.namespace or "(unset)"
            header = f"\n{result.workload}  namespace {ns}  [{origin}]"
            if policy_of is not None:  # --policy: the one admission would pick
                chosen = policy_of(result)
                header += f"  policy {chosen.name or '(default)'} ({chosen.action})"
            lines.append(header)
        requested = "none" if result.gpus_requested is None else str(result.gpus_requested)
        lines.append(
            f"  container {result.container}: {_plan_line(result)}, requests {requested}"
            f"  => {result.verdict.upper()}"
        )
        for f in result.findings:
            lines.append(f"    {f.severity.upper():<4} {f.id}")
            lines.append(f"         {f.message}")
            if f.field:
                lines.append(f"         at:  {f.field}")
            lines.append(f"         fix: {f.fix}")
    for source, ns, why in skipped:
        kind = source.obj.get("kind")
        meta = source.obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        lines.append(f"\n{kind}/{name or '<unnamed>'}  namespace {ns}  [{source.where}]")
        if kind_spec(source.obj) is not None:
            # a kind of the registry whose vLLM command line is not readable here (a
            # custom Ray Serve app, an InferenceService whose ServingRuntime is elsewhere)
            lines.append(
                f"  not judged: {kind} {why}, but its vLLM command line cannot be read from "
                "these manifests (docs/RULES.md, 'Workload kinds', says where it is read); "
                "include what it refers to, or lint the workload its controller creates"
            )
            continue
        lines.append(
            f"  kind not checked: {kind} {why}; vllm-preflight does not judge this kind "
            "(lint the workload its controller creates, e.g. "
            "`kubectl get deploy NAME -o yaml | vllm-preflight lint -`)"
        )
    counts = {v: sum(1 for r in results if r.verdict == v) for v in ("pass", "warn", "fail")}
    summary = (
        f"\n{len(results)} vLLM container(s): {counts['pass']} pass, {counts['warn']} warn, "
        f"{counts['fail']} fail"
    )
    if skipped:
        summary += f"; {len(skipped)} object(s) of kinds not checked"
    lines.append(summary)
    return "\n".join(lines) + "\n"


__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_UNREADABLE", "main"]
