"""What the chart would install, for a local control plane (the demo, e2e tests, benchmarks).

The CRDs are read from the chart (one source of truth); the webhook configurations mirror
the chart's (two entries per webhook: opted-in namespaces, and opted-in objects elsewhere)
but point at ``https://127.0.0.1:PORT`` with a test CA, because a local API server has no
Service routing. kopf's ClusterKopfPeering CRD is kopf's own, as kopf documents it.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from preflight_operator import constants
from preflight_operator.testing.base import Cluster

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "charts" / "vllm-preflight" / "crds"
WEBHOOK_CONFIGURATION_NAME = "vllm-preflight-local"


def chart_crds() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(CRD_DIR.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    return docs


def install_crds(cluster: Cluster, *, lws: bool = True) -> None:
    """The chart's CRDs, kopf's ClusterKopfPeering and (for tests) a LeaderWorkerSet CRD,
    applied and waited for until the API server serves them."""
    crds = [*chart_crds(), CLUSTER_PEERING_CRD, *([LWS_CRD] if lws else [])]
    cluster.apply(*crds)
    names = [f"crd/{crd['metadata']['name']}" for crd in crds]
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)


def _preserving_crd(
    group: str, kind: str, plural: str, scope: str, versions: Iterable[str], **extra: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), **extra},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": i == 0,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                    **({"subresources": {"status": {}}} if kind == "LeaderWorkerSet" else {}),
                }
                for i, version in enumerate(versions)
            ],
        },
    }


# kopf's cluster-scoped peering resource (kopf.dev/v1, as in kopf's docs).
CLUSTER_PEERING_CRD = _preserving_crd(
    "kopf.dev", "ClusterKopfPeering", "clusterkopfpeerings", "Cluster", ["v1"]
)
# Enough of LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) for admission and watches.
LWS_CRD = _preserving_crd(
    "leaderworkerset.x-k8s.io",
    "LeaderWorkerSet",
    "leaderworkersets",
    "Namespaced",
    ["v1"],
    shortNames=["lws"],
)


def _selectors(scope: str, label: str, excluded: list[str]) -> tuple[dict[str, Any], ...]:
    namespace_expr = (
        {"key": label, "operator": "In", "values": [constants.INJECT_ENABLED]}
        if scope == "namespace"
        else {
            "key": label,
            "operator": "NotIn",
            "values": [constants.INJECT_ENABLED, constants.INJECT_DISABLED],
        }
    )
    object_expr = (
        {"key": label, "operator": "NotIn", "values": [constants.INJECT_DISABLED]}
        if scope == "namespace"
        else {"key": label, "operator": "In", "values": [constants.INJECT_ENABLED]}
    )
    namespace_selector = {
        "matchExpressions": [
            namespace_expr,
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": excluded},
        ]
    }
    return namespace_selector, {"matchExpressions": [object_expr]}


def webhook_configurations(
    port: int,
    ca_pem: bytes,
    *,
    label: str = constants.LABEL_INJECT,
    excluded: Iterable[str] = sorted(constants.SYSTEM_NAMESPACES),
    failure_policy: str = "Fail",
    name: str = WEBHOOK_CONFIGURATION_NAME,
) -> list[dict[str, Any]]:
    """Validating and mutating configurations calling the operator on 127.0.0.1:port.

    ``failure_policy`` is Fail here (the chart defaults to Ignore) so that a test notices
    a webhook that does not answer instead of silently admitting."""
    ca = base64.b64encode(ca_pem).decode("ascii")
    excluded_list = sorted(set(excluded))
    validating, mutating = [], []
    for scope in ("namespace", "object"):
        namespace_selector, object_selector = _selectors(scope, label, excluded_list)
        common = {
            "admissionReviewVersions": ["v1"],
            "namespaceSelector": namespace_selector,
            "objectSelector": object_selector,
            "failurePolicy": failure_policy,
            "timeoutSeconds": 10,
            "matchPolicy": "Equivalent",
        }
        validating.append(
            {
                "name": f"{scope}.validate.vllm-preflight.io",
                "clientConfig": {
                    "url": f"https://127.0.0.1:{port}/{constants.VALIDATE_WEBHOOK_ID}",
                    "caBundle": ca,
                },
                "rules": [
                    _rule("apps", ["deployments", "statefulsets"], ["CREATE", "UPDATE"]),
                    _rule("batch", ["jobs"], ["CREATE", "UPDATE"]),
                    _rule("leaderworkerset.x-k8s.io", ["leaderworkersets"], ["CREATE", "UPDATE"]),
                    _rule("", ["pods"], ["CREATE", "UPDATE"]),
                ],
                "sideEffects": "NoneOnDryRun",
                **common,
            }
        )
        mutating.append(
            {
                "name": f"{scope}.mutate-pods.vllm-preflight.io",
                "clientConfig": {
                    "url": f"https://127.0.0.1:{port}/{constants.MUTATE_PODS_WEBHOOK_ID}",
                    "caBundle": ca,
                },
                "rules": [_rule("", ["pods"], ["CREATE"])],
                "sideEffects": "None",
                "reinvocationPolicy": "Never",
                **common,
            }
        )
    meta = {"name": name, "labels": {"app.kubernetes.io/part-of": constants.COMPONENT}}
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": meta,
            "webhooks": validating,
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": meta,
            "webhooks": mutating,
        },
    ]


def _rule(group: str, resources: list[str], operations: list[str]) -> dict[str, Any]:
    return {
        "apiGroups": [group],
        "apiVersions": ["v1"],
        "operations": operations,
        "resources": resources,
        "scope": "Namespaced",
    }
