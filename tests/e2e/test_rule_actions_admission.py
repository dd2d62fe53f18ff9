"""Per-rule actions on the API server (issue 24): the CRD takes ``spec.rules`` and refuses
an action it does not know; the operator names an unknown rule id in the policy's Valid
condition; the webhook admits a failure of a rule set to Warn, with a warning line."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"


def bad_deployment(namespace: str) -> dict[str, Any]:
    """TP=4 on 2 GPUs and no /dev/shm: gpu-count-too-low and shm-missing, rules whose
    sources are vLLM's code and NCCL's documentation (both Enforce by default)."""
    docs = yaml.safe_load_all((MANIFESTS / "bad-tp4-deployment.yaml").read_text())
    found = copy.deepcopy(next(d for d in docs if d["kind"] == "Deployment"))
    found["metadata"]["namespace"] = namespace
    return found


def apply(cluster: Cluster, obj: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", *extra, "-f", "-", input=json.dumps(obj), check=False)


def policy(namespace: str, rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": constants.API_VERSION,
        "kind": constants.POLICY_KIND,
        "metadata": {"name": "per-rule", "namespace": namespace},
        "spec": {"action": "Enforce", "rules": rules},
    }


def test_a_rule_set_to_warn_admits_and_an_unknown_id_is_named(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    namespace = cluster.create_namespace("adm-rules", labels={constants.LABEL_INJECT: "enabled"})
    try:
        refused = apply(cluster, policy(namespace, {"gpu-count-too-low": "Block"}))
        assert refused.returncode != 0
        assert "Unsupported value" in refused.stderr or "supported values" in refused.stderr

        bad = bad_deployment(namespace)
        denied = apply(cluster, bad, "--dry-run=server")
        assert denied.returncode != 0  # Enforce, no policy yet: denied
        assert "gpu-count-too-low" in denied.stderr

        result = apply(
            cluster,
            policy(
                namespace, {"gpu-count-too-low": "Warn", "shm-missing": "Audit", "nope": "Warn"}
            ),
        )
        assert result.returncode == 0, result.stderr

        def valid() -> dict[str, Any] | None:
            got = json.loads(
                cluster.kubectl(
                    "get", "preflightpolicy", "per-rule", "-n", namespace, "-o", "json"
                ).stdout
            )
            conditions = (got.get("status") or {}).get("conditions") or []
            return next((c for c in conditions if c["type"] == "Valid"), None)

        condition = wait_for(valid, what="the policy's Valid condition")
        assert condition["status"] == "False", condition
        assert "spec.rules['nope']: not a rule id" in condition["message"]

        # the webhooks learn policies from a watch: dry-run until this one is in force
        wait_for(lambda: apply(cluster, bad, "--dry-run=server").returncode == 0,
                 what="the per-rule policy to reach the webhook")  # fmt: skip
        admitted = apply(cluster, bad)
        assert admitted.returncode == 0, admitted.stderr
        warnings = [ln for ln in admitted.stderr.splitlines() if ln.startswith("Warning:")]
        assert any(
            ln.startswith(
                "Warning: vllm-preflight fail (admitted: rule action Warn): gpu-count-too-low:"
            )
            for ln in warnings
        ), warnings
        assert not any("shm-missing" in ln for ln in warnings)  # Audit: recorded only
    finally:
        cluster.delete_namespace(namespace)
