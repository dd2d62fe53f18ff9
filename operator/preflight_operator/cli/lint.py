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
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from preflight_contract.modelsource import directory_lookup
from preflight_contract.terminal import clean
from preflight_operator.cli import manifests
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
from preflight_operator.cli.manifests import InputError, Problem, Source
from preflight_operator.core.policy import Policy as PreflightPolicy
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.rules import (
    NO_LOOKUP,
    RULE_ALIASES,
    RULE_INFO,
    UNJUDGED,
    ClusterLookup,
    ContainerResult,
    Policy,
    kind_spec,
    object_runs_vllm,
    parse_quantity,
    results_document,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_UNREADABLE = 2


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
        "--sarif-base",
        metavar="DIR",
        help="--format sarif: the directory file URIs are relative to (uriBaseId %%SRCROOT%%; "
        "default: the working directory; a file outside it gets an absolute file URI)",
    )
    parser.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default=FAIL_ON_DENY,
        help="what exits 1: deny (default) a failure admission would deny under the policy; "
        "fail any failure; warn any failure or warning; unjudged what deny exits on and any "
        "vLLM container that was not judged (its command line could not be read)",
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
            _write(sys.stderr, f"vllm-preflight lint: {clean(line)}\n")
        return EXIT_UNREADABLE
    problems: list[Problem] = []
    sources = list(manifests.read_all(args.paths, problems))
    for problem in problems:
        _write(sys.stderr, f"vllm-preflight lint: {clean(problem.text())}\n")
    started = time.perf_counter()
    judged = judge(
        [s.obj for s in sources], policies, policy, lookup=lookup, default_namespace=args.namespace
    )
    seconds = time.perf_counter() - started
    _report(args, judged, sources, problems, with_policy=policies is not None, seconds=seconds)
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
    seconds: float = 0.0,
) -> None:
    if args.format == "json":  # always a document: CI reads the errors from it too
        doc = _json_document(judged.results, sources, problems)
        if with_policy:
            annotate(doc, judged)
        _write(sys.stdout, json.dumps(doc, indent=2) + "\n")
    elif args.format == "sarif":
        sarif = sarif_document(
            judged, sources, problems, _skipped(judged, sources, args), base=args.sarif_base
        )
        _write(sys.stdout, json.dumps(sarif, indent=2) + "\n")
    elif args.format == "junit":
        skipped = _skipped(judged, sources, args)
        document = junit_document(
            judged, sources, problems, args.fail_on, seconds=seconds, not_judged=skipped
        )
        _write(sys.stdout, document)
    elif sources or not problems:
        shown = judged.policy_of if with_policy else None
        # a manifest's names and values are anyone's text: the one sanitiser before a terminal
        _write(sys.stdout, clean(_text_report(judged.results, sources, args.namespace, shown)))


def _policies(args: argparse.Namespace) -> list[PreflightPolicy] | None:
    """--policy FILE read as the manifests are (the same reader and limits)."""
    if args.policy is None:
        return None
    if args.policy == "-" and "-" in args.paths:
        raise InputError("--policy - and - among the manifests: standard input is read once")
    problems: list[Problem] = []
    objects = [(s.where, s.obj) for s in manifests.read_all([args.policy], problems)]
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
        why = object_runs_vllm(source.obj)
        if why is None:
            continue
        meta = source.obj.get("metadata")
        ns = meta.get("namespace") if isinstance(meta, Mapping) else None
        out.append((source, str(ns or namespace or "(unset)"), why))
    return out


def _skipped(
    judged: Judged, sources: Sequence[Source], args: argparse.Namespace
) -> list[tuple[Source, str, str]]:
    """(source, Kind/name, why) of the objects that run vLLM and were not judged."""
    return [
        (source, _object_name(source), f"{source.obj.get('kind')} {why}")
        for source, _, why in _not_checked(judged.results, sources, args.namespace)
    ]


def _object_name(source: Source) -> str:
    meta = source.obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return f"{source.obj.get('kind')}/{name or '<unnamed>'}"


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
        if result.unjudged:  # recognised as vLLM, not judged: said, never left out
            lines.append(
                f"  container {result.container}: not judged ({result.unjudged})"
                f"  => {result.verdict.upper()}"
            )
        else:
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
    verdicts = ("pass", "warn", "fail", UNJUDGED)
    counts = {v: sum(1 for r in results if r.verdict == v) for v in verdicts}
    summary = (
        f"\n{len(results)} vLLM container(s): {counts['pass']} pass, {counts['warn']} warn, "
        f"{counts['fail']} fail"
    )
    if counts[UNJUDGED]:
        summary += f", {counts[UNJUDGED]} not judged (their vLLM command line was not read)"
    if skipped:
        summary += f"; {len(skipped)} object(s) of kinds not checked"
    lines.append(summary)
    return "\n".join(lines) + "\n"


__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_UNREADABLE", "main"]
