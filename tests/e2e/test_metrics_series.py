"""Every series the chart's Grafana dashboard and PrometheusRule use exists on a real
operator's /metrics, after real traffic on the local control plane: a Deployment through
the validating webhook, its pod through the injecting webhook, the check's result written
as a kubelet would, the GPUValidation reconciled.

`up` is left out: Prometheus makes it for every target, the operator does not export it.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from preflight_contract.report import CheckResult, Report
from preflight_dev import fakekubelet, localoperator
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "vllm-preflight"
MANIFEST = REPO / "tests" / "data" / "manifests" / "good-tp2-deployment.yaml"
SERIES = re.compile(r"\b(vllm_preflight_[a-z_]+)")
PASSED = Report(
    checks=[CheckResult("gpu-count", "pass", "CUDA sees 2 GPUs")]
).to_termination_message()


@pytest.fixture(scope="module")
def operator(
    own_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """On a control plane of the module's own (conftest.own_cluster): the check-duration
    histogram has no namespace label, so results other modules left on the session's plane
    were summed with this test's (18 s against its 3 s in one CI run)."""
    op = localoperator.start_with_webhooks(own_cluster, tmp_path_factory.mktemp("metrics"))
    yield op
    localoperator.remove_webhooks(own_cluster)
    op.stop()


def used_series(k8s: Cluster) -> set[str]:
    """The vllm_preflight_* names in the rules and the dashboard exactly as the chart
    renders them."""
    out = subprocess.run(
        [
            str(k8s.bin_dir / "helm"), "template", "t", str(CHART),
            "--set", "metrics.prometheusRule.enabled=true",
            "--set", "metrics.grafanaDashboard.enabled=true",
        ],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    exprs: list[str] = []
    for doc in yaml.safe_load_all(out):
        if not doc:
            continue
        if doc["kind"] == "PrometheusRule":
            exprs += [r["expr"] for g in doc["spec"]["groups"] for r in g["rules"]]
        if doc["kind"] == "ConfigMap" and "vllm-preflight.json" in doc.get("data", {}):
            dash = json.loads(doc["data"]["vllm-preflight.json"])
            exprs += [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    names = set(SERIES.findall("\n".join(exprs)))
    assert len(names) >= 12, f"the chart's queries name too few series: {sorted(names)}"
    return names


def scraped(operator: OperatorProcess) -> dict[str, list[Any]]:
    """Sample name -> samples, from the operator's real /metrics."""
    out: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(operator.metrics()):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def test_every_series_of_dashboard_and_alerts_is_exported(
    own_cluster: Cluster, operator: OperatorProcess
) -> None:
    namespace = own_cluster.create_namespace("metrics", labels={constants.LABEL_INJECT: "enabled"})
    try:
        doc = next(d for d in yaml.safe_load_all(MANIFEST.read_text()) if d["kind"] == "Deployment")
        doc["metadata"]["namespace"] = namespace
        own_cluster.apply(doc)  # validating webhook
        selector = f"app=vllm-good,{constants.INJECTED_POD_SELECTOR}"

        def injected() -> list[dict[str, Any]]:  # injecting webhook, via the ReplicaSet
            got = own_cluster.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json")
            items: list[dict[str, Any]] = json.loads(got.stdout)["items"]
            return items

        pod = wait_for(injected, what="an injected pod")[0]
        status = fakekubelet.pod_status(
            pod,
            exit_code=0,
            message=PASSED,
            started="2026-12-01T08:00:00Z",
            finished="2026-12-01T08:00:03Z",
        )
        meta = pod["metadata"]
        own_cluster.kubectl(
            "patch", "pod", meta["name"], "-n", namespace, "--subresource=status",
            "--type=merge", "-p", json.dumps({"status": status}),
        )  # fmt: skip

        def checked() -> dict[str, list[Any]] | None:
            # Both series, not one then the other: on a loaded machine the status latency
            # was seen before the check's own counter (issue 28).
            samples = scraped(operator)
            done = samples.get("vllm_preflight_result_to_status_seconds_count", [])
            passed = [
                s
                for s in samples.get("vllm_preflight_checks_total", [])
                if s.labels.get("namespace") == namespace and s.labels.get("result") == "pass"
            ]
            return samples if done and done[0].value >= 1 and passed else None

        samples = wait_for(checked, what="the check result reaching the GPUValidation")
        missing = sorted(used_series(own_cluster) - set(samples))
        assert not missing, f"/metrics lacks series the dashboard or alerts use: {missing}"

        # The values behind the panels are the real ones, not placeholders.
        checks = {
            (s.labels["namespace"], s.labels["result"]): s.value
            for s in samples["vllm_preflight_checks_total"]
        }
        assert checks[(namespace, "pass")] == 1.0
        durations = [
            s for s in samples["vllm_preflight_check_duration_seconds_sum"]
            if s.labels["result"] == "pass"
        ]  # fmt: skip
        assert durations[0].value == 3.0
        assert samples["vllm_preflight_leader"][0].value == 1.0  # standalone: it leads
        expiry = samples["vllm_preflight_webhook_certificate_expiry_timestamp_seconds"][0]
        assert expiry.value > 1.7e9
        outcomes = {
            (s.labels["webhook"], s.labels["outcome"])
            for s in samples["vllm_preflight_admission_reviews_total"]
            if s.value > 0
        }
        assert any(w == constants.VALIDATE_WEBHOOK_ID for w, _ in outcomes), outcomes
        assert any(w == constants.MUTATE_PODS_WEBHOOK_ID for w, _ in outcomes), outcomes
    finally:
        own_cluster.delete_namespace(namespace)
