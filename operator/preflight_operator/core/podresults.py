"""From a pod's status to the result of its preflight-check init container (pure).

The check has no API credentials: it writes its compact report to its termination message
and exits (0 pass or not enforced, 1 failed under Enforce, 2 internal error). The kubelet
puts both in the init container's status. With ``FallbackToLogsOnError`` a crash before the
report was written leaves the tail of its log there instead; that is reported as an error
with the log's first line, never parsed as a pass.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from preflight_contract import redact
from preflight_contract.check_ids import CHECKS, GROUP_PHASE
from preflight_contract.modelfacts import RULE_IDS as MODEL_CHECKS
from preflight_contract.modelfacts import UNREADABLE as MODEL_UNREADABLE
from preflight_contract.report import Report, ReportError
from preflight_contract.reuse import DEEP_REUSED
from preflight_contract.verdicts import ERROR, FAIL, WARN
from preflight_contract.vllm_release import installed_release, installed_version
from preflight_operator.core import constants, provenance
from preflight_operator.core.constants import CHECK_CONTAINER
from preflight_operator.core.loadtime import LoadSample, load_sample
from preflight_operator.core.rules import image_version
from preflight_operator.core.workloads import workload_of_pod

MESSAGE_LIMIT = 300
MAX_FAILURES = 10  # status.runtime.pods[].failures maxItems
MAX_GPUS = 16  # status.runtime.pods[].gpus maxItems


def shorten(text: str, limit: int = MESSAGE_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


@dataclasses.dataclass(frozen=True)
class Failure:
    id: str
    status: str
    message: str
    remediation: str

    def to_status(self) -> dict[str, Any]:
        out = {"id": self.id, "status": self.status, "message": self.message}
        if self.remediation:
            out["remediation"] = self.remediation
        return out


@dataclasses.dataclass(frozen=True)
class PodResult:
    """One finished run of the check in one pod (a restart is a new run)."""

    pod: str
    uid: str
    node: str
    verdict: str
    exit_code: int
    restarts: int
    checked_at: str
    reason: str = ""
    message: str = ""
    remediation: str = ""
    failures: tuple[Failure, ...] = ()
    gpus: tuple[tuple[int, str, str], ...] = ()  # (ordinal, uuid, pci bus id)
    action: str = ""
    # the group phase's summary (report.group_summary): multi-node groups only
    group: Mapping[str, Any] | None = None
    # provenance.CONTROLLER when the workload's controller made the pod (provenance.py):
    # only such results drive remediation and node feedback or decide the verdict
    created_by: str = provenance.OTHER
    # report entries left out: check ids this operator does not know
    dropped: int = 0
    # verdict reuse: "deep tier reused from the deep pass of T on this node (...)", "" when
    # the deep tier ran
    deep_reused: str = ""
    # the check ran without a plan the rules read (report_plan_note): "plan unknown: why"
    # or "<plan>, recovered at runtime (why the rules could not read it)"; "" otherwise
    plan: str = ""
    # the vLLM release the check read in the image (report plan "vllm_version"), "" unknown
    vllm_version: str = ""
    # where the rules judged by another release (the image tag) than the check found
    vllm_version_note: str = ""
    # the pod's containers' start to Ready (loadtime.py), once it is Ready. Not compared:
    # it is not a new check run (run_key), and arrives after the result it rides on.
    load: LoadSample | None = dataclasses.field(default=None, compare=False)
    # status.podIP as the API server has it: the operator matches a group leader's counted
    # members against it (core/groupproof.py); "" when the pod has none or it is malformed
    ip: str = ""
    # every address of a dual-stack pod (status.podIPs), when it has more than the one
    ips: tuple[str, ...] = ()

    @property
    def trusted(self) -> bool:
        return self.created_by == provenance.CONTROLLER

    @property
    def run_key(self) -> tuple[str, int, str]:
        """Identifies this run: the same pod re-running its check is a new result."""
        return (self.uid, self.restarts, self.checked_at)

    def to_status(self) -> dict[str, Any]:
        """The entry in GPUValidation status.runtime.pods (camelCase, bounded)."""
        out: dict[str, Any] = {
            "pod": self.pod,
            "uid": self.uid,
            "verdict": self.verdict,
            "exitCode": self.exit_code,
            "restarts": self.restarts,
            "createdBy": self.created_by,
        }
        if self.node:
            out["node"] = self.node
        if self.ip:
            out["podIP"] = self.ip
        if self.ips:
            out["podIPs"] = list(self.ips)
        if self.checked_at:
            out["checkedAt"] = self.checked_at
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        if self.remediation:
            out["remediation"] = self.remediation
        if self.failures:
            out["failures"] = [f.to_status() for f in self.failures[:MAX_FAILURES]]
        if self.gpus:
            out["gpus"] = [
                {"ordinal": o, "uuid": u, "pciBusId": b} for o, u, b in self.gpus[:MAX_GPUS]
            ]
        if self.group:
            out["group"] = group_status(self.group)
        if self.deep_reused:
            out["deepTier"] = self.deep_reused
        if self.plan:
            out["plan"] = self.plan
        out.update({"vllmVersion": self.vllm_version} if self.vllm_version else {})
        out.update({"vllmVersionNote": self.vllm_version_note} if self.vllm_version_note else {})
        return out


_GROUP_KEYS = {
    "id": "id",
    "index": "index",
    "size": "size",
    "status": "verdict",
    "joined": "joined",
    "missing": "missing",
    "slowest": "slowestMember",
    "slowest_ms": "slowestLocalMs",
    "busbw_gbps": "busBandwidthGBps",
    "transport": "transport",  # issue 26: NCCL's inter-pod transport (NET/IB+GDR, NET/Socket)
    "members": "members",  # the leader's roster: index/uid/address (core/groupproof.py)
}


def group_status(group: Mapping[str, Any]) -> dict[str, Any]:
    """A pod's group summary in the GPUValidation's camelCase."""
    return {_GROUP_KEYS[k]: v for k, v in group.items() if k in _GROUP_KEYS}


def unschedulable(pod: Mapping[str, Any]) -> str:
    """kube-scheduler's reason a pod has no node (its PodScheduled=False condition with
    reason Unschedulable, e.g. "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."),
    or "" while it is scheduled or not yet looked at. Such a pod never runs its check."""
    if (pod.get("spec") or {}).get("nodeName"):
        return ""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if (
            isinstance(cond, Mapping)
            and cond.get("type") == "PodScheduled"
            and cond.get("status") == "False"
            and cond.get("reason") == "Unschedulable"
        ):
            return str(cond.get("message") or "no node fits the pod")
    return ""


def _check_status(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if isinstance(status, Mapping) and status.get("name") == constants.CHECK_CONTAINER:
            return status
    return None


def _terminated(container_status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The latest finished run: the current state, else the last one (while restarting)."""
    for key in ("state", "lastState"):
        terminated = (container_status.get(key) or {}).get("terminated")
        if isinstance(terminated, Mapping):
            return terminated
    return None


def pod_result(pod: Mapping[str, Any]) -> PodResult | None:
    """The latest finished check of this pod, or None while it has not finished once."""
    container_status = _check_status(pod)
    if container_status is None:
        return None
    terminated = _terminated(container_status)
    if terminated is None:
        return None
    meta = pod.get("metadata") or {}
    exit_code = _as_int(terminated.get("exitCode"), -1)
    workload = workload_of_pod(pod)
    base = PodResult(
        pod=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        node=str((pod.get("spec") or {}).get("nodeName", "")),
        verdict=ERROR,
        exit_code=exit_code,
        restarts=_as_int(container_status.get("restartCount"), 0),
        checked_at=_timestamp(terminated.get("finishedAt")),
        created_by=provenance.CONTROLLER
        if provenance.trusted(pod, workload.kind, workload.name)
        else provenance.OTHER,
        ip=pod_ip(pod),
        ips=pod_ips(pod),
    )
    base = with_load(base, pod)
    text = str(terminated.get("message") or "")
    try:
        report = Report.from_json(text) if text.lstrip().startswith("{") else None
    except ReportError as exc:
        return dataclasses.replace(
            base,
            reason="report-unreadable",
            message=shorten(f"the check's report could not be read: {exc}"),
        )
    if report is None:
        return _without_report(redact.text(text), terminated, base)
    # a checker older than the redaction layer, or a hostile pod, may send secrets (issue 36)
    result = _from_report(redact.PATTERNS.report(report), base)
    note = vllm_version_note(_check_image(pod), result.vllm_version)
    return dataclasses.replace(result, vllm_version_note=note) if note else result


def pod_ip(pod: Mapping[str, Any]) -> str:
    """The pod's status.podIP in its canonical form, "" when absent or not an address."""
    return _canonical((pod.get("status") or {}).get("podIP"))


def pod_ips(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """A dual-stack pod's status.podIPs (at most 2, the API server's limit: one per family),
    canonical; () when it has one address or none."""
    raw = (pod.get("status") or {}).get("podIPs")
    found = [
        _canonical(item.get("ip")) for item in (raw if isinstance(raw, list) else [])[:2]
        if isinstance(item, Mapping)
    ]  # fmt: skip
    found = [f for f in found if f]
    return tuple(found) if len(found) > 1 else ()


def _canonical(text: Any) -> str:
    if not isinstance(text, str) or len(text) > 45:
        return ""
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return ""


def with_load(result: PodResult, pod: Mapping[str, Any]) -> PodResult:
    """The result with the pod's measured start to Ready (loadtime.py), when it has one."""
    sample = load_sample(pod)
    return result if sample is None else dataclasses.replace(result, load=sample)


def _as_int(value: Any, default: int) -> int:
    """An int32, as the GPUValidation's integer fields take it."""
    if isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31:
        return value
    return default


_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)")


def _timestamp(value: Any) -> str:
    """The kubelet's finishedAt, or "" for anything the CRD's date-time would refuse."""
    return value if isinstance(value, str) and _RFC3339.fullmatch(value) else ""


# What a report may name: the checker's ids, the model rules it shares, the group phase,
# and the reader's own "truncated" (report.py). Anything else is left out and counted:
# an id becomes a REASON, an annotation and a metric label.
KNOWN_IDS = (
    frozenset(CHECKS) | frozenset(MODEL_CHECKS) | GROUP_PHASE | {MODEL_UNREADABLE, "truncated"}
)
_GPU_TEXT = re.compile(r"[A-Za-z0-9:._-]{0,80}")


def _without_report(text: str, terminated: Mapping[str, Any], base: PodResult) -> PodResult:
    """No JSON report: a crash (log tail), an OOM kill, a deadline, or an empty message."""
    exit_code = base.exit_code
    kubelet_reason = str(terminated.get("reason") or "")
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    if kubelet_reason == "OOMKilled":
        reason, message = "check-oom-killed", "the check was killed for memory (OOMKilled)"
        fix = "raise injection.resources.limits.memory in the chart values"
    elif exit_code == 0:
        reason, message = "no-report", "the check exited 0 without writing its report"
        fix = "run the same vllm-preflight version for the checker and the operator"
    else:
        reason = "check-crashed"
        message = f"the check exited {exit_code} without a report"
        if first_line:
            message += f": {first_line}"
        fix = "kubectl logs <pod> -c preflight-check shows the whole output"
    return dataclasses.replace(base, reason=reason, message=shorten(message), remediation=fix)


def _size(plan: Mapping[str, Any], key: str) -> int | None:
    value = plan.get(key)
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 1024
    return value if ok else None


def report_vllm_version(plan: Any) -> str:
    """The vLLM release the check read in the pod's image (any pod's text: checked)."""
    value = plan.get("vllm_version") if isinstance(plan, Mapping) else None
    return installed_version(value)


def vllm_version_note(check_image: object, found: str) -> str:
    """What the GPUValidation says where lint and admission judged the pod by another vLLM
    release than the one its image holds (issue 38 item 1): the rules take the release from
    the image tag (``vllm/vllm-openai:v0.9.2``), the check reads the installed one. The
    check runs in the workload's own image (WorkloadImage), so its image is vLLM's.
    "" where they agree, or where either is not known exactly."""
    if not found:
        return ""
    assumed = image_version(check_image)
    if assumed.release is None:
        return ""
    held, judged = installed_release(found), installed_release(assumed.release)
    if held is None or judged is None or held == judged:
        return ""
    return shorten(
        f"the rules judged this pod as vLLM {assumed.release} ({assumed.why}), but its image "
        f"holds vLLM {found}: options, env and models were judged by the wrong release; "
        "tag the image with the release it holds",
        500,
    )


def _check_image(pod: Mapping[str, Any]) -> object:
    spec = pod.get("spec")
    inits = spec.get("initContainers") if isinstance(spec, Mapping) else None
    for container in inits if isinstance(inits, list) else ():
        if isinstance(container, Mapping) and container.get("name") == CHECK_CONTAINER:
            return container.get("image")
    return None


def report_plan_note(plan: Any) -> str:
    """What the GPUValidation says of a check that ran without a plan the rules read, from
    its report's plan (any pod's text: only strings and small ints are taken, shortened):
    "plan unknown: <why>", or "TP t x PP p x DP-local d = n GPUs, recovered at runtime
    (<why the rules could not read it>)"; "" for a plan the injector gave."""
    if not isinstance(plan, Mapping):
        return ""
    unknown, recovered = plan.get("unknown"), plan.get("recovered")
    if isinstance(unknown, str) and unknown.strip():
        return shorten(f"plan unknown: GPU count not compared: {unknown}")
    if isinstance(recovered, str) and recovered.strip():
        sizes = [_size(plan, k) for k in ("tp", "pp", "dp_local", "gpus_needed")]
        shown = (
            "TP {} x PP {} x DP-local {} = {} GPU(s)".format(*sizes)
            if None not in sizes
            else "the plan"
        )
        return shorten(f"{shown}, recovered at runtime (the rules could not read it: {recovered})")
    return ""


def _from_report(report: Report, base: PodResult) -> PodResult:
    known = [c for c in report.checks if c.id in KNOWN_IDS]
    failing = [c for c in known if c.status in (FAIL, ERROR)]
    warning = [c for c in known if c.status == WARN]
    first = (failing or warning)[0] if failing or warning else None
    reason = first.id if first else ""
    message = shorten(first.message) if first else ""
    # verdict reuse: whose deep pass this run took (preflight_contract/reuse.py)
    reused = report.plan.get(DEEP_REUSED) if isinstance(report.plan, Mapping) else None
    remediation = shorten(first.remediation) if first else ""
    if report.error and not failing:
        reason = reason or "checker-error"
        message = message or shorten(report.error)
    failures = tuple(
        Failure(c.id, c.status, shorten(c.message), shorten(c.remediation))
        for c in (failing + warning)[:MAX_FAILURES]
    )
    gpus = tuple(
        (g.ordinal, g.uuid, g.pci_bus_id)
        for g in report.gpus[:MAX_GPUS]
        if _GPU_TEXT.fullmatch(g.uuid) and _GPU_TEXT.fullmatch(g.pci_bus_id)
    )
    dropped = len(report.checks) - len(known)
    if dropped and not failing and report.verdict in (FAIL, ERROR):
        reason = "report-unknown-checks"
        message = "the report's failing checks are not known to this version of vllm-preflight"
        remediation = "run the same vllm-preflight version for the checker and the operator"
    return dataclasses.replace(
        base,
        verdict=report.verdict,
        reason=reason,
        message=message,
        remediation=remediation,
        failures=failures,
        gpus=gpus,
        action=report.action,
        deep_reused=shorten(reused) if isinstance(reused, str) else "",
        group=report.group or None,
        dropped=dropped,
        plan=report_plan_note(report.plan),
        vllm_version=report_vllm_version(report.plan),
    )
