"""The chart's observability pack: ServiceMonitor, PrometheusRule and Grafana dashboard.

Each part is opt-in (`metrics.serviceMonitor/prometheusRule/grafanaDashboard.enabled`). The
rules the chart renders are checked by the real promtool (`promtool check rules`), and each
alert is exercised by `promtool test rules` on synthetic series (it fires on the trouble it
names and stays quiet on a healthy operator). The dashboard's queries, with Grafana's
variables substituted, are checked by the same promtool as recording rules, and every
series they name is one the operator defines. tests/e2e/test_metrics_series.py checks that
a running operator really exports them.

Needs the pinned helm (hack/k8s/build.sh) and promtool (hack/k8s/build.sh tools), both
cached; skipped when they cannot be had.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev.testing import BinariesNotFound, find_bin_dir, find_tools_dir
from preflight_operator.runtime import metrics

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "vllm-preflight"
DASHBOARD_FILE = CHART / "files" / "grafana-dashboard.json"
RELEASE, NAMESPACE = "vllm-preflight", "gpu-system"
JOB = "vllm-preflight"  # the Service's name: what a ServiceMonitor's scrape job is called
ALL_ON = (
    "metrics.serviceMonitor.enabled=true",
    "metrics.prometheusRule.enabled=true",
    "metrics.grafanaDashboard.enabled=true",
)
SERIES = re.compile(r"\b(vllm_preflight_[a-z_]+)")

Manifest = dict[str, Any]


@functools.cache
def helm_binary() -> str:
    try:
        return str(find_bin_dir() / "helm")
    except BinariesNotFound as err:  # pragma: no cover - depends on the machine
        pytest.skip(f"no helm binary: {err}")


@functools.cache
def promtool_binary() -> str:
    try:
        return str(find_tools_dir() / "promtool")
    except BinariesNotFound as err:  # pragma: no cover - depends on the machine
        pytest.skip(f"no promtool binary: {err}")


@functools.cache
def _render(sets: tuple[str, ...]) -> tuple[Manifest, ...]:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    for item in sets:  # --set-json: 0.2 stays a number (--set makes it a string)
        args += ["--set-json", item]
    result = subprocess.run(
        [helm_binary(), *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def render(*sets: str) -> list[Manifest]:
    """Fresh copies: a test may change what it gets without touching the cache."""
    return copy.deepcopy(list(_render(tuple(sets))))


def kinds(objs: list[Manifest]) -> set[str]:
    return {o["kind"] for o in objs}


def one(objs: list[Manifest], kind: str) -> Manifest:
    found = [o for o in objs if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool_binary(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )


def rule_groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = one(render(*ALL_ON), "PrometheusRule")["spec"]["groups"]
    return groups


def dashboard_configmaps(*sets: str) -> list[Manifest]:
    return [
        o
        for o in render(*sets)
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-dashboard")
    ]


def dashboard() -> dict[str, Any]:
    (cm,) = dashboard_configmaps(*ALL_ON)
    data: dict[str, Any] = json.loads(cm["data"]["vllm-preflight.json"])
    return data


def dashboard_exprs(dash: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]


def grafana_to_promql(expr: str) -> str:
    """Grafana's variables as a query would see them once Grafana substitutes them."""
    for var, value in (
        ("$__rate_interval", "5m"),
        ("$__range", "1h"),
        ("$job", ".*"),
        ("$namespace", ".*"),
    ):
        expr = expr.replace(var, value)
    return expr


def exported_names() -> set[str]:
    """Every sample name the operator's registry can export (histograms as their
    _bucket/_sum/_count, counters with _total)."""
    names: set[str] = set()
    for family in metrics.REGISTRY.collect():
        if family.type == "histogram":
            names |= {f"{family.name}{s}" for s in ("_bucket", "_sum", "_count")}
        elif family.type == "counter":
            names.add(f"{family.name}_total")
        else:
            names.add(family.name)
    return names


# -- opt-in ----------------------------------------------------------------------------------
def test_nothing_is_rendered_by_default() -> None:
    objs = render()
    assert not {"ServiceMonitor", "PrometheusRule"} & kinds(objs)
    assert not dashboard_configmaps()


def test_each_part_renders_alone() -> None:
    assert "ServiceMonitor" in kinds(render(ALL_ON[0]))
    assert "PrometheusRule" in kinds(render(ALL_ON[1]))
    assert "PrometheusRule" not in kinds(render(ALL_ON[0]))
    assert len(dashboard_configmaps(ALL_ON[2])) == 1
    assert not dashboard_configmaps(ALL_ON[1])


def test_metrics_disabled_renders_none_of_them() -> None:
    objs = render(*ALL_ON, "metrics.enabled=false")
    assert not {"ServiceMonitor", "PrometheusRule"} & kinds(objs)
    assert not dashboard_configmaps(*ALL_ON, "metrics.enabled=false")


def test_unknown_key_is_rejected_by_the_schema() -> None:
    result = subprocess.run(
        [helm_binary(), "template", RELEASE, str(CHART), "--set", "metrics.prometheusRule.x=1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "x" in result.stderr


# -- ServiceMonitor --------------------------------------------------------------------------
def test_service_monitor_keeps_the_workload_namespace_label() -> None:
    sm = one(render(*ALL_ON), "ServiceMonitor")
    (endpoint,) = sm["spec"]["endpoints"]
    assert endpoint["port"] == "metrics"
    assert endpoint["honorLabels"] is True
    service = one(render(*ALL_ON), "Service")
    assert service["metadata"]["name"] == JOB


# -- PrometheusRule --------------------------------------------------------------------------
def test_rules_pass_promtool_check(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups()}))
    result = promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 6 rules found" in result.stdout + result.stderr


def test_a_broken_rule_fails_promtool_check(tmp_path: Path) -> None:
    """The check above can fail: promtool rejects a bad expression."""
    groups = rule_groups()
    groups[0]["rules"][0]["expr"] = "sum by (namespace (vllm_preflight_checks_total"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    assert promtool("check", "rules", "rules.yaml", cwd=tmp_path).returncode != 0


def test_alerts_cover_what_platform_teams_page_on() -> None:
    alerts = {r["alert"]: r for g in rule_groups() for r in g["rules"]}
    assert set(alerts) == {
        "VllmPreflightCheckFailuresRising",
        "VllmPreflightWebhookErrors",
        "VllmPreflightWebhookSlow",
        "VllmPreflightOperatorDown",
        "VllmPreflightNoLeader",
        "VllmPreflightCertificateExpiringSoon",
    }
    for name, rule in alerts.items():
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        assert rule["annotations"]["summary"], name
        assert rule["annotations"]["description"], name


def test_rule_thresholds_come_from_values() -> None:
    objs = render(
        *ALL_ON,
        "metrics.prometheusRule.webhookLatencySeconds=0.2",
        "metrics.prometheusRule.certificateExpiryDays=7",
        "metrics.prometheusRule.checkFailuresThreshold=3",
    )
    exprs = {
        r["alert"]: r["expr"]
        for g in one(objs, "PrometheusRule")["spec"]["groups"]
        for r in g["rules"]
    }
    assert exprs["VllmPreflightWebhookSlow"].rstrip().endswith("> 0.2")
    assert "< 7 * 86400" in exprs["VllmPreflightCertificateExpiringSoon"]
    assert exprs["VllmPreflightCheckFailuresRising"].rstrip().endswith("> 3")


def _series(labels: dict[str, str], values: str, name: str) -> dict[str, str]:
    inner = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


OP = {"job": JOB, "namespace": NAMESPACE, "pod": "op-0"}


def _rule_tests(healthy: bool) -> list[dict[str, Any]]:
    """Synthetic series for every alert: in trouble (each alert fires with its labels) or
    healthy (none fires). 100 samples, one a minute."""
    bucket = "vllm_preflight_webhook_duration_seconds_bucket"
    if healthy:
        failures, errors = "0x100", "0x100"
        slow = [
            _series({**OP, "webhook": "validate", "le": "0.5"}, "0+100x100", bucket),
            _series({**OP, "webhook": "validate", "le": "1"}, "0+100x100", bucket),
            _series({**OP, "webhook": "validate", "le": "+Inf"}, "0+100x100", bucket),
        ]
        up, leader, expiry = "1x100", "1x100", f"{400 * 86400}x100"
    else:
        failures, errors = "0+1x100", "0+10x100"
        slow = [  # every request between 0.5 s and 1 s: p99 ~ 1 s
            _series({**OP, "webhook": "validate", "le": "0.5"}, "0x100", bucket),
            _series({**OP, "webhook": "validate", "le": "1"}, "0+100x100", bucket),
            _series({**OP, "webhook": "validate", "le": "+Inf"}, "0+100x100", bucket),
        ]
        up, leader, expiry = "0x100", "0x100", f"{3 * 86400}x100"  # time() starts at 0
    series = [
        _series(
            {
                "job": JOB,
                "namespace": "llm",
                "pod": "op-0",
                "result": "fail",
                "reason": "gpu-count",
            },
            failures,
            "vllm_preflight_checks_total",
        ),
        _series(
            {**OP, "webhook": "mutate-pods", "outcome": "error"},
            errors,
            "vllm_preflight_admission_reviews_total",
        ),
        *slow,
        _series({"job": JOB, "namespace": NAMESPACE, "instance": "10.0.0.5:8080"}, up, "up"),
        _series(OP, leader, "vllm_preflight_leader"),
        _series(OP, expiry, "vllm_preflight_webhook_certificate_expiry_timestamp_seconds"),
    ]
    firing: dict[str, list[dict[str, Any]]] = {
        "VllmPreflightCheckFailuresRising": [
            {"exp_labels": {"severity": "warning", "namespace": "llm", "reason": "gpu-count"}}
        ],
        "VllmPreflightWebhookErrors": [
            {"exp_labels": {"severity": "warning", "webhook": "mutate-pods"}}
        ],
        "VllmPreflightWebhookSlow": [
            {"exp_labels": {"severity": "warning", "webhook": "validate"}}
        ],
        "VllmPreflightOperatorDown": [{"exp_labels": {"severity": "critical"}}],
        "VllmPreflightNoLeader": [{"exp_labels": {"severity": "warning"}}],
        "VllmPreflightCertificateExpiringSoon": [
            {"exp_labels": {"severity": "warning", "pod": "op-0"}}
        ],
    }
    # The certificate alert waits an hour (for: 1h), the others at most 15 minutes.
    checks = [
        {
            "eval_time": "30m" if name != "VllmPreflightCertificateExpiringSoon" else "90m",
            "alertname": name,
            "exp_alerts": [] if healthy else expected,
        }
        for name, expected in firing.items()
    ]
    return [{"interval": "1m", "input_series": series, "alert_rule_test": checks}]


@pytest.mark.parametrize("healthy", [False, True], ids=["trouble", "healthy"])
def test_each_alert_fires_on_its_trouble_only(tmp_path: Path, healthy: bool) -> None:
    # Without annotations, which promtool would otherwise compare word for word; their
    # templates are checked by `promtool check rules` above.
    groups = rule_groups()
    for rule in groups[0]["rules"]:
        del rule["annotations"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    tests = _rule_tests(healthy)
    (tmp_path / "rules_test.yaml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yaml"], "tests": tests})
    )
    result = promtool("test", "rules", "rules_test.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# -- Grafana dashboard -----------------------------------------------------------------------
def test_dashboard_configmap_is_labelled_for_the_grafana_sidecar() -> None:
    (cm,) = dashboard_configmaps(*ALL_ON)
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["namespace"] == NAMESPACE
    (moved,) = dashboard_configmaps(*ALL_ON, 'metrics.grafanaDashboard.namespace="monitoring"')
    assert moved["metadata"]["namespace"] == "monitoring"


def test_dashboard_in_the_chart_is_the_file() -> None:
    assert dashboard() == json.loads(DASHBOARD_FILE.read_text())


def test_dashboard_shows_what_the_issue_asks_for() -> None:
    dash = dashboard()
    exprs = "\n".join(dashboard_exprs(dash))
    for needed in (
        "vllm_preflight_checks_total",  # checks run, pass/fail
        "by (result, reason)",  # ... by check id
        "by (namespace, result)",  # ... by namespace
        "vllm_preflight_check_duration_seconds_bucket",
        "vllm_preflight_webhook_duration_seconds_bucket",  # admission latency
        'outcome="denied"',  # denials
        "vllm_preflight_reconcile_queue_depth",
        "vllm_preflight_reconcile_duration_seconds_count",  # reconciles
        "vllm_preflight_leader",
    ):
        assert needed in exprs, needed
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    assert {v["name"] for v in dash["templating"]["list"]} == {"datasource", "job", "namespace"}


def test_dashboard_queries_pass_promtool(tmp_path: Path) -> None:
    exprs = dashboard_exprs(dashboard())
    rules = [
        {"record": f"dashboard:q{i}", "expr": grafana_to_promql(e)} for i, e in enumerate(exprs)
    ]
    (tmp_path / "dash.yaml").write_text(yaml.safe_dump({"groups": [{"name": "d", "rules": rules}]}))
    result = promtool("check", "rules", "dash.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_series_used_is_one_the_operator_defines() -> None:
    used = set(SERIES.findall("\n".join(dashboard_exprs(dashboard()))))
    used |= {n for g in rule_groups() for r in g["rules"] for n in SERIES.findall(r["expr"])}
    missing = used - exported_names()
    assert not missing, f"dashboard/alerts use series metrics.py does not define: {missing}"
