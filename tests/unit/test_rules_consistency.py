"""LeaderWorkerSet consistency: leader and worker templates must build the same engine."""

from __future__ import annotations

from typing import Any

from test_rules_support import finding, ids, pod_spec, vllm

from preflight_operator.core.rules import check_object, check_objects
from preflight_operator.core.rules.ruleset.consistency import nccl_env_name, untracked_option
from preflight_operator.core.rules.vocabulary import ContainerResult

LEADER = "spec.leaderWorkerTemplate.leaderTemplate.spec"
WORKER = "spec.leaderWorkerTemplate.workerTemplate.spec"


def lws(leader: dict[str, Any], worker: dict[str, Any], size: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "big", "namespace": "ns"},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": size,
                "leaderTemplate": {"spec": leader},
                "workerTemplate": {"spec": worker},
            },
        },
    }


def leader_result(obj: dict[str, Any]) -> ContainerResult:
    results = [r for r in check_object(obj) if r.container.startswith("leader/")]
    assert len(results) == 1, results
    return results[0]


def mp(rank: str, *extra: str, headless: bool = True, **kw: Any) -> dict[str, Any]:
    """vLLM multiprocessing over nodes, as vLLM's --nnodes docs write it."""
    args = ["m", "-tp", "8", "-pp", "3", "--nnodes", "$(LWS_GROUP_SIZE)", "--node-rank", rank]
    args += ["--master-addr", "$(LWS_LEADER_ADDRESS)"]
    if headless:
        args.append("--headless")
    return vllm(*args, *extra, gpus=8, **kw)


def mp_leader(*extra: str, **kw: Any) -> dict[str, Any]:
    return mp("0", *extra, headless=False, **kw)


def mp_worker(*extra: str, **kw: Any) -> dict[str, Any]:
    return mp("$(LWS_WORKER_INDEX)", *extra, **kw)


def test_identical_mp_group_has_no_consistency_finding() -> None:
    result = leader_result(lws(pod_spec(mp_leader()), pod_spec(mp_worker())))
    assert not [i for i in ids(result) if i.startswith("lws-")], result.findings


def test_tp_mismatch_fails_with_both_values_and_paths() -> None:
    worker = mp_worker()
    worker["args"][2] = "4"  # -tp 4 on the workers
    result = leader_result(lws(pod_spec(mp_leader()), pod_spec(worker)))
    found = finding(result, "lws-args-mismatch")
    assert found.severity == "fail"
    assert "8 on the leader" in found.message
    assert "4 on the workers" in found.message
    assert found.field == f"{LEADER}.containers[0].args[1]"
    assert f"{WORKER}.containers[0].args[1]" in found.message


def test_tp_left_to_default_on_workers_fails() -> None:
    worker = mp_worker()
    del worker["args"][1:3]
    result = leader_result(lws(pod_spec(mp_leader()), pod_spec(worker)))
    found = finding(result, "lws-args-mismatch")
    assert "vLLM default" in found.message


def test_model_dtype_quantization_max_len_mismatch_fail() -> None:
    leader = mp_leader("--dtype", "bfloat16", "--max-model-len", "32768", "-q", "fp8")
    worker = mp_worker("--dtype", "float16", "--max-model-len", "8192", "-q", "awq")
    worker["args"][0] = "other-model"
    result = leader_result(lws(pod_spec(leader), pod_spec(worker)))
    messages = [f.message for f in result.findings if f.id == "lws-args-mismatch"]
    for label in ("the model", "--dtype", "--max-model-len", "--quantization"):
        assert any(m.startswith(label) for m in messages), (label, messages)


def test_str_option_on_one_side_only_warns() -> None:
    result = leader_result(lws(pod_spec(mp_leader("--dtype", "bfloat16")), pod_spec(mp_worker())))
    found = finding(result, "lws-args-default")
    assert found.severity == "warn"
    assert "--dtype" in found.message
    assert "lws-args-mismatch" not in ids(result)


def test_untracked_revision_compared_by_exact_spelling() -> None:
    leader = mp_leader("--revision", "abc")
    worker = mp_worker("--revision=def")
    result = leader_result(lws(pod_spec(leader), pod_spec(worker)))
    found = finding(result, "lws-args-mismatch")
    assert "'abc'" in found.message
    assert "'def'" in found.message
    assert untracked_option(("vllm", "serve", "--revision_x", "1"), "--revision") == (None, None)
    assert untracked_option(("--tokenizer_revision", "r"), "--tokenizer-revision") == ("r", 0)


def test_literal_node_rank_shared_by_workers_fails() -> None:
    worker = mp("1")  # every worker says rank 1: worker 2 collides
    result = leader_result(lws(pod_spec(mp_leader()), pod_spec(worker)))
    found = finding(result, "lws-rank-mismatch")
    assert "worker 2" in found.message
    assert "--node-rank 1" in found.message


def test_worker_without_master_addr_fails() -> None:
    worker = mp_worker()
    i = worker["args"].index("--master-addr")
    del worker["args"][i : i + 2]
    result = leader_result(lws(pod_spec(mp_leader()), pod_spec(worker)))
    found = finding(result, "lws-rank-mismatch")
    assert "127.0.0.1" in found.message
    assert "--master-addr" in found.fix


def test_worker_not_headless_warns() -> None:
    worker = mp("$(LWS_WORKER_INDEX)", headless=False)
    result = leader_result(lws(pod_spec(mp_leader()), pod_spec(worker)))
    assert finding(result, "lws-worker-not-headless").severity == "warn"


def dp(start: str | None, headless: bool = True) -> dict[str, Any]:
    script = "vllm serve m -tp 1 -dp $((LWS_GROUP_SIZE*8)) -dpl 8 --data-parallel-address "
    script += "$(LWS_LEADER_ADDRESS)"
    if start is not None:
        script += f" --data-parallel-start-rank {start}"
    if headless:
        script += " --headless"
    return vllm(gpus=8, command=("sh", "-c", script))


def test_multinode_dp_start_ranks_from_worker_index_pass() -> None:
    result = leader_result(
        lws(pod_spec(dp(None, headless=False)), pod_spec(dp("$((LWS_WORKER_INDEX*8))")))
    )
    assert not [i for i in ids(result) if i.startswith("lws-")], result.findings


def test_multinode_dp_literal_start_rank_fails_on_second_worker() -> None:
    result = leader_result(lws(pod_spec(dp(None, headless=False)), pod_spec(dp("8"))))
    found = finding(result, "lws-rank-mismatch")
    assert "worker 2" in found.message
    assert "16..23" in found.message


def test_multinode_dp_missing_start_rank_fails() -> None:
    result = leader_result(lws(pod_spec(dp(None, headless=False)), pod_spec(dp(None))))
    assert "no --data-parallel-start-rank" in finding(result, "lws-rank-mismatch").message


def ray_leader(**kw: Any) -> dict[str, Any]:
    script = (
        "ray start --head --port=6379 && vllm serve m -tp 8 -pp 2 "
        "--distributed-executor-backend ray"
    )
    return vllm(gpus=8, command=("sh", "-c", script), **kw)


def ray_worker(**kw: Any) -> dict[str, Any]:
    script = "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"
    return vllm(gpus=8, command=("sh", "-c", script), **kw)


def test_ray_worker_image_and_nccl_env_compared_not_args() -> None:
    leader = ray_leader(
        env=[
            {"name": "NCCL_SOCKET_IFNAME", "value": "eth0"},
            {"name": "NCCL_IB_HCA", "value": "mlx5"},
        ]
    )
    worker = ray_worker(
        image="vllm/vllm-openai:v0.10.0",
        env=[{"name": "NCCL_SOCKET_IFNAME", "value": "ib0"}],
    )
    result = leader_result(lws(pod_spec(leader), pod_spec(worker), size=2))
    image = finding(result, "lws-image-mismatch")
    assert image.severity == "warn"
    assert "v0.11.0" in image.message
    assert "v0.10.0" in image.message
    assert image.field == f"{LEADER}.containers[0].image"
    envs = [f for f in result.findings if f.id == "lws-nccl-env-mismatch"]
    assert {f.message.split(" ", 1)[0] for f in envs} == {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA"}
    ifname = next(f for f in envs if f.message.startswith("NCCL_SOCKET_IFNAME"))
    assert "'eth0'" in ifname.message
    assert "'ib0'" in ifname.message
    assert f"{WORKER}.containers[0].env[0]" in ifname.message
    assert "lws-args-mismatch" not in ids(result)


def test_env_from_unknown_secret_is_not_compared() -> None:
    leader = ray_leader(env=[{"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}])
    worker = ray_worker(envFrom=[{"secretRef": {"name": "s"}}])
    result = leader_result(lws(pod_spec(leader), pod_spec(worker), size=2))
    assert "lws-nccl-env-mismatch" not in ids(result)


def test_nccl_env_names() -> None:
    assert nccl_env_name("NCCL_IB_GID_INDEX")
    assert nccl_env_name("GLOO_SOCKET_IFNAME")
    assert not nccl_env_name("NCCL_DEBUG_FILE")
    assert not nccl_env_name("HF_TOKEN")


def test_group_of_one_or_without_leader_template_is_not_compared() -> None:
    worker = mp_worker()
    worker["args"][2] = "4"
    obj = lws(pod_spec(mp_leader()), pod_spec(worker), size=1)
    assert not [i for i in ids(leader_result(obj)) if i.startswith("lws-args")]


def test_different_master_addr_warns() -> None:
    worker = mp_worker()
    worker["args"][worker["args"].index("--master-addr") + 1] = "10.0.0.9"
    result = leader_result(lws(pod_spec(mp_leader()), pod_spec(worker)))
    found = finding(result, "lws-master-addr-mismatch")
    assert "10.0.0.9" in found.message
    assert "$(LWS_LEADER_ADDRESS)" in found.message


def _config_pod() -> dict[str, Any]:
    """Both templates read TP and PP from one --config ConfigMap (vLLM's documented YAML)."""
    container = vllm("m", "--config", "/etc/vllm/config.yaml", gpus=8)
    container["volumeMounts"] = [{"name": "cfg", "mountPath": "/etc/vllm"}]
    spec = pod_spec(container)
    spec["volumes"] = [{"name": "cfg", "configMap": {"name": "vllm-cfg"}}]
    return spec


CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "vllm-cfg", "namespace": "ns"},
    "data": {"config.yaml": "tensor-parallel-size: 8\npipeline-parallel-size: 2\n"},
}


def test_config_from_a_configmap_in_the_set_is_read_for_the_workers_too() -> None:
    """The worker reads the ConfigMap as the leader does: equal configs, no mismatch (the
    worker once read the cluster only, saw vLLM's defaults and failed a healthy group)."""
    obj = lws(_config_pod(), _config_pod(), size=2)
    results = check_objects([CONFIG_MAP, obj])
    (leader,) = [r for r in results if r.container.startswith("leader/")]
    assert leader.plan is not None
    assert leader.plan.tp == 8
    assert "lws-args-mismatch" not in ids(leader), leader.findings


def test_config_read_on_one_side_only_is_unknown_not_a_mismatch() -> None:
    """The leader's ConfigMap is in the set, the worker's is not: its TP is unknown."""
    worker = _config_pod()
    worker["volumes"] = [{"name": "cfg", "configMap": {"name": "elsewhere"}}]
    results = check_objects([CONFIG_MAP, lws(_config_pod(), worker, size=2)])
    (leader,) = [r for r in results if r.container.startswith("leader/")]
    assert "lws-args-mismatch" not in ids(leader), leader.findings
