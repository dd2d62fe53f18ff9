"""`vllm-preflight lint FILE|DIR|-`: check vLLM manifests before they reach a cluster.

Reads multi-document YAML (and JSON) files, directories of them (*.yaml, *.yml, *.json,
recursively, hidden directories skipped) or standard input; expands List kinds; runs the
rules engine over all objects together (so a ConfigMap or Service in another file of the
same set is seen); prints a report grouped by workload, or the JSON document.

Exit codes: 0 nothing fails, 1 something fails, 2 the input (or the options) cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from preflight_check.modelsource import directory_lookup
from preflight_operator.rules import (
    FAIL,
    RULE_INFO,
    ContainerResult,
    Policy,
    check_objects,
    results_document,
)
from preflight_operator.rules.model import NO_LOOKUP, ClusterLookup
from preflight_operator.rules.quantity import parse_quantity

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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vllm-preflight lint",
        description="Statically check vLLM workloads (Deployment, StatefulSet, Job, Pod, "
        "LeaderWorkerSet, ...) for GPU, /dev/shm, CUDA_VISIBLE_DEVICES and VLLM_PORT "
        "mistakes. Exit 0: nothing fails; 1: something fails; 2: unreadable input.",
    )
    parser.add_argument("paths", nargs="*", metavar="FILE|DIR|-", help="manifests; - is stdin")
    parser.add_argument("--format", choices=("text", "json"), default="text")
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
        sources = list(_read_all(args.paths))
        lookup = _lookup(args.model_config)
    except InputError as exc:
        print(f"vllm-preflight lint: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    results = check_objects(
        [s.obj for s in sources], policy, lookup=lookup, default_namespace=args.namespace
    )
    if args.format == "json":
        json.dump(results_document(results), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_text(results, sources, len(sources), sys.stdout)
    return EXIT_FAILED if any(r.verdict == FAIL for r in results) else EXIT_OK


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
    unknown = sorted(disabled - set(RULE_INFO))
    if unknown:
        raise InputError(f"--disable: unknown rule id(s) {', '.join(unknown)} (see --list-rules)")
    return Policy(int(shm), args.allow_extra_gpus, frozenset(disabled))


# -- reading ---------------------------------------------------------------------------


def _read_all(paths: Sequence[str]) -> Iterator[Source]:
    for raw in paths:
        if raw == "-":
            yield from _parse("<stdin>", sys.stdin.read(), json_file=False)
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
                yield from _read_file(file)
        else:
            yield from _read_file(path)


def _read_file(path: Path) -> Iterator[Source]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file or directory") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    yield from _parse(str(path), text, json_file=path.suffix == ".json")


def _parse(name: str, text: str, *, json_file: bool) -> Iterator[Source]:
    import yaml  # noqa: PLC0415  (lint only: the webhook never reads YAML text)

    if json_file:
        try:
            docs: list[Any] = [json.loads(text)]
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
    else:
        docs = []
        loader = yaml.safe_load_all(text)
        while True:
            try:
                docs.append(next(loader))
            except StopIteration:
                break
            except yaml.YAMLError as exc:
                raise InputError(f"{name}: document {len(docs) + 1}: {_yaml_error(exc)}") from None
            except (ValueError, RecursionError) as exc:
                raise InputError(f"{name}: document {len(docs) + 1}: {exc}") from None
    for number, doc in enumerate(docs, 1):
        where = f"{name} (document {number})" if len(docs) > 1 else name
        yield from _objects(doc, where)


def _yaml_error(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"invalid YAML: {problem}"


def _objects(doc: object, where: str) -> Iterator[Source]:
    if doc is None:
        return  # an empty document (a trailing ---)
    if not isinstance(doc, Mapping):
        raise InputError(
            f"{where}: is a {type(doc).__name__}, not a Kubernetes object (a mapping with kind)"
        )
    kind = doc.get("kind")
    items = doc.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        for i, item in enumerate(items):
            yield from _objects(item, f"{where} items[{i}]")
        return
    if kind is None:
        return  # not a Kubernetes object (values files, kustomization fragments)
    yield Source(doc, where)


# -- text report ---------------------------------------------------------------------------


def _origin(result: ContainerResult, sources: Sequence[Source]) -> str:
    for source in sources:
        meta = source.obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if source.obj.get("kind") == result.kind and name == result.name:
            return source.where
    return "?"


def _plan_line(result: ContainerResult) -> str:
    if result.plan is None:
        return "parallel plan unknown"
    plan = result.plan
    text = f"TP={plan.tp} PP={plan.pp} DP={plan.dp} (local {plan.dp_local})"
    if plan.pcp > 1:
        text += f" PCP={plan.pcp}"
    if plan.dcp > 1:
        text += f" DCP={plan.dcp}"
    return f"{text} -> needs {result.gpus_needed} GPU(s)"


def _print_text(
    results: Sequence[ContainerResult], sources: Sequence[Source], objects: int, out: TextIO
) -> None:
    if not results:
        out.write(f"no vLLM workloads found ({objects} objects read)\n")
        return
    current = None
    for result in results:
        key = (result.workload, result.namespace)
        if key != current:
            current = key
            namespace = result.namespace or "(unset)"
            out.write(f"\n{result.workload}  namespace {namespace}  [{_origin(result, sources)}]\n")
        requested = "none" if result.gpus_requested is None else str(result.gpus_requested)
        out.write(
            f"  container {result.container}: {_plan_line(result)}, requests {requested}"
            f"  => {result.verdict.upper()}\n"
        )
        for f in result.findings:
            out.write(f"    {f.severity.upper():<4} {f.id}\n")
            out.write(f"         {f.message}\n")
            if f.field:
                out.write(f"         at:  {f.field}\n")
            out.write(f"         fix: {f.fix}\n")
    counts = {v: sum(1 for r in results if r.verdict == v) for v in ("pass", "warn", "fail")}
    out.write(
        f"\n{len(results)} vLLM container(s): {counts['pass']} pass, {counts['warn']} warn, "
        f"{counts['fail']} fail\n"
    )


__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_UNREADABLE", "main"]
