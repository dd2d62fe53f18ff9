"""A pod's result counts for a workload only through controller references whose uids the
API server confirms (core/ownerchain.py, runtime/ownership.py; issue 34, item 3).

Each forged case here was trusted by the name patterns before issue 34 (provenance.trusted
alone: a ReplicaSet named ``<deployment>-<hash>``, a StatefulSet named after the
LeaderWorkerSet or carrying its label), and scaled the victim to zero under ScaleToZero."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_operator_controller import (
    DEPLOYMENT,
    FAIL_REPORT,
    NS,
    FakeApi,
    controller,
    deployment,
    injected_pod,
    settle,
)

from preflight_operator.core import ownerchain
from preflight_operator.core.operatorconfig import OperatorConfig, PolicySpec
from preflight_operator.core.workloads import WorkloadRef
from preflight_operator.runtime import ownership
from preflight_operator.runtime.api import ApiError, NotFound
from preflight_operator.runtime.controller import Controller

SCALE = OperatorConfig(default_policy=PolicySpec(on_runtime_failure="ScaleToZero"))


class Objects(FakeApi):
    """FakeApi with the objects of the namespace readable by path (and nothing else)."""

    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        super().__init__()
        self.objects = objects

    async def get(self, path: str) -> dict[str, Any]:
        self.gets.append(path)
        if path not in self.objects:
            raise NotFound(404, "no")
        return self.objects[path]


def ref(kind: str, name: str, uid: str, api_version: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}


def obj(name: str, uid: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid, "namespace": NS}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"metadata": meta}


RS_PATH = f"/apis/apps/v1/namespaces/{NS}/replicasets/"


def scaled(api: FakeApi, pod: dict[str, Any]) -> tuple[bool, str]:
    """Whether the victim Deployment was scaled, and the pod's createdBy as shown."""

    async def scenario() -> None:
        ctl = controller(api, SCALE)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        ctl.observe_pod(pod, deleted=False)
        await settle(ctl)
        await ctl.stop()

    asyncio.run(scenario())
    status = api.gpuvals[NS, "deployment-vllm-good"]["status"]
    shown = {p["pod"]: p["createdBy"] for p in status["runtime"]["pods"]}
    patched = api.workloads.get((NS, "Deployment", "vllm-good"), {})
    return "spec" in patched, shown[pod["metadata"]["name"]]


def forged(owner: dict[str, Any]) -> dict[str, Any]:
    pod = injected_pod("forged", "u9", message=FAIL_REPORT, exit_code=1)
    pod["metadata"]["ownerReferences"] = [owner]
    return pod


def test_the_controllers_own_pod_acts() -> None:
    """The honest chain (FakeApi.get: ReplicaSet vllm-good-h owned by the Deployment's uid)
    still scales: the fix takes nothing from the controller's pods."""
    api = FakeApi()
    assert scaled(api, injected_pod("real", "u1", message=FAIL_REPORT, exit_code=1)) == (
        True,
        "controller",
    )
    assert api.gets == [RS_PATH + "vllm-good-h"]


def test_a_replicaset_of_a_made_up_group_is_not_read_and_proves_nothing() -> None:
    """The issue's "label later" pod: a controller reference to a "ReplicaSet" named
    <victim>-<hash> in a made-up API group."""
    api = Objects({})
    owner = ref("ReplicaSet", "vllm-good-h", "rs-vllm-good", "evil.example.com/v1")
    assert scaled(api, forged(owner)) == (False, "other")
    assert api.gets == []  # no call for a kind the chain never passes through


def test_a_tenants_own_replicaset_named_after_the_victim_proves_nothing() -> None:
    """A tenant who may create ReplicaSets names one <victim>-<anything>: it exists, its
    uid is its own, and it has no controller (or its own)."""
    for owner_of_rs in (None, ref("Deployment", "mine", "uid-mine")):
        api = Objects({RS_PATH + "vllm-good-h": obj("vllm-good-h", "rs-tenant", owner_of_rs)})
        assert scaled(api, forged(ref("ReplicaSet", "vllm-good-h", "rs-tenant"))) == (
            False,
            "other",
        )
        assert api.gets == [RS_PATH + "vllm-good-h"]


def test_a_reference_whose_uid_is_not_the_objects_proves_nothing() -> None:
    """The pod names the victim's real ReplicaSet but another uid (its own made-up one):
    the object read back carries the real uid."""
    real = obj("vllm-good-h", "rs-real", ref("Deployment", "vllm-good", "uid-vllm-good"))
    api = Objects({RS_PATH + "vllm-good-h": real})
    assert scaled(api, forged(ref("ReplicaSet", "vllm-good-h", "rs-made-up"))) == (False, "other")


def test_a_missing_replicaset_proves_nothing() -> None:
    api = Objects({})
    assert scaled(api, forged(ref("ReplicaSet", "vllm-good-h", "rs-x"))) == (False, "other")


@pytest.mark.parametrize(
    "name", ["../../../api/v1/nodes/n1", "vllm-good-h/../x", "a%2Fb", "UPPER", "", "x" * 254]
)
def test_a_name_that_is_no_object_name_is_refused_without_a_call(name: str) -> None:
    """The name goes into an API path only when it is an object name (issue 34, item 7)."""
    api = Objects({})
    pod = forged(ref("ReplicaSet", name, "rs-x"))
    victim = WorkloadRef(NS, "Deployment", "vllm-good", "apps/v1")

    async def scenario() -> bool | None:
        ctl = controller(api, SCALE)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        first = ctl.ownership.confirmed(pod, victim, victim.key)
        assert first is False  # refused at once: malformed, so no step is followed
        await ctl.stop()
        return first

    asyncio.run(scenario())
    assert api.gets == []


def test_a_leaderworkersets_chain_is_followed_through_its_leader_pod() -> None:
    """Worker pod -> worker StatefulSet -> leader Pod -> leader StatefulSet -> the
    LeaderWorkerSet (kubernetes-sigs/lws): confirmed; a StatefulSet of the tenant's with
    the victim's name label is not."""
    lws = ownerchain.Target("leaderworkerset.x-k8s.io", "LeaderWorkerSet", "uid-lws")
    allowed = ownerchain.between([("leaderworkerset.x-k8s.io", "LeaderWorkerSet")])
    assert allowed == {("apps", "StatefulSet"), ("", "Pod")}
    link = ownerchain.controller_link(
        {"metadata": {"ownerReferences": [ref("StatefulSet", "g-0", "s1")]}}
    )
    assert ownerchain.judge(link, lws, allowed) == ownerchain.FOLLOW
    top = ownerchain.Link("leaderworkerset.x-k8s.io", "LeaderWorkerSet", "g", "uid-lws")
    assert ownerchain.judge(top, lws, allowed) == ownerchain.CONFIRMED
    other = ownerchain.Link("leaderworkerset.x-k8s.io", "LeaderWorkerSet", "g", "uid-x")
    assert ownerchain.judge(other, lws, allowed) == ownerchain.REFUTED
    # a Deployment's pod may not pass through a Pod or a StatefulSet
    deploy = ownerchain.Target("apps", "Deployment", "uid-d")
    assert ownerchain.judge(link, deploy, ownerchain.between([("apps", "Deployment")])) == (
        ownerchain.REFUTED
    )


def test_read_back_needs_the_uid_the_reference_names() -> None:
    link = ownerchain.Link("apps", "ReplicaSet", "r", "u1")
    assert ownerchain.read_back(link, None) is False
    assert ownerchain.read_back(link, obj("r", "u2")) is False
    assert ownerchain.read_back(link, obj("r", "u1")) is None
    up = ownerchain.read_back(link, obj("r", "u1", ref("Deployment", "d", "ud")))
    assert up == ownerchain.Link("apps", "Deployment", "d", "ud")


def test_a_malformed_controller_reference_is_none() -> None:
    for bad in (
        {"kind": "ReplicaSet", "name": "r", "uid": "u", "controller": True},  # no apiVersion
        {**ref("ReplicaSet", "r", ""), "controller": True},  # no uid
        {**ref("ReplicaSet", "r", "u" * 200)},
        {**ref("ReplicaSet", "r", "u"), "controller": "true"},  # not a boolean
    ):
        assert ownerchain.controller_link({"metadata": {"ownerReferences": [bad]}}) is None


def test_a_serving_stacks_chain_passes_through_what_it_created() -> None:
    """Pod -> ReplicaSet -> Deployment (a serving stack's child) -> InferenceService: the
    Deployment may stand between, being a workload on the way up, as may its own
    ReplicaSet; the stack's object is the end, by uid."""
    allowed = ownerchain.between(
        [("apps", "Deployment"), ("serving.kserve.io", "InferenceService")]
    )
    assert allowed == {("apps", "ReplicaSet"), ("apps", "Deployment")}
    isvc = ownerchain.Target("serving.kserve.io", "InferenceService", "uid-isvc")
    deploy = ownerchain.Link("apps", "Deployment", "llm-predictor", "uid-d")
    assert ownerchain.judge(deploy, isvc, allowed) == ownerchain.FOLLOW
    top = ownerchain.Link("serving.kserve.io", "InferenceService", "llm", "uid-isvc")
    assert ownerchain.judge(top, isvc, allowed) == ownerchain.CONFIRMED


class Flaky(FakeApi):
    """The ReplicaSet read fails ``failures`` times (a 500), then answers as FakeApi."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def get(self, path: str) -> dict[str, Any]:
        if self.failures:
            self.failures -= 1
            self.gets.append(path)
            raise ApiError(500, "etcd is busy")
        return await super().get(path)


def shown_by(api: FakeApi, name: str) -> str:
    status = api.gpuvals[NS, "deployment-vllm-good"]["status"]
    return next(p["createdBy"] for p in status["runtime"]["pods"] if p["pod"] == name)


def test_a_failed_read_is_retried_and_the_pod_observed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ownership, "RETRIES", (0.01, 0.01, 0.01))
    api = Flaky(failures=2)

    async def scenario() -> None:
        ctl = controller(api, SCALE)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        ctl.observe_pod(injected_pod("real", "u1", message=FAIL_REPORT, exit_code=1), False)
        await settle(ctl)
        await ctl.stop()

    asyncio.run(scenario())
    assert len(api.gets) == 3  # two failures, then the answer
    assert shown_by(api, "real") == "controller"
    assert "spec" in api.workloads[NS, "Deployment", "vllm-good"]  # and it acted


def test_a_read_that_keeps_failing_is_given_up_then_not_retried_at_each_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ownership, "RETRIES", (0.01,))
    api = Flaky(failures=100)

    async def scenario() -> None:
        ctl = controller(api, SCALE)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        pod = injected_pod("real", "u1", message=FAIL_REPORT, exit_code=1)
        ctl.observe_pod(pod, False)
        await settle(ctl)
        reads = len(api.gets)
        ctl.observe_pod(pod, False)  # its next event, within GIVE_UP_S
        await settle(ctl)
        assert len(api.gets) == reads
        await ctl.stop()

    asyncio.run(scenario())
    assert len(api.gets) == 2
    assert shown_by(api, "real") == "other"
    assert "spec" not in api.workloads.get((NS, "Deployment", "vllm-good"), {})


def test_a_pod_seen_before_its_workload_is_judged_once_the_workload_is_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The watches start together: an injected pod may come before its Deployment."""
    monkeypatch.setattr(ownership, "RETRIES", (0.05,) * 20)
    api = FakeApi()

    async def scenario() -> None:
        ctl = controller(api, SCALE)
        await settle(ctl)
        ctl.observe_pod(injected_pod("real", "u1", message=FAIL_REPORT, exit_code=1), False)
        assert ctl.ownership.pending == 1
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        await ctl.stop()

    asyncio.run(scenario())
    assert shown_by(api, "real") == "controller"


def test_a_pod_deleted_while_its_chain_is_read_is_not_observed_again() -> None:
    api = FakeApi()

    async def scenario() -> Controller:
        ctl = controller(api, SCALE)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        pod = injected_pod("real", "u1")  # no result yet: its chain is read ahead
        ctl.observe_pod(pod, False)
        assert ctl.ownership.pending == 1
        ctl.observe_pod(pod, True)
        assert ctl.ownership.pending == 0
        await settle(ctl)
        await ctl.stop()
        return ctl

    ctl = asyncio.run(scenario())
    assert not ctl.store.pods.get((NS, "Deployment", "vllm-good"))
    assert api.gets == [RS_PATH + "vllm-good-h"]  # read ahead, before any result
