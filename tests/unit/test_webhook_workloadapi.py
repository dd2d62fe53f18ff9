"""The injection webhook and the Kubernetes Workload API (issue 26): a multi-node vLLM pod
that names a gang (``spec.schedulingGroup``, 1.36+; ``spec.workloadRef``, 1.35) has that
object read (API discovery first, then the newest version this reader knows; cached,
bounded, judged as hostile input by ``rules.workloadapi``), and the result is honest:

- the check is never given a group from it (no rank, no leader; a minCount is a minimum);
- what is missing is an admission warning on the injected pod (and a log line);
- a gang that cannot hold the engine's pods together (basic policy, minCount under
  ``--nnodes`` or a LeaderWorkerSet's size) is a warning, never a failure;
- a pod whose engine runs on one pod, or that names no gang, causes no read at all.

The objects are shaped as Kubernetes defines them (workloadapi's docstring names the
sources); the API server's own behaviour is in tests/e2e/test_workload_api.py."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.injection import Injection, Skip
from preflight_operator.core.operatorconfig import OperatorConfig
from preflight_operator.core.policy import PolicyBook
from preflight_operator.core.rules import workloadapi
from preflight_operator.webhook.admissionreview import review_mutation_async
from preflight_operator.webhook.webhooks import AdmissionService

V1A2 = "scheduling.k8s.io/v1alpha2"
DISCOVERY = "/apis/scheduling.k8s.io"
MULTI_NODE = "vllm serve m -tp 8 -pp 2 --nnodes 2 --node-rank 0 --master-addr vllm-0.vllm"


class ApiError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


def discovery(*versions: str) -> dict[str, Any]:
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": "scheduling.k8s.io",
        "versions": [{"groupVersion": v, "version": v.split("/")[1]} for v in versions],
    }


def podgroup(policy: dict[str, Any], name: str = "vllm-0", version: str = V1A2) -> dict[str, Any]:
    return {
        "apiVersion": version,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"schedulingPolicy": policy},
    }


def pod(
    name: str = "vllm-0",
    script: str = MULTI_NODE,
    group: str | None = "vllm-0",
    lws_size: int | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "team", "labels": {}, "annotations": {}}
    if lws_size is not None:
        meta["labels"] = {
            "leaderworkerset.sigs.k8s.io/name": "vllm",
            "leaderworkerset.sigs.k8s.io/worker-index": "0",
            "leaderworkerset.sigs.k8s.io/group-index": "0",
        }
        meta["annotations"] = {"leaderworkerset.sigs.k8s.io/size": str(lws_size)}
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "vllm",
                "image": "vllm/vllm-openai:v0.11.0",
                "command": ["sh", "-c", script],
                "resources": {"limits": {"nvidia.com/gpu": 8}},
            }
        ],
    }
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


class Api:
    """The API server's answers by path; every GET is recorded."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.reads: list[str] = []

    async def __call__(self, path: str) -> Any:
        self.reads.append(path)
        answer = self.answers.get(path)
        if isinstance(answer, Exception):
            raise answer
        return answer


def service(api: Api) -> AdmissionService:
    return AdmissionService(
        OperatorConfig(), RulesAnalyser(), PolicyBook(), events=None, api_get=api
    )


def object_path(name: str = "vllm-0", version: str = V1A2) -> str:
    return f"/apis/{version}/namespaces/team/podgroups/{name}"


def mutate(svc: AdmissionService, body: dict[str, Any]) -> Injection:
    result = asyncio.run(svc.mutate_pod(body))
    assert isinstance(result, Injection), result
    return result


def check_env(result: Injection) -> dict[str, Any]:
    check = next(c for c in result.init_containers if c["name"] == "preflight-check")
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in check["env"]}


def test_a_gang_gives_no_group_and_says_what_is_missing_read_once_per_burst() -> None:
    api = Api({DISCOVERY: discovery(V1A2), object_path(): podgroup({"gang": {"minCount": 2}})})
    svc = service(api)
    for i in range(2):
        result = mutate(svc, pod(name=f"vllm-{i}"))
        assert not [n for n in check_env(result) if n.startswith("PREFLIGHT_GROUP_")]
        (warning,) = result.warnings
        assert warning.startswith("vllm-preflight: pod of a workload-api group 'vllm-0'")
        assert "this pod's index and the leader's address" in warning
        assert "gang minCount 2 is the least pods scheduled together" in warning
        assert "less than" not in warning  # minCount 2 holds --nnodes 2 together
    assert api.reads == [DISCOVERY, object_path()]  # cached for the burst


def test_a_gang_smaller_than_the_engine_is_a_warning() -> None:
    api = Api({DISCOVERY: discovery(V1A2), object_path(): podgroup({"gang": {"minCount": 1}})})
    (warning,) = mutate(service(api), pod()).warnings
    assert "its gang's minCount 1" in warning
    assert "less than the 2 pods the engine needs at once" in warning


def test_a_basic_pod_group_is_a_warning() -> None:
    api = Api({DISCOVERY: discovery(V1A2), object_path(): podgroup({"basic": {}})})
    (warning,) = mutate(service(api), pod()).warnings
    assert "basic policy" in warning
    assert "the 2 pods the engine needs one by one" in warning


def test_the_newest_served_version_this_reader_knows_is_read() -> None:
    beta = "scheduling.k8s.io/v1beta1"
    api = Api(
        {
            DISCOVERY: discovery("scheduling.k8s.io/v1alpha3", beta, "scheduling.k8s.io/v9"),
            object_path(version=beta): podgroup({"gang": {"minCount": 1}}, version=beta),
        }
    )
    (warning,) = mutate(service(api), pod()).warnings
    assert api.reads == [DISCOVERY, object_path(version=beta)]
    assert "its gang's minCount 1" in warning


def test_no_version_known_reads_no_object_and_says_which_are_served() -> None:
    api = Api({DISCOVERY: discovery("scheduling.k8s.io/v9")})
    (warning,) = mutate(service(api), pod()).warnings
    assert api.reads == [DISCOVERY]
    assert "the PodGroup 'vllm-0' (no version known here is served (served: v9))" in warning


def test_a_forbidden_read_names_the_chart_value_once_per_burst() -> None:
    api = Api({DISCOVERY: discovery(V1A2), object_path(): ApiError(403)})
    svc = service(api)
    for i in range(2):
        (warning,) = mutate(svc, pod(name=f"vllm-{i}")).warnings
        assert "forbidden: the chart value rbac.workloadApiRead grants the read" in warning
    assert api.reads.count(object_path()) == 1


def test_a_missing_pod_group_is_said() -> None:
    api = Api({DISCOVERY: discovery(V1A2)})  # the object: 404 (None)
    (warning,) = mutate(service(api), pod()).warnings
    assert "the PodGroup 'vllm-0' (not found)" in warning


@pytest.mark.parametrize(
    "answer",
    [
        podgroup({"gang": {"minCount": 2}}, name="other"),  # not the object named
        {"apiVersion": V1A2, "kind": "ConfigMap", "metadata": {"name": "vllm-0"}},
        podgroup({"gang": {"minCount": "2"}}),
        podgroup({"gang": {"minCount": 10**9}}),
        podgroup({"gang": {"minCount": 2}, "basic": {}}),
        ["not", "an", "object"],
        "x" * 10_000,
    ],
)
def test_a_hostile_object_is_unknown_never_a_group(answer: Any) -> None:
    api = Api({DISCOVERY: discovery(V1A2), object_path(): answer})
    result = mutate(service(api), pod())
    assert not [n for n in check_env(result) if n.startswith("PREFLIGHT_GROUP_")]
    (warning,) = result.warnings
    assert "less than" not in warning  # no minCount taken from it
    assert "cannot meet without" in warning


@pytest.mark.parametrize("answer", [["x"], {"versions": "v1"}, {"versions": [{"x": 1}]}, None])
def test_a_hostile_discovery_reads_nothing_more(answer: Any) -> None:
    api = Api({DISCOVERY: answer})
    (warning,) = mutate(service(api), pod()).warnings
    assert api.reads == [DISCOVERY]
    assert "cannot meet without" in warning


def test_a_one_pod_engine_or_no_gang_reads_nothing() -> None:
    api = Api({DISCOVERY: discovery(V1A2), object_path(): podgroup({"basic": {}})})
    svc = service(api)
    assert mutate(svc, pod(script="vllm serve m -tp 8")).warnings == ()
    assert mutate(svc, pod(group=None)).warnings == ()
    assert api.reads == []


def test_a_leaderworkerset_gang_keeps_its_own_group_and_is_checked_against_its_size() -> None:
    """LeaderWorkerSet's native gang scheduling sets spec.schedulingGroup on its pods
    (kubernetes-sigs/lws site/content/en/docs/concepts/leaderworkerset/gang-scheduling at
    0501639a0a71): the group env stays LeaderWorkerSet's, and a gang of its size says
    nothing; a gang under its size is a warning."""
    api = Api({DISCOVERY: discovery(V1A2), object_path(): podgroup({"gang": {"minCount": 2}})})
    result = mutate(service(api), pod(lws_size=2))
    assert result.warnings == ()
    assert "PREFLIGHT_GROUP_INDEX" in check_env(result)  # LeaderWorkerSet's, as before
    api = Api({DISCOVERY: discovery(V1A2), object_path(): podgroup({"gang": {"minCount": 1}})})
    (warning,) = mutate(service(api), pod(lws_size=2)).warnings
    assert warning == (
        "vllm-preflight: its gang's minCount 1 (spec.schedulingGroup.podGroupName -> PodGroup "
        "vllm-0 spec.schedulingPolicy) is less than the 2 pods the engine needs at once: the "
        "scheduler may admit the gang with fewer"
    )


def test_a_1_35_workload_ref_is_read_as_a_workload() -> None:
    v1a1 = "scheduling.k8s.io/v1alpha1"
    body = pod(group=None)
    body["spec"]["workloadRef"] = {"name": "vllm", "podGroup": "engine"}
    workload = {
        "apiVersion": v1a1,
        "kind": "Workload",
        "metadata": {"name": "vllm", "namespace": "team"},
        "spec": {"podGroups": [{"name": "engine", "policy": {"gang": {"minCount": 1}}}]},
    }
    path = f"/apis/{v1a1}/namespaces/team/workloads/vllm"
    api = Api({DISCOVERY: discovery(v1a1), path: workload})
    (warning,) = mutate(service(api), body).warnings
    assert api.reads == [DISCOVERY, path]
    assert "its gang's minCount 1" in warning


def test_the_mutation_response_carries_the_warning() -> None:
    api = Api({DISCOVERY: discovery(V1A2), object_path(): podgroup({"basic": {}})})
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u1", "operation": "CREATE", "object": pod(), "userInfo": {}},
    }
    answer = asyncio.run(review_mutation_async(service(api), review))["response"]
    assert answer["allowed"] is True
    assert json.loads(base64.b64decode(answer["patch"]))  # injected
    (warning,) = answer["warnings"]
    assert "basic policy" in warning


def test_without_a_reader_nothing_is_read_or_said() -> None:
    svc = AdmissionService(OperatorConfig(), RulesAnalyser(), PolicyBook(), events=None)
    result = asyncio.run(svc.mutate_pod(pod()))
    assert isinstance(result, (Injection, Skip))
    assert not isinstance(result, Injection) or result.warnings == ()


@pytest.mark.parametrize(
    ("argv", "nodes"),
    [
        (["vllm", "serve", "m", "--nnodes", "2"], 2),
        (["vllm", "serve", "m", "--nnodes=4"], 4),
        (["vllm", "serve", "m", "-n", "3"], 3),
        (["vllm", "serve", "m", "--nnodes", "$(N)"], None),
        (["vllm", "serve", "m", "--nnodes"], None),
        (["vllm", "serve", "m", "--nnodes", "0"], None),
        (["vllm", "serve", "m"], None),
    ],
)
def test_engine_nodes_reads_only_a_literal_count(argv: list[str], nodes: int | None) -> None:
    assert workloadapi.engine_nodes(argv) == nodes


# -- issue 39: a gang declared on the pod's own labels (groups.pod_group) ----------------------


def declared_pod(labels: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    body = pod(group=None)
    body["metadata"]["labels"] = labels
    body["metadata"]["annotations"] = annotations
    return body


VOLCANO_PG = "/apis/scheduling.volcano.sh/v1beta1/namespaces/team/podgroups/vllm-pg"


def volcano_podgroup(min_member: Any, name: str = "vllm-pg") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"minMember": min_member},
    }


def test_a_volcano_pod_says_its_size_is_its_podgroups_and_reads_it_once() -> None:
    api = Api({VOLCANO_PG: volcano_podgroup(2)})
    svc = service(api)
    for i in range(2):
        body = declared_pod({}, {"scheduling.k8s.io/group-name": "vllm-pg"})
        body["metadata"]["name"] = f"vllm-{i}"
        result = mutate(svc, body)
        (warning,) = result.warnings
        assert "pod of a volcano group 'vllm-pg'" in warning
        assert "spec.minMember" in warning
        assert "less than" not in warning  # minMember 2 holds --nnodes 2 together
        assert not [n for n in check_env(result) if n.startswith("PREFLIGHT_GROUP_")]
    assert api.reads == [VOLCANO_PG]  # cached for the burst


def test_a_volcano_podgroup_smaller_than_the_engine_is_a_warning() -> None:
    api = Api({VOLCANO_PG: volcano_podgroup(1)})
    body = declared_pod({}, {"scheduling.k8s.io/group-name": "vllm-pg"})
    (warning,) = mutate(service(api), body).warnings
    assert "spec.minMember 1, less than the 2 pods the engine needs at once" in warning


def test_a_forbidden_volcano_podgroup_names_its_chart_value() -> None:
    api = Api({VOLCANO_PG: ApiError(403)})
    body = declared_pod({}, {"scheduling.k8s.io/group-name": "vllm-pg"})
    (warning,) = mutate(service(api), body).warnings
    assert "rbac.volcanoPodGroupRead" in warning
    assert "rbac.workloadApiRead" not in warning


@pytest.mark.parametrize(
    "answer",
    [
        volcano_podgroup(1, name="other"),
        volcano_podgroup("1"),
        volcano_podgroup(10**9),
        {**volcano_podgroup(1), "apiVersion": "v1"},
        ["not", "an", "object"],
        "x" * 10_000,
    ],
)
def test_a_hostile_volcano_podgroup_is_unknown_never_a_minimum(answer: Any) -> None:
    api = Api({VOLCANO_PG: answer})
    body = declared_pod({}, {"scheduling.k8s.io/group-name": "vllm-pg"})
    (warning,) = mutate(service(api), body).warnings
    assert "less than" not in warning
    assert "its gang is not known" in warning or "minMember" in warning


def test_a_kueue_pod_group_member_says_no_leader_is_named() -> None:
    labels = {"kueue.x-k8s.io/pod-group-name": "g"}
    notes = {"kueue.x-k8s.io/pod-group-total-count": "2"}
    (warning,) = mutate(service(Api({})), declared_pod(labels, notes)).warnings
    assert "the leader's address (Kueue pod groups name none)" in warning


def test_a_one_pod_engine_of_a_volcano_group_is_not_warned() -> None:
    body = declared_pod({}, {"scheduling.k8s.io/group-name": "vllm-pg"})
    body["spec"]["containers"][0]["command"] = ["sh", "-c", "vllm serve m -tp 8"]
    assert mutate(service(Api({})), body).warnings == ()


def test_volcanos_own_annotation_names_the_podgroup_too() -> None:
    notes = {"scheduling.volcano.sh/group-name": "vllm-pg"}
    (warning,) = mutate(service(Api({})), declared_pod({}, notes)).warnings
    assert "pod of a volcano group 'vllm-pg'" in warning
