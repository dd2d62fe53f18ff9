"""The report: the contract between the checker and everything that reads its result.

It lives in ``preflight_contract`` (docs/ARCHITECTURE.md "Packages"): the checker writes it
and the operator reads it, so it stays standard-library only and runs on Python 3.9 (the
checker runs inside vLLM images with whatever python3 they ship).

Two forms of the same schema exist:

* the full report (``Report.to_dict``), written with ``--json PATH`` and shown to humans;
* the compact report (``Report.to_termination_message``), written to the container's
  termination message. Kubernetes keeps at most 4096 bytes of it per container (and
  12 KiB per pod, split between containers), so the compact form sheds detail in a fixed
  order until it fits, and never sheds the verdict.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from preflight_contract import safejson
from preflight_contract.actions import ACTIONS, ENFORCE
from preflight_contract.verdicts import (
    CHECK_STATUSES,
    ERROR,
    FAIL,
    PASS,
    SKIP,
    VERDICTS,
    WARN,
    rank,
    worst,
)

SCHEMA_VERSION = 1
# A report read back (the termination message is at most 4096 bytes; a --json file more):
# far above any real report, far below what could hurt the reader.
REPORT_MAX_BYTES = 1024 * 1024
REPORT_MAX_DEPTH = 32
MAX_ORDINAL = 4095

# Kubernetes truncates a container's termination message at 4096 bytes; we aim lower so
# that two or three containers of one pod never get split below their own sizes.
TERMINATION_MESSAGE_LIMIT = 4096
COMPACT_TARGET = 2048

# Exit codes of `vllm-preflight check` (docs/ARCHITECTURE.md, Contracts).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_ERROR = 2


class ReportError(ValueError):
    """A report (usually read back from a termination message) is not valid."""


@dataclass
class CheckResult:
    """The outcome of one check.

    ``message`` says what is wrong (or right) in the user's terms; ``remediation`` says
    how to fix it; ``evidence`` holds the measured facts behind the verdict.
    """

    id: str
    status: str
    message: str
    remediation: str = ""
    evidence: Dict[str, Any] = field(default_factory=dict)
    duration_ms: Optional[float] = None

    def __post_init__(self) -> None:
        if self.status not in CHECK_STATUSES:
            raise ReportError(
                f"check {self.id!r}: status {self.status!r} is not one of {CHECK_STATUSES}"
            )

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"id": self.id, "status": self.status, "message": self.message}
        if self.remediation:
            out["remediation"] = self.remediation
        if self.evidence:
            out["evidence"] = self.evidence
        if self.duration_ms is not None:
            out["duration_ms"] = round(self.duration_ms, 1)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        try:
            check_id = str(data["id"])
            status = str(data["status"])
        except (KeyError, TypeError) as exc:
            raise ReportError(f"a check entry lacks 'id' or 'status': {data!r:.200}") from exc
        evidence = data.get("evidence") or {}
        if not isinstance(evidence, dict):
            raise ReportError(f"check {check_id!r}: 'evidence' must be an object")
        duration = data.get("duration_ms")
        return cls(
            id=check_id,
            status=status,
            message=str(data.get("message", "")),
            remediation=str(data.get("remediation", "")),
            evidence=evidence,
            duration_ms=float(duration) if isinstance(duration, (int, float)) else None,
        )


@dataclass
class GPUEntry:
    """One GPU as CUDA numbers it, joined to NVML by UUID / PCI bus id (never by index)."""

    ordinal: int
    uuid: str
    pci_bus_id: str
    name: str = ""
    nvml_index: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "ordinal": self.ordinal,
            "uuid": self.uuid,
            "pci_bus_id": self.pci_bus_id,
        }
        if self.name:
            out["name"] = self.name
        if self.nvml_index is not None:
            out["nvml_index"] = self.nvml_index
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GPUEntry:
        try:
            nvml_index = data.get("nvml_index")
            ordinal = data["ordinal"]
            if isinstance(ordinal, bool) or not isinstance(ordinal, int):
                raise TypeError("ordinal")
            if not 0 <= ordinal <= MAX_ORDINAL or not (
                nvml_index is None
                or (isinstance(nvml_index, int) and 0 <= nvml_index <= MAX_ORDINAL)
            ):
                raise ValueError("ordinal out of range")
            return cls(
                ordinal=ordinal,
                uuid=str(data.get("uuid", "")),
                pci_bus_id=str(data.get("pci_bus_id", "")),
                name=str(data.get("name", "")),
                nvml_index=nvml_index,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ReportError(f"a GPU entry is malformed: {data!r:.200}") from exc


@dataclass
class Report:
    """A whole run of the checker."""

    checks: List[CheckResult] = field(default_factory=list)
    action: str = ENFORCE
    tier: str = "fast"
    plan: Dict[str, Any] = field(default_factory=dict)
    gpus: List[GPUEntry] = field(default_factory=list)
    inventory: Dict[str, Any] = field(default_factory=dict)
    host: str = ""
    started_at: str = ""
    duration_ms: Optional[float] = None
    version: str = ""
    # Set when the report had to be shortened to fit a termination message.
    truncated: bool = False
    # A compact report may keep only the ids of checks that passed.
    passed_ids: List[str] = field(default_factory=list)
    # An internal error of the checker itself (the verdict is then at least `error`).
    error: str = ""
    # The group phase's outcome in a few fields (group_summary), kept through every
    # compaction but the last resort: the operator's per-group results come from it.
    group: Dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """The worst status present (verdicts.py: a failure outranks an internal error;
        skipped checks count as passed)."""
        found = worst([c.status for c in self.checks] + ([ERROR] if self.error else []))
        return found if found != SKIP else PASS

    def counts(self) -> Dict[str, int]:
        out = dict.fromkeys(CHECK_STATUSES, 0)
        for check in self.checks:
            out[check.status] += 1
        out[PASS] += len(self.passed_ids)
        return out

    def failures(self) -> List[CheckResult]:
        return [c for c in self.checks if c.status in (FAIL, ERROR)]

    def exit_code(self) -> int:
        """0 pass/warn or not enforced; 1 failed under Enforce; 2 usage or internal error
        under Enforce. Warn and Audit never block (issue 34): their errors are reported
        (verdict ``error``, the operator records it) and the exit is 0, so vLLM starts."""
        verdict = self.verdict
        if verdict == ERROR:
            return EXIT_ERROR if self.action == ENFORCE else EXIT_OK
        if verdict == FAIL and self.action == ENFORCE:
            return EXIT_FAILED
        return EXIT_OK

    # -- serialisation -------------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "schema": SCHEMA_VERSION,
            "verdict": self.verdict,
            "action": self.action,
            "tier": self.tier,
            "plan": self.plan,
            "summary": self.counts(),
            "checks": [c.to_dict() for c in self.checks],
            "gpus": [g.to_dict() for g in self.gpus],
        }
        if self.inventory:
            out["inventory"] = self.inventory
        for key in ("host", "started_at", "version", "error"):
            value = getattr(self, key)
            if value:
                out[key] = value
        if self.duration_ms is not None:
            out["duration_ms"] = round(self.duration_ms, 1)
        if self.passed_ids:
            out["passed"] = list(self.passed_ids)
        if self.truncated:
            out["truncated"] = True
        if self.group:
            out["group"] = self.group
        return out

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False, default=str)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        if not isinstance(data, Mapping):
            raise ReportError("a report must be a JSON object")
        schema = data.get("schema")
        if schema != SCHEMA_VERSION:
            raise ReportError(
                f"report schema {schema!r} is not supported (this reader knows {SCHEMA_VERSION});"
                " run the same vllm-preflight version for the checker and the operator"
            )
        checks_raw = data.get("checks", [])
        gpus_raw = data.get("gpus", [])
        if not isinstance(checks_raw, list) or not isinstance(gpus_raw, list):
            raise ReportError("'checks' and 'gpus' must be lists")
        action = str(data.get("action", ENFORCE))
        if action not in ACTIONS:
            raise ReportError(f"action {action!r} is not one of {ACTIONS}")
        duration = data.get("duration_ms")
        report = cls(
            checks=[CheckResult.from_dict(c) for c in checks_raw],
            action=action,
            tier=str(data.get("tier", "fast")),
            plan=dict(data.get("plan") or {}),
            gpus=[GPUEntry.from_dict(g) for g in gpus_raw],
            inventory=dict(data.get("inventory") or {}),
            host=str(data.get("host", "")),
            started_at=str(data.get("started_at", "")),
            duration_ms=float(duration) if isinstance(duration, (int, float)) else None,
            version=str(data.get("version", "")),
            truncated=bool(data.get("truncated", False)),
            passed_ids=[str(i) for i in data.get("passed", [])],
            error=str(data.get("error", "")),
            group=group_summary(data.get("group")),
        )
        claimed = data.get("verdict")
        if claimed is not None and claimed not in VERDICTS:
            raise ReportError(f"verdict {claimed!r} is not one of {VERDICTS}")
        if claimed is not None and rank(claimed) > rank(report.verdict):
            # The verdict survives every truncation, so it is the authority: a reader
            # must never turn a failed check into a pass because its entry was cut.
            if claimed == ERROR:
                report.error = "the checker reported an internal error (details truncated)"
            else:
                report.checks.append(
                    CheckResult("truncated", claimed, f"{claimed} checks were cut from the report")
                )
        return report

    @classmethod
    def from_json(cls, text: str) -> Report:
        """A report from text that is not trusted (a pod's termination message): bounded
        in size and depth, no NaN or Infinity, and any malformed field a ReportError."""
        try:
            data = safejson.loads(text, max_depth=REPORT_MAX_DEPTH, max_bytes=REPORT_MAX_BYTES)
        except ValueError as exc:
            raise ReportError(f"the report is not JSON: {exc}") from exc
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError, AttributeError, OverflowError) as exc:
            if isinstance(exc, ReportError):
                raise
            raise ReportError(f"the report is malformed: {type(exc).__name__}") from exc

    # -- the compact form ----------------------------------------------------------

    def to_termination_message(self, limit: int = COMPACT_TARGET) -> str:
        """The report as compact JSON of at most ``limit`` bytes (hard cap 4096).

        Detail is shed in this order until it fits: evidence of passing checks, all
        evidence and the inventory, GPU names, passing checks (kept as ids), long
        messages, remediations of warnings, then the GPU list and warnings. The verdict,
        action, plan and failing check ids always remain.
        """
        limit = min(limit, TERMINATION_MESSAGE_LIMIT)
        for step in _COMPACTION_STEPS:
            data = step(self)
            text = json.dumps(data, separators=(",", ":"), default=str)
            if len(text.encode("utf-8")) <= limit:
                return text
        return json.dumps(_last_resort(self, limit), separators=(",", ":"), default=str)


def _base(report: Report) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "verdict": report.verdict,
        "action": report.action,
        "tier": report.tier,
        "plan": report.plan,
    }
    if report.host:
        out["host"] = report.host
    if report.duration_ms is not None:
        out["duration_ms"] = round(report.duration_ms)
    if report.error:
        out["error"] = _cut(report.error, 300)
    if report.group:
        out["group"] = report.group
    return out


_GROUP_TEXT = ("id", "status", "slowest", "transport")
# Whole numbers (members, indices) and measurements, each with the range a real group can
# have: a reader writes them into integer and number fields of the GPUValidation, where
# 1e308 or a float in an integer field would make the API server refuse the whole status.
_GROUP_INTS = ("index", "size", "joined")
_GROUP_FLOATS = ("slowest_ms", "busbw_gbps")
GROUP_MAX_MEMBERS = 100_000
_GROUP_MAX_MEASURE = 1e9


def group_summary(raw: Any) -> Dict[str, Any]:
    """The group phase in at most ~300 bytes (the leader adds its roster, ~60 bytes a
    member, at most GROUP_MAX_LISTED): group id, this pod's index, size, members
    joined, missing indices, the group verdict, the slowest member, the deep tier's bus
    bandwidth. Unknown keys are dropped, texts cut; never raises."""
    if not isinstance(raw, Mapping):
        return {}
    out: Dict[str, Any] = {}
    for key in _GROUP_TEXT:
        if isinstance(raw.get(key), str):
            out[key] = _cut(raw[key], 80)
    for key in _GROUP_INTS:
        value = raw.get(key)
        if _whole(value):
            out[key] = value
    for key in _GROUP_FLOATS:
        value = raw.get(key)
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and 0 <= value <= _GROUP_MAX_MEASURE  # NaN compares False: dropped too
        ):
            out[key] = value
    missing = raw.get("missing")
    if isinstance(missing, list):
        out["missing"] = [m for m in missing if _whole(m)][:8]
    members = raw.get("members")
    if isinstance(members, list):  # the leader's roster (preflight_check.group.roster_entry)
        out["members"] = [
            m for m in members[:GROUP_MAX_LISTED] if isinstance(m, str) and _ROSTER.fullmatch(m)
        ]
    return out


# A counted member as the leader lists it: index/uid/the address it connected from ("?"
# where it presented none); at most GROUP_MAX_LISTED (~60 bytes each).
GROUP_MAX_LISTED = 16
_ROSTER = re.compile(r"[0-9]{1,6}/(?:[0-9a-f-]{36}|\?)/(?:[0-9A-Fa-f:.]{2,45}|\?)")


def _whole(value: Any) -> bool:
    return (
        isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= GROUP_MAX_MEMBERS
    )


def _cut(text: str, length: int) -> str:
    return text if len(text) <= length else text[: length - 1] + "\u2026"


def _checks(
    report: Report,
    keep_passing: bool,
    evidence: str,
    message_len: int,
    warn_remediation: bool = True,
) -> Tuple[List[Dict[str, Any]], List[str]]:
    kept: List[Dict[str, Any]] = []
    passed: List[str] = list(report.passed_ids)
    for check in report.checks:
        if check.status in (PASS, SKIP) and not keep_passing:
            if check.status == PASS:
                passed.append(check.id)
            continue
        entry: Dict[str, Any] = {
            "id": check.id,
            "status": check.status,
            "message": _cut(check.message, message_len),
        }
        if check.remediation and (check.status != WARN or warn_remediation):
            entry["remediation"] = _cut(check.remediation, message_len)
        include_evidence = evidence == "all" or (
            evidence == "failing" and check.status in (FAIL, ERROR)
        )
        if include_evidence and check.evidence:
            entry["evidence"] = check.evidence
        kept.append(entry)
    return kept, passed


def _step(
    *,
    keep_passing: bool,
    evidence: str,
    message_len: int,
    gpus: str,
    warn_remediation: bool = True,
    drop_warnings: bool = False,
) -> Any:
    def build(report: Report) -> Dict[str, Any]:
        out = _base(report)
        checks, passed = _checks(report, keep_passing, evidence, message_len, warn_remediation)
        if drop_warnings:
            checks = [c for c in checks if c["status"] != WARN]
        out["checks"] = checks
        if passed:
            out["passed"] = passed
        if gpus == "full":
            out["gpus"] = [g.to_dict() for g in report.gpus]
        elif gpus == "short":
            out["gpus"] = [
                {"ordinal": g.ordinal, "uuid": g.uuid, "pci_bus_id": g.pci_bus_id}
                for g in report.gpus
            ]
        if not keep_passing or evidence != "all" or gpus != "full" or drop_warnings:
            out["truncated"] = True
        return out

    return build


_COMPACTION_STEPS = (
    _step(keep_passing=True, evidence="failing", message_len=400, gpus="full"),
    _step(keep_passing=False, evidence="failing", message_len=400, gpus="full"),
    _step(keep_passing=False, evidence="none", message_len=400, gpus="short"),
    _step(keep_passing=False, evidence="none", message_len=200, gpus="short"),
    _step(
        keep_passing=False, evidence="none", message_len=160, gpus="none", warn_remediation=False
    ),
    _step(
        keep_passing=False,
        evidence="none",
        message_len=120,
        gpus="none",
        warn_remediation=False,
        drop_warnings=True,
    ),
)


def _last_resort(report: Report, limit: int) -> Dict[str, Any]:
    """Verdict, plan and as many failing check ids as fit; nothing else."""
    out = _base(report)
    out.pop("error", None)
    out["truncated"] = True
    out["checks"] = []
    for check in report.failures():
        candidate = {"id": _cut(check.id, 60), "status": check.status, "message": ""}
        out["checks"].append(candidate)
        if len(json.dumps(out, separators=(",", ":"), default=str).encode()) > limit:
            out["checks"].pop()
            break
    if len(json.dumps(out, separators=(",", ":"), default=str).encode()) > limit:
        out["plan"] = {}
    too_big = len(json.dumps(out, separators=(",", ":"), default=str).encode()) > limit
    if too_big and "group" in out:
        # the leader's roster goes last: without it the operator calls the group unproven
        out["group"] = {k: v for k, v in out["group"].items() if k != "members"}
    return out


def render_checks(checks: Sequence[CheckResult]) -> str:
    """A plain table of check results, for terminals and logs."""
    width = max([len(c.id) for c in checks] + [5])
    lines = []
    for check in checks:
        lines.append(f"{check.status.upper():5}  {check.id:<{width}}  {check.message}")
        if check.remediation and check.status in (WARN, FAIL, ERROR):
            lines.append(f"{'':5}  {'':<{width}}  fix: {check.remediation}")
    return "\n".join(lines)
