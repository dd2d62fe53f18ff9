"""Serving stacks whose controller builds the vLLM pod from its own fields: the plan is
read from the kind's fields, and findings point at the field the user wrote."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from test_rules_support import check, finding, ids

from preflight_operator.core.rules import FAIL, PASS

CORPUS = Path(__file__).parents[1] / "data" / "realworld"


def corpus(rel: str, kind: str) -> dict[str, Any]:
    docs = yaml.safe_load_all((CORPUS / rel).read_text())
    found: dict[str, Any] = next(d for d in docs if isinstance(d, dict) and d.get("kind") == kind)
    return copy.deepcopy(found)


def test_kubeai_model_profile_count_against_tp() -> None:
    model = corpus("kubeai/model-llama-70b-h100.yaml", "Model")
    (ok,) = check(model)
    # --disable-log-requests: refused by vLLM 0.17-0.32, accepted again from 0.33.0 (the
    # inverse of --enable-log-requests); the image (KubeAI's choice) unknown, taken as a
    # release of the year up to the newest, some of which refuse it: a warning
    assert ids(ok) == ["vllm-args-version"], ids(ok)
    assert "vLLM 0.17.0-0.32.0 refuse it" in finding(ok, "vllm-args-version").message
    assert (ok.gpus_needed, ok.gpus_requested) == (2, 2)
    model["spec"]["resourceProfile"] = "nvidia-gpu-h100:1"
    (bad,) = check(model)
    f = finding(bad, "gpu-count-too-low")
    assert f.field == "spec.resourceProfile"
    assert "spec.args[4]" in f.fix  # where --tensor-parallel-size=2 was written


def test_kubeai_cluster_profiles_are_unknown() -> None:
    (tpu,) = check(corpus("kubeai/model-gemma-2b-it-tpu.yaml", "Model"))
    # --disable-log-requests: refused by 0.17.0-0.32.0 of the year's releases
    assert sorted(ids(tpu)) == ["plan-unresolved", "vllm-args-version"]
    assert "resourceProfiles" in finding(tpu, "plan-unresolved").message


def test_vllm_runtime_fields_are_the_command_line() -> None:
    runtime = corpus("production-stack/vllmruntime-sample.yaml", "VLLMRuntime")
    assert check(runtime)[0].verdict == PASS
    runtime["spec"]["vllmConfig"]["tensorParallelSize"] = 2
    (bad,) = check(runtime)
    f = finding(bad, "gpu-count-too-low")
    assert f.field == "spec.deploymentConfig.resources.gpu"
    assert "spec.vllmConfig.tensorParallelSize" in f.fix


def isvc(args: list[str], gpus: int, runtime: str | None = "kserve-vllmserver") -> dict[str, Any]:
    model: dict[str, Any] = {
        "modelFormat": {"name": "vLLM"},
        "args": args,
        "resources": {"limits": {"nvidia.com/gpu": gpus}},
    }
    if runtime:
        model["runtime"] = runtime
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "llm", "namespace": "ns"},
        "spec": {"predictor": {"model": model}},
    }


RUNTIME = ("kserve/clusterservingruntime-vllmserver.yaml", "ClusterServingRuntime")


def test_inference_service_merges_its_serving_runtime() -> None:
    runtime = corpus(*RUNTIME)
    results = check(isvc(["--tensor-parallel-size=2"], 2), runtime)
    service = next(r for r in results if r.kind == "InferenceService")
    assert service.verdict == PASS, ids(service)
    assert service.plan is not None
    assert service.plan.tp == 2
    results = check(isvc(["--tensor-parallel-size=4"], 2), runtime)
    service = next(r for r in results if r.kind == "InferenceService")
    f = finding(service, "gpu-count-too-low")
    assert "spec.predictor.model.args[0]" in f.fix


def test_the_runtime_is_chosen_by_model_format_when_not_named() -> None:
    runtime = corpus(*RUNTIME)
    results = check(isvc(["--tensor-parallel-size=4"], 2, runtime=None), runtime)
    service = next(r for r in results if r.kind == "InferenceService")
    assert "gpu-count-too-low" in ids(service)


def test_without_its_runtime_an_inference_service_is_not_judged() -> None:
    # named as not judged, never nothing (issue 35): admission warns, lint says unjudged
    (result,) = check(isvc(["--tensor-parallel-size=4"], 2))
    assert result.verdict == "unjudged"
    assert ids(result) == ["vllm-command-unparsed"]


def test_serving_runtimes_are_templates() -> None:
    runtime = corpus(*RUNTIME)
    assert [r.verdict for r in check(runtime)] == [PASS]  # no GPU: the isvc adds them
    container = runtime["spec"]["containers"][0]
    container["args"].append("--tensor-parallel-size=4")
    container["resources"]["limits"]["nvidia.com/gpu"] = 1
    (bad,) = check(runtime)
    assert finding(bad, "gpu-count-too-low").severity == FAIL


def test_dynamo_services_and_multinode() -> None:
    graph = corpus("dynamo/dgd-vllm-disagg.yaml", "DynamoGraphDeployment")
    assert [r.verdict for r in check(graph)] == [PASS, PASS]
    worker = graph["spec"]["services"]["VllmDecodeWorker"]
    worker["extraPodSpec"]["mainContainer"]["args"] += ["--tensor-parallel-size", "2"]
    decode = next(r for r in check(graph) if r.container.startswith("VllmDecodeWorker"))
    f = finding(decode, "gpu-count-too-low")
    assert f.field == "spec.services.VllmDecodeWorker.resources.limits.gpu"
    worker["multinode"] = {"nodeCount": 2}  # the operator spreads TP=2 over two pods
    decode = next(r for r in check(graph) if r.container.startswith("VllmDecodeWorker"))
    assert decode.verdict == PASS, ids(decode)


def test_llm_inference_service_parallelism() -> None:
    service = corpus("kserve/llmisvc-pd-qwen2-7b-gpu.yaml", "LLMInferenceService")
    assert {r.verdict for r in check(service)} == {PASS}
    service["spec"]["parallelism"] = {"tensor": 4}
    main = next(r for r in check(service) if r.container == "main/main")
    f = finding(main, "gpu-count-too-low")
    assert "spec.parallelism" in f.fix


def test_the_serving_runtime_is_found_in_the_default_namespace() -> None:
    """`lint -n team`: neither object names a namespace; both are in `team`."""
    from preflight_operator.core.rules import check_objects

    runtime = corpus(*RUNTIME)
    runtime["kind"] = "ServingRuntime"  # namespaced: found only in the same namespace
    service = isvc(["--tensor-parallel-size=4"], 2)
    del service["metadata"]["namespace"]
    results = check_objects([service, runtime], default_namespace="team")
    judged = next(r for r in results if r.kind == "InferenceService")
    assert "gpu-count-too-low" in ids(judged)


def args_only_runtime(image: str = "vllm/vllm-openai:v0.11.1") -> dict[str, Any]:
    """The KServe vLLM runtime as many write it for vllm/vllm-openai: only ``args``, the
    image's entrypoint (`vllm serve` from 0.11.1) runs them."""
    runtime = corpus(*RUNTIME)
    container = runtime["spec"]["containers"][0]
    del container["command"]
    container["image"] = image
    container["args"] = ["/mnt/models", "--port=8080", "--served-model-name={{.Name}}"]
    return runtime


def test_the_same_args_on_an_image_whose_entrypoint_is_the_api_server_module() -> None:
    """vllm/vllm-openai up to 0.11.0 runs ``python3 -m vllm.entrypoints.openai.api_server``
    (tests/data/vllm_images/entrypoints.json), which refuses the positional model: what
    `vllm serve` reads as the model, that image exits on."""
    results = check(isvc([], 1), args_only_runtime("vllm/vllm-openai:v0.10.1"))
    service = next(r for r in results if r.kind == "InferenceService")
    f = finding(service, "vllm-args-invalid")
    assert f.severity == FAIL
    assert "unrecognized arguments: /mnt/models" in f.message


def test_a_runtime_with_only_args_keeps_the_image_entrypoint() -> None:
    """MergeRuntimeContainers keeps command and args apart: TP 4 on one GPU fails, and
    the finding points at the isvc's arg, the plan at the image's entrypoint."""
    results = check(isvc(["--tensor-parallel-size=4"], 1), args_only_runtime())
    service = next(r for r in results if r.kind == "InferenceService")
    f = finding(service, "gpu-count-too-low")
    assert f.severity == FAIL
    assert "spec.predictor.model.args[0]" in f.fix
    results = check(isvc(["--tensor-parallel-size=4"], 4), args_only_runtime())
    service = next(r for r in results if r.kind == "InferenceService")
    assert service.verdict == PASS, ids(service)


def test_the_isvc_command_replaces_the_runtime_command() -> None:
    service = isvc(["--tensor-parallel-size=4"], 1)
    service["spec"]["predictor"]["model"]["command"] = ["vllm", "serve"]
    results = check(service, corpus(*RUNTIME))
    judged = next(r for r in results if r.kind == "InferenceService")
    assert "gpu-count-too-low" in ids(judged)
