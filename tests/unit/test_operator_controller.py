"""The controller and reconciler against an in-memory API: what gets written, and when not."""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_contract.report import CheckResult, Report
from preflight_operator.core import constants
from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.operatorconfig import OperatorConfig, PolicySpec, WorkloadPatch
from preflight_operator.core.static import StaticResult
from preflight_operator.core.workloads import DEPLOYMENT, WorkloadRef
from preflight_operator.runtime.api import Conflict, Forbidden, NotFound
from preflight_operator.runtime.controller import Controller

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
NS = "team"


def deployment(name: str = "good-tp2-deployment.yaml", **labels: str) -> dict[str, Any]:
    doc = next(
        d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d["kind"] == "Deployment"
    )
    doc["metadata"].update(namespace=NS, uid=f"uid-{doc['metadata']['name']}", generation=1)
    doc["metadata"]["labels"].update(labels)
    return doc


class FakeApi:
    """The KubeApi methods the controller uses, over dicts; counts every write."""

    def __init__(self) -> None:
        self.gpuvals: dict[tuple[str, str], dict[str, Any]] = {}
        self.workloads: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.writes: list[tuple[str, str]] = []
        self.policies: dict[tuple[str, str], dict[str, Any]] = {}
        self.pods: list[dict[str, Any]] = []  # pods of the cluster (only listed by selector)
        self.pod_lists: list[Any] = []
        self.forbidden_namespaces: set[str] = set()
        self.uids = itertools.count()
        self.gets: list[str] = []

    async def patch_policy_status(self, namespace: str, name: str, status: Any) -> Any:
        obj = self.policies[namespace, name]
        obj["status"] = _merge(obj.get("status") or {}, status)
        self.writes.append(("policy-status", name))
        return obj

    async def create_gpuvalidation(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        if key in self.gpuvals:
            raise Conflict(409, "exists")
        created = copy.deepcopy(dict(obj))
        created["metadata"]["uid"] = f"gv-{next(self.uids)}"
        self.gpuvals[key] = created
        self.writes.append(("create", key[1]))
        return copy.deepcopy(created)

    async def get_gpuvalidation(self, namespace: str, name: str) -> dict[str, Any]:
        if (namespace, name) not in self.gpuvals:
            raise NotFound(404, "not found")
        return copy.deepcopy(self.gpuvals[namespace, name])

    async def delete_gpuvalidation(self, namespace: str, name: str, uid: str) -> None:
        self.gpuvals.pop((namespace, name), None)
        self.writes.append(("delete", name))

    async def patch_gpuvalidation_status(self, namespace: str, name: str, patch: Any) -> Any:
        if (namespace, name) not in self.gpuvals:
            raise NotFound(404, "gone")
        obj = self.gpuvals[namespace, name]
        obj["status"] = _merge(obj.get("status") or {}, patch)
        self.writes.append(("status", name))
        return obj

    async def patch_workload(self, ref: WorkloadRef, patch: Any) -> Any:
        if ref.namespace in self.forbidden_namespaces:
            self.writes.append(("forbidden", ref.name))
            raise Forbidden(403, "cannot patch", "Forbidden")
        obj = self.workloads.setdefault(ref.key, {})
        self.workloads[ref.key] = _merge(obj, patch)
        self.writes.append(("workload", ref.name))
        return obj

    async def create_event(self, event: Mapping[str, Any]) -> Any:
        self.events.append(dict(event))
        return event

    async def list_pages(
        self, path: str, params: Any = None
    ) -> AsyncIterator[tuple[list[Any], str]]:
        if path.endswith("/gpuvalidations"):
            yield [copy.deepcopy(v) for v in self.gpuvals.values()], "1"
        elif path.endswith("/preflightpolicies"):
            yield [copy.deepcopy(v) for v in self.policies.values()], "1"
        elif path.endswith("/pods"):
            self.pod_lists.append((path, dict(params or {})))
            wanted = dict(t.split("=") for t in params["labelSelector"].split(",") if "=" in t)
            yield (
                [
                    copy.deepcopy(p)
                    for p in self.pods
                    if wanted.items() <= p["metadata"].get("labels", {}).items()
                    and constants.LABEL_INJECTED not in p["metadata"].get("labels", {})
                ],
                "1",
            )
        else:
            yield [], "1"

    async def get_workload(self, ref: WorkloadRef) -> dict[str, Any]:
        raise NotFound(404, "no")

    async def get(self, path: str) -> dict[str, Any]:
        """A Deployment ``<w>``'s ReplicaSet ``<w>-h`` (uid ``rs-<w>``), owned by the
        Deployment as deployment() makes it (uid ``uid-<w>``): the chain of uids a pod's
        result counts through (ownership.py). Anything else is not there."""
        self.gets.append(path)
        prefix = f"/apis/apps/v1/namespaces/{NS}/replicasets/"
        if not (path.startswith(prefix) and path.endswith("-h")):
            raise NotFound(404, "no")
        workload = path.removeprefix(prefix).removesuffix("-h")
        return {
            "metadata": {
                "name": f"{workload}-h",
                "uid": f"rs-{workload}",
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": workload,
                        "uid": f"uid-{workload}",
                        "controller": True,
                    }
                ],
            }
        }

    async def watch(self, path: str, version: str, params: Any = None) -> AsyncIterator[Any]:
        await asyncio.Event().wait()  # nothing ever changes
        yield {}


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def controller(api: FakeApi, config: OperatorConfig | None = None) -> Controller:
    ticks = itertools.count()
    ctl = Controller(
        config or OperatorConfig(),
        api,
        RulesAnalyser(),
        identity="test",  # type: ignore[arg-type]
        now=lambda: f"2026-01-01T00:00:{next(ticks) % 60:02d}Z",
    )
    ctl.scope.observe_namespace(NS, opted_in=True)
    return ctl


async def settle(ctl: Controller) -> None:
    # started once (a pod's chain of uids being read is a task too: ownership.py)
    if not getattr(ctl, "_settled_once", False):
        ctl._settled_once = True  # type: ignore[attr-defined]
        await ctl.start(workers=2)
    for _ in range(500):
        await asyncio.sleep(0.005)
        if ctl.workers.queue.idle() and not ctl.ownership.pending:
            break
    await ctl.events.drain(1.0)


def injected_pod(
    name: str,
    uid: str,
    workload: str = "vllm-good",
    *,
    message: str | None = None,
    exit_code: int = 0,
    created_by: str = "controller",
) -> dict[str, Any]:
    """``created_by``: what the mutating webhook recorded (provenance.py)."""
    pod: dict[str, Any] = {
        "metadata": {
            "name": name,
            "uid": uid,
            "namespace": NS,
            "labels": {"pod-template-hash": "h", constants.LABEL_INJECTED: "true"},
            "annotations": {constants.ANNOTATION_CREATED_BY: created_by},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{workload}-h",
                    "uid": f"rs-{workload}",
                    "controller": True,
                }
            ],
        },
        "spec": {"nodeName": "n1", "initContainers": [{"name": "preflight-check"}]},
        "status": {},
    }
    if message is not None:
        pod["status"]["initContainerStatuses"] = [
            {
                "name": "preflight-check",
                "restartCount": 0,
                "state": {
                    "terminated": {
                        "exitCode": exit_code,
                        "message": message,
                        "finishedAt": "2026-01-01T00:00:30Z",
                    }
                },
            }
        ]
    return pod


PASS_REPORT = Report(checks=[CheckResult("gpu-count", "pass", "ok")]).to_termination_message()
FAIL_REPORT = Report(
    checks=[CheckResult("gpu-count", "fail", "sees 2", "ask for 4")]
).to_termination_message()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_workload_gets_one_gpuvalidation_with_status_and_annotations() -> None:
    async def scenario() -> FakeApi:
        api = FakeApi()
        ctl = controller(api)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        ctl.observe_pod(injected_pod("p1", "u1"), deleted=False)
        await settle(ctl)
        ctl.observe_pod(injected_pod("p1", "u1", message=PASS_REPORT), deleted=False)
        await settle(ctl)
        await ctl.stop()
        return api

    api = run(scenario())
    obj = api.gpuvals[NS, "deployment-vllm-good"]
    status = obj["status"]
    assert (status["staticVerdict"], status["runtimeVerdict"], status["gpus"]) == (
        "pass",
        "pass",
        "2/2",
    )
    assert status["runtime"]["pods"][0]["pod"] == "p1"
    annotations = api.workloads[NS, "Deployment", "vllm-good"]["metadata"]["annotations"]
    assert annotations[constants.ANNOTATION_STATUS] == "pass"
    # pending (no pod), pending (pod without result), pass: three different statuses
    assert [w for w in api.writes if w[0] == "create"] == [("create", "deployment-vllm-good")]
    assert len([w for w in api.writes if w[0] == "status"]) <= 3
    assert [e["reason"] for e in api.events] == ["PreflightCheckPassed"]


def test_out_of_scope_workloads_and_non_vllm_ones_get_nothing() -> None:
    async def scenario() -> FakeApi:
        api = FakeApi()
        ctl = controller(api)
        other = deployment()
        other["metadata"]["namespace"] = "elsewhere"
        ctl.observe_workload(DEPLOYMENT, other, deleted=False)
        plain = deployment()
        plain["spec"]["template"]["spec"]["containers"] = [{"name": "web", "image": "nginx"}]
        ctl.observe_workload(DEPLOYMENT, plain, deleted=False)
        await settle(ctl)
        await ctl.stop()
        return api

    api = run(scenario())
    assert api.writes == []
    assert api.gpuvals == {}


def test_a_restart_that_finds_nothing_new_writes_nothing() -> None:
    async def first_run(api: FakeApi) -> None:
        ctl = controller(api)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        ctl.observe_pod(injected_pod("p1", "u1", message=FAIL_REPORT, exit_code=1), deleted=False)
        await settle(ctl)
        await ctl.stop()

    async def second_run(api: FakeApi) -> None:
        ctl = controller(api)
        await ctl.prime()
        # what the workload looks like now: with the annotations the first run wrote
        body = deployment()
        body["metadata"]["annotations"] = api.workloads[NS, "Deployment", "vllm-good"]["metadata"][
            "annotations"
        ]
        ctl.observe_workload(DEPLOYMENT, body, deleted=False)
        ctl.observe_pod(injected_pod("p1", "u1", message=FAIL_REPORT, exit_code=1), deleted=False)
        await settle(ctl)
        await ctl.stop()

    api = FakeApi()
    run(first_run(api))
    events_before, writes_before = len(api.events), len(api.writes)
    assert api.gpuvals[NS, "deployment-vllm-good"]["status"]["runtimeVerdict"] == "fail"
    run(second_run(api))
    assert api.writes[writes_before:] == []
    assert len(api.events) == events_before  # the failure is not announced twice


def test_a_deleted_gpuvalidation_is_recreated() -> None:
    async def scenario() -> FakeApi:
        api = FakeApi()
        ctl = controller(api)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        api.gpuvals.clear()  # someone deleted it; we have not seen the event
        ctl.observe_pod(injected_pod("p1", "u1", message=PASS_REPORT), deleted=False)
        await settle(ctl)
        await asyncio.sleep(0.4)  # the retry after the 404 waits a back-off
        await settle(ctl)
        await ctl.stop()
        return api

    api = run(scenario())
    assert api.gpuvals[NS, "deployment-vllm-good"]["status"]["runtimeVerdict"] == "pass"


def test_scale_to_zero_is_applied_recorded_and_undone() -> None:
    config = OperatorConfig(default_policy=PolicySpec(on_runtime_failure="ScaleToZero"))

    async def scenario() -> tuple[FakeApi, dict[str, Any], dict[str, Any]]:
        api = FakeApi()
        ctl = controller(api, config)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        ctl.observe_pod(injected_pod("p1", "u1", message=FAIL_REPORT, exit_code=1), deleted=False)
        await settle(ctl)
        applied = copy.deepcopy(api.workloads[NS, "Deployment", "vllm-good"])
        status = copy.deepcopy(api.gpuvals[NS, "deployment-vllm-good"]["status"])
        # the user fixes it and removes the annotation: the workload as the API has it now
        body = deployment()
        body["spec"]["replicas"] = 0
        body["metadata"]["annotations"] = {"vllm-preflight.io/previous-replicas": "1"}
        ctl.observe_workload(DEPLOYMENT, body, deleted=False)
        await settle(ctl)
        await ctl.stop()
        return api, applied, status

    api, applied, status = run(scenario())
    assert applied["spec"] == {"replicas": 0}
    assert applied["metadata"]["annotations"][constants.ANNOTATION_REMEDIATED] == "ScaleToZero"
    assert status["remediation"]["type"] == "ScaleToZero"
    assert status["remediation"]["previousReplicas"] == 1
    restored = api.workloads[NS, "Deployment", "vllm-good"]
    assert restored["spec"] == {"replicas": 1}
    final = api.gpuvals[NS, "deployment-vllm-good"]["status"]["remediation"]
    assert final["type"] == "None"
    assert "revertedAt" in final
    assert {"ScaledToZero", "RemediationReverted"} <= {e["reason"] for e in api.events}


def test_a_pod_anyone_else_made_never_scales_the_workload() -> None:
    """Issue 23: a pod-only user's pod, owned (not by its controller) by the victim's
    ReplicaSet, with a made-up failing report: shown, but no remediation, and it does not
    outrank the controller's own passing pod."""
    config = OperatorConfig(default_policy=PolicySpec(on_runtime_failure="ScaleToZero"))

    async def scenario() -> FakeApi:
        api = FakeApi()
        ctl = controller(api, config)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        ctl.observe_pod(injected_pod("real", "u1", message=PASS_REPORT), deleted=False)
        forged = injected_pod("forged", "u2", message=FAIL_REPORT, exit_code=1, created_by="other")
        ctl.observe_pod(forged, deleted=False)
        await settle(ctl)
        await ctl.stop()
        return api

    api = run(scenario())
    patched = api.workloads.get((NS, "Deployment", "vllm-good"), {})
    assert "spec" not in patched  # never scaled
    assert not any(e["reason"] == "ScaledToZero" for e in api.events)
    status = api.gpuvals[NS, "deployment-vllm-good"]["status"]
    assert status["runtimeVerdict"] == "pass"
    shown = {p["pod"]: (p["verdict"], p["createdBy"]) for p in status["runtime"]["pods"]}
    assert shown == {"real": ("pass", "controller"), "forged": ("fail", "other")}


def test_a_controller_reference_with_another_uid_is_not_the_workloads() -> None:
    """provenance: where the workload owns its pods itself (a StatefulSet), the pod's
    controller reference must carry the workload's uid as watched."""
    from preflight_operator.core.workloads import STATEFULSET

    config = OperatorConfig(default_policy=PolicySpec(on_runtime_failure="ScaleToZero"))
    sts = deployment()
    sts.update(kind="StatefulSet", apiVersion="apps/v1")
    sts["spec"]["serviceName"] = "vllm-good"

    def pod(uid: str) -> dict[str, Any]:
        body = injected_pod("vllm-good-0", "p1", message=FAIL_REPORT, exit_code=1)
        body["metadata"]["labels"].pop("pod-template-hash")
        body["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": "vllm-good",
                "uid": uid,
                "controller": True,
            }
        ]
        return body

    async def scenario(owner_uid: str) -> FakeApi:
        api = FakeApi()
        ctl = controller(api, config)
        ctl.observe_workload(STATEFULSET, sts, deleted=False)
        await settle(ctl)
        ctl.observe_pod(pod(owner_uid), deleted=False)
        await settle(ctl)
        await ctl.stop()
        return api

    def created_by(api: FakeApi) -> str:
        status = api.gpuvals[NS, "statefulset-vllm-good"]["status"]
        return str(status["runtime"]["pods"][0]["createdBy"])

    assert created_by(run(scenario("uid-vllm-good"))) == "controller"
    assert created_by(run(scenario("uid-someone-elses"))) == "other"


def test_a_rules_crash_is_recorded_not_raised() -> None:
    class Exploding(RulesAnalyser):
        def analyse(self, body: Any, policy: Any) -> StaticResult:
            raise ValueError("bug")

    async def scenario() -> FakeApi:
        api = FakeApi()
        ctl = Controller(OperatorConfig(), api, Exploding(), identity="t")  # type: ignore[arg-type]
        ctl.scope.observe_namespace(NS, opted_in=True)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        await ctl.stop()
        return api

    api = run(scenario())
    status = api.gpuvals[NS, "deployment-vllm-good"]["status"]
    assert status["staticVerdict"] == "error"
    assert status["conditions"][0]["reason"] == "RulesError"


@pytest.mark.parametrize("label", ["enabled", "disabled"])
def test_namespace_opt_in_and_template_opt_out(label: str) -> None:
    api = FakeApi()
    ctl = Controller(OperatorConfig(), api, RulesAnalyser(), identity="t")  # type: ignore[arg-type]
    body = deployment()
    body["spec"]["template"]["metadata"]["labels"][constants.LABEL_INJECT] = label
    assert ctl.scope.in_scope(DEPLOYMENT, body) is (label == "enabled")
    assert ctl.scope.observe_namespace(NS, opted_in=True) is True
    assert ctl.scope.observe_namespace(NS, opted_in=True) is False
    assert ctl.scope.in_scope(DEPLOYMENT, body) is (label == "enabled")
    assert ctl.scope.observe_namespace("kube-system", opted_in=True) is False


def test_a_late_echo_never_replaces_a_newer_status() -> None:
    api = FakeApi()
    ctl = controller(api)
    ref = {"kind": "Deployment", "name": "vllm-good", "uid": "uid-vllm-good"}

    def event(version: str, verdict: str) -> dict[str, Any]:
        return {
            "metadata": {"namespace": NS, "name": "deployment-vllm-good",
                         "resourceVersion": version},
            "spec": {"workloadRef": ref},
            "status": {"runtimeVerdict": verdict},
        }  # fmt: skip

    ctl.validations.observe(event("10", "pass"), deleted=False)
    key = (NS, "Deployment", "vllm-good")
    ctl.validations.observe(event("9", "pending"), deleted=False)
    assert ctl.store.validations[key].status == {"runtimeVerdict": "pass"}
    ctl.validations.observe(event("11", "fail"), deleted=False)
    assert ctl.store.validations[key].status == {"runtimeVerdict": "fail"}
    assert ctl.store.validations[key].resource_version == 11


def test_a_workload_from_a_list_without_kind_is_still_analysed() -> None:
    async def scenario() -> FakeApi:
        api = FakeApi()
        ctl = controller(api)
        listed = deployment()
        del listed["kind"], listed["apiVersion"]  # LIST items carry neither
        ctl.observe_workload(DEPLOYMENT, listed, deleted=False)
        await settle(ctl)
        await ctl.stop()
        return api

    api = run(scenario())
    assert api.gpuvals[NS, "deployment-vllm-good"]["status"]["staticVerdict"] == "pass"


def test_a_follower_writes_nothing_until_it_leads_then_catches_up() -> None:
    # Two replicas share the cluster: the one without the Lease must not reconcile from
    # its own store, whatever feeds its queue; once it leads, it catches up.
    from preflight_operator.runtime.writegate import WriteGate

    clock = [100.0]
    gate = WriteGate("follower", clock=lambda: clock[0])

    async def scenario() -> tuple[FakeApi, list[tuple[str, str]]]:
        api = FakeApi()
        ctl = Controller(
            OperatorConfig(),
            api,  # type: ignore[arg-type]
            RulesAnalyser(),
            identity="follower",
            gate=gate,
        )
        ctl.scope.observe_namespace(NS, opted_in=True)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        while_following = list(api.writes)
        gate.held(renewal_started=clock[0], renew_deadline=10.0)  # the elector took it
        ctl.leadership_changed(True)
        await settle(ctl)
        await ctl.stop()
        return api, while_following

    api, while_following = run(scenario())
    assert while_following == []
    assert ("create", "deployment-vllm-good") in api.writes


def test_a_bad_policy_field_gets_a_status_an_event_and_the_default_once() -> None:
    """shmMin 1E: the check would refuse it (and the rules once crashed on it, which
    silently disabled injection); the operator uses 1Gi and says so on the policy."""
    api = FakeApi()
    api.policies[NS, "trial"] = {
        "metadata": {"namespace": NS, "name": "trial", "uid": "p1", "generation": 2},
        "spec": {"action": "Warn", "thresholds": {"shmMin": "1E"}},
    }

    async def one_run() -> Controller:
        ctl = controller(api)
        await ctl.prime()
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        await ctl.stop()
        return ctl

    ctl = run(one_run())
    resolved = ctl.policy_watch.book.resolve(NS, {}, PolicySpec())
    assert (resolved.name, resolved.action) == ("trial", "Warn")
    assert resolved.spec.thresholds.shm_min == "1Gi"
    status = api.policies[NS, "trial"]["status"]
    assert status["observedGeneration"] == 2
    (condition,) = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Valid",
        "False",
        "InvalidFields",
    )
    assert "spec.thresholds.shmMin: '1E' is not a size" in condition["message"]
    (event,) = [e for e in api.events if e["reason"] == "PolicyInvalid"]
    assert event["involvedObject"]["kind"] == "PreflightPolicy"
    assert "Fix the field(s) named" in event["message"]
    assert api.gpuvals[NS, "deployment-vllm-good"]["status"]["action"] == "Warn"
    writes, events = len(api.writes), len(api.events)
    run(one_run())  # a restart: the policy's status is as wanted, nothing new about it
    assert [w for w in api.writes[writes:] if w[0] == "policy-status"] == []
    assert [e for e in api.events[events:] if e["reason"] == "PolicyInvalid"] == []


def test_pods_that_ran_without_injection_get_not_injected_an_event_and_a_count() -> None:
    """Created while the webhook was down (failurePolicy Ignore): the pod watch never sees
    them (it selects injected pods), so the workload's own status says pods exist."""
    from preflight_operator.runtime import metrics

    api = FakeApi()
    api.pods = [
        {"metadata": {"name": f"vllm-good-{i}", "namespace": NS, "labels": {"app": "vllm-good"}}}
        for i in range(2)
    ]
    counted = metrics.INJECTIONS.labels(result="missed", reason="not-injected")
    before = counted._value.get()

    async def scenario() -> None:
        ctl = controller(api)
        body = deployment()
        ctl.observe_workload(DEPLOYMENT, body, deleted=False)
        await settle(ctl)
        assert api.pod_lists == []  # no pods reported yet: nothing listed
        body["status"] = {"replicas": 2}
        ctl.observe_workload(DEPLOYMENT, body, deleted=False)
        await settle(ctl)
        await ctl.stop()

    run(scenario())
    status = api.gpuvals[NS, "deployment-vllm-good"]["status"]
    runtime = next(c for c in status["conditions"] if c["type"] == "RuntimeChecksPassed")
    assert runtime["reason"] == "NotInjected"
    assert "vllm-good-0, vllm-good-1" in runtime["message"]
    assert status["reason"] == "not-injected"
    assert [e["reason"] for e in api.events] == ["NotInjected"]
    assert api.pod_lists[0][1]["labelSelector"] == "app=vllm-good,!vllm-preflight.io/injected"
    assert counted._value.get() - before == 2


def _failing_pod_where_patch_is_forbidden(config: OperatorConfig) -> tuple[FakeApi, dict[str, Any]]:
    """A Deployment's injected pod fails in NS, where the API server refuses workload
    patches: the API as left and the GPUValidation's status."""
    api = FakeApi()
    api.forbidden_namespaces = {NS}

    async def scenario() -> None:
        ctl = controller(api, config)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        ctl.observe_pod(injected_pod("p1", "u1", message=FAIL_REPORT, exit_code=1), deleted=False)
        await settle(ctl)
        await ctl.stop()

    run(scenario())
    return api, api.gpuvals[NS, "deployment-vllm-good"]["status"]


def test_without_patch_rights_the_status_is_still_written_and_nothing_claimed_done() -> None:
    """The chart grants patch on workloads only in rbac.workloadNamespaces by default."""
    config = OperatorConfig(default_policy=PolicySpec(on_runtime_failure="ScaleToZero"))
    api, status = _failing_pod_where_patch_is_forbidden(config)
    assert status["runtimeVerdict"] == "fail"
    assert "remediation" not in status  # not applied, so not recorded as applied
    assert NS not in {k[0] for k in api.workloads}
    assert ("forbidden", "vllm-good") in api.writes
    assert "ScaledToZero" not in {e["reason"] for e in api.events}


def test_where_the_chart_grants_no_patch_none_is_sent() -> None:
    """CI of 2026-12-02: the chart's operator sent patches its RBAC refused (a 403 logged for
    every workload outside rbac.workloadNamespaces). Told by the configuration where it may
    patch (config.WorkloadPatch), it sends none there, and writes the status all the same."""
    config = OperatorConfig(
        default_policy=PolicySpec(on_runtime_failure="ScaleToZero"),
        workload_patch=WorkloadPatch(scope="namespaces", namespaces=frozenset({"elsewhere"})),
    )
    api, status = _failing_pod_where_patch_is_forbidden(config)
    assert status["runtimeVerdict"] == "fail"
    assert "remediation" not in status
    assert ("forbidden", "vllm-good") not in api.writes  # never sent, so never refused
    assert WorkloadPatch(scope="cluster").allows(NS)
    assert not WorkloadPatch(scope="none").allows(NS)
