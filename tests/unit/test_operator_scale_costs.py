"""What one result costs the operator, counted (issue 28, the scale curve): rule analyses
and API writes per event, never timings. hack/bench/operator_scale.py measures the same
costs on a real control plane; these pin the causes its profile found."""

from __future__ import annotations

import copy
from typing import Any

from test_operator_controller import (
    NS,
    PASS_REPORT,
    FakeApi,
    controller,
    deployment,
    injected_pod,
    run,
    settle,
)

from preflight_operator.core import constants
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.static import StaticResult
from preflight_operator.core.workloads import DEPLOYMENT


class CountingAnalyser:
    """The rules, counted."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def analyse(self, body: Any, policy: PolicySpec) -> StaticResult:
        self.calls += 1
        result: StaticResult = self.inner.analyse(body, policy)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_operators_own_verdict_annotations_do_not_run_the_rules_again() -> None:
    """A Deployment's generation counts annotation changes: the verdict annotations each
    reconcile writes came back as a new generation and ran the rules again."""

    async def scenario() -> int:
        api = FakeApi()
        ctl = controller(api)
        counting = CountingAnalyser(ctl.analyser)
        ctl.analyser = counting  # type: ignore[assignment]
        body = deployment()
        ctl.observe_workload(DEPLOYMENT, body, deleted=False)
        await settle(ctl)
        # the watch brings it back with the annotations the reconcile wrote: generation 2
        echoed = copy.deepcopy(body)
        echoed["metadata"]["generation"] = 2
        echoed["metadata"]["annotations"] = {
            constants.ANNOTATION_STATUS: "pending",
            constants.ANNOTATION_CHECKED_AT: "2026-01-01T00:00:09Z",
        }
        ctl.observe_workload(DEPLOYMENT, echoed, deleted=False)
        await settle(ctl)
        # a real change of what the rules read still runs them
        changed = copy.deepcopy(echoed)
        changed["metadata"]["generation"] = 3
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:v0.12.0"
        ctl.observe_workload(DEPLOYMENT, changed, deleted=False)
        await settle(ctl)
        await ctl.stop()
        return counting.calls

    assert run(scenario()) == 2


class DeploymentApi(FakeApi):
    """Patches a whole Deployment as the API server does: a change of its annotations
    moves its generation (the Deployment strategy's PrepareForUpdate)."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__()
        self.body = copy.deepcopy(body)

    async def patch_workload(self, ref: Any, patch: Any) -> Any:
        await super().patch_workload(ref, patch)
        before = dict(self.body["metadata"].get("annotations") or {})
        after = {**before, **patch["metadata"]["annotations"]}
        after = {k: v for k, v in after.items() if v is not None}
        if after != before:
            self.body["metadata"]["annotations"] = after
            self.body["metadata"]["generation"] += 1
        return copy.deepcopy(self.body)


def test_a_verdict_change_costs_one_status_write_not_two() -> None:
    """The echo of the operator's own annotation patch (a new generation) wrote the
    status again, for observedGeneration alone."""

    async def scenario() -> tuple[list[Any], dict[str, Any], DeploymentApi]:
        body = deployment()
        api = DeploymentApi(body)
        ctl = controller(api)
        ctl.observe_workload(DEPLOYMENT, body, deleted=False)
        ctl.observe_pod(injected_pod("p1", "u1"), deleted=False)
        await settle(ctl)
        ctl.observe_pod(injected_pod("p1", "u1", message=PASS_REPORT), deleted=False)
        await settle(ctl)
        writes = len(api.writes)
        # the watch brings the Deployment as the API server has it now
        ctl.observe_workload(DEPLOYMENT, copy.deepcopy(api.body), deleted=False)
        await settle(ctl)
        await ctl.stop()
        return api.writes[writes:], api.gpuvals[NS, "deployment-vllm-good"]["status"], api

    after_echo, status, api = run(scenario())
    assert after_echo == []
    # and the status says the generation the workload has now
    assert status["observedGeneration"] == api.body["metadata"]["generation"]
    assert status["runtimeVerdict"] == "pass"


class CountingItems(dict):  # type: ignore[type-arg]
    """A reflector's items, counting the walks over all of them."""

    walks = 0

    def items(self) -> Any:
        CountingItems.walks += 1
        return super().items()

    def __iter__(self) -> Any:
        CountingItems.walks += 1
        return super().__iter__()


class ServicesApi:
    def __init__(self, services: list[dict[str, Any]]) -> None:
        self.services = services

    async def list_pages(self, path: str, params: Any = None) -> Any:
        yield [copy.deepcopy(s) for s in self.services], "7"


def service(namespace: str) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": "vllm", "resourceVersion": "1"}}


def test_a_namespaces_services_are_found_without_walking_every_namespace() -> None:
    """The rules ask for a namespace's Services named vllm on every analysis: that
    walked every namespace's (10,000 analyses x 10,000 Services at 10k/50k)."""
    from preflight_operator.runtime.reflector import Reflector

    async def scenario() -> tuple[list[Any], list[Any], list[Any], int]:
        reflector = Reflector(
            ServicesApi([service(f"ns-{i}") for i in range(200)]),  # type: ignore[arg-type]
            "/api/v1/services",
            name="services",
        )
        await reflector.sync()
        reflector.apply({"type": "ADDED", "object": service("new")})
        reflector.apply({"type": "DELETED", "object": service("ns-3")})
        reflector.items = CountingItems(reflector.items)
        CountingItems.walks = 0
        found = [reflector.in_namespace(f"ns-{i}") for i in range(200)]
        return (
            found[7],
            reflector.in_namespace("new"),
            reflector.in_namespace("ns-3"),
            (CountingItems.walks),
        )

    one, added, deleted, walks = run(scenario())
    assert [s["metadata"]["namespace"] for s in one] == ["ns-7"]
    assert [s["metadata"]["namespace"] for s in added] == ["new"]
    assert deleted == []
    assert walks == 0


class UnreadableWorkloadApi(FakeApi):
    """The workload's patch answers with something the operator cannot read (a 1 MB
    Deployment over the decoder's limit)."""

    async def patch_workload(self, ref: Any, patch: Any) -> Any:
        from preflight_operator.core.decoding import Rejection
        from preflight_operator.runtime.api import Unreadable

        self.writes.append(("workload", ref.name))
        raise Unreadable(Rejection("/apis/apps/v1", "too-large", "an answer too large"))


def test_a_workload_patch_that_fails_never_holds_back_the_status() -> None:
    """With the annotations patched first, a failing patch (an answer too large to read)
    kept the status from ever being written (the e2e test of a 1 MB manifest)."""

    async def scenario() -> dict[str, Any]:
        api = UnreadableWorkloadApi()
        ctl = controller(api)
        ctl.observe_workload(DEPLOYMENT, deployment(), deleted=False)
        await settle(ctl)
        await ctl.stop()
        return api.gpuvals[NS, "deployment-vllm-good"].get("status") or {}

    status = run(scenario())
    assert status.get("staticVerdict") == "pass"
