"""Prometheus metrics, served on their own port (``--metrics-port``, 0 disables).

Label values are bounded sets (verdicts, check ids, webhook names, stages): never a
namespace, a workload or a pod name, so a large cluster cannot blow up the series count.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

REGISTRY = CollectorRegistry(auto_describe=True)

CHECKS = Counter(
    "vllm_preflight_checks_total",
    "Finished preflight-check runs read from pod status, by verdict and first failing check.",
    ["result", "reason"],
    registry=REGISTRY,
)
ADMISSIONS = Counter(
    "vllm_preflight_admission_reviews_total",
    "Admission reviews answered, by webhook and outcome (allowed, warned, denied, skipped,"
    " error: admitted after an internal error).",
    ["webhook", "outcome"],
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
    "vLLM workloads this replica tracks (zero on a paused peer).",
    registry=REGISTRY,
)
EVENTS_DROPPED = Counter(
    "vllm_preflight_events_dropped_total",
    "Events not posted because the queue was full or the API refused them.",
    registry=REGISTRY,
)


def serve(port: int, addr: str = "0.0.0.0") -> None:
    """Starts the /metrics endpoint in a daemon thread (no-op for port 0)."""
    if port:
        start_http_server(port, addr=addr, registry=REGISTRY)
