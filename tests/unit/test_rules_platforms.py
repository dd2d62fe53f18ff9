"""Issue 11: no false failure for other accelerators, DRA, unknown values, multi-node DP;
extra positionals judged as vLLM's parser does."""

from __future__ import annotations

from typing import Any

from test_rules_support import check, deployment, finding, ids, one, pod_spec, vllm

from preflight_operator.core.rules import FAIL, PASS, WARN, ClusterLookup, Policy, check_objects
from preflight_operator.core.rules.accelerators import image_platform


def tpu_container(*args: str, chips: int | None = 8) -> dict[str, Any]:
    container = vllm(*args, image="vllm/vllm-tpu:nightly", mounts=())
    if chips is not None:
        container["resources"] = {"limits": {"google.com/tpu": chips}}
    return container


def tpu_spec(container: dict[str, Any]) -> dict[str, Any]:
    """A TPU pod as GKE schedules it: its nodeSelector names the generation (v5e: one JAX
    device per chip; test_accelerators covers the others)."""
    spec = pod_spec(container, volumes=())
    spec["nodeSelector"] = {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"}
    return spec


def test_a_tpu_deployment_counts_tpu_chips_and_needs_no_shm() -> None:
    result = one(deployment(tpu_spec(tpu_container("m", "-tp", "8"))))
    assert result.verdict == PASS, ids(result)
    assert (result.gpus_needed, result.gpus_requested) == (8, 8)


def test_too_few_tpu_chips_fails_naming_the_tpu_resource() -> None:
    result = one(deployment(tpu_spec(tpu_container("m", "-tp", "8", chips=4))))
    f = finding(result, "gpu-count-too-low")
    assert 'limits["google.com/tpu"]' in f.field
    assert "google.com/tpu" in f.fix
    assert "nvidia.com/gpu" not in f.message + f.fix


def test_a_tpu_image_without_a_request_is_told_about_google_tpu() -> None:
    result = one(deployment(pod_spec(tpu_container("m", "-tp", "4", chips=None), volumes=())))
    f = finding(result, "gpu-request-missing")
    assert "google.com/tpu" in f.fix
    assert "nvidia.com/gpu" not in f.fix


def test_cuda_visible_devices_rules_are_nvidia_only() -> None:
    env = [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}]
    tpu = tpu_container("m", "-tp", "8")
    tpu["env"] = env
    assert ids(one(deployment(tpu_spec(tpu)))) == []
    gpu = vllm("m", "-tp", "2", gpus=2, env=env)
    assert "cvd-too-few" in ids(one(deployment(pod_spec(gpu))))


def test_amd_gpus_count_and_fixes_name_amd() -> None:
    container = vllm("m", "-tp", "4", image="rocm/vllm:latest")
    container["resources"] = {"limits": {"amd.com/gpu": 2}}
    f = finding(one(deployment(pod_spec(container))), "gpu-count-too-low")
    assert "amd.com/gpu" in f.fix


def test_neuron_devices_are_unknown_not_compared() -> None:
    container = vllm("m", "-tp", "8", image="vllm/vllm-openai:v0.11.0", mounts=())
    container["resources"] = {"limits": {"aws.amazon.com/neuron": 1}}
    result = one(deployment(pod_spec(container, volumes=())))
    assert result.verdict == WARN
    assert ids(result) == ["plan-unresolved"]


def test_cpu_images_need_no_accelerator() -> None:
    container = vllm("m", image="public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.9.1")
    assert one(deployment(pod_spec(container))).verdict == PASS


def test_image_platforms() -> None:
    assert image_platform("vllm/vllm-tpu:nightly") == "tpu"
    assert image_platform("docker.io/vllm/vllm-openai:v0.11.0") is None
    assert image_platform("rocm/vllm:rocm6.4.1_vllm_0.10.1") == "rocm"


# -- DRA ---------------------------------------------------------------------------------


def claim_template(
    name: str = "gpus", count: int | None = 2, mode: str | None = None, cls: str = "gpu.nvidia.com"
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls}
    if count is not None:
        exactly["count"] = count
    if mode:
        exactly["allocationMode"] = mode
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    }


def dra_deployment(*args: str, template: str = "gpus") -> dict[str, Any]:
    container = vllm(*args)
    container["resources"] = {"claims": [{"name": "gpu"}]}
    spec = pod_spec(
        container, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": template}]
    )
    return deployment(spec)


def test_dra_devices_are_counted_from_the_claim_template() -> None:
    result = one(dra_deployment("m", "-tp", "2"), claim_template(count=2))
    assert result.verdict == PASS, ids(result)
    assert result.gpus_requested == 2
    low = one(dra_deployment("m", "-tp", "4"), claim_template(count=2))
    f = finding(low, "gpu-count-too-low")
    assert f.field.endswith("resources.claims[0]")


def test_dra_without_the_template_is_unknown_never_fail() -> None:
    result = one(dra_deployment("m", "-tp", "4"))
    assert result.verdict == WARN
    assert ids(result) == ["plan-unresolved"]
    assert "ResourceClaimTemplate 'gpus'" in finding(result, "plan-unresolved").message


def test_dra_allocation_mode_all_is_unknown() -> None:
    result = one(dra_deployment("m", "-tp", "4"), claim_template(count=None, mode="All"))
    assert ids(result) == ["plan-unresolved"]
    assert "allocationMode: All" in finding(result, "plan-unresolved").message


def test_dra_template_comes_from_the_cluster_lookup() -> None:
    template = claim_template(count=4)

    def lookup(namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        return (
            template if (namespace, kind, name) == ("ns", "ResourceClaimTemplate", "gpus") else None
        )

    results = check_objects([dra_deployment("m", "-tp", "4")], lookup=ClusterLookup(object=lookup))
    assert results[0].verdict == PASS
    assert results[0].gpus_requested == 4


def test_dra_v1beta1_requests_are_counted() -> None:
    template = claim_template(count=2)
    template["apiVersion"] = "resource.k8s.io/v1beta1"
    template["spec"]["spec"]["devices"]["requests"] = [
        {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 2}
    ]
    assert one(dra_deployment("m", "-tp", "2"), template).verdict == PASS


# -- unknown values ----------------------------------------------------------------------


def test_an_unknown_dp_with_a_known_dp_local_is_not_a_failure() -> None:
    env = [{"name": "DP", "valueFrom": {"secretKeyRef": {"name": "s", "key": "dp"}}}]
    container = vllm("m", "-dp", "$(DP)", "-dpl", "8", gpus=8, env=env)
    result = one(deployment(pod_spec(container)))
    assert result.verdict == WARN
    assert ids(result) == ["plan-unresolved"]


def test_the_former_rule_id_still_disables_it() -> None:
    env = [{"name": "TP", "valueFrom": {"secretKeyRef": {"name": "s", "key": "tp"}}}]
    manifest = deployment(pod_spec(vllm("m", "-tp", "$(TP)", gpus=2, env=env)))
    assert ids(one(manifest)) == ["plan-unresolved"]
    assert ids(one(manifest, policy=Policy(disabled=frozenset({"vllm-env-unresolved"})))) == []


# -- positionals -------------------------------------------------------------------------


def test_serve_twice_on_the_vllm_image_fails_with_the_fix() -> None:
    image = "vllm/vllm-openai:v0.11.1"  # the first whose ENTRYPOINT is `vllm serve`
    container = vllm("serve", "meta-llama/Llama-3.1-8B", gpus=1, command=None, image=image)
    result = one(deployment(pod_spec(container)))
    f = finding(result, "vllm-args-invalid")
    assert f.severity == FAIL
    assert "unrecognized arguments: meta-llama/Llama-3.1-8B" in f.message
    assert "ENTRYPOINT already is `vllm serve`" in f.fix


def test_serve_in_args_on_an_older_vllm_image_is_refused_by_its_api_server() -> None:
    """Up to v0.11.0 the image runs the api_server module (its Dockerfile's ENTRYPOINT),
    which takes no positional: `serve` is the first word it refuses."""
    container = vllm("serve", "meta-llama/Llama-3.1-8B", gpus=1, command=None)
    result = one(deployment(pod_spec(container)))
    refused = [f for f in result.findings if f.id == "vllm-args-invalid"]
    assert {f.severity for f in refused} == {FAIL}
    assert any("unrecognized arguments: serve" in f.message for f in refused), refused


def test_an_unknown_option_may_take_several_values() -> None:
    # on `latest` a flag of no known release may be a later release's: a warning (issue 38)
    image = "vllm/vllm-openai:latest"
    container = vllm("m", "--some-future-flag", "a", "b", gpus=1, image=image)
    assert ids(one(deployment(pod_spec(container)))) == ["vllm-args-version"]


# -- multi-node data parallelism ---------------------------------------------------------


def lws(size: int, leader_args: list[str], worker_args: list[str], gpus: int) -> dict[str, Any]:
    def template(args: list[str]) -> dict[str, Any]:
        return {"spec": pod_spec(vllm(*args, gpus=gpus))}

    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "dp", "namespace": "ns"},
        "spec": {
            "leaderWorkerTemplate": {
                "size": size,
                "leaderTemplate": template(leader_args),
                "workerTemplate": template(worker_args),
            }
        },
    }


DP_LEADER = ["m", "-tp", "1", "-dp", "16", "-dpl", "8", "--data-parallel-address", "x"]
DP_WORKER = [*DP_LEADER, "--headless", "--data-parallel-start-rank", "8"]


def test_multi_node_dp_over_a_leaderworkerset_needs_dp_local_per_pod() -> None:
    results = check(lws(2, DP_LEADER, DP_WORKER, gpus=8))
    assert [r.verdict for r in results] == [PASS, PASS], [ids(r) for r in results]
    assert [r.gpus_needed for r in results] == [8, 8]


def test_multi_node_dp_with_too_small_a_group_fails() -> None:
    three = check(lws(3, DP_LEADER, DP_WORKER, gpus=8))
    assert "lws-dp-extra" in ids(three[0])
    short = ["m", "-dp", "32", "-dpl", "8", "--data-parallel-address", "x"]
    results = check(lws(2, short, [*short, "--headless"], gpus=8))
    f = finding(results[0], "lws-dp-mismatch")
    assert "start 16 DP ranks" in f.message


def test_gaudi_dra_devices_are_hpu_no_cuda_shm_rule() -> None:
    """llm-d-modelservice's rendered DRA example: `vllm serve -tp 2` on a claim of 2
    `gaudi.intel.com` devices (Intel's Gaudi resource driver's DeviceClass) and no /dev/shm
    volume. Gaudi is HPU: counted, and the CUDA /dev/shm rule does not apply (it failed
    with shm-missing when the class was unknown and CUDA was assumed)."""
    container = vllm("m", "-tp", "2", image="intel/vllm:0.10.0-xpu", mounts=())
    container["resources"] = {"claims": [{"name": "gpu"}]}
    spec = pod_spec(
        container,
        volumes=(),
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpus"}],
    )
    result = one(deployment(spec), claim_template(count=2, cls="gaudi.intel.com"))
    assert result.verdict == PASS, ids(result)
    assert result.gpus_requested == 2
    assert result.platform == "hpu"


def test_an_option_equals_json_value_with_a_space_is_an_option() -> None:
    """`--kv-transfer-config={"kv_connector":"NixlConnector", "kv_role":"kv_both"}`: argparse
    splits at `=` and finds the option before its 'a space means a positional' test, so vLLM
    accepts it (llm-d-modelservice's examples, written as two tokens, were failed with
    'unrecognized arguments' once joined with `=`)."""
    value = '{"kv_connector":"NixlConnector", "kv_role":"kv_both"}'
    result = one(deployment(pod_spec(vllm("m", f"--kv-transfer-config={value}", gpus=1))))
    assert result.verdict == PASS, ids(result)
    eagle = '{"method": "eagle3", "num_speculative_tokens": 4}'
    result = one(deployment(pod_spec(vllm("m", f"--speculative_config={eagle}", gpus=1))))
    assert result.verdict == PASS, ids(result)
    # a token with a space that is no option stays a positional: unrecognized
    bad = one(deployment(pod_spec(vllm("m", "--quantization bitsandbytes", gpus=1))))
    assert "vllm-args-invalid" in ids(bad)


def test_an_undefined_reference_inside_a_quoted_script_is_unknown_not_literal() -> None:
    """`sh -c "vllm serve m '--tensor-parallel-size=$(TP)'"` with TP in no env: the kubelet
    expands $(TP) before the shell runs, when a controller defines it (KServe's
    TENSOR_PARALLEL_SIZE); unknown, as for the same reference in args. `$$(TP)` is the
    kubelet's escape: always literal, a failure."""
    script = "exec vllm serve m '--tensor-parallel-size=$(TP)'"
    result = one(deployment(pod_spec(vllm(command=["sh", "-c", script], gpus=2))))
    assert result.verdict == WARN, ids(result)
    assert "plan-unresolved" in ids(result)
    escaped = "exec vllm serve m '--tensor-parallel-size=$$(TP)'"
    result = one(deployment(pod_spec(vllm(command=["sh", "-c", escaped], gpus=2))))
    assert "vllm-args-invalid" in ids(result)
