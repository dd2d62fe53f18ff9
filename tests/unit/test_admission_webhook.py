"""The validating webhook's decisions under Enforce / Warn / Audit, from real manifests."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_operator.core.admissiondecision import decide, spec_changed
from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.events import EventSpec
from preflight_operator.core.operatorconfig import OperatorConfig, PolicySpec, WebhookConfig
from preflight_operator.core.policy import PolicyBook, ResolvedPolicy, parse_policy
from preflight_operator.core.rules.vocabulary import Finding
from preflight_operator.core.static import StaticResult
from preflight_operator.core.workloads import WorkloadRef
from preflight_operator.runtime import metrics
from preflight_operator.webhook import admissionreview
from preflight_operator.webhook.webhooks import AdmissionService

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"
REF = WorkloadRef("ns", "Deployment", "vllm", "apps/v1")


def load(name: str) -> dict[str, Any]:
    doc = next(
        d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d["kind"] == "Deployment"
    )
    doc["metadata"]["namespace"] = "team"
    return doc


GOOD, BAD = load("good-tp2-deployment.yaml"), load("bad-tp4-deployment.yaml")


class Sink:
    def __init__(self) -> None:
        self.events: list[EventSpec] = []

    def post(self, event: EventSpec) -> None:
        self.events.append(event)


def service(
    action: str = "Enforce", policies: Sequence[dict[str, Any]] = ()
) -> tuple[AdmissionService, Sink]:
    book = PolicyBook()
    for p in policies:
        book.put(parse_policy(p))
    sink = Sink()
    # denial Events on (they are off by default), "team" opted in: what they say is tested
    config = OperatorConfig(
        default_policy=PolicySpec(action=action), webhook=WebhookConfig(admission_events=True)
    )
    svc = AdmissionService(
        config, RulesAnalyser(), book, events=sink,  # type: ignore[arg-type]
        opted_in=lambda namespace: namespace == "team",
    )  # fmt: skip
    return svc, sink


def test_enforce_denies_with_every_failure_its_field_and_fix() -> None:
    svc, sink = service("Enforce")
    result = svc.validate(BAD, old=None, operation="CREATE", dry_run=False)
    assert result.outcome == "denied"
    assert not result.decision.allowed
    message = result.decision.message
    assert "Deployment/vllm-bad" in message
    assert "action Enforce" in message
    assert "1. gpu-count-too-low" in message
    assert "2. shm-missing" in message
    assert 'resources.limits["nvidia.com/gpu"]' in message
    assert "Fix: request 4 GPUs" in message
    assert [(e.reason, e.involved.name) for e in sink.events] == [("AdmissionDenied", "vllm-bad")]


def test_dry_run_denies_but_records_nothing() -> None:
    svc, sink = service("Enforce")
    assert not svc.validate(BAD, old=None, operation="CREATE", dry_run=True).decision.allowed
    assert sink.events == []


def test_warn_admits_with_one_warning_per_finding() -> None:
    svc, _ = service("Warn")
    result = svc.validate(BAD, old=None, operation="CREATE", dry_run=False)
    assert result.decision.allowed
    assert result.outcome == "warned"
    assert len(result.decision.warnings) == 2
    assert result.decision.warnings[0].startswith("vllm-preflight fail: gpu-count-too-low")


def test_audit_admits_silently() -> None:
    svc, sink = service("Audit")
    result = svc.validate(BAD, old=None, operation="CREATE", dry_run=False)
    assert result.decision.allowed
    assert result.decision.warnings == ()
    assert sink.events == []


def test_a_good_workload_passes_under_enforce() -> None:
    svc, _ = service("Enforce")
    result = svc.validate(GOOD, old=None, operation="CREATE", dry_run=False)
    assert result.decision.allowed
    assert result.outcome == "allowed"


def test_the_policy_selecting_the_workload_decides() -> None:
    trial = {
        "metadata": {"namespace": "team", "name": "trial"},
        "spec": {"selector": {"matchLabels": {"app": "vllm-bad"}}, "action": "Audit"},
    }
    svc, _ = service("Enforce", [trial])
    assert svc.validate(BAD, old=None, operation="CREATE", dry_run=False).decision.allowed
    other_namespace = copy.deepcopy(BAD)
    other_namespace["metadata"]["namespace"] = "other"
    assert not svc.validate(
        other_namespace, old=None, operation="CREATE", dry_run=False
    ).decision.allowed


@pytest.mark.parametrize("namespace", ["kube-system", ""])
def test_system_namespaces_are_never_judged(namespace: str) -> None:
    svc, _ = service("Enforce")
    body = copy.deepcopy(BAD)
    body["metadata"]["namespace"] = namespace
    assert svc.validate(body, old=None, operation="CREATE", dry_run=False).outcome == "skipped"


def test_opted_out_workloads_and_controller_made_pods_are_admitted() -> None:
    svc, _ = service("Enforce")
    opted_out = copy.deepcopy(BAD)
    opted_out["spec"]["template"]["metadata"]["labels"]["vllm-preflight.io/inject"] = "disabled"
    assert svc.validate(opted_out, old=None, operation="CREATE", dry_run=False).outcome == "skipped"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "team", "name": "p", "ownerReferences": [{"kind": "ReplicaSet"}]},
        "spec": BAD["spec"]["template"]["spec"],
    }
    assert svc.validate(pod, old=None, operation="CREATE", dry_run=False).outcome == "skipped"
    bare = {**pod, "metadata": {"namespace": "team", "name": "p"}}
    assert svc.validate(bare, old=None, operation="CREATE", dry_run=False).outcome == "denied"


def test_updates_that_leave_the_spec_alone_are_not_judged() -> None:
    svc, _ = service("Enforce")
    annotated = copy.deepcopy(BAD)
    annotated["metadata"]["annotations"] = {"vllm-preflight.io/status": "fail"}
    assert svc.validate(annotated, old=BAD, operation="UPDATE", dry_run=False).outcome == "skipped"
    assert not spec_changed(BAD, annotated)
    assert spec_changed(GOOD, BAD)
    assert spec_changed(None, BAD)
    assert svc.validate(BAD, old=GOOD, operation="UPDATE", dry_run=False).outcome == "denied"


def test_non_vllm_objects_and_rules_errors_are_admitted() -> None:
    policy = ResolvedPolicy("", PolicySpec())
    assert decide(StaticResult("unknown", has_vllm=False), policy, REF).allowed
    assert decide(StaticResult("error", error="boom"), policy, REF).allowed
    warn_only = StaticResult("warn", findings=(Finding("x", "warn", "m"),))
    decision = decide(warn_only, policy, REF)
    assert decision.allowed
    assert decision.warnings == ("vllm-preflight warn: x: m",)


def review(body: dict[str, Any], service: Any, **request: Any) -> dict[str, Any]:
    data = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u-1", "operation": "CREATE", "object": body, **request},
    }
    response: dict[str, Any] = asyncio.run(admissionreview.review_validation_async(service, data))[
        "response"
    ]
    return response


def test_the_admission_review_denies_with_status_403_and_the_message() -> None:
    svc, _ = service("Enforce")
    response = review(BAD, svc)
    assert response["uid"] == "u-1"
    assert response["allowed"] is False
    assert response["status"]["code"] == 403
    assert "gpu-count-too-low" in response["status"]["message"]
    warn, _ = service("Warn")
    warned = review(BAD, warn)
    assert warned["allowed"] is True
    assert len(warned["warnings"]) == 2
    assert review(GOOD, svc) == {"uid": "u-1", "allowed": True}


def test_a_crash_in_the_webhook_admits_and_is_counted() -> None:
    class Broken:
        def validate(self, *_: Any, **__: Any) -> Any:
            raise RuntimeError("rules exploded")

    before = metrics.ADMISSIONS.labels(webhook="validate", outcome="error")._value.get()
    assert review(BAD, Broken()) == {"uid": "u-1", "allowed": True}
    after = metrics.ADMISSIONS.labels(webhook="validate", outcome="error")._value.get()
    assert after == before + 1


def test_an_unjudged_vllm_container_is_warned_and_counted() -> None:
    """Issue 35 item 2: a vLLM container whose command line is not read is never silent:
    admitted under Enforce with the vllm-command-unparsed warning, and counted in
    vllm_preflight_unjudged_containers_total; a judged workload does not move the counter."""
    body = copy.deepcopy(GOOD)
    container = body["spec"]["template"]["spec"]["containers"][0]
    container["command"] = ["sh", "-c", "exec vllm serve m -tp 2 'unterminated"]
    container.pop("args", None)
    svc, _ = service("Enforce")
    before = metrics.UNJUDGED._value.get()
    answer = review(body, svc)
    assert answer["allowed"] is True
    assert any("vllm-command-unparsed" in w for w in answer["warnings"])
    assert metrics.UNJUDGED._value.get() == before + 1
    review(GOOD, svc)
    review(BAD, svc)
    assert metrics.UNJUDGED._value.get() == before + 1


# -- what a serving stack made: trusted only when its owner is confirmed --------------------


RAY_SERVICE = {
    "apiVersion": "ray.io/v1",
    "kind": "RayService",
    "metadata": {"name": "mine", "namespace": "team", "uid": "uid-rs"},
}
ISVC = {
    "apiVersion": "serving.kserve.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llm", "namespace": "team", "uid": "uid-isvc"},
}


def owned_by(owner: dict[str, Any], uid: str | None = None) -> dict[str, Any]:
    """BAD (TP=4 on 2 GPUs) with a controller ownerReference to ``owner``."""
    body = copy.deepcopy(BAD)
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": uid or owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return body


def stack_service(*existing: dict[str, Any], fails: bool = False) -> tuple[AdmissionService, list]:
    reads: list[WorkloadRef] = []

    async def owner_body(ref: WorkloadRef) -> dict[str, Any] | None:
        reads.append(ref)
        if fails:
            raise TimeoutError("API server unreachable")
        return next(
            (o for o in existing if (o["kind"], o["metadata"]["name"]) == (ref.kind, ref.name)),
            None,
        )

    config = OperatorConfig(default_policy=PolicySpec(action="Enforce"))
    svc = AdmissionService(
        config, RulesAnalyser(), PolicyBook(), events=Sink(), owner_body=owner_body
    )  # type: ignore[arg-type]
    return svc, reads


def judge(svc: AdmissionService, body: dict[str, Any]) -> str:
    return asyncio.run(
        svc.validate_async(body, old=None, operation="CREATE", dry_run=False)
    ).outcome


def test_a_deployment_pointing_at_the_users_own_rayservice_is_judged() -> None:
    """The issue's bypass: KubeRay makes RayClusters, never Deployments, so the reference
    buys nothing, even to a RayService that exists with that uid."""
    svc, reads = stack_service(RAY_SERVICE)
    assert judge(svc, owned_by(RAY_SERVICE)) == "denied"
    assert reads == []  # decided by the kinds alone


def test_a_deployment_of_an_existing_inference_service_is_skipped() -> None:
    svc, reads = stack_service(ISVC)
    assert judge(svc, owned_by(ISVC)) == "skipped"
    assert [r.display for r in reads] == ["InferenceService/llm"]
    assert judge(svc, owned_by(ISVC)) == "skipped"
    assert len(reads) == 1  # the owner's read serves a burst of its children
    elsewhere = owned_by(ISVC)
    elsewhere["metadata"]["namespace"] = "kube-system"
    assert judge(svc, elsewhere) == "skipped"
    assert len(reads) == 1  # never judged anyway: nothing to confirm


@pytest.mark.parametrize(
    ("existing", "uid", "fails"),
    [
        ((), None, False),  # no such InferenceService
        ((ISVC,), "uid-of-a-deleted-one", False),  # one of that name, another object
        ((ISVC,), None, True),  # cannot be read: never assumed
    ],
)
def test_a_stack_owner_that_cannot_be_confirmed_leaves_the_rules_to_judge(
    existing: tuple[dict[str, Any], ...], uid: str | None, fails: bool
) -> None:
    svc, _ = stack_service(*existing, fails=fails)
    assert judge(svc, owned_by(ISVC, uid)) == "denied"


def test_without_an_owner_reader_nothing_is_taken_as_stack_made() -> None:
    svc, _ = service("Enforce")
    assert judge(svc, owned_by(ISVC)) == "denied"
    assert svc.validate(owned_by(ISVC), old=None, operation="CREATE", dry_run=False).outcome == (
        "denied"
    )


def test_a_users_pod_pointing_at_a_workload_is_judged_not_skipped() -> None:
    """Issue 23: an ownerReference is a field any user writes; a pod is its workload's
    (skipped, judged at the workload's admission) only when a controller creates it."""
    import asyncio

    svc, _ = service("Enforce")
    owned = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": "team",
            "name": "p",
            "ownerReferences": [{"kind": "ConfigMap", "name": "mine", "uid": "u"}],
        },
        "spec": BAD["spec"]["template"]["spec"],
    }

    def outcome(user: str, refs: list[dict[str, object]]) -> str:
        body = {**owned, "metadata": {**owned["metadata"], "ownerReferences": refs}}
        result = asyncio.run(
            svc.validate_async(
                body, old=None, operation="CREATE", dry_run=False, user_info={"username": user}
            )
        )
        return result.outcome

    rs = [{"kind": "ReplicaSet", "name": "vllm-h", "uid": "u", "controller": True}]
    assert outcome("alice", owned["metadata"]["ownerReferences"]) == "denied"
    assert outcome("alice", rs) == "denied"  # even a controller reference, from a user
    assert outcome("system:serviceaccount:kube-system:replicaset-controller", rs) == "skipped"


def test_an_owner_named_outside_the_naming_rules_is_never_read() -> None:
    """Issue 34: an ownerReference named ``../../../api/v1/nodes/gpu-1`` made the webhook
    GET another path with the operator's credentials. It is a malformed reference now: no
    read, and the rules judge the object as anyone's."""
    svc, reads = stack_service(ISVC)
    forged = owned_by(ISVC)
    forged["metadata"]["ownerReferences"][0]["name"] = "../../../api/v1/nodes/gpu-1"
    assert judge(svc, forged) == "denied"
    assert reads == []
