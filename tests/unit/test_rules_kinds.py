"""The registry of workload kinds: Ray clusters (KubeRay, AIBrix), Ray Serve LLM, AIBrix
StormService, and unknown kinds judged by their embedded pod spec."""

from __future__ import annotations

from typing import Any

from test_rules_support import check, finding, ids, pod_spec, vllm

from preflight_operator.core.rules import FAIL, PASS
from preflight_operator.core.rules.kinds import KINDS, kind_spec


def ray_group(gpus: int, replicas: int = 1, **extra: Any) -> dict[str, Any]:
    worker = {"name": "ray-worker", "image": "rayproject/ray:2.52.0"}
    worker["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return {
        "groupName": "gpu",
        "replicas": replicas,
        "rayStartParams": {},
        "template": {"spec": {"containers": [worker]}},
        **extra,
    }


def ray_cluster(
    head_command: str, workers: list[dict[str, Any]], head_gpus: int = 0
) -> dict[str, Any]:
    head = {
        "name": "ray-head",
        "image": "vllm/vllm-openai:v0.11.0",
        "command": ["sh", "-c", head_command],
    }
    if head_gpus:
        head["resources"] = {"limits": {"nvidia.com/gpu": head_gpus}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "ns"},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}},
            "workerGroupSpecs": workers,
        },
    }


SERVE = "ray start --head && vllm serve m -tp 8 --distributed-executor-backend ray"


def test_a_ray_cluster_counts_the_whole_cluster() -> None:
    (fits,) = check(ray_cluster(SERVE, [ray_group(4, replicas=2)]))
    assert fits.verdict == PASS, ids(fits)
    (short,) = check(ray_cluster(SERVE, [ray_group(4, replicas=1)]))
    f = finding(short, "ray-gpu-total")
    assert f.severity == FAIL
    assert "at most 4" in f.message
    assert "spec.workerGroupSpecs[0].template.spec" in f.message


def test_autoscaling_max_replicas_and_num_gpus_count() -> None:
    scaled = ray_cluster(SERVE, [ray_group(4, replicas=1, minReplicas=1, maxReplicas=2)])
    scaled["spec"]["enableInTreeAutoscaling"] = True
    assert check(scaled)[0].verdict == PASS
    hidden = ray_cluster(SERVE, [ray_group(4, replicas=2)], head_gpus=8)
    hidden["spec"]["workerGroupSpecs"][0]["rayStartParams"] = {"num-gpus": "0"}
    hidden["spec"]["headGroupSpec"]["rayStartParams"] = {"num-gpus": "0"}
    assert "ray-gpu-total" in ids(check(hidden)[0])


def test_kuberay_mounts_dev_shm_itself() -> None:
    (result,) = check(ray_cluster(SERVE, [ray_group(8)]))
    assert not [i for i in ids(result) if i.startswith("shm-")]


SERVE_CONFIG = """
applications:
- name: llms
  import_path: ray.serve.llm:build_openai_app
  args:
    llm_configs:
    - model_loading_config: {model_id: qwen, model_source: Qwen/Qwen2.5-7B-Instruct}
      engine_kwargs: {tensor_parallel_size: 4, max_model_len: 1024, enforce_eager: true}
      deployment_config:
        autoscaling_config: {min_replicas: 2, max_replicas: 4}
"""


def ray_service(worker_gpus: int, replicas: int) -> dict[str, Any]:
    cluster = ray_cluster("ray start --head", [ray_group(worker_gpus, replicas=replicas)])
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {"serveConfigV2": SERVE_CONFIG, "rayClusterConfig": cluster["spec"]},
    }


def test_ray_serve_llm_engine_kwargs_are_the_plan() -> None:
    (ok,) = check(ray_service(4, replicas=2))
    assert ok.container == "serve/serve-llm"
    assert ok.verdict == PASS, ids(ok)
    assert ok.plan is not None
    assert ok.plan.tp == 4
    (short,) = check(ray_service(4, replicas=1))
    f = finding(short, "ray-gpu-total")
    assert "x 2 replicas" in f.message  # min_replicas engines of TP=4 each
    where = "spec.serveConfigV2 applications[0].args.llm_configs[0].engine_kwargs"
    assert f.field == f"{where}.tensor_parallel_size"


def test_serve_llm_arguments_are_judged_with_their_field() -> None:
    bad = ray_service(8, 1)
    bad["spec"]["serveConfigV2"] = SERVE_CONFIG.replace(
        "tensor_parallel_size: 4", "tensor_parallel_size: four"
    )
    f = finding(check(bad)[0], "vllm-args-invalid")
    assert f.field.endswith("engine_kwargs.tensor_parallel_size")


def storm_service(gpus: int, tp: int) -> dict[str, Any]:
    role = {
        "name": "prefill",
        "replicas": 1,
        "template": {"spec": pod_spec(vllm("m", "-tp", str(tp), gpus=gpus))},
    }
    return {
        "apiVersion": "orchestration.aibrix.ai/v1alpha1",
        "kind": "StormService",
        "metadata": {"name": "storm", "namespace": "ns"},
        "spec": {"template": {"spec": {"roles": [role]}}},
    }


def test_storm_service_roles_are_judged() -> None:
    assert check(storm_service(2, 2))[0].verdict == PASS
    (bad,) = check(storm_service(1, 2))  # the StormService with TP=2 on one GPU
    assert bad.container == "prefill/vllm"
    assert finding(bad, "gpu-count-too-low").field.startswith("spec.template.spec.roles[0]")


def test_unknown_kinds_with_a_vllm_pod_spec_are_judged_generically() -> None:
    knative = {
        "apiVersion": "serving.knative.dev/v1",
        "kind": "Service",
        "metadata": {"name": "kn", "namespace": "ns"},
        "spec": {"template": {"spec": pod_spec(vllm("m", "-tp", "4", gpus=2))}},
    }
    (result,) = check(knative)
    assert "kind-generic" in ids(result)
    assert "gpu-count-too-low" in ids(result)
    plain = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    assert check(plain) == []


def test_bash_double_dash_before_the_script() -> None:
    container = vllm(command=["/bin/bash", "-lc", "--"], gpus=2)
    container["args"] = ["ulimit -n 65536; vllm serve m -tp 4"]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"template": {"spec": pod_spec(container)}},
    }
    assert "gpu-count-too-low" in ids(check(deployment)[0])


def test_every_kind_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "RULES.md").read_text()
    section = doc.split("## Workload kinds", 1)[1]
    missing = [k.kind for k in KINDS if f"`{k.kind}`" not in section]
    assert missing == []


def test_kinds_are_matched_by_group() -> None:
    assert kind_spec({"apiVersion": "ray.io/v1", "kind": "RayService"}) is not None
    assert kind_spec({"apiVersion": "example.com/v1", "kind": "RayService"}) is None
    assert kind_spec({"kind": "Deployment"}) is not None  # no apiVersion: core kinds only


def model_serving(script: str, gpus: int, shm: str = "256Mi") -> dict[str, Any]:
    """A Kthena ModelServing (an unknown kind): the entry pod of a role runs `script`."""
    leader = {
        "name": "leader",
        "image": "vllm/vllm-openai:v0.10.0",
        "command": ["sh", "-c"],
        "args": [script],
        "resources": {"limits": {"nvidia.com/gpu": gpus}},
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
    }
    shm_volume = {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": shm}}
    worker = {
        "name": "worker",
        "image": "vllm/vllm-openai:v0.10.0",
        "command": ["sh", "-c", "bash multi-node-serving.sh worker --ray_address=$(ENTRY_ADDRESS)"],
        "resources": {"limits": {"nvidia.com/gpu": gpus}},
    }
    role = {
        "name": "prefill",
        "replicas": 1,
        "entryTemplate": {"spec": {"containers": [leader], "volumes": [shm_volume]}},
        "workerReplicas": 1,
        "workerTemplate": {"spec": {"containers": [worker]}},
    }
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": "ms", "namespace": "ns"},
        "spec": {"template": {"roles": [role]}},
    }


def test_an_unknown_kind_whose_pod_starts_a_ray_head_is_not_short() -> None:
    """Kthena's upstream multi-node ModelServing: the entry pod starts a Ray head, then
    `-tp 1 -pp 2` over it and the role's Ray worker, 1 GPU each: never 'World size (2) is
    larger than the number of available GPUs (1)' nor a /dev/shm sized for 2 processes."""
    for head in (
        "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader "
        '--ray_cluster_size="${GROUP_SIZE}"',
        "ray start --head --port=6379",
    ):
        (result,) = check(model_serving(f"{head}\nvllm serve m -tp 1 -pp 2", gpus=1))
        assert result.verdict != FAIL, result.findings
    # a role without workers is one pod, the whole engine: a shortfall is still a failure
    # (with workers, ModelServing is a registered kind since issue 39 and its role's pods
    # are one group read as a LeaderWorkerSet's: test_kthena_kind.py)
    lone = model_serving("vllm serve m -tp 1 -pp 2", gpus=1)
    lone["spec"]["template"]["roles"][0]["workerReplicas"] = 0
    (alone,) = check(lone)
    assert "gpu-count-too-low" in ids(alone)
