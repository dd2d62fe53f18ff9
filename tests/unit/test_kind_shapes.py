"""Objects their own kind's CRD rejects are named as invalid at the field (issue 35 item
4), not read as something else; the required fields are the upstream CRDs' (the oracle:
tests/data/crds, verbatim)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_rules_support import check, ids

from preflight_operator.core.rules import FAIL, crdgroups, kinds, servingstacks

DATA = Path(__file__).parents[1] / "data"
CRDS = DATA / "crds"


def crd_required(rel: str, version: str) -> set[str]:
    """Every dotted path the CRD's schema marks required (objects only, no arrays)."""
    crd = next(d for d in yaml.safe_load_all((CRDS / rel).read_text()) if d)
    schema = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    found: set[str] = set()

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key in node.get("required", []):
            found.add(f"{prefix}{key}")
        for key, child in (node.get("properties") or {}).items():
            if isinstance(child, dict) and child.get("type") == "object":
                walk(child, f"{prefix}{key}.")

    walk(schema["schema"]["openAPIV3Schema"], "")
    return found


@pytest.mark.parametrize(
    ("rel", "version", "ours"),
    [
        ("lws/leaderworkerset.x-k8s.io_leaderworkersets.yaml", "v1", kinds._LWS_REQUIRED),
        (
            "production-stack/production-stack.vllm.ai_vllmruntimes.yaml",
            "v1alpha1",
            (*servingstacks._VLLM_RUNTIME_REQUIRED, "spec.model.modelURL"),
        ),
        (
            "kthena/workload.serving.volcano.sh_modelservings.yaml",
            "v1alpha1",
            ("spec.template", "spec.template.roles"),
        ),
    ],
)
def test_what_we_call_required_the_crd_requires(rel: str, version: str, ours: Any) -> None:
    assert set(ours) <= crd_required(rel, version)


def test_a_role_needs_what_the_modelserving_crd_requires() -> None:
    crd = next(
        d
        for d in yaml.safe_load_all(
            (CRDS / "kthena/workload.serving.volcano.sh_modelservings.yaml").read_text()
        )
        if d
    )
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    role = schema["properties"]["spec"]["properties"]["template"]["properties"]["roles"]["items"]
    assert set(role["required"]) == {"name", "entryTemplate", "workerReplicas"}
    assert crdgroups._model_serving_invalid({"spec": {"template": {"roles": [{}]}}}) is not None


def vllm_pod() -> dict[str, Any]:
    return {
        "containers": [
            {
                "name": "vllm",
                "image": "vllm/vllm-openai:v0.10.1",
                "args": ["m", "--tensor-parallel-size", "2"],
                "resources": {"limits": {"nvidia.com/gpu": 2}},
            }
        ]
    }


def test_a_leaderworkerset_without_its_worker_template_is_invalid() -> None:
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "x"},
        "spec": {"leaderWorkerTemplate": {"size": 2, "leaderTemplate": {"spec": vllm_pod()}}},
    }
    (result,) = check(lws)
    assert ids(result) == ["manifest-invalid"]
    (f,) = result.findings
    assert f.severity == FAIL
    assert f.field == "spec.leaderWorkerTemplate.workerTemplate"
    assert "workerTemplate" in f.fix
    # the same object with its worker template is judged
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"] = {"spec": vllm_pod()}
    assert "manifest-invalid" not in [i for r in check(lws) for i in ids(r)]
    # an LWS that runs no vLLM is not ours to name
    del lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"] = {
        "spec": {"containers": [{"name": "web", "image": "nginx"}]}
    }
    assert check(lws) == []


def test_a_first_layout_vllm_runtime_is_invalid_with_the_moves_as_fix() -> None:
    rel = DATA / "realworld" / "production-stack" / "vllmruntime-sample-first-layout.yaml"
    (result,) = check(yaml.safe_load(rel.read_text()))
    assert ids(result) == ["manifest-invalid"]
    (f,) = result.findings
    assert f.field == "spec.vllmConfig"
    assert "spec.tensorParallelSize to spec.vllmConfig.tensorParallelSize" in f.fix
    assert "spec.resources to spec.deploymentConfig.resources" in f.fix


def test_a_modelserving_role_without_an_entry_template_is_invalid() -> None:
    serving = {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": "m", "namespace": "ns"},
        "spec": {
            "template": {
                "roles": [
                    {"name": "prefill", "workerReplicas": 0, "entryTemplate": {"spec": vllm_pod()}},
                    {"name": "decode", "workerReplicas": 0, "workerTemplate": {"spec": vllm_pod()}},
                ]
            }
        },
    }
    (result,) = check(serving)
    (f,) = result.findings
    assert (f.id, f.field) == ("manifest-invalid", "spec.template.roles[1].entryTemplate")


def test_the_first_layout_moves_are_where_the_crd_has_the_fields() -> None:
    crd = next(
        d
        for d in yaml.safe_load_all(
            (CRDS / "production-stack/production-stack.vllm.ai_vllmruntimes.yaml").read_text()
        )
        if d
    )
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    for field, section in servingstacks._VLLM_RUNTIME_OLD.items():
        assert field not in spec["properties"], field
        assert field in spec["properties"][section]["properties"], (field, section)
