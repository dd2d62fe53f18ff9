"""Serving stacks' own kinds on the local control plane with their upstream CRDs: the
wrapper is judged at its own admission (Enforce denies, Warn warns), what its controller
creates is admitted (no controller runs here: the test creates the Deployment with the
controller's ownerReference, as KServe would), and the injected pod's result lands on
the GPUValidation of the top-level owner: `kubectl get gpuval` shows
InferenceService/<name>, not the Deployment."""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_contract.report import CheckResult, Report
from preflight_dev import fakekubelet, localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

CORPUS = Path(__file__).resolve().parents[1] / "data" / "realworld"
INJECT = {constants.LABEL_INJECT: "enabled"}


@pytest.fixture(scope="module")
def operator(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s, wrappers=True)
    op = localoperator.start_with_webhooks(k8s, tmp_path_factory.mktemp("wrappers"))
    yield op
    localoperator.remove_webhooks(k8s)
    op.stop()


@pytest.fixture
def namespace(
    k8s: Cluster, operator: OperatorProcess, request: pytest.FixtureRequest
) -> Iterator[str]:
    name = k8s.create_namespace(f"wrap-{request.node.name[5:18].replace('_', '-')}", labels=INJECT)
    yield name
    k8s.delete_namespace(name)


def corpus(rel: str, kind: str) -> dict[str, Any]:
    docs = yaml.safe_load_all((CORPUS / rel).read_text())
    found: dict[str, Any] = next(d for d in docs if isinstance(d, dict) and d.get("kind") == kind)
    return copy.deepcopy(found)


def apply(
    cluster: Cluster, obj: dict[str, Any], namespace: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    body = copy.deepcopy(obj)
    body["metadata"]["namespace"] = namespace
    return cluster.kubectl(
        "apply", "--server-side", *extra, "-f", "-", input=json.dumps(body), check=False
    )


def bad_storm_service() -> dict[str, Any]:
    """The issue's StormService: TP=2 on one accelerator."""
    storm = corpus("aibrix/stormservice-vllm-1p1d.yaml", "StormService")
    role = storm["spec"]["template"]["spec"]["roles"][0]
    args = role["template"]["spec"]["containers"][0]["args"]
    args[0] = args[0].replace("vllm serve \\", "vllm serve --tensor-parallel-size 2 \\", 1)
    assert "--tensor-parallel-size 2" in args[0]
    return storm


def test_wrappers_are_judged_at_their_own_admission(k8s: Cluster, namespace: str) -> None:
    denied = apply(k8s, bad_storm_service(), namespace)
    assert denied.returncode != 0
    assert "StormService/vllm-1p1d cannot run" in denied.stderr
    assert "gpu-count-too-low" in denied.stderr
    assert "spec.template.spec.roles[0]" in denied.stderr
    model = corpus("kubeai/model-llama-70b-h100.yaml", "Model")
    model["spec"]["resourceProfile"] = "nvidia-gpu-h100:1"
    denied = apply(k8s, model, namespace)
    assert denied.returncode != 0
    assert "spec.resourceProfile" in denied.stderr
    good = corpus("kubeai/model-llama-70b-h100.yaml", "Model")
    admitted = apply(k8s, good, namespace)
    assert admitted.returncode == 0, admitted.stderr
    gpuval = wait_for(
        lambda: json.loads(k8s.kubectl("get", "gpuval", "-n", namespace, "-o", "json").stdout)[
            "items"
        ],
        what="the Model's GPUValidation",
    )
    assert gpuval[0]["spec"]["workloadRef"]["kind"] == "Model"


def test_warn_admits_a_wrapper_with_warning_lines(k8s: Cluster, namespace: str) -> None:
    k8s.apply({
        "apiVersion": constants.API_VERSION, "kind": constants.POLICY_KIND,
        "metadata": {"name": "trial", "namespace": namespace}, "spec": {"action": "Warn"},
    })  # fmt: skip
    result = wait_for(
        lambda: (r := apply(k8s, bad_storm_service(), namespace)).returncode == 0 and r,
        what="the Warn policy to reach the webhook",
    )
    assert "Warning: vllm-preflight fail: gpu-count-too-low" in result.stderr


RUNTIME = ("kserve/clusterservingruntime-vllmserver.yaml", "ClusterServingRuntime")


def isvc(name: str, tp: int, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name},
        "spec": {
            "predictor": {
                "model": {
                    "modelFormat": {"name": "vLLM"},
                    "runtime": "kserve-vllmserver",
                    "args": [f"--tensor-parallel-size={tp}"],
                    "resources": {"limits": {"nvidia.com/gpu": gpus}},
                }
            }
        },
    }


def child_deployment(owner: dict[str, Any], gpus: int, tp: int) -> dict[str, Any]:
    """What KServe's controller creates for the InferenceService (Standard mode)."""
    name = owner["metadata"]["name"]
    labels = {"app": f"{name}-predictor"}
    container = {
        "name": "kserve-container",
        "image": "vllm/vllm-openai:v0.11.0",
        "command": ["python", "-m", "vllm.entrypoints.openai.api_server"],
        "args": ["--model=/mnt/models", f"--tensor-parallel-size={tp}"],
        "resources": {"limits": {"nvidia.com/gpu": gpus}},
        "volumeMounts": [{"name": "devshm", "mountPath": "/dev/shm"}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"{name}-predictor",
            "ownerReferences": [
                {
                    "apiVersion": "serving.kserve.io/v1beta1",
                    "kind": "InferenceService",
                    "name": name,
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [container],
                    "volumes": [{"name": "devshm", "emptyDir": {"medium": "Memory"}}],
                },
            },
        },
    }


PASSED = Report(
    checks=[CheckResult("gpu-count", "pass", "CUDA sees 2 GPUs")]
).to_termination_message()


def test_an_inference_service_owns_the_results_of_what_kserve_creates(
    k8s: Cluster, namespace: str
) -> None:
    runtime = corpus(*RUNTIME)
    k8s.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(runtime))
    bad = apply(k8s, isvc("llm-bad", tp=4, gpus=2), namespace)
    assert bad.returncode != 0, "an InferenceService whose runtime command needs 4 GPUs on 2"
    assert "gpu-count-too-low" in bad.stderr
    assert "spec.predictor.model.args[0]" in bad.stderr
    good = apply(k8s, isvc("llm", tp=2, gpus=2), namespace)
    assert good.returncode == 0, good.stderr
    owner = json.loads(
        k8s.kubectl("get", "inferenceservice", "llm", "-n", namespace, "-o", "json").stdout
    )
    # the controller's child is admitted whatever it says: its owner was judged
    child = child_deployment(owner, gpus=2, tp=2)
    made = apply(k8s, child, namespace)
    assert made.returncode == 0, made.stderr

    def pod() -> dict[str, Any] | None:
        items = json.loads(
            k8s.kubectl(
                "get", "pods", "-n", namespace, "-l", constants.INJECTED_POD_SELECTOR, "-o", "json"
            ).stdout
        )["items"]
        return items[0] if items else None

    injected = wait_for(pod, what="an injected pod of the child Deployment")
    meta = injected["metadata"]
    k8s.kubectl(
        "patch", "pod", meta["name"], "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": fakekubelet.pod_status(injected, exit_code=0, message=PASSED)}),
    )  # fmt: skip

    def validation() -> dict[str, Any] | None:
        found = k8s.kubectl(
            "get", "gpuval", "inferenceservice-llm", "-n", namespace, "-o", "json", check=False
        )
        if found.returncode != 0:
            return None
        body: dict[str, Any] = json.loads(found.stdout)
        return body if (body.get("status") or {}).get("runtimeVerdict") == "pass" else None

    result = wait_for(validation, what="the pod's result on the InferenceService's GPUValidation")
    assert result["spec"]["workloadRef"]["kind"] == "InferenceService"
    names = k8s.kubectl("get", "gpuval", "-n", namespace, "-o", "name").stdout
    assert "deployment-llm-predictor" not in names
    table = k8s.kubectl("get", "gpuval", "-n", namespace).stdout
    assert "InferenceService/llm" in table

    # trusted through the chain of uids: pod -> ReplicaSet -> Deployment -> the
    # InferenceService as watched (issue 34; core/ownerchain.py)
    def trusted() -> bool:
        body = validation() or {}
        pods = ((body.get("status") or {}).get("runtime") or {}).get("pods") or []
        return any(p["pod"] == meta["name"] and p["createdBy"] == "controller" for p in pods)

    wait_for(trusted, what="the pod's result trusted for the InferenceService")


def _ray_service() -> dict[str, Any]:
    """Ray Serve LLM at TP 8 x PP 2 (16 GPUs) on a cluster of one 8-GPU worker."""
    service = corpus("kuberay/rayservice-deepseek.yaml", "RayService")
    service["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"] = 1
    for key in ("minReplicas", "maxReplicas"):
        service["spec"]["rayClusterConfig"]["workerGroupSpecs"][0].pop(key, None)
    return service


def _ray_cluster() -> dict[str, Any]:
    fleet = corpus("aibrix/raycluster-fleet.yaml", "RayClusterFleet")
    head = fleet["spec"]["template"]["spec"]["headGroupSpec"]["template"]["spec"]
    head["containers"][0]["args"][0] = head["containers"][0]["args"][0].replace(
        "--tensor-parallel-size 2", "--tensor-parallel-size 4"
    )
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc"},
        "spec": fleet["spec"]["template"]["spec"],
    }


def _fleet() -> dict[str, Any]:
    fleet = corpus("aibrix/raycluster-fleet.yaml", "RayClusterFleet")
    head = fleet["spec"]["template"]["spec"]["headGroupSpec"]["template"]["spec"]
    head["containers"][0]["args"][0] = head["containers"][0]["args"][0].replace(
        "--tensor-parallel-size 2", "--tensor-parallel-size 4"
    )
    return fleet


def _vllm_runtime() -> dict[str, Any]:
    runtime = corpus("production-stack/vllmruntime-sample.yaml", "VLLMRuntime")
    runtime["spec"]["vllmConfig"]["tensorParallelSize"] = 2
    return runtime


def _llm_inference_service() -> dict[str, Any]:
    service = corpus("kserve/llmisvc-pd-qwen2-7b-gpu.yaml", "LLMInferenceService")
    service["spec"]["parallelism"] = {"tensor": 4}
    return service


def _dynamo() -> dict[str, Any]:
    """v1beta1 (the stored version; v1alpha1 needs Dynamo's conversion webhook)."""
    graph = corpus("dynamo/dgd-vllm-tpu-dra.yaml", "DynamoGraphDeployment")
    worker = graph["spec"]["components"][1]["podTemplate"]["spec"]
    worker.pop("resourceClaims", None)
    main = worker["containers"][0]
    main["image"] = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag"
    main["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    main["args"] += ["--tensor-parallel-size", "2"]
    return graph


def _model_serving() -> dict[str, Any]:
    """Kthena (issue 39): TP 8 x PP 2 over the entry pod and one worker of 4 GPUs each."""
    serving = corpus("kthena/modelserving-multi-node.yaml", "ModelServing")
    role = serving["spec"]["template"]["roles"][0]
    for key in ("entryTemplate", "workerTemplate"):
        role[key]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "4"
    return serving


BROKEN = {
    "RayService": (_ray_service, "ray-gpu-total"),
    "RayCluster": (_ray_cluster, "ray-gpu-total"),
    "RayClusterFleet": (_fleet, "ray-gpu-total"),
    "VLLMRuntime": (_vllm_runtime, "gpu-count-too-low"),
    "LLMInferenceService": (_llm_inference_service, "gpu-count-too-low"),
    "DynamoGraphDeployment": (_dynamo, "gpu-count-too-low"),
    "ModelServing": (_model_serving, "lws-gpu-total"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_every_serving_stack_kind_is_denied_at_its_own_admission(
    k8s: Cluster, namespace: str, kind: str
) -> None:
    build, rule = BROKEN[kind]
    obj = build()
    denied = apply(k8s, obj, namespace)
    assert denied.returncode != 0, f"{kind} admitted: {denied.stdout}"
    assert f"{kind}/{obj['metadata']['name']} cannot run" in denied.stderr, denied.stderr
    assert rule in denied.stderr, denied.stderr


def test_every_serving_stack_kind_is_warned_about_under_warn(k8s: Cluster, namespace: str) -> None:
    k8s.apply({
        "apiVersion": constants.API_VERSION, "kind": constants.POLICY_KIND,
        "metadata": {"name": "trial", "namespace": namespace}, "spec": {"action": "Warn"},
    })  # fmt: skip
    first = next(iter(sorted(BROKEN)))
    wait_for(
        lambda: apply(k8s, BROKEN[first][0](), namespace, "--dry-run=server").returncode == 0,
        what="the Warn policy to reach the webhook",
    )
    for kind in sorted(BROKEN):
        build, rule = BROKEN[kind]
        admitted = apply(k8s, build(), namespace)
        assert admitted.returncode == 0, (kind, admitted.stderr)
        assert f"Warning: vllm-preflight fail: {rule}" in admitted.stderr, (kind, admitted.stderr)


def _own_ray_service(name: str) -> dict[str, Any]:
    """A RayService with no vLLM in it: admitted, and any user may make one."""
    head = {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name},
        "spec": {
            "rayClusterConfig": {
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": head}}
            }
        },
    }


def test_an_owner_reference_to_a_stack_object_buys_nothing_unless_the_stack_makes_such_children(
    k8s: Cluster, namespace: str
) -> None:
    """The issue's bypass: a user's broken Deployment with a controller ownerReference to
    the user's own RayService (KubeRay makes RayClusters, never Deployments), or to an
    InferenceService that does not exist, is judged by the rules and denied under
    Enforce; a Deployment of an InferenceService that does exist is still KServe's."""
    made = apply(k8s, _own_ray_service("mine"), namespace)
    assert made.returncode == 0, made.stderr
    ray_service = json.loads(
        k8s.kubectl("get", "rayservice", "mine", "-n", namespace, "-o", "json").stdout
    )
    sneaky = child_deployment(ray_service, gpus=2, tp=4)
    sneaky["metadata"]["name"] = "sneaky"
    sneaky["metadata"]["ownerReferences"][0].update(apiVersion="ray.io/v1", kind="RayService")
    denied = apply(k8s, sneaky, namespace)
    assert denied.returncode != 0, "a broken Deployment 'made by' the user's RayService"
    assert "Deployment/sneaky cannot run" in denied.stderr, denied.stderr
    assert "gpu-count-too-low" in denied.stderr

    k8s.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(corpus(*RUNTIME)))
    admitted = apply(k8s, isvc("llm", tp=2, gpus=2), namespace)
    assert admitted.returncode == 0, admitted.stderr
    owner = json.loads(
        k8s.kubectl("get", "inferenceservice", "llm", "-n", namespace, "-o", "json").stdout
    )
    ghost = copy.deepcopy(owner)
    ghost["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000"  # no such object
    denied = apply(k8s, child_deployment(ghost, gpus=2, tp=4), namespace)
    assert denied.returncode != 0, "a broken Deployment of an InferenceService that is not"
    assert "gpu-count-too-low" in denied.stderr
    # KServe's own child (the owner exists with that uid): its owner was judged
    real = apply(k8s, child_deployment(owner, gpus=2, tp=4), namespace)
    assert real.returncode == 0, real.stderr


def test_a_modelserving_is_judged_at_its_own_admission(k8s: Cluster, namespace: str) -> None:
    """issue 39 under Enforce: Kthena's upstream PD example is admitted, a broken
    ModelServing denied (with the group rule that caught it)."""
    good = corpus("kthena/modelserving-gpu-pd-disaggregation.yaml", "ModelServing")
    admitted = apply(k8s, good, namespace)
    assert admitted.returncode == 0, admitted.stderr
    denied = apply(k8s, _model_serving(), namespace)
    assert denied.returncode != 0
    assert "ModelServing/llama-multinode cannot run" in denied.stderr, denied.stderr
    assert "lws-gpu-total" in denied.stderr, denied.stderr
