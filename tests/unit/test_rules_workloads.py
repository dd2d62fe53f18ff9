"""Workload kinds, LeaderWorkerSet groups, --config from ConfigMaps, cluster look-ups."""

from __future__ import annotations

from typing import Any

import pytest
from test_rules_support import (
    SHM_MOUNT,
    SHM_VOLUME,
    check,
    config_map,
    deployment,
    finding,
    ids,
    one,
    pod_spec,
    service,
    vllm,
)

from preflight_operator.core.rules import PASS, ClusterLookup, check_object


@pytest.mark.parametrize(
    ("kind", "wrap", "prefix"),
    [
        ("Pod", lambda s: {"spec": s}, "spec"),
        ("Deployment", lambda s: {"spec": {"template": {"spec": s}}}, "spec.template.spec"),
        ("StatefulSet", lambda s: {"spec": {"template": {"spec": s}}}, "spec.template.spec"),
        ("Job", lambda s: {"spec": {"template": {"spec": s}}}, "spec.template.spec"),
        (
            "CronJob",
            lambda s: {"spec": {"jobTemplate": {"spec": {"template": {"spec": s}}}}},
            "spec.jobTemplate.spec.template.spec",
        ),
    ],
)
def test_kinds_and_paths(kind: str, wrap: Any, prefix: str) -> None:
    obj = {"kind": kind, "metadata": {"name": "x"}, **wrap(pod_spec(vllm("m", "-tp", "2", gpus=1)))}
    result = one(obj)
    assert result.workload == f"{kind}/x"
    assert finding(result, "gpu-count-too-low").field == (
        f'{prefix}.containers[0].resources.limits["nvidia.com/gpu"]'
    )


def lws(leader: dict[str, Any] | None, worker: dict[str, Any], size: int = 2) -> dict[str, Any]:
    template: dict[str, Any] = {"size": size, "workerTemplate": {"spec": worker}}
    if leader is not None:
        template["leaderTemplate"] = {"spec": leader}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "big", "namespace": "ns"},
        "spec": {"replicas": 1, "leaderWorkerTemplate": template},
    }


def ray_worker(gpus: int, mounts: tuple[dict[str, Any], ...] = (SHM_MOUNT,)) -> dict[str, Any]:
    return vllm(
        gpus=gpus,
        command=("sh", "-c", "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"),
        image="vllm/vllm-openai:v0.11.0",
        mounts=mounts,
    )


def ray_leader(script_args: str, gpus: int) -> dict[str, Any]:
    script = (
        "ray start --head --port=6379 && "
        f"python3 -m vllm.entrypoints.openai.api_server --model m {script_args}"
    )
    return vllm(gpus=gpus, command=("sh", "-c", script))


def test_lws_ray_group_that_fits_passes() -> None:
    obj = lws(
        pod_spec(ray_leader("-tp 8 -pp 2 --distributed-executor-backend ray", 8)),
        pod_spec(ray_worker(8)),
    )
    result = one(obj)
    assert result.container == "leader/vllm"
    assert result.verdict == PASS, result.findings
    assert (result.gpus_needed, result.gpus_requested) == (8, 8)


def test_lws_ray_group_short_of_gpus() -> None:
    obj = lws(pod_spec(ray_leader("-tp 8 -pp 2", 8)), pod_spec(ray_worker(4)))
    result = one(obj)
    f = finding(result, "lws-gpu-total")
    assert "needs 16 GPUs" in f.message
    assert f.field.startswith("spec.leaderWorkerTemplate.workerTemplate.spec")
    assert "gpu-count-too-low" not in ids(result)  # the group rule replaces it


def test_lws_ray_group_size_from_the_injected_variable() -> None:
    obj = lws(
        pod_spec(ray_leader("-tp 4 -pp $(LWS_GROUP_SIZE)", 4)), pod_spec(ray_worker(4)), size=3
    )
    result = one(obj)
    assert result.plan is not None
    assert result.plan.pp == 3
    assert result.verdict == PASS


def test_lws_ray_leader_without_gpus_holds_no_worker() -> None:
    leader = ray_leader("-tp 8 -pp 2", 0)
    leader["resources"] = {}
    leader["volumeMounts"] = []
    result = one(lws(pod_spec(leader, volumes=()), pod_spec(ray_worker(8)), size=3))
    assert result.verdict == PASS, result.findings
    assert (result.gpus_needed, result.gpus_requested) == (6, None)


def test_lws_worker_without_shm_is_reported() -> None:
    obj = lws(
        pod_spec(ray_leader("-tp 8 -pp 2", 8)),
        pod_spec(ray_worker(8, mounts=()), volumes=()),
    )
    f = finding(one(obj), "shm-missing")
    assert f.field == "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].volumeMounts"


def test_lws_multiprocess_nodes() -> None:
    image = "vllm/vllm-openai:v0.11.2"  # --nnodes came in 0.11.1 (vllm_versions.py)
    leader = vllm(
        "m", "-tp", "16", "--nnodes", "$(LWS_GROUP_SIZE)", "--node-rank", "0", gpus=8, image=image
    )
    worker = vllm(
        "m",
        "-tp",
        "16",
        "--nnodes",
        "2",
        "--node-rank",
        "$(LWS_WORKER_INDEX)",
        "--headless",
        gpus=8,
        image=image,
    )
    results = check(lws(pod_spec(leader), pod_spec(worker)))
    assert [r.container for r in results] == ["leader/vllm", "worker/vllm"]
    assert all(r.verdict == PASS for r in results), [r.findings for r in results]
    assert [r.gpus_needed for r in results] == [8, 8]


def test_lws_nnodes_mismatch() -> None:
    leader = vllm("m", "-tp", "16", "--nnodes", "4", gpus=4)
    result = check(lws(pod_spec(leader), pod_spec(ray_worker(4))))[0]
    f = finding(result, "lws-nnodes-mismatch")
    assert "spec.leaderWorkerTemplate.size" in f.message


def test_lws_without_a_leader_template_and_wrong_api_group() -> None:
    worker = vllm("m", "-tp", "2", gpus=2)
    results = check(lws(None, pod_spec(worker), size=1))
    assert [r.container for r in results] == ["leader/vllm"]
    other = lws(None, pod_spec(worker))
    other["apiVersion"] = "example.com/v1"
    # not the LeaderWorkerSet kind: judged generically by its embedded pod spec, and said so
    (generic,) = check(other)
    assert generic.container == "vllm"
    assert [f.id for f in generic.findings] == ["kind-generic"]
    assert generic.verdict == "pass"


# -- --config -------------------------------------------------------------------------------


def with_config(
    mount: dict[str, Any], volume: dict[str, Any], path: str = "/etc/vllm/config.yaml"
) -> dict[str, Any]:
    container = vllm("m", "--config", path, gpus=2, mounts=(SHM_MOUNT, mount))
    return deployment(pod_spec(container, volumes=(SHM_VOLUME, volume)))


CFG_MOUNT = {"name": "cfg", "mountPath": "/etc/vllm"}
CFG_VOLUME = {"name": "cfg", "configMap": {"name": "vllm-config"}}


def test_config_from_a_mounted_configmap() -> None:
    cm = config_map("vllm-config", {"config.yaml": "tensor-parallel-size: 4\n"})
    result = one(with_config(CFG_MOUNT, CFG_VOLUME), cm)
    assert result.plan is not None
    assert result.plan.tp == 4
    f = finding(result, "gpu-count-too-low")
    assert 'ConfigMap/vllm-config data["config.yaml"]' in f.fix


def test_config_with_subpath_items_and_projection() -> None:
    cm = config_map("vllm-config", {"serve": "tensor_parallel_size: 2\n"})
    sub = {"name": "cfg", "mountPath": "/etc/vllm/config.yaml", "subPath": "serve"}
    assert one(with_config(sub, CFG_VOLUME), cm).verdict == PASS
    items = {
        "name": "cfg",
        "configMap": {"name": "vllm-config", "items": [{"key": "serve", "path": "config.yaml"}]},
    }
    assert one(with_config(CFG_MOUNT, items), cm).verdict == PASS
    projected = {
        "name": "cfg",
        "projected": {
            "sources": [
                {
                    "configMap": {
                        "name": "vllm-config",
                        "items": [{"key": "serve", "path": "config.yaml"}],
                    }
                }
            ]
        },
    }
    assert one(with_config(CFG_MOUNT, projected), cm).verdict == PASS


def test_config_not_in_the_set_is_unresolved() -> None:
    result = one(with_config(CFG_MOUNT, CFG_VOLUME))
    assert ids(result) == ["vllm-config-unresolved"]


def test_config_in_the_image_is_unresolved() -> None:
    container = vllm("m", "--config", "/app/c.yaml", gpus=1)
    assert ids(one(deployment(pod_spec(container)))) == ["vllm-config-unresolved"]


def test_config_with_bad_yaml_or_missing_key_is_invalid() -> None:
    cm = config_map("vllm-config", {"config.yaml": "tensor-parallel-size: [4\n"})
    assert "vllm-args-invalid" in ids(one(with_config(CFG_MOUNT, CFG_VOLUME), cm))
    cm = config_map("vllm-config", {"other.yaml": "x: 1\n"})
    assert "vllm-args-invalid" in ids(one(with_config(CFG_MOUNT, CFG_VOLUME), cm))


def test_command_line_wins_over_config() -> None:
    cm = config_map("vllm-config", {"config.yaml": "tensor-parallel-size: 4\n"})
    container = vllm(
        "m", "--config", "/etc/vllm/config.yaml", "-tp", "2", gpus=2, mounts=(SHM_MOUNT, CFG_MOUNT)
    )
    obj = deployment(pod_spec(container, volumes=(SHM_VOLUME, CFG_VOLUME)))
    assert one(obj, cm).verdict == PASS


# -- the webhook's entry point ---------------------------------------------------------------


def test_check_object_uses_the_cluster_lookup() -> None:
    cm = config_map("vllm-config", {"config.yaml": "tensor-parallel-size: 4\n"})
    calls: list[tuple[str, str]] = []

    def get_cm(namespace: str, name: str) -> dict[str, Any] | None:
        calls.append((namespace, name))
        return cm if name == "vllm-config" else None

    def services(namespace: str) -> list[dict[str, Any]]:
        return [service("vllm", namespace=namespace)]

    lookup = ClusterLookup(config_map=get_cm, services=services)
    results = check_object(with_config(CFG_MOUNT, CFG_VOLUME), lookup=lookup)
    assert ("ns", "vllm-config") in calls
    assert {"gpu-count-too-low", "vllm-port-service"} <= set(ids(results[0]))


def test_a_failing_lookup_is_unknown_not_a_crash() -> None:
    def broken(*_: str) -> None:
        raise TimeoutError("informer not synced")

    lookup = ClusterLookup(config_map=broken, services=broken)  # type: ignore[arg-type]
    results = check_object(with_config(CFG_MOUNT, CFG_VOLUME), lookup=lookup)
    assert ids(results[0]) == ["vllm-config-unresolved"]


def test_check_object_related_objects_and_non_vllm() -> None:
    cm = config_map("vllm-config", {"config.yaml": "tensor-parallel-size: 2\n"})
    assert check_object(with_config(CFG_MOUNT, CFG_VOLUME), related=[cm])[0].verdict == PASS
    assert check_object({"kind": "Service"}) == []
    assert check_object("not a dict") == []  # type: ignore[arg-type]
