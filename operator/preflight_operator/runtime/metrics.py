"""Prometheus metrics, served on their own port (``--metrics-port``, 0 disables).

Label values are bounded sets (verdicts, check ids, webhook names, stages) and, on the
check counter and the pod load histogram only, the namespace: never a workload or a pod
name, so the series count grows with the opted-in namespaces an administrator chose, not
with workloads or pods.

Every series the chart's Grafana dashboard and PrometheusRule use is defined here
(tests/e2e/test_metrics_series.py scrapes a running operator for each of them).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import datetime
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from preflight_operator.core import constants
from preflight_operator.core.podresults import PodResult

REGISTRY = CollectorRegistry(auto_describe=True)

CHECKS = Counter(
    "vllm_preflight_checks_total",
    "Finished preflight-check runs read from pod status, by namespace, verdict and first"
    " failing check.",
    ["namespace", "result", "reason"],
    registry=REGISTRY,
)
CHECK_DURATION = Histogram(
    "vllm_preflight_check_duration_seconds",
    "Wall time of one preflight-check run (the init container's startedAt to finishedAt,"
    " as the kubelet reports it; whole seconds), by verdict.",
    ["result"],
    buckets=(1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0),
    registry=REGISTRY,
)
POD_LOAD = Histogram(
    "vllm_preflight_pod_load_seconds",
    "Start to Ready of the pods of checked workloads (their containers' startedAt to the"
    " pod's Ready condition, as the kubelet reports it; only pods the workload's controller"
    " made), by namespace. Per workload: the GPUValidation's status.runtime.loadTime.",
    ["namespace"],
    buckets=(10.0, 30.0, 60.0, 120.0, 180.0, 300.0, 600.0, 900.0, 1800.0, 3600.0),
    registry=REGISTRY,
)
ADMISSIONS = Counter(
    "vllm_preflight_admission_reviews_total",
    "Admission reviews answered, by webhook and outcome (allowed, warned, denied, skipped,"
    " error: admitted after an internal error).",
    ["webhook", "outcome"],
    registry=REGISTRY,
)
UNJUDGED = Counter(
    "vllm_preflight_unjudged_containers_total",
    "vLLM containers the validating webhook recognised but could not judge (their command"
    " line not read: admitted with a vllm-command-unparsed warning, and checked at run time"
    " with the plan unknown). Silence would be a bypass (issue 35): a rise says which"
    " launch forms the rules do not read yet.",
    registry=REGISTRY,
)
WEBHOOK_LATENCY = Histogram(
    "vllm_preflight_webhook_duration_seconds",
    "Time spent in the admission handler (rules, policy, patch), by webhook.",
    ["webhook"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
    registry=REGISTRY,
)
INJECTIONS = Counter(
    "vllm_preflight_injections_total",
    "Pods seen by the mutating webhook, by result (injected, skipped) and reason.",
    ["result", "reason"],
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "vllm_preflight_reconcile_errors_total",
    "Errors while reconciling a workload's GPUValidation, by stage.",
    ["stage"],
    registry=REGISTRY,
)
STATUS_WRITES = Counter(
    "vllm_preflight_status_writes_total",
    "GPUValidation status patches sent by this replica.",
    registry=REGISTRY,
)
RESULT_LATENCY = Histogram(
    "vllm_preflight_result_to_status_seconds",
    "From a pod event carrying a new check result to its GPUValidation status written.",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0),
    registry=REGISTRY,
)
API_LATENCY = Histogram(
    "vllm_preflight_api_request_duration_seconds",
    "Kubernetes API calls made by the operator (not kopf's watches), by verb.",
    ["verb"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
    registry=REGISTRY,
)
RECONCILE_LATENCY = Histogram(
    "vllm_preflight_reconcile_duration_seconds",
    "One reconcile of one workload, API calls included.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
    registry=REGISTRY,
)
REMEDIATIONS = Counter(
    "vllm_preflight_remediations_total",
    "Remediations applied to or reverted on workloads, by type.",
    ["type", "action"],
    registry=REGISTRY,
)
QUEUE_DEPTH = Gauge(
    "vllm_preflight_reconcile_queue_depth",
    "Workloads waiting for a reconcile.",
    registry=REGISTRY,
)
WORKLOADS = Gauge(
    "vllm_preflight_workloads",
    "vLLM workloads this replica tracks (every replica tracks them; only the leader writes).",
    registry=REGISTRY,
)
LEADER_TRANSITIONS = Counter(
    "vllm_preflight_leader_transitions_total",
    "Times this replica started (to=leader) or stopped (to=follower) holding the Lease.",
    ["to"],
    registry=REGISTRY,
)
EVENTS_DROPPED = Counter(
    "vllm_preflight_events_dropped_total",
    "Events not posted because the queue was full or the API refused them.",
    registry=REGISTRY,
)
REPORT_ENTRIES_DROPPED = Counter(
    "vllm_preflight_report_entries_dropped_total",
    "Entries of pods' check reports left out: check ids this operator does not know.",
    registry=REGISTRY,
)
# Objects and watch lines the operator refused to use (decoding.py): poisoned (nested too
# deep outside managedFields), too-large, too-deep (a whole page or stream line), not-json.
OBJECTS_REJECTED = Counter(
    "vllm_preflight_objects_rejected_total",
    "Objects or API answers not used because they were too deep, too large or not JSON.",
    ["reason"],
    registry=REGISTRY,
)


# -- event-loop lag (issue 23: the loop never blocks) -----------------------------------
# The operator's one event loop serves the webhooks, /healthz and the watches: a callback
# that holds it (a parse, a rule) delays every one of them. A task asks to wake every
# LOOP_LAG_INTERVAL seconds; how late it wakes is the longest stall in that interval.
LOOP_LAG_INTERVAL = 0.025
LOOP_LAG = Histogram(
    "vllm_preflight_event_loop_lag_seconds",
    "How late the operator's event loop ran a task due every 25 ms: the stalls every"
    " webhook request and /healthz waited through.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=REGISTRY,
)
LOOP_LAG_MAX = Gauge(
    "vllm_preflight_event_loop_lag_max_seconds",
    "The longest event-loop stall since the operator started.",
    registry=REGISTRY,
)
LOOP_BUSY = Histogram(
    "vllm_preflight_event_loop_busy_seconds",
    "The part of each event-loop lag during which the loop's thread was on a CPU: work"
    " holding the loop (the rest of a lag is the process waiting for a CPU).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=REGISTRY,
)
_LOOP_PROBE: list[asyncio.Task[None]] = []


def watch_loop_lag(interval: float = LOOP_LAG_INTERVAL) -> None:
    """Starts the lag probe in the running loop (once); it runs until the loop ends."""
    if not _LOOP_PROBE:
        _LOOP_PROBE.append(asyncio.get_running_loop().create_task(_probe_loop(interval)))


async def _probe_loop(interval: float) -> None:
    loop = asyncio.get_running_loop()
    longest = 0.0
    while True:
        due, cpu = loop.time() + interval, time.thread_time()
        await asyncio.sleep(interval)
        lag = max(0.0, loop.time() - due)
        LOOP_LAG.observe(lag)
        LOOP_BUSY.observe(min(lag, time.thread_time() - cpu))
        if lag > longest:
            longest = lag
            LOOP_LAG_MAX.set(lag)


# -- end of event-loop lag --------------------------------------------------------------

WEBHOOK_REJECTIONS = Counter(
    "vllm_preflight_webhook_rejections_total",
    "Requests and connections the webhook port refused, by reason: too-large, too-deep,"
    " not-json, not-a-review (answered 413/400); too-many-values (not decoded: answered as"
    " the failurePolicy says); header-timeout, body-timeout (closed unfinished);"
    " connections, peer-connections (reset at accept: over the total or the per-peer cap"
    " with every connection being answered); evicted (an idle connection closed to make"
    " room for a new one).",
    ["reason"],
    registry=REGISTRY,
)
WEBHOOK_DEADLINE_ANSWERS = Counter(
    "vllm_preflight_webhook_deadline_answers_total",
    "Reviews answered with the webhook's failure answer (its failurePolicy) because no"
    " answer was ready before the deadline (cause=deadline), too many were still running"
    " (cause=shed), the body was not decoded in time (cause=decode) or had too many values"
    " to decode (cause=too-many-values), by webhook.",
    ["webhook", "cause"],
    registry=REGISTRY,
)
ADMISSION_EVENTS_SKIPPED = Counter(
    "vllm_preflight_admission_events_skipped_total",
    "AdmissionDenied Events not written although admission events are on, by reason:"
    " not-opted-in (the namespace did not opt in), rate-limited.",
    ["reason"],
    registry=REGISTRY,
)


# Known label sets start at zero, so a series the dashboard or an alert uses exists (and
# rate() over it works) before the first error or remediation ever happens.
for _stage in ("rules", "api", "bug"):
    RECONCILE_ERRORS.labels(stage=_stage)
for _reason in ("poisoned", "too-large", "too-deep", "not-json"):  # decoding.REASONS
    OBJECTS_REJECTED.labels(reason=_reason)
for _webhook in (constants.VALIDATE_WEBHOOK_ID, constants.MUTATE_PODS_WEBHOOK_ID):
    ADMISSIONS.labels(webhook=_webhook, outcome="error")
for _reason in (
    "too-large", "too-deep", "not-json", "not-a-review", "header-timeout", "body-timeout",
    "connections", "peer-connections", "evicted", "too-many-values",
):  # fmt: skip
    WEBHOOK_REJECTIONS.labels(reason=_reason)
for _webhook in (
    constants.VALIDATE_WEBHOOK_ID, constants.VALIDATE_ENFORCE_WEBHOOK_ID,
    constants.MUTATE_PODS_WEBHOOK_ID,
):  # fmt: skip
    for _cause in ("deadline", "shed", "decode", "too-many-values"):
        WEBHOOK_DEADLINE_ANSWERS.labels(webhook=_webhook, cause=_cause)
for _to in ("leader", "follower"):
    LEADER_TRANSITIONS.labels(to=_to)
for _remedy in ("PauseRollout", "ScaleToZero"):  # remediation.ACTIVE
    for _action in ("applied", "reverted"):
        REMEDIATIONS.labels(type=_remedy, action=_action)

_LEADER_HELP = (
    "1 while this replica holds the leader-election Lease and writes (or runs standalone),"
    " 0 while it follows: it serves the webhooks and keeps its caches, and writes nothing."
)
_CERT_HELP = (
    "notAfter of the webhook serving certificate (--webhook-cert-dir/tls.crt) in Unix"
    " seconds, read on every scrape; absent while the file cannot be read."
)


class _StateCollector(Collector):
    """Series read when scraped rather than pushed: leadership and certificate expiry.

    Pull-based so the operator's code does not have to tell metrics about every leadership
    change or certificate rotation; `track()` says where to read them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._leader: Callable[[], bool] | None = None
        self._cert_file: Path | None = None

    def set(self, leader: Callable[[], bool] | None, cert_file: Path | None) -> None:
        with self._lock:
            self._leader, self._cert_file = leader, cert_file

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            leader, cert_file = self._leader, self._cert_file
        gauge = GaugeMetricFamily("vllm_preflight_leader", _LEADER_HELP)
        if leader is not None:
            # A scrape never fails on it: the sample is left out instead.
            with contextlib.suppress(Exception):
                gauge.add_metric([], 1.0 if leader() else 0.0)
        yield gauge
        cert = GaugeMetricFamily(
            "vllm_preflight_webhook_certificate_expiry_timestamp_seconds", _CERT_HELP
        )
        if cert_file is not None:
            try:
                not_after = certificate_not_after(cert_file.read_bytes())
            except (OSError, ValueError):
                not_after = None
            if not_after is not None:
                cert.add_metric([], not_after.timestamp())
        yield cert


_STATE = _StateCollector()
REGISTRY.register(_STATE)


def track(*, leader: Callable[[], bool] | None, cert_file: Path | None) -> None:
    """Where the scrape-time series come from: the write gate's verdict (writegate.py) and
    the webhook certificate file (re-read, so a rotation shows)."""
    _STATE.set(leader, cert_file)


def record_check(pod: Mapping[str, Any], result: PodResult) -> None:
    """One new check result read from a pod: counted by namespace, verdict and reason, and
    its duration observed when the kubelet reported both timestamps."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    CHECKS.labels(namespace=namespace, result=result.verdict, reason=result.reason or "none").inc()
    seconds = check_seconds(pod)
    if seconds is not None:
        CHECK_DURATION.labels(result=result.verdict).observe(seconds)


def check_seconds(pod: Mapping[str, Any]) -> float | None:
    """startedAt to finishedAt of the preflight-check init container's latest finished run
    (state, else lastState while it restarts); None when either is missing or unreadable."""
    for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if not isinstance(status, Mapping) or status.get("name") != constants.CHECK_CONTAINER:
            continue
        for key in ("state", "lastState"):
            terminated = (status.get(key) or {}).get("terminated")
            if isinstance(terminated, Mapping):
                started = _rfc3339(terminated.get("startedAt"))
                finished = _rfc3339(terminated.get("finishedAt"))
                if started is None or finished is None or finished < started:
                    return None
                return (finished - started).total_seconds()
    return None


def _rfc3339(value: object) -> datetime.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def certificate_not_after(data: bytes) -> datetime.datetime | None:
    """notAfter of the first certificate in PEM (or DER) bytes, from the DER structure
    (Certificate -> TBSCertificate -> Validity, RFC 5280 section 4.1): the operator has no
    X.509 library, and the standard library's ssl module cannot read a certificate file.
    None when the bytes are not a certificate."""
    der = _first_pem_block(data) if b"-----BEGIN" in data else data
    if der is None:
        return None
    try:
        _, cert, _ = _der(der, 0)  # Certificate SEQUENCE
        _, tbs, _ = _der(cert, 0)  # TBSCertificate SEQUENCE
        pos = 0
        tag, _, nxt = _der(tbs, pos)
        if tag == 0xA0:  # [0] version (absent means v1)
            pos = nxt
        for _ in range(3):  # serialNumber, signature AlgorithmIdentifier, issuer
            _, _, pos = _der(tbs, pos)
        tag, validity, _ = _der(tbs, pos)
        if tag != 0x30:
            return None
        _, _, pos = _der(validity, 0)  # notBefore
        tag, value, _ = _der(validity, pos)  # notAfter
    except IndexError:
        return None
    text = value.decode("ascii", "replace")
    formats = {0x17: "%y%m%d%H%M%SZ", 0x18: "%Y%m%d%H%M%SZ"}  # UTCTime, GeneralizedTime
    if tag not in formats:
        return None
    try:
        moment = datetime.datetime.strptime(text, formats[tag])
    except ValueError:
        return None
    return moment.replace(tzinfo=datetime.timezone.utc)


def _first_pem_block(data: bytes) -> bytes | None:
    begin = data.find(b"-----BEGIN CERTIFICATE-----")
    end = data.find(b"-----END CERTIFICATE-----", begin)
    if begin < 0 or end < 0:
        return None
    body = data[begin + len(b"-----BEGIN CERTIFICATE-----") : end]
    try:
        return base64.b64decode(b"".join(body.split()), validate=True)
    except (binascii.Error, ValueError):
        return None


def _der(buf: bytes, pos: int) -> tuple[int, bytes, int]:
    """(tag, contents, position after) of the DER element at pos; IndexError if truncated."""
    tag = buf[pos]
    length = buf[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or pos + count > len(buf):
            raise IndexError("bad DER length")
        length = int.from_bytes(buf[pos : pos + count], "big")
        pos += count
    if pos + length > len(buf):
        raise IndexError("truncated DER element")
    return tag, buf[pos : pos + length], pos + length


def serve(port: int, addr: str = "0.0.0.0") -> None:
    """Starts the /metrics endpoint in a daemon thread (no-op for port 0)."""
    if port:
        start_http_server(port, addr=addr, registry=REGISTRY)
