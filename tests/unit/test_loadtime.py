"""Measured load time (issue 25 item 3): a pod's containers' start to Ready, recorded on
the GPUValidation per workload (last, p50, max), fed to the probe-window rule; only pods
the workload's controller made count, and every figure is bounded."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from test_rules_probes import QWEN32, findings, probe

from preflight_contract.report import CheckResult, Report
from preflight_operator.core import constants, provenance
from preflight_operator.core.gpuvalidation import StatusInputs, build_status
from preflight_operator.core.loadtime import (
    MAX_SAMPLES,
    LoadSummary,
    load_sample,
    summary_of_status,
)
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.podresults import pod_result
from preflight_operator.core.policy import ResolvedPolicy
from preflight_operator.core.rules import ClusterLookup
from preflight_operator.core.store import PodState, Store
from preflight_operator.core.workloads import DEPLOYMENT, WorkloadRef

CRDS = Path(__file__).resolve().parents[2] / "charts" / "vllm-preflight" / "crds"
PASS = Report(checks=[CheckResult("gpu-count", "pass", "ok")]).to_termination_message()


def pod(
    name: str = "llm-abc",
    uid: str = "u1",
    *,
    started: str | None = "2026-01-01T00:01:00Z",
    ready: str | None = "2026-01-01T00:03:30Z",
    created_by: str = provenance.CONTROLLER,
) -> dict[str, Any]:
    """An injected pod of Deployment llm whose check passed, started and (maybe) Ready."""
    terminated = {"exitCode": 0, "message": PASS, "finishedAt": "2026-01-01T00:00:59Z"}
    check = {"name": constants.CHECK_CONTAINER, "restartCount": 0,
             "state": {"terminated": terminated}}  # fmt: skip
    status: dict[str, Any] = {"initContainerStatuses": [check], "conditions": []}
    if started is not None:
        status["containerStatuses"] = [
            {"name": "vllm", "state": {"running": {"startedAt": started}}}
        ]
    if ready is not None:
        status["conditions"].append(
            {"type": "Ready", "status": "True", "lastTransitionTime": ready}
        )
    return {
        "metadata": {
            "name": name,
            "uid": uid,
            "namespace": "ns",
            "annotations": {constants.ANNOTATION_CREATED_BY: created_by},
            "labels": {"pod-template-hash": "h"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "llm-h", "controller": True}],
        },
        "spec": {"nodeName": "n1"},
        "status": status,
    }


def test_start_to_ready_is_read_from_the_pod_status() -> None:
    sample = load_sample(pod())
    assert sample is not None
    assert (sample.pod, sample.uid, sample.seconds) == ("llm-abc", "u1", 150)
    result = pod_result(pod())
    assert result is not None
    assert result.load == sample


@pytest.mark.parametrize(
    ("started", "ready"),
    [
        ("2026-01-01T00:01:00Z", None),  # not Ready yet
        (None, "2026-01-01T00:03:30Z"),  # no container running
        ("2026-01-01T00:05:00Z", "2026-01-01T00:03:30Z"),  # restarted after Ready
        ("2026-01-01T00:01:00Z", "2026-01-09T00:01:00Z"),  # eight days: a clock step
        ("yesterday", "2026-01-01T00:03:30Z"),  # not a date-time
        ("2026-01-01T00:01:00Z", 12),
    ],
)
def test_no_figure_unless_it_is_sound(started: Any, ready: Any) -> None:
    assert load_sample(pod(started=started, ready=ready)) is None


def status_of(*pods: dict[str, Any], previous: dict[str, Any] | None = None) -> dict[str, Any]:
    ref = WorkloadRef(DEPLOYMENT.api_version, "Deployment", "ns", "llm")
    live = [r for r in map(pod_result, pods) if r is not None]
    return build_status(
        StatusInputs(
            ref=ref, generation=1, static=None, static_checked_at="", live_results=live,
            policy=ResolvedPolicy("", PolicySpec()), pending_pods=0,
            previous=previous or {}, remediation=None, now="2026-01-01T00:04:00Z",
        )
    )  # fmt: skip


def test_the_gpuvalidation_keeps_last_p50_and_max_over_the_pods_starts() -> None:
    first = status_of(pod("llm-a", "u1", ready="2026-01-01T00:02:00Z"))  # 60 s
    assert first["runtime"]["loadTime"]["lastSeconds"] == 60
    # the first pod is gone, two more started: the record keeps all three
    later = status_of(
        pod("llm-b", "u2", ready="2026-01-01T00:06:00Z"),  # 300 s
        pod("llm-c", "u3", ready="2026-01-01T00:03:00Z"),  # 120 s
        previous=first,
    )
    section = later["runtime"]["loadTime"]
    assert (section["lastSeconds"], section["p50Seconds"], section["maxSeconds"]) == (300, 120, 300)
    assert section["samples"] == 3
    assert [s["pod"] for s in section["recent"]] == ["llm-b", "llm-c", "llm-a"]
    assert summary_of_status(later) == LoadSummary(last=300, p50=120, max=300, samples=3)


def test_a_pod_anyone_else_made_never_counts() -> None:
    """A tenant's own pod claiming a one-second start must not silence the warning (nor a
    day-long one raise it): only pods the workload's controller made are measured."""
    status = status_of(
        pod("llm-a", "u1"),
        pod("llm-fake", "u9", ready="2026-01-01T00:01:01Z", created_by=provenance.OTHER),
    )
    section = status["runtime"]["loadTime"]
    assert [s["pod"] for s in section["recent"]] == ["llm-a"]
    assert section["maxSeconds"] == 150
    assert "loadTime" not in status_of(pod(created_by=provenance.OTHER))["runtime"]


def test_a_stored_record_out_of_bounds_is_dropped_and_never_grows() -> None:
    """The stored record is read back as hostile: out-of-range values, bad entries and
    more entries than we ever write are dropped; the summary is recomputed from samples."""
    good = {"pod": "llm-a", "uid": "u1", "seconds": 90, "readyAt": "2026-01-01T00:02:00Z"}
    recent: list[Any] = [{**good, "uid": f"x{i}", "seconds": 10**9} for i in range(5)] + [
        {**good, "seconds": -5},
        "junk",
        {**good, "readyAt": "soon"},
        good,
    ]
    recent += [{**good, "uid": f"u{i + 10}"} for i in range(100)]
    previous = {"runtime": {"loadTime": {"maxSeconds": 1, "p50Seconds": 1, "recent": recent}}}
    section = status_of(previous=previous)["runtime"]["loadTime"]
    assert len(section["recent"]) <= MAX_SAMPLES
    assert all(0 < s["seconds"] <= 86400 for s in section["recent"])
    assert section["maxSeconds"] == 90
    forged = {"runtime": {"loadTime": {"maxSeconds": 1, "recent": [{**good, "seconds": 900}]}}}
    assert summary_of_status(forged) == LoadSummary(900, 900, 900, 1)


def test_a_pod_that_becomes_ready_is_a_change_to_reconcile() -> None:
    """Readiness comes after the check's result: without this the record never moves."""
    store = Store()
    key = ("ns", "Deployment", "llm")
    before = pod_result(pod(ready=None))
    after = pod_result(pod())
    assert store.put_pod(key, PodState("llm-abc", "u1", "n1", before), 0.0)
    assert store.put_pod(key, PodState("llm-abc", "u1", "n1", after), 1.0)
    assert not store.put_pod(key, PodState("llm-abc", "u1", "n1", after), 2.0)


# -- the rule ------------------------------------------------------------------------------


def measured(summary: Any, *, lookup: ClusterLookup | None = None) -> ClusterLookup:
    from test_rules_probes import LOOKUP

    base = lookup or LOOKUP
    asked: list[tuple[str, str, str]] = []

    def load_time(namespace: str, kind: str, name: str) -> Any:
        asked.append((namespace, kind, name))
        return summary if (namespace, kind, name) == ("ns", "Deployment", "llm") else None

    return dataclasses.replace(base, load_time=load_time)


def test_probe_window_judges_against_the_measured_start_and_says_so() -> None:
    """An estimate of ~190 s against a 600 s window says nothing; measured starts of up
    to 900 s warn, naming the measurement, and the fix covers it."""
    window = probe(periodSeconds=10, failureThreshold=60)  # 600 s
    assert findings(QWEN32, startupProbe=window) == []
    slow = measured(LoadSummary(last=700, p50=650, max=900, samples=4))
    (found,) = findings(QWEN32, lookup=slow, startupProbe=window)
    assert found.severity == "warn"
    assert "took up to 900 s to become Ready" in found.message
    assert "measured 4 start(s)" in found.message
    assert "failureThreshold to 180" in found.fix


def test_a_measured_start_within_the_window_replaces_a_pessimistic_estimate() -> None:
    short = probe(periodSeconds=10, failureThreshold=6)  # 60 s, the estimate is ~190 s
    (estimated,) = findings(QWEN32, startupProbe=short)
    assert "estimated at" in estimated.message
    quick = measured(LoadSummary(last=40, p50=40, max=45, samples=3))
    assert findings(QWEN32, lookup=quick, startupProbe=short) == []


@pytest.mark.parametrize(
    "bad",
    [
        LoadSummary(last=1, p50=1, max=10**9, samples=1),
        LoadSummary(last=0, p50=0, max=0, samples=1),
        {"max": 1},
        RuntimeError("lookup broke"),
    ],
)
def test_anything_but_a_sound_measurement_leaves_the_estimate(bad: Any) -> None:
    def broken(namespace: str, kind: str, name: str) -> Any:
        if isinstance(bad, Exception):
            raise bad
        return bad

    from test_rules_probes import LOOKUP

    short = probe(periodSeconds=10, failureThreshold=6)
    lookup = dataclasses.replace(LOOKUP, load_time=broken)
    (found,) = findings(QWEN32, lookup=lookup, startupProbe=short)
    assert "estimated at" in found.message


# -- the CRD takes what the operator writes ----------------------------------------------------


def crd_schema(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((CRDS / name).read_text())
    (version,) = [v for v in doc["spec"]["versions"] if v.get("storage")]
    return dict(version["schema"]["openAPIV3Schema"])


def undeclared(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Fields the API server would prune (not in the structural schema)."""
    if isinstance(value, dict) and "properties" in schema:
        out = []
        for key, item in value.items():
            if key not in schema["properties"]:
                out.append(f"{path}.{key}")
            else:
                out += undeclared(item, schema["properties"][key], f"{path}.{key}")
        return out
    if isinstance(value, list) and "items" in schema:
        return [p for item in value for p in undeclared(item, schema["items"], f"{path}[]")]
    return []


def test_the_gpuvalidation_crd_keeps_and_accepts_the_load_record() -> None:
    schema = crd_schema("gpuvalidations.vllm-preflight.io.yaml")
    status = status_of(pod("llm-a", "u1"), pod("llm-b", "u2", ready="2026-01-01T00:06:00Z"))
    obj = {"apiVersion": "vllm-preflight.io/v1alpha1", "kind": "GPUValidation",
           "metadata": {}, "status": copy.deepcopy(status)}  # fmt: skip
    assert undeclared(obj, schema) == []
    Draft202012Validator(schema).validate(obj)


SCHEMA_KEYWORDS = frozenset(
    [
        "type",
        "format",
        "description",
        "properties",
        "items",
        "required",
        "enum",
        "maxItems",
        "minItems",
        "maxLength",
        "minLength",
        "minimum",
        "maximum",
        "pattern",
        "default",
        "nullable",
        "additionalProperties",
        "oneOf",
        "anyOf",
        "allOf",
        "not",
        "title",
        "maxProperties",
        "minProperties",
        "multipleOf",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "uniqueItems",
        "example",
    ]
)


def not_structural(schema: Any, path: str = "") -> list[str]:
    """What the API server's strict decoding refuses: a property that is not a schema, a
    key that is no schema keyword (a flow mapping's unquoted comma makes one)."""
    if not isinstance(schema, dict):
        return [path]
    out = [
        f"{path}: {key!r}"
        for key in schema
        if key not in SCHEMA_KEYWORDS and not str(key).startswith("x-kubernetes-")
    ]
    for key, sub in (schema.get("properties") or {}).items():
        out += not_structural(sub, f"{path}.{key}")
    if "items" in schema:
        out += not_structural(schema["items"], f"{path}[]")
    return out


@pytest.mark.parametrize(
    "name", ["gpuvalidations.vllm-preflight.io.yaml", "preflightpolicies.vllm-preflight.io.yaml"]
)
def test_every_property_of_the_crds_is_a_schema(name: str) -> None:
    assert not_structural(crd_schema(name)) == []


def test_the_metric_counts_each_trusted_start_once() -> None:
    """Trusted: the marks say the controller made it, and its chain of uids (the pod's
    ReplicaSet, read, owned by the Deployment as watched: ownership.py) is confirmed."""
    import asyncio

    from test_operator_controller import DEPLOYMENT, FakeApi, controller, deployment, settle

    from preflight_operator.runtime import metrics

    def count() -> float:
        for family in metrics.REGISTRY.collect():
            for sample in family.samples:
                if sample.name == "vllm_preflight_pod_load_seconds_count" and sample.labels == {
                    "namespace": "team"
                }:
                    return float(sample.value)
        return 0.0

    def of_the_deployment(body: dict[str, Any]) -> dict[str, Any]:
        body["metadata"]["namespace"] = "team"
        body["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "vllm-good-h",
             "uid": "rs-vllm-good", "controller": True}
        ]  # fmt: skip
        return body

    async def scenario() -> tuple[float, float, float]:
        ctl = controller(FakeApi())
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        before = count()
        ready = of_the_deployment(pod())
        ctl.observe_pod(ready, deleted=False)
        await settle(ctl)  # its ReplicaSet read
        ctl.observe_pod(copy.deepcopy(ready), deleted=False)  # the same start, seen again
        once = count()
        ctl.observe_pod(of_the_deployment(pod("llm-x", "u7", created_by=provenance.OTHER)), False)
        await settle(ctl)
        await ctl.stop()
        return before, once, count()

    before, once, after = asyncio.run(scenario())
    assert once == before + 1
    assert after == before + 1
