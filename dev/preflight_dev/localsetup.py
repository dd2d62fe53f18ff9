"""What the chart would install, for a local control plane (the demo, e2e tests, benchmarks).

The CRDs are read from the chart (one source of truth); the webhook configurations mirror
the chart's (two entries per webhook: opted-in namespaces, and opted-in objects elsewhere)
but point at ``https://127.0.0.1:PORT`` with a test CA, because a local API server has no
Service routing.
LeaderWorkerSet and the wrapper kinds (InferenceService, RayService, ...) use the upstream
CRDs kept verbatim under tests/data/crds, so the API server validates and prunes
objects as a real cluster with those projects installed would.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from preflight_dev.testing.base import Cluster
from preflight_dev.testing.wait import wait_for
from preflight_operator.core import constants, failclosedscope
from preflight_operator.core.workloads import TEMPLATE_KINDS, WRAPPER_KINDS

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "charts" / "vllm-preflight" / "crds"
WEBHOOK_CONFIGURATION_NAME = "vllm-preflight-local"


def chart_crds() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(CRD_DIR.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    return docs


def install_crds(cluster: Cluster, *, lws: bool = True, wrappers: bool = False) -> None:
    """The chart's CRDs and, for tests, upstream CRDs verbatim
    from tests/data/crds: LeaderWorkerSet (``lws``) and the wrapper kinds (``wrappers``:
    KServe, KubeRay, AIBrix, production-stack, KubeAI, Dynamo, KAITO, Kthena), applied and
    waited for until the API server serves them (Established). OME's two runtime CRDs
    (1.7 MB each) are not among them: with them the API server's OpenAPI v2 document grew
    past what kubectl's client-side validation fetched in its 32 s on this machine
    (tests/e2e/test_ome_runtimes.py applies them on a plane of its own)."""
    crds = chart_crds()
    cluster.apply(*crds)
    names = [f"crd/{crd['metadata']['name']}" for crd in crds]
    wait_established(cluster, names)
    apply_upstream_crds(cluster, *upstream_crd_files(lws=lws, wrappers=wrappers))


def apply_upstream_crds(cluster: Cluster, *paths: Path) -> None:
    """Upstream CRD files (tests/data/crds, verbatim), applied and waited for until the API
    server serves them (Established). Server-side apply: most of them exceed the 256 KiB
    annotation that client-side apply keeps (last-applied-configuration) and would be
    refused."""
    if not paths:
        return
    files = [arg for path in paths for arg in ("-f", str(path))]
    applied = cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=vllm-preflight-tests",
        "-o", "name", *files, timeout=300,
    )  # fmt: skip
    wait_established(cluster, applied.stdout.split())


def wait_established(cluster: Cluster, names: list[str], timeout: float = 180.0) -> None:
    """Until every CRD says Established=True. Not `kubectl wait`: on a busy machine it can
    run before the CRD has any status and then exits at once with `.status.conditions
    accessor error: <nil>` instead of waiting (issue 28)."""

    def pending() -> list[str]:
        out = cluster.kubectl("get", *names, "-o", "json", timeout=60).stdout
        doc = json.loads(out)
        items = doc.get("items", [doc]) if doc.get("kind") == "List" else [doc]
        ready = {
            str(item["metadata"]["name"])
            for item in items
            if any(
                c.get("type") == "Established" and c.get("status") == "True"
                for c in (item.get("status") or {}).get("conditions") or []
            )
        }
        return [n for n in names if n.split("/", 1)[-1] not in ready]

    wait_for(lambda: not pending(), timeout=timeout, interval=0.5, what="CRDs Established")


# Upstream CRDs, verbatim with their source (tests/data/crds/README.md).
UPSTREAM_CRD_DIR = REPO / "tests" / "data" / "crds"
LWS_CRD_FILE = UPSTREAM_CRD_DIR / "lws" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
WRAPPER_CRD_PROJECTS = (
    "kserve", "kuberay", "aibrix", "production-stack", "kubeai", "dynamo", "kaito", "kthena"
)  # fmt: skip


def upstream_crd_files(*, lws: bool = True, wrappers: bool = False) -> list[Path]:
    """The files under tests/data/crds that install_crds applies for these options."""
    files = [LWS_CRD_FILE] if lws else []
    if wrappers:
        for project in WRAPPER_CRD_PROJECTS:
            files += sorted((UPSTREAM_CRD_DIR / project).glob("*.yaml"))
    return files


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
    a webhook that does not answer instead of silently admitting. As the chart, the
    validating configuration also has the fail-closed entry (always Fail) whose namespaces
    under Enforce the operator keeps in step (core/failclosedscope.py), and the namespace entry
    leaves them out."""
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
                    # the serving stacks' kinds, as the chart lists them (workloadKinds)
                    *(
                        {**_rule(k.group, [k.plural], ["CREATE", "UPDATE"]), "apiVersions": ["*"]}
                        for k in (*WRAPPER_KINDS, *TEMPLATE_KINDS)
                    ),
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
    # the chart's fail-closed entry (core/failclosedscope.py): always Fail, the namespaces under
    # Enforce that the operator's Lease holder lists (--webhook-configuration)
    enforce_namespaces, enforce_objects = failclosedscope.fail_closed_selectors(
        label, constants.INJECT_ENABLED, constants.INJECT_DISABLED, excluded_list
    )
    validating.insert(
        0,
        {
            **validating[0],
            "name": failclosedscope.ENFORCE_ENTRY,
            "clientConfig": {
                "url": f"https://127.0.0.1:{port}/{constants.VALIDATE_ENFORCE_WEBHOOK_ID}",
                "caBundle": ca,
            },
            "namespaceSelector": enforce_namespaces,
            "objectSelector": enforce_objects,
            "failurePolicy": "Fail",
        },
    )
    # ... which the namespace entry (failure_policy) leaves out
    first_namespace_selector, _ = _selectors("namespace", label, excluded_list)
    first_namespace_selector["matchExpressions"].append(
        {"key": failclosedscope.NAME_KEY, "operator": "NotIn", "values": [failclosedscope.SENTINEL]}
    )
    validating[1]["namespaceSelector"] = first_namespace_selector
    # the chart's provenance entries: every namespace, injected pods; pods/status apart,
    # always Ignore (every kubelet status write of an injected pod passes there)
    for entry, resources, operations, policy, timeout in (
        ("provenance", ["pods"], ["CREATE", "UPDATE"], failure_policy, 10),
        ("provenance-status", ["pods/status"], ["UPDATE"], "Ignore", 3),
    ):
        validating.append(
            {
                "name": f"{entry}.validate.vllm-preflight.io",
                "clientConfig": {
                    "url": f"https://127.0.0.1:{port}/{constants.PROVENANCE_WEBHOOK_ID}",
                    "caBundle": ca,
                },
                "rules": [_rule("", resources, operations)],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "namespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "NotIn",
                            "values": excluded_list,
                        }
                    ]
                },
                "objectSelector": {
                    "matchExpressions": [{"key": constants.LABEL_INJECTED, "operator": "Exists"}]
                },
                "failurePolicy": policy,
                "timeoutSeconds": timeout,
                "matchPolicy": "Equivalent",
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
