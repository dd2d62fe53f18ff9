"""Kthena ModelServing (issue 39): each role is one group of workerReplicas + 1 pods, judged
with the env its controller injects; prefill and decode are separate engines."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from test_rules_support import check, finding, ids

from preflight_operator.core.rules import FAIL, PASS
from preflight_operator.core.rules.kinds import kind_spec, pod_templates

CORPUS = Path(__file__).parents[1] / "data" / "realworld" / "kthena"


def load(name: str) -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load((CORPUS / name).read_text())
    return copy.deepcopy(found)


def test_model_serving_is_a_known_kind() -> None:
    spec = kind_spec(load("modelserving-multi-node.yaml"))
    assert spec is not None
    assert (spec.group, spec.version, spec.family) == (
        "workload.serving.volcano.sh",
        "v1alpha1",
        "kthena",
    )


def test_the_controller_env_and_the_group() -> None:
    obj = load("modelserving-multi-node.yaml")
    entry, worker = pod_templates(obj, None)
    assert entry.injected_env["GROUP_SIZE"] == "2"
    assert (entry.injected_env["WORKER_INDEX"], worker.injected_env["WORKER_INDEX"]) == ("0", "1")
    assert entry.group is not None
    assert entry.group.size == 2
    assert entry.group.size_path == "spec.template.roles[0].workerReplicas"


def test_a_ray_group_is_judged_over_its_pods() -> None:
    """TP 8 x PP 2 over entry + 1 worker of 8 GPUs passes; 4 GPUs a pod fails, as the
    same group in a LeaderWorkerSet does (the group rules run on the entry pod)."""
    obj = load("modelserving-multi-node.yaml")
    (ok,) = check(obj)
    assert ok.verdict == PASS, ids(ok)
    role = obj["spec"]["template"]["roles"][0]
    for key in ("entryTemplate", "workerTemplate"):
        role[key]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "4"
    (bad,) = check(obj)
    f = finding(bad, "lws-gpu-total")
    assert f.severity == FAIL
    assert "spec.template.roles[0]" in f.message + f.field


def test_prefill_and_decode_are_judged_each_on_its_own() -> None:
    obj = load("modelserving-gpu-pd-disaggregation.yaml")
    prefill = obj["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["containers"][0]
    prefill["args"] = [prefill["args"][0].replace("--port", "--tensor-parallel-size 2 --port")]
    results = {r.container: r for r in check(obj)}
    assert "gpu-count-too-low" in ids(results["prefill/prefill"]), results
    assert results["decode/decode"].verdict == PASS


def test_the_injected_env_replaces_the_templates_own() -> None:
    """addEnvVars drops the template's GROUP_SIZE: a DP size read from it is the
    controller's value, workerReplicas + 1."""
    obj = load("modelserving-data-parallel-deployment.yaml")
    role = obj["spec"]["template"]["roles"][0]
    for key in ("entryTemplate", "workerTemplate"):
        container = role[key]["spec"]["containers"][0]
        container.setdefault("env", []).append({"name": "GROUP_SIZE", "value": "7"})
        argv = container["command"]
        argv[argv.index("--data-parallel-size") + 1] = "$(GROUP_SIZE)"
    results = check(obj)
    assert [r.verdict for r in results] == [PASS, PASS], [ids(r) for r in results]
    assert all(r.plan is not None and r.plan.dp == 2 for r in results)
