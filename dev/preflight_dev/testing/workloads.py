"""Objects the e2e tests make again and again: read one back, a PreflightPolicy the
operator has taken, the example vLLM Deployment placed on a node, its injected pods.

Why here: five e2e files each built the same policy-then-Deployment setup by hand (and
seven defined the same ``get_json``); one definition keeps what "the operator has the
policy" means the same everywhere (its Valid condition written), which is a condition to
wait for, not a moment to sleep through.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from preflight_dev.testing.base import Cluster
from preflight_dev.testing.wait import wait_for
from preflight_operator.core import constants

# dev/preflight_dev/testing/workloads.py -> the repository's tests/data/manifests
MANIFESTS = Path(__file__).resolve().parents[3] / "tests" / "data" / "manifests"


def get_json(cluster: Cluster, *args: str) -> Any:
    """``kubectl get ARGS -o json``, decoded."""
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def apply_policy(cluster: Cluster, namespace: str, name: str, spec: dict[str, Any]) -> None:
    """Applies a PreflightPolicy and returns once the operator has it (its Valid condition
    is written)."""
    cluster.apply(
        {
            "apiVersion": constants.API_VERSION,
            "kind": constants.POLICY_KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    )
    wait_for(
        lambda: (get_json(cluster, "preflightpolicy", name, "-n", namespace)
                 .get("status", {}).get("conditions")),
        what=f"PreflightPolicy {namespace}/{name}'s Valid condition",
    )  # fmt: skip


def example_deployment(
    name: str,
    namespace: str,
    *,
    node: str | None = None,
    image: str | None = None,
    manifest: str = "good-tp2-deployment.yaml",
) -> dict[str, Any]:
    """The Deployment of ``tests/data/manifests/<manifest>`` renamed, labelled
    ``app=<name>`` (workload, selector and template: policies select by it), optionally
    pinned to ``node`` and to ``image``."""
    deployment: dict[str, Any] = next(
        copy.deepcopy(d)
        for d in yaml.safe_load_all((MANIFESTS / manifest).read_text())
        if d["kind"] == "Deployment"
    )
    labels = {"app": name}
    deployment["metadata"] = {"name": name, "namespace": namespace, "labels": dict(labels)}
    deployment["spec"]["selector"] = {"matchLabels": dict(labels)}
    template = deployment["spec"]["template"]
    template.setdefault("metadata", {})["labels"] = dict(labels)
    if node is not None:
        template["spec"]["nodeName"] = node
    if image is not None:
        template["spec"]["containers"][0]["image"] = image
    return deployment


def injected_pods(
    cluster: Cluster, namespace: str, app: str, but: str = ""
) -> list[dict[str, Any]]:
    """The live pods labelled ``app=<app>`` that the webhook injected (none being deleted),
    except the one named ``but``."""
    items = get_json(
        cluster, "pods", "-n", namespace, "-l", f"app={app},{constants.INJECTED_POD_SELECTOR}"
    )["items"]
    return [
        p
        for p in items
        if p["metadata"]["name"] != but and not p["metadata"].get("deletionTimestamp")
    ]
