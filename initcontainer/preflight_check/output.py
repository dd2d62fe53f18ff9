"""Where the report goes: a table for humans, JSON for tools, the termination message
for Kubernetes. Writing never crashes the checker: a path that cannot be written is a
warning on stderr, and the exit code still follows the verdict."""

from __future__ import annotations

import os
from typing import List, Optional, TextIO

from preflight_check.options import DEFAULT_TERMINATION_LOG
from preflight_contract.actions import ENFORCE
from preflight_contract.report import Report, render_checks
from preflight_contract.terminal import clean
from preflight_contract.verdicts import ERROR, FAIL, PASS, WARN

_COLOURS = {PASS: "32", WARN: "33", FAIL: "31", ERROR: "35"}


def _colour(text: str, status: str, enabled: bool) -> str:
    code = _COLOURS.get(status)
    return f"\x1b[{code}m{text}\x1b[0m" if enabled and code else text


def render(report: Report, colour: bool = False) -> str:
    plan = report.plan
    lines: List[str] = []
    if plan and plan.get("unknown"):
        lines.append(
            f"vllm-preflight check: plan unknown, GPU count not compared ({plan['unknown']}); "
            f"{plan.get('gpus_seen')} GPU(s) checked, tier {report.tier}, action {report.action}"
        )
    elif plan:
        lines.append(
            f"vllm-preflight check: TP {plan.get('tp')} x PP {plan.get('pp')} x DP-local "
            f"{plan.get('dp_local')} = {plan.get('gpus_needed')} GPU(s) "
            f"[{plan.get('source', '')}], tier {report.tier}, action {report.action}"
        )
    if report.gpus:
        lines.append("")
        lines.append(f"{'CUDA':<5} {'UUID':<41} {'PCI bus':<13} {'nvidia-smi':<10} name")
        for gpu in report.gpus:
            index = "" if gpu.nvml_index is None else str(gpu.nvml_index)
            lines.append(
                f"{gpu.ordinal:<5} {gpu.uuid:<41} {gpu.pci_bus_id:<13} {index:<10} {gpu.name}"
            )
    lines.append("")
    # The report quotes env values, model names, a driver's GPU names: the one sanitiser
    # (preflight_contract.terminal) before the table's own colours are added.
    lines = [clean(line) for line in lines]
    table = clean(render_checks(report.checks))
    if colour:
        table = "\n".join(
            _colour(line, line[:5].strip().lower(), True) if line[:5].strip() else line
            for line in table.splitlines()
        )
    lines.append(table)
    if report.error:
        lines.append(clean(f"internal error: {report.error}"))
    verdict = report.verdict
    code = report.exit_code()
    meaning = {
        0: "ok to start",
        1: f"vLLM must not start ({ENFORCE})",
        2: "usage or internal error",
    }[code]
    if verdict in (FAIL, ERROR) and code == 0:
        what = "failures" if verdict == FAIL else "errors"
        meaning = f"{what} reported, not enforced ({report.action})"
    took = f" in {report.duration_ms / 1000.0:.2f} s" if report.duration_ms else ""
    lines.append("")
    lines.append(
        _colour(f"verdict: {verdict.upper()}{took} (exit {code}: {meaning})", verdict, colour)
    )
    return "\n".join(lines)


def write_outputs(
    report: Report,
    json_path: Optional[str],
    termination_log: Optional[str],
    *,
    termination_log_given: bool,
    out: TextIO,
    err: TextIO,
) -> None:
    if json_path == "-":
        out.write(report.to_json() + "\n")
    else:
        out.write(render(report, colour=_is_tty(out)) + "\n")
        if json_path:
            _write(json_path, report.to_json() + "\n", "the JSON report", err)
    path = termination_log or DEFAULT_TERMINATION_LOG
    # The default path exists in every Kubernetes container; elsewhere (a GPU host) it
    # does not, and creating a file under /dev would be wrong.
    if termination_log_given or os.path.exists(path):
        _write(path, report.to_termination_message(), "the termination message", err)
    out.flush()


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty() and os.environ.get("NO_COLOR") is None
    except (AttributeError, ValueError):
        return False


def _write(path: str, text: str, what: str, err: TextIO) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        err.write(
            clean(f"vllm-preflight: warning: cannot write {what} to {path}: {exc.strerror or exc}")
            + "\n"
        )
