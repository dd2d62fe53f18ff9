"""`kubectl vllm-preflight audit` against the control plane: a bad Deployment seeded in a
namespace (no webhook there, as before a rollout) is counted and named as what Enforce
would deny; a Warn PreflightPolicy selecting it turns that into a warning."""

from __future__ import annotations

import json

from test_kubectl_plugin import kubectl_plugin, manifest

from preflight_dev import localsetup
from preflight_dev.testing import Cluster
from preflight_operator.core import constants


def test_audit_counts_and_names_what_enforce_would_deny(k8s: Cluster) -> None:
    localsetup.install_crds(k8s, lws=False)
    ns = k8s.create_namespace("audit")  # not opted in: nothing judges these at admission
    try:
        k8s.apply(manifest("bad-tp4-deployment.yaml", ns), manifest("good-tp2-deployment.yaml", ns))

        table = kubectl_plugin(k8s, "audit", "-n", ns, "--color=never")
        assert table.returncode == 1, table.stderr
        bad_line = next(line for line in table.stdout.splitlines() if "vllm-bad" in line)
        assert bad_line.split()[:6] == [
            ns, "Deployment/vllm-bad", "(default)", "Enforce", "fail", "deny",
        ]  # fmt: skip
        assert "1 would be denied, 0 admitted with warnings, 1 admitted" in table.stdout

        found = kubectl_plugin(k8s, "audit", "-n", ns, "-o", "json")
        assert found.returncode == 1, found.stderr
        doc = json.loads(found.stdout)
        assert doc["counts"] == {"deny": 1, "warn": 0, "admit": 1}
        (denied,) = [i for i in doc["items"] if i["admission"] == "deny"]
        assert (denied["kind"], denied["name"]) == ("Deployment", "vllm-bad")
        assert {f["id"] for f in denied["findings"]} == {"gpu-count-too-low", "shm-missing"}
        assert "cannot run on the GPUs it requests" in denied["message"]

        k8s.apply(
            {
                "apiVersion": constants.API_VERSION,
                "kind": constants.POLICY_KIND,
                "metadata": {"name": "trial", "namespace": ns},
                "spec": {"selector": {"matchLabels": {"app": "vllm-bad"}}, "action": "Warn"},
            }
        )
        warned = kubectl_plugin(k8s, "audit", "-n", ns, "-o", "json")
        assert warned.returncode == 0, warned.stderr
        doc = json.loads(warned.stdout)
        assert doc["counts"] == {"deny": 0, "warn": 1, "admit": 1}
        (item,) = [i for i in doc["items"] if i["name"] == "vllm-bad"]
        assert (item["policy"], item["action"], item["admission"]) == ("trial", "Warn", "warn")

        # other tests' namespaces may hold workloads and policies of their own
        everywhere = kubectl_plugin(k8s, "audit", "-A", "--default-action", "Audit")
        assert everywhere.returncode in (0, 1), everywhere.stderr
        assert "Deployment/vllm-bad" in everywhere.stdout
        both = kubectl_plugin(k8s, "audit", "-n", ns, "-A")
        assert both.returncode == 2
        assert "give -n NAMESPACE or -A, not both" in both.stderr
    finally:
        k8s.delete_namespace(ns)
