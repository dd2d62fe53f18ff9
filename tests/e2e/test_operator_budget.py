"""The rules' budget on the local control plane (rulesworker.py): an operator whose rules
worker spins on purpose. Its own module, so that no other operator of this session
reconciles the same namespaces meanwhile."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev import localoperator, localsetup
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"


def deployment(name: str, namespace: str) -> dict[str, Any]:
    doc: dict[str, Any] = next(
        d
        for d in yaml.safe_load_all((MANIFESTS / f"{name}.yaml").read_text())
        if d["kind"] == "Deployment"
    )
    out = copy.deepcopy(doc)
    out["metadata"]["namespace"] = namespace
    return out


def apply(cluster: Cluster, obj: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", *extra, "-f", "-", input=json.dumps(obj), check=False)


def test_past_the_rules_budget_enforce_denies_and_a_stored_object_records_it(
    k8s: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator whose rules worker spins on workloads annotated test/rules=spin
    (tests/unit/rulesworker_hostile_child.py; what the expansion bomb did before the rules
    capped it). Enforce denies within the budget saying why (never a silent admit), and
    counts it; a stored workload's status says it could not be checked in time; the
    worker is replaced and the next workload is judged."""
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    child = Path(__file__).parents[1] / "unit" / "rulesworker_hostile_child.py"
    monkeypatch.setenv("PREFLIGHT_RULES_WORKER_ENTRY", str(child))
    config = tmp_path / "config.yaml"
    config.write_text("rules: {budgetSeconds: 2}\n")
    localsetup.install_crds(k8s)
    op = localoperator.start_with_webhooks(
        k8s, tmp_path / "op", identity="spinning", extra_args=["--config", str(config)]
    )
    namespace = k8s.create_namespace("adm-budget", labels={constants.LABEL_INJECT: "enabled"})
    stored_ns = k8s.create_namespace("adm-budget-stored")

    def spinning(ns: str) -> dict[str, Any]:
        doc = deployment("good-tp2-deployment", ns)
        doc["metadata"]["annotations"] = {"test/rules": "spin"}
        return doc

    try:
        # The webhook configuration now points at this operator (it takes a moment).
        wait_for(lambda: "could not be checked in time" in apply(k8s, spinning(namespace),
                 "--dry-run=server").stderr, what="the spinning operator to answer")  # fmt: skip
        # our answer, not the API server's timeout (10 s): the budget stopped the rules
        result = apply(k8s, spinning(namespace))
        assert result.returncode != 0
        assert "could not be checked in time: the rules stopped, not done within 2 s" in (
            result.stderr
        )
        assert "under Enforce nothing unchecked is admitted" in result.stderr
        counted = 'vllm_preflight_admission_reviews_total{outcome="over-budget",webhook="validate"}'
        assert op.metric(counted) >= 2
        denied = apply(k8s, deployment("bad-tp4-deployment", namespace))
        assert "cannot run on the GPUs it requests" in denied.stderr  # judged, worker replaced

        assert apply(k8s, spinning(stored_ns)).returncode == 0  # not opted in: not judged
        k8s.kubectl("label", "namespace", stored_ns, f"{constants.LABEL_INJECT}=enabled")

        def static_condition() -> dict[str, Any] | None:
            r = k8s.kubectl("get", "gpuval", "deployment-vllm-good", "-n", stored_ns, "-o",
                            "json", check=False)  # fmt: skip
            if r.returncode != 0:
                return None
            conditions = json.loads(r.stdout).get("status", {}).get("conditions") or []
            return next((c for c in conditions if c["type"] == "StaticChecksPassed"), None)

        condition = wait_for(static_condition, what="the stored workload's status")
        assert (condition["status"], condition["reason"]) == ("Unknown", "RulesError")
        assert "could not be checked in time" in condition["message"]
    finally:
        k8s.delete_namespace(namespace)
        k8s.delete_namespace(stored_ns)
        localoperator.remove_webhooks(k8s)
        op.stop()
