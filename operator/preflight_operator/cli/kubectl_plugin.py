"""`kubectl vllm-preflight`: the kubectl plugin (executable `kubectl-vllm_preflight`).

kubectl finds the executable on PATH and runs it for `kubectl vllm-preflight ...` (a dash
in the command is an underscore in the file name). It talks to the cluster through the
same `kubectl` (so contexts, kubeconfig, exec credential plugins and proxies behave as the
user's kubectl does) and never imports the Kubernetes client:

- `status [-n NS | -A]`   the GPUValidation table, verdicts coloured on a terminal;
- `explain WORKLOAD|POD`  one view of why a vLLM pod does (not) start: the static
  findings, each pod's runtime report, scheduling, the Events and the fixes;
- `lint ...`              exactly `vllm-preflight lint`;
- `audit [-n NS | -A]`    what admission would answer for the workloads that exist
  (audit.py);
- `check-node NODE --tp N` a one-off canary Job that runs the checker on that node (or on
  a node pool, `--pool LABEL=VALUE`) and prints its report.

Functional core, imperative shell: building the table, the explain view, the canary Job
and reading its outcome are pure functions of JSON documents; `Kubectl` and `main()` do
the I/O. Failures print one line naming the flag or object at fault, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO

from preflight_contract import actions, envnames
from preflight_contract.report import Report, ReportError
from preflight_operator import __version__
from preflight_operator.core import constants
from preflight_operator.core.podresults import pod_result
from preflight_operator.core.workloads import (
    KNOWN_KINDS,
    WorkloadRef,
    gpuvalidation_name,
    workload_label_value,
    workload_of_pod,
)

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
    with -A; sorted by namespace and name."""
    rows = []
    for item in items:
        meta = item.get("metadata") or {}
        status = item.get("status") or {}
        tp = (status.get("plan") or {}).get("tp")
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


def _scheduling(pod: Mapping[str, Any]) -> str:
    """Why a pod is not on a node, from its PodScheduled condition ('' when it is)."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return f"{cond.get('reason', 'Unschedulable')}: {cond.get('message', '')}".strip()
    return ""


def explain_view(
    gpuval: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
    *,
    workload: str,
    colour: bool,
) -> str:
    """Everything about one workload in one place, in the order one reads it: verdicts,
    static findings, pods (scheduling and runtime report), Events, and the fixes."""
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
    plan_text = ", ".join(f"{k}={v}" for k, v in plan.items()) or "unknown"
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
    why = _scheduling(pod)
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


# -- check-node ------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CanarySpec:
    tp: int
    node: str = ""
    pool: tuple[str, str] | None = None  # (label, value)
    pp: int = 1
    tier: str = "fast"
    image: str = f"ghcr.io/vllm-preflight/check:{__version__}"
    gpu_resource: str = "nvidia.com/gpu"
    shm: str = "2Gi"
    timeout_s: int = 300
    namespace: str = ""


def canary_job(spec: CanarySpec) -> dict[str, Any]:
    """A Job that runs the checker once, as the injected init container would, with
    TP x PP GPUs, on the node (kubernetes.io/hostname) or the pool (a node label) given.

    The pod opts out of injection (it is the check itself), tolerates the usual
    nvidia.com/gpu taint, gets a memory-backed /dev/shm (what vLLM pods need for TP > 1),
    and exits 1 when a check fails (Enforce), so the Job fails too."""
    gpus = spec.tp * spec.pp
    selector = {"kubernetes.io/hostname": spec.node} if spec.node else {}
    if spec.pool is not None:
        selector[spec.pool[0]] = spec.pool[1]
    target = spec.node or (f"{spec.pool[0]}={spec.pool[1]}" if spec.pool else "")
    env = {
        envnames.TP: str(spec.tp),
        envnames.PP: str(spec.pp),
        envnames.DP_LOCAL: "1",
        envnames.ACTION: actions.ENFORCE,
        envnames.TIER: spec.tier,
        envnames.DEADLINE: str(max(30, spec.timeout_s - 30)),
        "PYTHONDONTWRITEBYTECODE": "1",
        "TMPDIR": "/tmp",
    }
    labels = {
        "app.kubernetes.io/name": "vllm-preflight",
        CANARY_LABEL: CANARY_COMPONENT,
        constants.LABEL_INJECT: "disabled",
    }
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "nodeSelector": selector,
        "tolerations": [{"key": spec.gpu_resource, "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [
            {
                "name": CANARY_CONTAINER,
                "image": spec.image,
                "args": ["check"],
                "env": [{"name": k, "value": v} for k, v in env.items()],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "256Mi"},
                    "limits": {"memory": "1Gi", spec.gpu_resource: str(gpus)},
                },
                "volumeMounts": [
                    {"name": "dshm", "mountPath": "/dev/shm"},
                    {"name": "tmp", "mountPath": "/tmp"},
                ],
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
            }
        ],
        "volumes": [
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": spec.shm}},
            {"name": "tmp", "emptyDir": {}},
        ],
    }
    metadata: dict[str, Any] = {
        "generateName": "vllm-preflight-canary-",
        "labels": dict(labels),
        "annotations": {
            f"{constants.PREFIX}canary-target": target,
            f"{constants.PREFIX}canary-tp": str(spec.tp),
        },
    }
    if spec.namespace:
        metadata["namespace"] = spec.namespace
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": spec.timeout_s,
            "ttlSecondsAfterFinished": 3600,
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


@dataclasses.dataclass(frozen=True)
class CanaryOutcome:
    done: bool
    exit_code: int = EXIT_ERROR
    text: str = ""


def canary_outcome(pods: Sequence[Mapping[str, Any]]) -> CanaryOutcome:
    """What the canary's pod says so far: not done while it waits or runs; done with the
    checker's report (or why there is none) once its container terminated."""
    for pod in pods:
        why = _scheduling(pod)
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            if cs.get("name") != CANARY_CONTAINER:
                continue
            terminated = (cs.get("state") or {}).get("terminated")
            if not isinstance(terminated, Mapping):
                continue
            message = str(terminated.get("message") or "")
            exit_code = int(terminated.get("exitCode", EXIT_ERROR))
            try:
                report = Report.from_json(message) if message.lstrip().startswith("{") else None
            except ReportError as exc:
                return CanaryOutcome(True, EXIT_ERROR, f"the checker's report is unreadable: {exc}")
            if report is None:
                tail = message.strip().splitlines()[-5:]
                return CanaryOutcome(
                    True,
                    EXIT_ERROR,
                    f"the checker exited {exit_code} ({terminated.get('reason', '')}) without a "
                    "report" + (":\n  " + "\n  ".join(tail) if tail else ""),
                )
            return CanaryOutcome(
                True,
                EXIT_OK if report.verdict in ("pass", "warn") else EXIT_FAILED,
                _report_text(report),
            )
        if why:
            return CanaryOutcome(False, EXIT_ERROR, f"not scheduled: {why}")
    return CanaryOutcome(False)


def _report_text(report: Report) -> str:
    lines = [f"verdict: {report.verdict}" + (f" on {report.host}" if report.host else "")]
    if report.error:
        lines.append(f"  error: {report.error}")
    for check in report.checks:
        lines.append(f"  {check.status.upper():<5} {check.id}: {check.message}")
        if check.remediation and check.status != "pass":
            lines.append(f"        fix: {check.remediation}")
    if report.passed_ids:
        lines.append(f"  passed: {', '.join(report.passed_ids)}")
    for gpu in report.gpus:
        lines.append(f"  GPU {gpu.ordinal}: {gpu.uuid} {gpu.pci_bus_id} {gpu.name}".rstrip())
    return "\n".join(lines)


# -- the shell -------------------------------------------------------------------------------
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
            raise PluginError(f"kubectl {' '.join(args)}: {result.stderr.strip()}{hint}")
        return json.loads(result.stdout)

    def current_namespace(self) -> str:
        result = self.run("config", "view", "--minify", "-o", "jsonpath={..namespace}")
        return result.stdout.strip() or "default"


def _namespace_args(args: argparse.Namespace) -> list[str]:
    if getattr(args, "all_namespaces", False):
        return ["-A"]
    return ["-n", args.namespace] if args.namespace else []


def cmd_status(args: argparse.Namespace, kubectl: Kubectl, out: TextIO) -> int:
    doc = kubectl.json("get", GPUVAL_RESOURCE, *_namespace_args(args))
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
            "get", GPUVAL_RESOURCE, gpuvalidation_name(ref.kind, ref.name), *ns, missing_ok=True
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


def _pool(text: str) -> tuple[str, str]:
    label, sep, value = text.partition("=")
    if not sep or not label:
        raise PluginError(
            f"--pool {text!r}: give LABEL=VALUE, e.g. --pool cloud.google.com/gke-nodepool=h100"
        )
    return label, value


def cmd_check_node(
    args: argparse.Namespace,
    kubectl: Kubectl,
    out: TextIO,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    if not args.node and not args.pool:
        raise PluginError("check-node needs NODE or --pool LABEL=VALUE")
    if args.tp < 1 or args.pp < 1:
        raise PluginError("--tp and --pp must be at least 1")
    spec = CanarySpec(
        tp=args.tp,
        pp=args.pp,
        node=args.node or "",
        pool=_pool(args.pool) if args.pool else None,
        tier=args.tier,
        image=args.image,
        gpu_resource=args.gpu_resource,
        shm=args.shm,
        timeout_s=args.timeout,
        namespace=args.namespace or "",
    )
    job = canary_job(spec)
    if args.dry_run:
        print(json.dumps(job, indent=2), file=out)
        return EXIT_OK
    created = kubectl.run("create", "-f", "-", "-o", "json", stdin=json.dumps(job))
    if created.returncode != 0:
        raise PluginError(f"could not create the canary Job: {created.stderr.strip()}")
    meta = json.loads(created.stdout)["metadata"]
    name, namespace = meta["name"], meta["namespace"]
    where = args.node or args.pool
    print(f"job/{name} created in {namespace}: checker with TP={args.tp} on {where}", file=out)
    if args.no_wait:
        return EXIT_OK
    deadline = clock() + args.timeout
    last = ""
    while clock() < deadline:
        pods = (
            kubectl.json("get", "pods", "-n", namespace, "-l", f"job-name={name}").get("items")
            or []
        )
        outcome = canary_outcome(pods)
        if outcome.done:
            print(outcome.text, file=out)
            return outcome.exit_code
        if outcome.text and outcome.text != last:
            print(outcome.text, file=out)
            last = outcome.text
        sleep(1.0)
    print(
        f"job/{name}: no result within --timeout {args.timeout} s"
        + (f" ({last})" if last else "")
        + f"; see kubectl describe job/{name} -n {namespace}",
        file=out,
    )
    return EXIT_ERROR


def cmd_lint(argv: list[str]) -> int:
    from preflight_operator.cli import lint  # noqa: PLC0415 - only this subcommand needs the rules

    return lint.main(argv)


def cmd_audit(global_argv: list[str], argv: list[str], out: TextIO) -> int:
    from preflight_operator.cli import audit  # noqa: PLC0415 - only this subcommand needs the rules

    try:  # --context, --kubeconfig: the main parser's, before the subcommand
        global_args = build_parser().parse_args([*global_argv, "status"])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    return audit.main(_global_args(global_args), argv, out)


def _global_args(args: argparse.Namespace) -> list[str]:
    return [
        *(["--context", args.context] if args.context else []),
        *(["--kubeconfig", args.kubeconfig] if args.kubeconfig else []),
    ]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Why a vLLM pod does or does not start: GPUValidations, static findings,"
        " runtime reports, Events and fixes, and one-off canary checks of GPU nodes.",
    )
    parser.add_argument("--context", help="the kubeconfig context to use (as kubectl's)")
    parser.add_argument("--kubeconfig", help="path to the kubeconfig file (as kubectl's)")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{status,explain,lint,audit,check-node}")

    def common(p: argparse.ArgumentParser, all_ns: bool = False) -> None:
        p.add_argument("-n", "--namespace", default="", help="namespace (default: the context's)")
        if all_ns:
            p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
        p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
        p.add_argument(
            "--exit-code", action="store_true", help="exit 1 when a verdict is fail or error"
        )

    status = sub.add_parser("status", help="the GPUValidation table")
    common(status, all_ns=True)
    explain = sub.add_parser(
        "explain", help="findings, runtime report, Events and fixes of one workload"
    )
    explain.add_argument(
        "target",
        metavar="WORKLOAD|POD",
        help="deploy/NAME, sts/NAME, lws/NAME, job/NAME, pod/NAME or NAME",
    )
    common(explain)
    sub.add_parser(
        "lint", help="the same as `vllm-preflight lint` (its -h lists the options)", add_help=False
    )
    sub.add_parser(
        "audit",
        help="what admission would answer for the vLLM workloads that exist (-h: options)",
        add_help=False,
    )
    check = sub.add_parser(
        "check-node", help="run the checker once on a node or pool (a canary Job)"
    )
    check.add_argument("node", nargs="?", default="", metavar="NODE")
    check.add_argument(
        "--pool", metavar="LABEL=VALUE", help="any node with this label instead of NODE"
    )
    check.add_argument(
        "--tp", type=int, required=True, help="tensor-parallel size (GPUs per replica)"
    )
    check.add_argument("--pp", type=int, default=1, help="pipeline-parallel size on this node")
    check.add_argument("--tier", choices=("fast", "deep"), default="fast")
    check.add_argument(
        "--image", default=CanarySpec.image, help="the check image (Dockerfile target check)"
    )
    check.add_argument(
        "--gpu-resource", default="nvidia.com/gpu", help="the extended resource to request"
    )
    check.add_argument("--shm", default="2Gi", help="size of the memory-backed /dev/shm")
    check.add_argument("--timeout", type=int, default=300, help="seconds to wait for the result")
    check.add_argument(
        "-n", "--namespace", default="", help="namespace of the Job (default: the context's)"
    )
    check.add_argument("--no-wait", action="store_true", help="create the Job and return")
    check.add_argument("--dry-run", action="store_true", help="print the Job and create nothing")
    return parser


def _command_index(args: Sequence[str]) -> int | None:
    """Where the subcommand is: the first word that is neither a global flag nor the
    value of --context/--kubeconfig."""
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in ("--context", "--kubeconfig"):
            skip = True
        elif not arg.startswith("-"):
            return i
    return None


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    out = out or sys.stdout
    parser = build_parser()
    # lint keeps its own parser and flags (vllm-preflight lint's), so pass them through.
    command_at = _command_index(args_list)
    if command_at is not None and args_list[command_at] == "lint":
        return cmd_lint(args_list[command_at + 1 :])
    if command_at is not None and args_list[command_at] == "audit":  # audit.py's own flags
        return cmd_audit(args_list[:command_at], args_list[command_at + 1 :], out)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    if args.command is None:
        parser.print_help(out)
        return EXIT_ERROR
    kubectl = Kubectl(_global_args(args))
    try:
        if args.command == "status":
            if args.all_namespaces and args.namespace:
                raise PluginError("give -n NAMESPACE or -A, not both")
            return cmd_status(args, kubectl, out)
        if args.command == "explain":
            return cmd_explain(args, kubectl, out)
        return cmd_check_node(args, kubectl, out)
    except PluginError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
