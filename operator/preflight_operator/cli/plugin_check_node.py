"""`kubectl vllm-preflight check-node NODE --tp N`: a one-off canary Job that runs the
checker on that node (or a node pool, `--pool LABEL=VALUE`) and prints its report (the
Job and its outcome are pure functions; `cmd_check_node` does the I/O)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from preflight_contract import actions, envnames
from preflight_contract.report import Report, ReportError
from preflight_contract.terminal import clean
from preflight_operator import __version__
from preflight_operator.cli.plugin_common import (
    CANARY_COMPONENT,
    CANARY_CONTAINER,
    CANARY_LABEL,
    EXIT_ERROR,
    EXIT_FAILED,
    EXIT_OK,
    Kubectl,
    PluginError,
    kubectl_failure,
    scheduling,
)
from preflight_operator.core import constants


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

    def __post_init__(self) -> None:
        # The pod's report and status are the node's and the image's text: printed only
        # through the one sanitiser (preflight_contract.terminal).
        object.__setattr__(self, "text", clean(self.text))


def canary_outcome(pods: Sequence[Mapping[str, Any]]) -> CanaryOutcome:
    """What the canary's pod says so far: not done while it waits or runs; done with the
    checker's report (or why there is none) once its container terminated."""
    for pod in pods:
        why = scheduling(pod)
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
        raise PluginError(
            "could not create the canary Job: "
            + kubectl_failure(["create", "-f", "-"], created.stderr)
        )
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
        + (f" ({clean(last)})" if last else "")
        + f"; see kubectl describe job/{name} -n {namespace}",
        file=out,
    )
    return EXIT_ERROR
