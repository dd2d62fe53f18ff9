"""The operator's own node probe (issue 34): the pod it makes, how its verdict is read, the
settings, and the shell's one-per-node, bounded, delete-always loop against a small API."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from preflight_contract import envnames
from preflight_contract.report import CheckResult, GPUEntry, Report
from preflight_operator.core import constants
from preflight_operator.core import nodefeedback as nf
from preflight_operator.core import nodeprobepod as probe
from preflight_operator.core.operatorconfig import ConfigError, ProbeSettings, parse_probe_settings
from preflight_operator.runtime.api import Conflict, NotFound
from preflight_operator.runtime.nodeproberunner import NodeProbes, ProbeImage

GPU0 = "GPU-ea300b2e-0352-789c-6847-ce5195328e81"
IMAGE = "ghcr.io/vllm-preflight/check@sha256:" + "c" * 64
GPUS = [GPUEntry(0, GPU0, "0000:06:00.0")]


def pod_of(node: str = "gpu-1") -> dict[str, Any]:
    return probe.probe_pod(
        node,
        namespace="vllm-preflight",
        image=IMAGE,
        pull_policy="IfNotPresent",
        deadline_seconds=120,
        start_seconds=300,
    )


def test_the_probe_pod_is_ours_on_that_node_with_no_token_and_no_gpu_request() -> None:
    body = pod_of()
    assert body["metadata"]["namespace"] == "vllm-preflight"
    assert body["metadata"]["name"] == probe.probe_name("gpu-1")
    assert body["metadata"]["labels"][probe.LABEL] == probe.LABEL_VALUE
    spec = body["spec"]
    assert spec["nodeName"] == "gpu-1"
    assert spec["automountServiceAccountToken"] is False
    assert {"key": nf.KEY, "operator": "Exists"} in spec["tolerations"]
    [check] = spec["initContainers"]
    assert check["name"] == constants.CHECK_CONTAINER
    assert check["image"] == IMAGE
    env = {e["name"]: e["value"] for e in check["env"]}
    assert env[envnames.TIER] == "fast"
    assert env[envnames.ACTION] == "Warn"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert constants.GPU_RESOURCE not in json.dumps(spec["initContainers"])
    assert probe.probe_name("gpu-1") != probe.probe_name("gpu-2")
    assert len(probe.probe_name("n" * 253)) <= 63


def status(message: str, uid: str = "u1", node: str = "gpu-1", phase: str = "") -> dict[str, Any]:
    body = pod_of(node)
    body["metadata"]["uid"] = uid
    terminated = {"exitCode": 0, "message": message, "finishedAt": "2026-12-01T08:00:00Z"}
    body["status"] = {
        "phase": phase or "Running",
        "initContainerStatuses": [
            {"name": constants.CHECK_CONTAINER, "state": {"terminated": terminated}}
        ]
        if message
        else [],
    }
    return body


ECC = Report(
    checks=[CheckResult("ecc", "fail", "uncorrectable ECC errors on GPU 0 (GPU-ea300b2e)", "rma")],
    gpus=GPUS,
    action="Warn",
).to_termination_message()
PASS = Report(
    checks=[CheckResult("ecc", "pass", "no ECC errors")], gpus=GPUS
).to_termination_message()
ONLY_A_PLAN_FAULT = Report(
    checks=[CheckResult("gpu-count", "fail", "CUDA sees 1 GPU, the plan needs 2", "")],
    gpus=GPUS,
    action="Warn",
).to_termination_message()
ECC_ERROR = Report(
    checks=[CheckResult("ecc", "error", "NVML could not be read", "")], gpus=GPUS
).to_termination_message()


def test_a_probe_fault_and_a_probe_pass_are_verdicts() -> None:
    fault = probe.read_probe(status(ECC), "gpu-1", "u1")
    assert fault is not None
    assert fault.found is not None
    assert fault.found.failing == ((GPU0, ("ecc",)),)
    passed = probe.read_probe(status(PASS), "gpu-1", "u1")
    assert passed is not None
    assert passed.found is not None
    assert passed.found.passed
    assert passed.found.checked == (GPU0,)
    # a plan fault in a pod without vLLM says nothing of the node: still a pass
    plan = probe.read_probe(status(ONLY_A_PLAN_FAULT), "gpu-1", "u1")
    assert plan is not None
    assert plan.found is not None
    assert plan.found.passed


@pytest.mark.parametrize(
    ("body", "uid", "node"),
    [
        (status(ECC, uid="someone-elses"), "u1", "gpu-1"),  # replaced under our name
        (status(ECC, node="gpu-2"), "u1", "gpu-1"),
        (status("Traceback (most recent call last):"), "u1", "gpu-1"),  # a crash: no report
        (status(ECC_ERROR), "u1", "gpu-1"),  # the node check could not run: no pass
        (status("", phase="Failed"), "u1", "gpu-1"),
    ],
)
def test_anything_else_ends_the_probe_without_a_verdict(
    body: dict[str, Any], uid: str, node: str
) -> None:
    verdict = probe.read_probe(body, node, uid)
    assert verdict is not None
    assert verdict.found is None
    assert verdict.ended


def test_a_running_probe_has_no_verdict_yet() -> None:
    assert probe.read_probe(status(""), "gpu-1", "u1") is None


def test_the_settings_are_bounded() -> None:
    assert parse_probe_settings(None) == ProbeSettings()
    assert parse_probe_settings({"intervalSeconds": 5}).interval_seconds == 5
    for bad in ({"intervalSeconds": 0}, {"maxRunning": 1000}, {"startSeconds": "x"}, []):
        with pytest.raises(ConfigError):
            parse_probe_settings(bad)


class PodApi:
    """Nodes exist; pods are created, read and deleted in one namespace."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.pods: dict[str, dict[str, Any]] = {}
        self.created: list[str] = []
        self.deleted: list[str] = []
        self.uid = 0

    async def get(self, path: str) -> dict[str, Any]:
        if path.startswith("/api/v1/nodes/"):
            return {"metadata": {"name": path.rsplit("/", 1)[1]}}
        name = path.rsplit("/", 1)[1]
        if name not in self.pods:
            raise NotFound(404, "not found")
        pod = self.pods[name]
        terminated = {"exitCode": 0, "message": self.answer, "finishedAt": "2026-12-01T08:00:00Z"}
        pod["status"] = {
            "initContainerStatuses": [
                {"name": constants.CHECK_CONTAINER, "state": {"terminated": terminated}}
            ]
        }
        return pod

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        if method == "GET":
            return {"items": []}
        if method == "POST":
            body = kwargs["body"]
            name = body["metadata"]["name"]
            if name in self.pods:
                raise Conflict(409, "already exists")
            self.uid += 1
            body = json.loads(json.dumps(body))
            body["metadata"]["uid"] = f"u{self.uid}"
            self.pods[name] = body
            self.created.append(name)
            return body
        assert method == "DELETE"
        name = path.rsplit("/", 1)[1]
        self.deleted.append(name)
        if self.pods.pop(name, None) is None:
            raise NotFound(404, "not found")
        return {}


def test_requests_coalesce_per_node_and_every_probe_pod_is_deleted() -> None:
    api = PodApi(ECC)
    got: list[tuple[nf.Finding, nf.Levels]] = []
    image = ProbeImage("vllm-preflight", IMAGE, "IfNotPresent", 1)

    async def main() -> None:
        probes = NodeProbes(
            api,  # type: ignore[arg-type]
            image,
            lambda found, levels: got.append((found, levels)),
            settings=ProbeSettings(interval_seconds=3600, max_running=1),
            poll_seconds=0.01,
        )
        probes.request("gpu-1", nf.Levels(taint=True))
        probes.request("gpu-1", nf.Levels(event=True))  # one probe, the levels' union
        probes.request("../etc", nf.Levels(taint=True))  # no node name: never a path
        api.pods[probe.probe_name("gpu-1")] = {"metadata": {"uid": "former"}}  # a leftover
        probes.start()
        while not got:
            await asyncio.sleep(0.01)
        probes.request("gpu-1", nf.Levels(taint=True))  # within the interval: waits
        await asyncio.sleep(0.1)
        await probes.stop()
        assert probes.pending() == {"gpu-1": nf.Levels(taint=True)}

    asyncio.run(main())
    [(found, levels)] = got
    assert found.failing == ((GPU0, ("ecc",)),)
    assert levels == nf.Levels(event=True, taint=True)
    assert api.created == [probe.probe_name("gpu-1")]  # the leftover went first
    assert api.pods == {}  # deleted after its verdict
