"""`kubectl vllm-preflight status [-n NS | -A]`: the GPUValidation table, verdicts coloured
on a terminal (a pure table of JSON documents; `cmd_status` does the I/O)."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from preflight_contract.terminal import clean_tree
from preflight_operator.cli.plugin_common import (
    EXIT_FAILED,
    EXIT_OK,
    GPUVAL_RESOURCE,
    Kubectl,
    namespace_args,
    render_table,
    use_colour,
)


# -- status ----------------------------------------------------------------------------------
def age(created: str, now: datetime.datetime) -> str:
    """kubectl's short age: 45s, 12m, 5h, 3d; <unknown> when unreadable."""
    try:
        then = datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit == "d" else 1):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


STATUS_COLUMNS = ("NAME", "WORKLOAD", "TP", "GPUS", "STATIC", "RUNTIME", "REASON", "AGE")


def status_rows(
    items: Iterable[Mapping[str, Any]], *, all_namespaces: bool, now: datetime.datetime
) -> list[list[str]]:
    """The columns of `kubectl get gpuval` (the CRD's printer columns), NAMESPACE first
    with -A; sorted by namespace and name. Every cell passes the one sanitiser
    (preflight_contract.terminal): a status is any writer's text."""
    rows = []
    for item in map(clean_tree, items):
        meta = item.get("metadata") or {}
        status = item.get("status") or {}
        tp = status.get("tp", (status.get("plan") or {}).get("tp"))  # an older status: plan
        row = [
            str(meta.get("name", "")),
            str(status.get("workload") or ""),
            "" if tp is None else str(tp),
            str(status.get("gpus") or ""),
            str(status.get("staticVerdict") or ""),
            str(status.get("runtimeVerdict") or ""),
            str(status.get("reason") or ""),
            age(str(meta.get("creationTimestamp", "")), now),
        ]
        if all_namespaces:
            row.insert(0, str(meta.get("namespace", "")))
        rows.append(row)
    return sorted(rows)


def cmd_status(args: argparse.Namespace, kubectl: Kubectl, out: TextIO) -> int:
    doc = kubectl.json("get", GPUVAL_RESOURCE, *namespace_args(args))
    items = doc.get("items") or []
    if not items:
        where = (
            "any namespace"
            if args.all_namespaces
            else f"{args.namespace or kubectl.current_namespace()} namespace"
        )
        print(f"No GPUValidations found in {where}.", file=sys.stderr)
        return EXIT_OK
    now = datetime.datetime.now(datetime.timezone.utc)
    rows = status_rows(items, all_namespaces=args.all_namespaces, now=now)
    header = (["NAMESPACE"] if args.all_namespaces else []) + list(STATUS_COLUMNS)
    print(render_table(header, rows, use_colour(args.color, out, os.environ)), file=out)
    failing = any(r[-3] in ("fail", "error") or r[-4] in ("fail", "error") for r in rows)
    return EXIT_FAILED if failing and args.exit_code else EXIT_OK
