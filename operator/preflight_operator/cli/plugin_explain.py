"""`kubectl vllm-preflight explain WORKLOAD|POD`: one view of why a vLLM pod does (not)
start: the static findings, each pod's runtime report, scheduling, the Events and the
fixes (a pure view of JSON documents; `cmd_explain` does the I/O)."""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from preflight_contract.terminal import clean, clean_tree
from preflight_operator.cli.plugin_common import (
    EXIT_FAILED,
    EXIT_OK,
    GPUVAL_RESOURCE,
    KIND_ALIASES,
    Kubectl,
    PluginError,
    paint,
    scheduling,
    use_colour,
)
from preflight_operator.core import constants
from preflight_operator.core.podresults import pod_result
from preflight_operator.core.workloads import (
    KNOWN_KINDS,
    WorkloadRef,
    gpuvalidation_name,
    workload_label_value,
    workload_of_pod,
)


# -- explain ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Target:
    kind: str  # a workload kind, "Pod", "GPUValidation", or "" (a bare name)
    name: str


def parse_target(text: str) -> Target:
    """`deployment/NAME`, `deploy/NAME`, `pod/NAME`, `gpuval/NAME`, ... or a bare NAME."""
    if "/" not in text:
        if not text:
            raise PluginError("explain needs WORKLOAD or POD, e.g. deployment/vllm or pod/vllm-0")
        return Target("", text)
    kind, _, name = text.partition("/")
    resolved = KIND_ALIASES.get(kind.lower().split(".")[0])
    if resolved is None or not name:
        kinds = ", ".join(sorted({*KNOWN_KINDS, "GPUValidation"} - {"ReplicaSet"}))
        raise PluginError(f"explain {text!r}: the kind must be one of {kinds} (e.g. deploy/vllm)")
    return Target(resolved, name)


def _when(event: Mapping[str, Any]) -> str:
    return str(
        event.get("lastTimestamp")
        or (event.get("series") or {}).get("lastObservedTime")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def explain_view(
    gpuval: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
    *,
    workload: str,
    colour: bool,
) -> str:
    """Everything about one workload in one place, in the order one reads it: verdicts,
    static findings, pods (scheduling and runtime report), Events, and the fixes.

    Every document is any tenant's text (report messages, Event notes, names): it passes
    through the one sanitiser (preflight_contract.terminal) before a line is made, so the
    only escape sequences written are the view's own colours."""
    gpuval = clean_tree(gpuval) if gpuval is not None else None
    pods = [clean_tree(p) for p in pods]
    events = [clean_tree(e) for e in events]
    workload = clean(workload)
    status = (gpuval or {}).get("status") or {}
    static_v = str(status.get("staticVerdict") or "unknown")
    runtime_v = str(status.get("runtimeVerdict") or "unknown")
    fixes: list[str] = []

    def add_fix(text: object) -> None:
        fix = str(text or "").strip()
        if fix and fix not in fixes:
            fixes.append(fix)

    out = _explain_header(gpuval, status, workload=workload, colour=colour)
    out += ["", "Static findings (admission rules):"]
    out += _explain_findings(status, gpuval is not None, colour, add_fix)
    reported = {str(p.get("pod")): p for p in (status.get("runtime") or {}).get("pods") or []}
    out += ["", "Pods:"]
    if not pods and not reported:
        out.append("  none")
    for pod in pods:
        out += _explain_pod(pod, colour, add_fix)
    shown = {str((pod.get("metadata") or {}).get("name", "")) for pod in pods}
    for name, entry in reported.items():  # results of pods that are gone
        if name not in shown:
            out += _explain_gone_pod(name, entry, colour, add_fix)
    out += ["", "Events:"]
    if not events:
        out.append("  none")
    out += [_explain_event(event) for event in sorted(events, key=_when)]
    out += ["", "Fixes:"]
    out += [f"  {i}. {fix}" for i, fix in enumerate(fixes, 1)] or [
        "  none needed" if static_v == runtime_v == "pass" else "  none known"
    ]
    return "\n".join(out)


def _explain_header(
    gpuval: Mapping[str, Any] | None, status: Mapping[str, Any], *, workload: str, colour: bool
) -> list[str]:
    """The workload, its GPUValidation, policy, plan and both verdicts."""
    static_v = str(status.get("staticVerdict") or "unknown")
    runtime_v = str(status.get("runtimeVerdict") or "unknown")
    out = [f"Workload:   {status.get('workload') or workload}"]
    if gpuval is None:
        out.append(
            "GPUValidation: none (the workload is not in an opted-in namespace, is not a vLLM"
            " workload, or the operator has not seen it yet)"
        )
        return out
    meta = gpuval.get("metadata") or {}
    plan = status.get("plan") or {}
    plan_text = ", ".join(f"{k}={v}" for k, v in plan.items()) or str(
        status.get("planUnknown") or "unknown"  # "plan unknown: <why>" (issue 35/36, item 3)
    )
    out.append(f"GPUValidation: {meta.get('namespace')}/{meta.get('name')}")
    policy, action = status.get("policy") or "default", status.get("action") or "?"
    out.append(f"Policy:     {policy} (action {action})")
    out.append(f"Plan:       {plan_text}; GPUs per pod {status.get('gpus') or '?'}")
    out.append(
        f"Verdict:    static {paint(static_v, static_v, colour)}, runtime "
        f"{paint(runtime_v, runtime_v, colour)}"
        + (f" ({status['reason']})" if status.get("reason") else "")
    )
    return out


def _explain_findings(
    status: Mapping[str, Any], known: bool, colour: bool, add_fix: Callable[[object], None]
) -> list[str]:
    """The static findings, one per line with its fix (`known`: a GPUValidation exists)."""
    findings = ((status.get("static") or {}).get("findings")) or []
    out: list[str] = []
    if not findings:
        out.append("  none" if known else "  unknown")
    for f in findings:
        sev = str(f.get("severity", ""))
        field = f" [{f['field']}]" if f.get("field") else ""
        label = paint(sev.upper() or "?", sev, colour)
        out.append(f"  {label} {f.get('id', '')}{field}: {f.get('message', '')}")
        if f.get("fix"):
            out.append(f"      fix: {f['fix']}")
        add_fix(f.get("fix"))
    return out


def _explain_pod(
    pod: Mapping[str, Any], colour: bool, add_fix: Callable[[object], None]
) -> list[str]:
    """A live pod: phase and node, why it is not scheduled, its preflight-check result."""
    meta = pod.get("metadata") or {}
    name = str(meta.get("name", ""))
    phase = str((pod.get("status") or {}).get("phase") or "Unknown")
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    out = [f"  {name}: {phase}" + (f" on {node}" if node else " (no node)")]
    why = scheduling(pod)
    if why:
        out.append(f"    not scheduled: {why}")
    result = pod_result(pod)
    if result is None:
        out.append(
            "    preflight-check: not finished yet" if not why else "    preflight-check: not run"
        )
        return out
    out.append(
        f"    preflight-check: {paint(result.verdict, result.verdict, colour)} (exit"
        f" {result.exit_code}, restarts {result.restarts}, at {result.checked_at or '?'})"
    )
    for failure in result.failures:
        out.append(f"      {failure.status.upper()} {failure.id}: {failure.message}")
        if failure.remediation:
            out.append(f"        fix: {failure.remediation}")
        add_fix(failure.remediation)
    if not result.failures and result.message and result.verdict != "pass":
        out.append(f"      {result.message}")
    add_fix(result.remediation)
    return out


def _explain_gone_pod(
    name: str, entry: Mapping[str, Any], colour: bool, add_fix: Callable[[object], None]
) -> list[str]:
    """A pod that is gone, from the result the GPUValidation kept for it."""
    verdict = str(entry.get("verdict", ""))
    out = [f"  {name} (deleted): {paint(verdict, verdict, colour)} on {entry.get('node') or '?'}"]
    for failure in entry.get("failures") or []:
        state = str(failure.get("status", "")).upper()
        out.append(f"      {state} {failure.get('id')}: {failure.get('message')}")
        add_fix(failure.get("remediation"))
    add_fix(entry.get("remediation"))
    return out


def _explain_event(event: Mapping[str, Any]) -> str:
    involved = event.get("involvedObject") or event.get("regarding") or {}
    count = event.get("count") or (event.get("series") or {}).get("count") or 1
    times = f" (x{count})" if count and int(count) > 1 else ""
    return (
        f"  {_when(event)}  {event.get('type', '')}  {event.get('reason', '')}  "
        f"{involved.get('kind', '')}/{involved.get('name', '')}{times}: "
        f"{str(event.get('message') or event.get('note') or '').strip()}"
    )


def _find_gpuval(
    kubectl: Kubectl, ns: list[str], target: Target
) -> tuple[dict[str, Any] | None, str]:
    """(GPUValidation, workload display) for a workload, a GPUValidation or a bare name."""
    if target.kind == "GPUValidation":
        obj = kubectl.json("get", GPUVAL_RESOURCE, target.name, *ns, missing_ok=True)
        if obj is None:
            raise PluginError(f"GPUValidation {target.name!r} not found")
        return obj, str((obj.get("status") or {}).get("workload") or target.name)
    if target.kind:
        display = f"{target.kind}/{target.name}"
        return kubectl.json(
            "get",
            GPUVAL_RESOURCE,
            gpuvalidation_name(target.kind, target.name),
            *ns,
            missing_ok=True,
        ), display
    items = (kubectl.json("get", GPUVAL_RESOURCE, *ns).get("items")) or []
    matches = [
        i for i in items
        if (i.get("metadata") or {}).get("name") == target.name
        or ((i.get("spec") or {}).get("workloadRef") or {}).get("name") == target.name
    ]  # fmt: skip
    if len(matches) > 1:
        kinds = sorted(
            str(((m.get("spec") or {}).get("workloadRef") or {}).get("kind")) for m in matches
        )
        raise PluginError(
            f"{target.name!r} names several workloads ({', '.join(kinds)}): say which,"
            f" e.g. deploy/{target.name}"
        )
    if not matches:
        raise PluginError(
            f"no GPUValidation for {target.name!r}; give the kind (deploy/{target.name},"
            f" pod/{target.name}) or the namespace (-n)"
        )
    ref = (matches[0].get("spec") or {}).get("workloadRef") or {}
    return matches[0], f"{ref.get('kind')}/{ref.get('name')}"


def cmd_explain(args: argparse.Namespace, kubectl: Kubectl, out: TextIO) -> int:
    target = parse_target(args.target)
    namespace = args.namespace or kubectl.current_namespace()
    ns = ["-n", namespace]
    pods: list[dict[str, Any]] = []
    if target.kind == "Pod":
        pod = kubectl.json("get", "pod", target.name, *ns, missing_ok=True)
        if pod is None:
            raise PluginError(f"pod {target.name!r} not found in namespace {namespace}")
        ref = workload_of_pod(pod)
        gpuval = kubectl.json(
            "get", GPUVAL_RESOURCE, gpuvalidation_name(ref.kind_key, ref.name), *ns, missing_ok=True
        )
        display, pods = ref.display, [pod]
    else:
        gpuval, display = _find_gpuval(kubectl, ns, target)
        kind, _, name = display.partition("/")
        label = workload_label_value(WorkloadRef(namespace, kind, name, ""))
        if kind == "Pod":
            pod = kubectl.json("get", "pod", name, *ns, missing_ok=True)
            pods = [pod] if pod else []
        elif label:
            pods = (
                kubectl.json("get", "pods", *ns, "-l", f"{constants.LABEL_WORKLOAD}={label}").get(
                    "items"
                )
                or []
            )
    names = {display.partition("/")[2]}
    names |= {str((p.get("metadata") or {}).get("name")) for p in pods}
    if gpuval is not None:
        names.add(str((gpuval.get("metadata") or {}).get("name")))
    events = [
        e for e in kubectl.json("get", "events", *ns).get("items") or []
        if (e.get("involvedObject") or e.get("regarding") or {}).get("name") in names
    ]  # fmt: skip
    colour = use_colour(args.color, out, os.environ)
    print(explain_view(gpuval, pods, events, workload=display, colour=colour), file=out)
    status = (gpuval or {}).get("status") or {}
    bad = {status.get("staticVerdict"), status.get("runtimeVerdict")} & {"fail", "error"}
    return EXIT_FAILED if bad and args.exit_code else EXIT_OK
