"""vLLM as a Kubernetes native sidecar (an init container with ``restartPolicy: Always``,
KEP-753, on by default since Kubernetes 1.29): it runs beside the main containers for the
pod's whole life, so the rules judge it exactly as a container (found in the real-world
corpus: accelerated-platforms/jobset-offline-batch-vllm-sidecar.yaml). An ordinary init
container runs to completion before the main containers start: it is no serving vLLM.

Metamorphic relation: moving the vLLM container of a known manifest into a native sidecar
keeps its verdict and rule ids; the field paths name the sidecar's real place."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_operator.core.injection import Skip
from preflight_operator.core.rules.engine import check_objects

MANIFESTS = Path(__file__).parents[1] / "data" / "manifests"
KNOWN = ("good-tp2-deployment.yaml", "bad-tp4-deployment.yaml", "big-tp8-deployment.yaml")


def _load(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]


def _to_init(objs: list[dict[str, Any]], restart: str | None) -> list[dict[str, Any]]:
    """The vLLM container moved to the second init container (an ordinary one first)."""
    out = copy.deepcopy(objs)
    for obj in out:
        if obj.get("kind") != "Deployment":
            continue
        spec = obj["spec"]["template"]["spec"]
        vllm = spec["containers"].pop(0)
        if restart is not None:
            vllm["restartPolicy"] = restart
        spec["initContainers"] = [
            {"name": "fetch", "image": "busybox", "command": ["sh", "-c", "true"]},
            vllm,
        ]
        spec["containers"].append({"name": "client", "image": "busybox", "command": ["sleep"]})
    return out


def _summary(results: list[Any]) -> list[tuple[str, str, list[str]]]:
    return [(r.workload, r.verdict, sorted(f.id for f in r.findings)) for r in results]


@pytest.mark.parametrize("name", KNOWN)
def test_native_sidecar_keeps_verdict_and_rules(name: str) -> None:
    before = check_objects(_load(name))
    assert before, name
    after = check_objects(_to_init(_load(name), "Always"))
    assert _summary(after) == _summary(before)
    for result in after:
        assert result.container == "vllm"
        assert result.gpus_requested == before[0].gpus_requested
        for finding in result.findings:
            assert ".containers[0]" not in finding.field, finding
            if ".spec.template.spec." in finding.field and "initContainers" not in finding.field:
                assert "volumes" in finding.field or finding.field.endswith(".spec"), finding


def test_native_sidecar_field_paths_name_the_sidecar() -> None:
    (result,) = check_objects(_to_init(_load("bad-tp4-deployment.yaml"), "Always"))
    fields = [f.field for f in result.failures]
    assert fields, result
    assert any(f.startswith("spec.template.spec.initContainers[1]") for f in fields), fields


@pytest.mark.parametrize("restart", [None, "Never", "OnFailure"])
def test_ordinary_init_container_is_not_the_server(restart: str | None) -> None:
    assert check_objects(_to_init(_load("bad-tp4-deployment.yaml"), restart)) == []


def test_sidecar_gpu_is_its_own() -> None:
    """TP 4 in a native sidecar that asks 1 GPU fails, whatever the main containers ask."""
    objs = _to_init(_load("good-tp2-deployment.yaml"), "Always")
    spec = objs[0]["spec"]["template"]["spec"]
    sidecar = spec["initContainers"][1]
    sidecar["args"] = ["m", "--tensor-parallel-size", "4"]
    sidecar["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    spec["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 4}}
    (result,) = check_objects(objs)
    assert result.verdict == "fail"
    assert result.gpus_requested == 1


def _sidecar_pod() -> dict[str, Any]:
    from test_inject import vllm_pod

    pod = vllm_pod()
    spec = pod["spec"]
    vllm = spec["containers"].pop(0)
    vllm["restartPolicy"] = "Always"
    spec["initContainers"].append(vllm)
    spec["containers"].append({"name": "client", "image": "busybox", "command": ["sleep"]})
    return pod


def test_injector_skips_a_vllm_sidecar_with_its_reason() -> None:
    """The check must run before vLLM starts; a native sidecar starts in initContainers
    order, so the injector does not place the check there (yet): a clean Skip, never a
    crash nor another container."""
    from test_inject import inject

    result = inject(_sidecar_pod())
    assert isinstance(result, Skip)
    assert result.reason == "vllm-in-sidecar"


def test_webhook_admits_a_vllm_sidecar_pod_unchanged() -> None:
    from test_inject import mutate, service

    svc = service()
    assert mutate(_sidecar_pod(), svc) == []
    skip = asyncio.run(svc.mutate_pod(_sidecar_pod()))
    assert isinstance(skip, Skip), skip
    assert skip.reason == "vllm-in-sidecar", skip
