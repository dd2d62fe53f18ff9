"""The pod's own init containers that write the model's volume run after the check
(docs/dev/OPERATOR_CONTRACT.md "Injected init containers"): the injector names them to the
checker in PREFLIGHT_MODEL_WRITERS, so that a partial copy it sees is not judged final.

The pods are the upstream examples of tests/data/realworld (README-a.md): an `aws s3 sync`
into an emptyDir, a `gsutil rsync` into a PVC on Spot nodes, a `huggingface-cli download`
into a PVC.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonpatch
import yaml
from test_inject import env_of, mutate, service, vllm_pod

from preflight_contract import envnames
from preflight_contract.modelsource import MAX_MODEL_WRITERS
from preflight_operator.core.injection import model_writers

CORPUS = Path(__file__).parents[1] / "data" / "realworld"
WRITERS = envnames.MODEL_WRITERS


def pod_from(path: str) -> dict[str, Any]:
    """The pod a ReplicaSet makes from the upstream Deployment's template."""
    docs = yaml.safe_load_all((CORPUS / path).read_text())
    deployment = next(d for d in docs if d and d.get("kind") == "Deployment")
    name = deployment["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{name}-5d9c7b-",
            "namespace": "team",
            "labels": {**deployment["spec"]["template"]["metadata"].get("labels", {})},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{name}-5d9c7b",
                    "controller": True,
                    "uid": "rs",
                }
            ],
        },
        "spec": copy.deepcopy(deployment["spec"]["template"]["spec"]),
    }


def check_env(pod: dict[str, Any]) -> dict[str, Any]:
    injected = jsonpatch.apply_patch(pod, mutate(copy.deepcopy(pod), service()))
    (check,) = [c for c in injected["spec"]["initContainers"] if c["name"] == "preflight-check"]
    names = [e["name"] for e in check["env"]]
    assert names.count(WRITERS) <= 1
    if envnames.VLLM_ARGS in names:
        assert names[-1] == envnames.VLLM_ARGS  # still last: the kubelet expands it
    return env_of(check)


def test_an_s3_sync_into_the_model_emptydir_is_named() -> None:
    """Goutham-Annem/eks-llm-inference manifests/vllm-deployment.yaml: `aws s3 sync` into
    the emptyDir vLLM loads --model=/mnt/model from. After a sandbox restart the emptyDir
    keeps a partial copy that the sync resumes; the check runs first and sees it."""
    env = check_env(pod_from("aws/eks-llm-inference-v055.yaml"))
    assert env[WRITERS] == "model-downloader"


def test_a_gsutil_rsync_into_the_model_pvc_is_named() -> None:
    """seans3/k8s-ai vllm-deployment-gpt-oss-120b.yaml: `gsutil -m rsync` into a PVC, on
    Spot nodes: a preempted sync leaves a partial /models/gpt-oss-120b that the next pod's
    rsync completes, if the check lets it run."""
    env = check_env(pod_from("tutorials/k8s-ai-gpt-oss-120b-a100.yaml"))
    assert env[WRITERS] == "model-downloader"


def test_a_huggingface_cli_download_into_the_model_pvc_is_named() -> None:
    """colinjlacy/tofu-proxmox-gpu-ubuntu-k3s k8s/vllm/deployment.yaml: the model is the
    positional argument /models/vllm/Meta-Llama-3.1-8B-Instruct-FP8."""
    env = check_env(pod_from("people/proxmox-k3s-llama-fp8-positional.yaml"))
    assert env[WRITERS] == "download-model"


def test_an_init_container_that_cannot_write_there_is_not_named() -> None:
    base = pod_from("aws/eks-llm-inference-v055.yaml")
    cases = {
        "read-only mount": {"name": "model-cache", "mountPath": "/mnt/model", "readOnly": True},
        "another volume": {"name": "scratch", "mountPath": "/mnt/model"},
    }
    for why, mount in cases.items():
        pod = copy.deepcopy(base)
        pod["spec"]["initContainers"][0]["volumeMounts"] = [mount]
        pod["spec"]["volumes"].append({"name": "scratch", "emptyDir": {}})
        assert WRITERS not in check_env(pod), why
    # the repository's own fixture: an init container with no mounts
    assert WRITERS not in check_env(vllm_pod())


def test_the_volume_is_compared_where_it_is_not_where_it_is_mounted() -> None:
    """The writer may mount the volume elsewhere (it sees /dest, vLLM /models); a subPath
    apart from the model's is another part of the volume."""
    vllm = {
        "name": "vllm",
        "volumeMounts": [{"name": "data", "mountPath": "/models", "subPath": "weights"}],
    }
    spec: dict[str, Any] = {"volumes": [{"name": "data", "persistentVolumeClaim": {}}]}

    def writers(*mounts: dict[str, Any]) -> list[str]:
        spec["initContainers"] = [
            {"name": f"w{i}", "volumeMounts": [m]} for i, m in enumerate(mounts)
        ]
        return model_writers(spec, vllm, "/models/llama")

    assert writers({"name": "data", "mountPath": "/dest"}) == ["w0"]  # the whole volume
    assert writers({"name": "data", "mountPath": "/d", "subPath": "weights/llama"}) == ["w0"]
    assert writers({"name": "data", "mountPath": "/d", "subPath": "weights/llama/x"}) == ["w0"]
    assert writers({"name": "data", "mountPath": "/d", "subPath": "weights/qwen"}) == []
    assert writers({"name": "data", "mountPath": "/d", "subPath": "logs"}) == []
    # a subPathExpr is not known here: it may be the model's part (a warning, never a fail)
    assert writers({"name": "data", "mountPath": "/d", "subPathExpr": "$(POD)"}) == ["w0"]
    # a volume nobody can write: a read-only PVC claim, a ConfigMap
    spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"readOnly": True}}]
    assert writers({"name": "data", "mountPath": "/dest"}) == []


def test_a_native_sidecar_and_a_cache_filler_count() -> None:
    """A native sidecar (restartPolicy: Always) runs on after the check too; for a Hub repo
    id the check reads the Hugging Face cache, so a writer of the cache's volume counts."""
    pod = vllm_pod()
    vllm = pod["spec"]["containers"][0]
    vllm["command"] = ["vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2"]
    vllm["env"].append({"name": "HF_HOME", "value": "/data/hf"})
    vllm["volumeMounts"] = [{"name": "hf", "mountPath": "/data/hf"}]
    pod["spec"]["volumes"] = [{"name": "hf", "emptyDir": {}}]
    pod["spec"]["initContainers"] = [
        {"name": "fetch", "image": "hf", "restartPolicy": "Always",
         "volumeMounts": [{"name": "hf", "mountPath": "/cache"}]},
    ]  # fmt: skip
    assert check_env(pod)[WRITERS] == "fetch"
    # a directory --model reads that directory only: a writer of the cache is not its writer
    vllm["command"] = ["vllm", "serve", "/models/llama", "-tp", "2"]
    vllm["volumeMounts"].append({"name": "weights", "mountPath": "/models"})
    pod["spec"]["volumes"].append({"name": "weights", "emptyDir": {}})
    assert WRITERS not in check_env(pod)


def test_hostile_init_containers_are_bounded_and_a_copied_value_is_replaced() -> None:
    pod = pod_from("aws/eks-llm-inference-v055.yaml")
    writer = pod["spec"]["initContainers"][0]
    many = [dict(copy.deepcopy(writer), name=f"w{i}") for i in range(500)]
    odd = [dict(copy.deepcopy(writer), name=name) for name in ("A,B", "x" * 64, "", 7)]
    pod["spec"]["initContainers"] = odd + many
    pod["spec"]["containers"][0].setdefault("env", []).append(
        {"name": WRITERS, "value": "someone-else"}
    )
    value = check_env(pod)[WRITERS]
    assert value.split(",") == [f"w{i}" for i in range(MAX_MODEL_WRITERS)]


def test_odd_shapes_never_raise() -> None:
    vllm = {"name": "vllm", "volumeMounts": [{"name": "data", "mountPath": "/models"}]}
    for spec in (
        {"volumes": [{"name": ["x"]}, "v", {"name": "data", "secret": {}}]},
        {"initContainers": ["x", {"name": "a", "volumeMounts": ["m", {"name": ["data"]}]}]},
        {"initContainers": [{"name": "a", "volumeMounts": [{"name": "data", "subPath": 7}]}]},
        {"initContainers": [{"name": {"x": 1}, "volumeMounts": [{"name": "data"}]}]},
    ):
        assert model_writers(spec, vllm, "/models/llama") in ([], ["a"])
    # a Secret's volume cannot be written by anyone
    secret = {"volumes": [{"name": "data", "secret": {}}],
              "initContainers": [{"name": "a", "volumeMounts": [{"name": "data"}]}]}  # fmt: skip
    assert model_writers(secret, vllm, "/models/llama") == []
