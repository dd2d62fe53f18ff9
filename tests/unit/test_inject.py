"""Injection of the preflight check into pods: what is added, idempotence, and when not."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
from typing import Any

import jsonpatch
import pytest

from preflight_check.options import parse_options
from preflight_operator.core import constants
from preflight_operator.core.analysis import RulesAnalyser, check_plan
from preflight_operator.core.injection import (
    Injection,
    Skip,
    model_mounts,
    plan_injection,
    runtime_skips,
    vllm_args_value,
)
from preflight_operator.core.operatorconfig import (
    InjectionConfig,
    OperatorConfig,
    PolicySpec,
    Thresholds,
)
from preflight_operator.core.policy import PolicyBook, parse_policy
from preflight_operator.core.static import Plan
from preflight_operator.core.workloads import WorkloadRef
from preflight_operator.webhook import admissionreview
from preflight_operator.webhook.webhooks import AdmissionService

PLAN = Plan(tp=2, pp=1, dp=1, dp_local=1, gpus_needed=2, container="vllm")
DEFAULT_POLICY = PolicySpec()


def vllm_pod(**overrides: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "vllm-5d9c7b-",
            "namespace": "team",
            "labels": {"app": "vllm", "pod-template-hash": "5d9c7b"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "vllm-5d9c7b",
                    "controller": True,
                    "uid": "rs",
                }
            ],
        },
        "spec": {
            "initContainers": [{"name": "download-model", "image": "busybox"}],
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.0",
                    "command": ["vllm", "serve", "m", "--tensor-parallel-size", "2"],
                    "env": [
                        {"name": "CUDA_DEVICE_ORDER", "value": "PCI_BUS_ID"},
                        {
                            "name": "HF_TOKEN",
                            "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}},
                        },
                        {"name": "PREFLIGHT_TP", "value": "99"},
                    ],
                    "envFrom": [{"configMapRef": {"name": "vllm-env"}}],
                    "resources": {
                        "limits": {"nvidia.com/gpu": 2, "cpu": "8"},
                        "requests": {"nvidia.com/gpu": 2},
                    },
                    "volumeMounts": [
                        {"name": "dshm", "mountPath": "/dev/shm"},
                        {"name": "cache", "mountPath": "/root/.cache"},
                    ],
                },
                {"name": "sidecar", "image": "envoy"},
            ],
            "volumes": [
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}},
                {"name": "cache", "emptyDir": {}},
            ],
        },
    }
    pod["spec"].update(overrides)
    return pod


def inject(
    pod: dict[str, Any], policy: PolicySpec = DEFAULT_POLICY, **config: Any
) -> Injection | Skip:
    return plan_injection(
        pod,
        container="vllm",
        plan=PLAN,
        policy=policy,
        config=InjectionConfig(**config),
        workload_label="deployment.vllm",
    )


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_two_init_containers_go_first_with_the_vllm_containers_gpus_env_and_shm() -> None:
    result = inject(vllm_pod())
    assert isinstance(result, Injection)
    install, check, existing = result.init_containers
    assert [install["name"], check["name"], existing["name"]] == [
        "preflight-install",
        "preflight-check",
        "download-model",
    ]
    assert install["command"] == ["vllm-preflight-install", "/preflight/vllm-preflight.pyz"]
    assert check["image"] == "vllm/vllm-openai:v0.11.0"
    assert check["command"] == ["python3", "/preflight/vllm-preflight.pyz", "check"]
    assert check["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert check["resources"]["requests"]["nvidia.com/gpu"] == 2
    assert "cpu" not in check["resources"]["limits"]  # only the GPUs are copied
    env = env_of(check)
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["HF_TOKEN"] == {"secretKeyRef": {"name": "s", "key": "k"}}
    assert env["PREFLIGHT_TP"] == "2"  # ours wins over a stray copy
    assert [e["name"] for e in check["env"]].count("PREFLIGHT_TP") == 1
    assert env["PREFLIGHT_ACTION"] == "Enforce"
    assert env["PREFLIGHT_SHM_MIN"] == "1Gi"
    assert env["PREFLIGHT_DEADLINE"] == "120"  # injection.timeoutSeconds
    assert check["envFrom"] == [{"configMapRef": {"name": "vllm-env"}}]
    token_path = "/var/run/secrets/kubernetes.io/serviceaccount"
    assert {m["mountPath"] for m in check["volumeMounts"]} == {
        "/preflight",
        "/dev/shm",
        token_path,
        "/root/.cache",  # holds ~/.cache/huggingface: the model checks look there
    }
    assert check["terminationMessagePolicy"] == "FallbackToLogsOnError"
    for ours in (install, check):
        assert ours["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        # The API server's ServiceAccount plugin skips a container that mounts something
        # at the token path: ours mount an empty read-only emptyDir there.
        shadow = [m for m in ours["volumeMounts"] if m["mountPath"] == token_path]
        assert shadow == [{"name": "preflight-no-token", "mountPath": token_path, "readOnly": True}]
    assert "runAsUser" not in check["securityContext"]
    assert result.volumes[-2:] == [
        {"name": "preflight", "emptyDir": {"sizeLimit": "64Mi"}},
        {"name": "preflight-no-token", "emptyDir": {"sizeLimit": "1Mi"}},
    ]
    assert result.labels == {
        "vllm-preflight.io/injected": "true",
        "vllm-preflight.io/workload": "deployment.vllm",
    }


def test_dedicated_image_mode_and_policy_settings_reach_the_check() -> None:
    policy = PolicySpec(
        action="Warn",
        tier="deep",
        thresholds=Thresholds(shm_min="4Gi", gpu_memory_utilization=0.8),
        disabled_checks=("shm", "shm-missing"),
        injection_mode="DedicatedImage",
    )
    result = inject(vllm_pod(), policy, check_image="example.com/check:1")
    assert isinstance(result, Injection)
    check = result.init_containers[1]
    assert check["image"] == "example.com/check:1"
    env = env_of(check)
    assert (env["PREFLIGHT_ACTION"], env["PREFLIGHT_TIER"], env["PREFLIGHT_SHM_MIN"]) == (
        "Warn",
        "deep",
        "4Gi",
    )
    assert env["PREFLIGHT_SKIP"] == "shm"  # the rule id shm-missing is not a check id
    assert env["PREFLIGHT_GPU_MEMORY_UTILIZATION"] == "0.8"
    assert runtime_skips(("gpu-count", "nope")) == ["gpu-count"]


def test_skips_say_why() -> None:
    assert inject(vllm_pod(), PolicySpec(injection_enabled=False)) == Skip("disabled-by-policy")
    taken = vllm_pod(volumes=[{"name": "preflight", "emptyDir": {}}])
    assert isinstance(inject(taken), Skip)
    assert inject(taken).reason == "volume-name-taken"
    taken = vllm_pod(volumes=[{"name": "preflight-no-token", "emptyDir": {}}])
    assert inject(taken) == Skip(
        "volume-name-taken", "the pod already has a volume 'preflight-no-token'"
    )
    no_gpu = vllm_pod()
    del no_gpu["spec"]["containers"][0]["resources"]
    assert inject(no_gpu).reason == "no-gpu-request"  # type: ignore[union-attr]
    # a plan the rules could not read is no skip any more: tests/unit/test_inject_plan_unknown.py


def test_multi_node_plans_check_the_pods_share() -> None:
    spread = Plan(tp=8, pp=2, dp=1, dp_local=1, gpus_needed=8, container="vllm")
    assert (check_plan(spread).tp, check_plan(spread).pp) == (8, 1)
    assert check_plan(PLAN) is PLAN


def service(
    policies: list[dict[str, Any]] | None = None, owner_body: Any = None
) -> AdmissionService:
    book = PolicyBook()
    for p in policies or []:
        book.put(parse_policy(p))
    return AdmissionService(
        OperatorConfig(), RulesAnalyser(), book, events=None, owner_body=owner_body
    )


def review(pod: Any, svc: Any) -> dict[str, Any]:
    """The /mutate-pods answer to a Pod CREATE review of ``pod``."""
    request = {"uid": "u-1", "operation": "CREATE", "object": pod}
    answer = asyncio.run(admissionreview.review_mutation_async(svc, {"request": request}))
    response: dict[str, Any] = answer["response"]
    assert response["uid"] == "u-1"
    assert response["allowed"] is True  # the mutating webhook never denies
    return response


def mutate(pod: Any, svc: Any) -> list[dict[str, Any]]:
    response = review(pod, svc)
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    assert ops  # an empty patch is left out
    return ops


def test_the_webhook_injects_once_and_a_second_pass_changes_nothing() -> None:
    svc = service()
    pod = vllm_pod()
    ops = mutate(pod, svc)
    injected = jsonpatch.apply_patch(pod, ops)
    names = [c["name"] for c in injected["spec"]["initContainers"]]
    assert names == ["preflight-install", "preflight-check", "download-model"]
    assert injected["metadata"]["labels"]["vllm-preflight.io/injected"] == "true"
    assert injected["spec"]["containers"] == pod["spec"]["containers"]
    assert mutate(copy.deepcopy(injected), svc) == []


def test_pods_without_vllm_or_gpus_are_untouched() -> None:
    svc = service()
    plain = vllm_pod(containers=[{"name": "web", "image": "nginx"}])
    assert mutate(plain, svc) == []
    cpu_only = vllm_pod()
    del cpu_only["spec"]["containers"][0]["resources"]
    assert mutate(cpu_only, svc) == []
    opted_out = vllm_pod()
    opted_out["metadata"]["labels"][constants.LABEL_INJECT] = "disabled"
    assert mutate(opted_out, svc) == []
    system = vllm_pod()
    system["metadata"]["namespace"] = "kube-system"
    assert mutate(system, svc) == []


def test_the_policy_is_chosen_by_the_workloads_labels_once_per_workload() -> None:
    asked: list[WorkloadRef] = []

    async def owner_body(ref: WorkloadRef) -> dict[str, Any]:
        asked.append(ref)
        return {"metadata": {"name": ref.name, "labels": {"team": "research"}}}

    policy = {
        "metadata": {"namespace": "team", "name": "research"},
        "spec": {"selector": {"matchLabels": {"team": "research"}}, "action": "Audit"},
    }
    svc = service([policy], owner_body)
    for _ in range(3):
        injected = jsonpatch.apply_patch(vllm_pod(), mutate(vllm_pod(), svc))
        env = env_of(injected["spec"]["initContainers"][1])
        assert env["PREFLIGHT_ACTION"] == "Audit"
    assert [(r.kind, r.name) for r in asked] == [("Deployment", "vllm")]


def test_an_unreadable_workload_falls_back_to_the_pods_labels() -> None:
    async def broken(ref: WorkloadRef) -> dict[str, Any]:
        raise OSError("connection refused")

    svc = service(None, broken)
    assert mutate(vllm_pod(), svc) != []


def test_a_crash_admits_the_pod_unchanged() -> None:
    class Broken:
        async def mutate_pod(self, pod: Any) -> Any:
            raise RuntimeError("boom")

    assert mutate(vllm_pod(), Broken()) == []


def test_a_bad_policy_value_never_reaches_the_pod_and_never_disables_injection() -> None:
    """shmMin 1E / gpuMemoryUtilization 0 reached PREFLIGHT_* (the check then exits 2 and
    blocks the pod, even under Warn), or crashed the rules (no injection at all)."""
    policy = {
        "metadata": {"namespace": "team", "name": "bad"},
        "spec": {
            "action": "Warn",
            "thresholds": {"shmMin": "1E", "gpuMemoryUtilization": 0},
        },
    }
    injected = jsonpatch.apply_patch(vllm_pod(), mutate(vllm_pod(), service([policy])))
    env = env_of(injected["spec"]["initContainers"][1])
    assert env["PREFLIGHT_ACTION"] == "Warn"
    assert env["PREFLIGHT_SHM_MIN"] == "1Gi"
    assert "PREFLIGHT_GPU_MEMORY_UTILIZATION" not in env


@pytest.mark.parametrize(
    "pod",
    [
        {"metadata": "x", "spec": {}},
        {"metadata": {"labels": "x", "namespace": "team"}, "spec": []},
        {"metadata": {"namespace": "team", "ownerReferences": "x"}, "spec": {"containers": "x"}},
        {"metadata": {"namespace": "team"}, "spec": {"containers": [1, None, {"name": 3}]}},
        {"metadata": {"namespace": ["team"]}, "spec": None},
        {"metadata": None},
        [],
    ],
)
def test_a_malformed_pod_is_admitted_unchanged_by_the_handler(pod: Any) -> None:
    """The review function never raises (the server would answer 500): it admits."""
    assert mutate(pod, service()) == []


def test_tpu_pods_are_not_injected_the_check_is_nvidia_only() -> None:
    svc = service()
    tpu = vllm_pod()
    container = tpu["spec"]["containers"][0]
    container["image"] = "vllm/vllm-tpu:nightly"
    container["resources"] = {"limits": {"google.com/tpu": 2}}
    # the generation says how many devices vLLM counts per chip (rules.accelerators)
    tpu["spec"]["nodeSelector"] = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"}
    assert mutate(tpu, svc) == []
    target = RulesAnalyser().injection_target(tpu, DEFAULT_POLICY)
    assert target.reason == "not-nvidia"


def test_dra_pods_get_the_check_with_the_same_claims() -> None:
    template = {
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "two-gpus", "namespace": "team"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2},
                        }
                    ]
                }
            }
        },
    }
    from preflight_operator.core.rules import ClusterLookup

    def lookup(namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        return template if (kind, name) == ("ResourceClaimTemplate", "two-gpus") else None

    pod = vllm_pod(resourceClaims=[{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}])
    container = pod["spec"]["containers"][0]
    container["resources"] = {"claims": [{"name": "gpus"}]}
    book = PolicyBook()
    svc = AdmissionService(
        OperatorConfig(), RulesAnalyser(ClusterLookup(object=lookup)), book, events=None
    )
    injected = jsonpatch.apply_patch(pod, mutate(pod, svc))
    check = injected["spec"]["initContainers"][1]
    assert check["name"] == "preflight-check"
    assert check["resources"]["claims"] == [{"name": "gpus"}]
    assert env_of(check)["PREFLIGHT_TP"] == "2"
    # without the template the count is unknown: no injection, never a blocked pod
    assert mutate(copy.deepcopy(pod), service()) == []


def test_the_check_gets_the_command_line_and_the_model_and_cache_mounts_read_only() -> None:
    """The runtime model checks read the model from --vllm-args (PREFLIGHT_VLLM_ARGS) and
    its files from the mounts vLLM reads them from; nothing else of vLLM's is mounted."""
    pod = vllm_pod()
    vllm = pod["spec"]["containers"][0]
    vllm["command"] = ["vllm", "serve", "/models/llama", "-tp", "2", "--max-model-len", "8192"]
    vllm["env"].append({"name": "HF_HOME", "value": "/data/hf"})
    token = "/var/run/secrets/kubernetes.io/serviceaccount"
    vllm["volumeMounts"] = [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "weights", "mountPath": "/models", "mountPropagation": "HostToContainer"},
        {"name": "hf", "mountPath": "/data/hf/hub", "subPath": "hub"},
        {"name": "logs", "mountPath": "/var/log/vllm"},
        {"name": "my-token", "mountPath": token},
    ]
    injected = jsonpatch.apply_patch(pod, mutate(pod, service()))
    check = injected["spec"]["initContainers"][1]
    env = [e["name"] for e in check["env"]]
    assert env[-1] == "PREFLIGHT_VLLM_ARGS"  # after the vLLM env the kubelet expands it with
    assert env_of(check)["PREFLIGHT_VLLM_ARGS"] == (
        "vllm serve /models/llama -tp 2 --max-model-len 8192"
    )
    assert env_of(check)["HF_TOKEN"] == {"secretKeyRef": {"name": "s", "key": "k"}}
    mounts = {m["mountPath"]: m for m in check["volumeMounts"]}
    assert set(mounts) == {"/preflight", token, "/dev/shm", "/models", "/data/hf/hub"}
    assert mounts["/models"] == {"name": "weights", "mountPath": "/models", "readOnly": True}
    assert mounts["/data/hf/hub"]["readOnly"] is True
    assert mounts["/data/hf/hub"]["subPath"] == "hub"
    assert mounts[token]["name"] == "preflight-no-token"  # never the pod's own token
    assert "readOnly" not in injected["spec"]["containers"][0]["volumeMounts"][1]


def test_the_command_line_passes_the_kubelet_unchanged_or_not_at_all() -> None:
    unknown = "\x00$(MODEL)\x00"  # rules.kubeenv's marker of a Secret's value
    # a value the rules could not know is filled in by the checker after it split the words
    # (a Secret's apostrophe once unbalanced the quoting: issue 34): two rounds of expansion
    assert vllm_args_value(["vllm", "serve", unknown, "--served-model-name", "a$b"]) == (
        "vllm serve '$$(MODEL)' --served-model-name 'a$$$$b'",
        ("MODEL",),
    )
    assert vllm_args_value(["vllm", "serve", "m", "--served-model-name", "a$b"]) == (
        "vllm serve m --served-model-name 'a$$b'",
        (),
    )
    shell = "\x00\x00$(command substitution)\x00"
    assert vllm_args_value(["vllm", "serve", "m", "--max-model-len", shell]) is None
    assert vllm_args_value(["vllm", "serve", "--config", "/etc/vllm/c.yaml"]) is None
    assert vllm_args_value(["vllm", "serve", "m", "--config=/c.yaml"]) is None
    assert vllm_args_value(["vllm", "serve", "m", "--x", "y" * 20000]) is None
    assert vllm_args_value(()) is None


def test_model_mounts_match_the_model_path_and_the_caches_only() -> None:
    vllm = {
        "env": [{"name": "HF_HUB_CACHE", "value": "/cache"}, {"name": "X", "value": "/models"}],
        "volumeMounts": [
            {"name": "root", "mountPath": "/"},
            {"name": "models", "mountPath": "/models/"},
            {"name": "hub", "mountPath": "/cache"},
            {"name": "home", "mountPath": "/home/u/.cache/huggingface"},
            {"name": "other", "mountPath": "/models-old"},
        ],
    }
    assert [m["name"] for m in model_mounts(vllm, "/models/qwen")] == ["models", "hub", "home"]
    assert [m["name"] for m in model_mounts(vllm, "Qwen/Qwen3-8B")] == ["hub", "home"]


def test_a_share_of_a_multi_node_engine_gets_its_command_line_when_the_line_states_it() -> None:
    """vLLM's --nnodes states the pod's share (TP 16 over 2 pods: 8 each): the checker reads
    the same count from the line as the rules (it divides by the nodes), so the line goes
    along, for the model checks and the group phase. A share the line does not state (a
    Ray head) gets none: tests/unit/test_check_group_args.py."""
    pod = vllm_pod()
    vllm = pod["spec"]["containers"][0]
    vllm["command"] = ["vllm", "serve", "m", "-tp", "16", "--nnodes", "2", "--node-rank", "0"]
    vllm["resources"] = {"limits": {"nvidia.com/gpu": 8}}
    injected = jsonpatch.apply_patch(pod, mutate(pod, service()))
    env = env_of(injected["spec"]["initContainers"][1])
    assert env["PREFLIGHT_TP"] == "8"
    assert env["PREFLIGHT_VLLM_ARGS"] == "vllm serve m -tp 16 --nnodes 2 --node-rank 0"
    options = parse_options([], {k: v for k, v in env.items() if isinstance(v, str)})
    assert options.plan.gpus_needed == 8


def test_the_patch_applies_to_a_pod_without_labels_init_containers_or_volumes() -> None:
    """``add`` creates the members: the same pod as with them (label keys escaped)."""
    bare = vllm_pod()
    del bare["metadata"]["labels"]
    bare["spec"].pop("initContainers", None)
    bare["spec"].pop("volumes", None)
    ops = mutate(bare, service())
    injected = jsonpatch.apply_patch(bare, ops)
    assert injected["metadata"]["labels"]["vllm-preflight.io/injected"] == "true"
    assert [c["name"] for c in injected["spec"]["initContainers"]][:2] == [
        "preflight-install",
        "preflight-check",
    ]
    assert injected["spec"]["volumes"]
    labelled = vllm_pod()
    ops = mutate(labelled, service())
    assert any(op["path"] == "/metadata/labels/vllm-preflight.io~1injected" for op in ops)
