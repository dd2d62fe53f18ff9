"""What the kubectl plugin's verbs share: the names, the error, colour, tables and the
user's own kubectl (kubectl_plugin.py)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from preflight_operator.core import constants

PROG = "kubectl vllm-preflight"
GPUVAL_RESOURCE = f"gpuvalidations.{constants.GROUP}"
CANARY_CONTAINER = constants.CHECK_CONTAINER
CANARY_LABEL = "app.kubernetes.io/component"
CANARY_COMPONENT = "preflight-canary"
EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2

# kubectl's short names for the workload kinds `explain` accepts.
KIND_ALIASES = {
    "deploy": "Deployment",
    "deployment": "Deployment",
    "deployments": "Deployment",
    "sts": "StatefulSet",
    "statefulset": "StatefulSet",
    "statefulsets": "StatefulSet",
    "job": "Job",
    "jobs": "Job",
    "lws": "LeaderWorkerSet",
    "leaderworkerset": "LeaderWorkerSet",
    "leaderworkersets": "LeaderWorkerSet",
    "po": "Pod",
    "pod": "Pod",
    "pods": "Pod",
    "gpuval": "GPUValidation",
    "gpuvalidation": "GPUValidation",
    "gpuvalidations": "GPUValidation",
}


class PluginError(Exception):
    """A failure the user can fix: printed as one line, exit 2."""


# -- colour ----------------------------------------------------------------------------------
_COLOURS = {"pass": "32", "warn": "33", "fail": "31", "error": "31", "pending": "2", "unknown": "2"}


def use_colour(choice: str, stream: TextIO, environ: Mapping[str, str]) -> bool:
    """--color=auto colours only a terminal, and never with NO_COLOR set or TERM=dumb."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def paint(text: str, verdict: str, colour: bool) -> str:
    code = _COLOURS.get(verdict.lower())
    return f"\x1b[{code}m{text}\x1b[0m" if colour and code else text


# -- the shell -------------------------------------------------------------------------------
# What kubectl says when no API server answers (its own words, client-go's and net's): with
# no cluster, `kubectl get` printed client-go's discovery error once per retry (7 lines of
# `memcache.go:265] "Unhandled Error" ...`) and then its own summary; the plugin passed all
# of them on (issue 40, item 6).
_UNREACHABLE = (
    "The connection to the server",
    "Unable to connect to the server",
    "couldn't get current server API group list",
    "no configuration has been provided",
    "connection refused",
    "no such host",
    "i/o timeout",
)
# client-go's klog prefix: E1206 04:07:52.261973   24499 memcache.go:265] ...
_KLOG = re.compile(r"^[EWI]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ \S+:\d+\] ")


def kubectl_failure(args: Sequence[str], stderr: str) -> str:
    """kubectl's error as one line a user can act on: repeated lines said once, client-go's
    log lines dropped where kubectl summed them up, and an unreachable cluster named as
    such, with where to look."""
    lines: list[str] = []
    for line in (raw.strip() for raw in stderr.splitlines()):
        if line and line not in lines:
            lines.append(line)
    summary = [line for line in lines if not _KLOG.match(line)] or lines
    text = " ".join(summary) if summary else "failed with no message"
    if any(marker in stderr for marker in _UNREACHABLE):
        return (
            f"no Kubernetes API server answered (kubectl: {text}); check the kubeconfig "
            "and context it uses (--kubeconfig, --context, KUBECONFIG) and that the "
            "cluster is up"
        )
    return f"kubectl {' '.join(args)}: {text}"


class Kubectl:
    """Runs the user's kubectl with the plugin's --context/--kubeconfig."""

    def __init__(self, global_args: Sequence[str], binary: str | None = None) -> None:
        self.binary = binary or os.environ.get("KUBECTL", "kubectl")
        self.global_args = list(global_args)

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [self.binary, *self.global_args, *args],
                input=stdin,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        except FileNotFoundError as exc:
            raise PluginError(f"{self.binary!r} is not on PATH (set KUBECTL to its path)") from exc
        except subprocess.TimeoutExpired as exc:
            raise PluginError(f"kubectl {' '.join(args)} did not answer within 60 s") from exc

    def json(self, *args: str, missing_ok: bool = False) -> Any:
        result = self.run(*args, "-o", "json")
        if result.returncode != 0:
            if missing_ok and "NotFound" in result.stderr:
                return None
            hint = ""
            if "doesn't have a resource type" in result.stderr and GPUVAL_RESOURCE in args:
                hint = (
                    " (the GPUValidation CRD is not installed: install the vllm-preflight"
                    " chart, docs/INSTALL.md)"
                )
            raise PluginError(f"{kubectl_failure(args, result.stderr)}{hint}")
        return json.loads(result.stdout)

    def current_namespace(self) -> str:
        result = self.run("config", "view", "--minify", "-o", "jsonpath={..namespace}")
        return result.stdout.strip() or "default"


def namespace_args(args: argparse.Namespace) -> list[str]:
    if getattr(args, "all_namespaces", False):
        return ["-A"]
    return ["-n", args.namespace] if args.namespace else []


def scheduling(pod: Mapping[str, Any]) -> str:
    """Why a pod is not on a node, from its PodScheduled condition ('' when it is)."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return f"{cond.get('reason', 'Unschedulable')}: {cond.get('message', '')}".strip()
    return ""


def render_table(header: Sequence[str], rows: Sequence[Sequence[str]], colour: bool) -> str:
    """Left-aligned columns three spaces apart, as kubectl prints them; the STATIC and
    RUNTIME cells coloured by verdict (padding outside the colour codes)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    verdict_cols = {i for i, h in enumerate(header) if h in ("STATIC", "RUNTIME")}
    lines = []
    for n, row in enumerate([list(header), *rows]):
        cells = []
        for i, cell in enumerate(row):
            pad = " " * (widths[i] - len(cell))
            shown = paint(cell, cell, colour) if i in verdict_cols and n > 0 else cell
            cells.append(shown + pad if i < len(row) - 1 else shown)
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines)
