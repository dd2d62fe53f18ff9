"""provenance.py and its two webhook halves: who created an injected pod is recorded at
CREATE, never changes, and only the controller's pods are trusted (issue 23, item 2)."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from preflight_operator.core import constants, provenance
from preflight_operator.webhook.provenancereview import review_provenance_async

RS_CONTROLLER = "system:serviceaccount:kube-system:replicaset-controller"
TENANT = "alice@example.com"


def pod(
    *, owner: dict[str, Any] | None = None, created_by: str | None = None, hash_: str = "h1"
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "namespace": "ns",
        "generateName": "vllm-h1-",
        "labels": {"pod-template-hash": hash_, constants.LABEL_INJECTED: "true"},
        "ownerReferences": [owner or {"kind": "ReplicaSet", "name": "vllm-h1", "controller": True}],
    }
    if created_by is not None:
        meta["annotations"] = {constants.ANNOTATION_CREATED_BY: created_by}
    return {"metadata": meta, "spec": {}}


@pytest.mark.parametrize(
    ("username", "owner", "expected"),
    [
        (RS_CONTROLLER, None, "controller"),
        ("system:kube-controller-manager", None, "controller"),
        (TENANT, None, "other"),  # a user who copies a controller's ownerReference
        ("system:serviceaccount:team-a:replicaset-controller", None, "other"),  # a look-alike
        (RS_CONTROLLER, {"kind": "ReplicaSet", "name": "vllm-h1"}, "other"),  # no controller ref
    ],
)
def test_the_creator_is_read_from_the_request(
    username: str, owner: dict[str, Any] | None, expected: str
) -> None:
    assert provenance.created_by(pod(owner=owner), {"username": username}) == expected


def test_listed_identities_are_trusted_exactly() -> None:
    kuberay = "system:serviceaccount:ray-system:kuberay-operator"
    assert provenance.created_by(pod(), {"username": kuberay}, [kuberay]) == "controller"
    other_ns = "system:serviceaccount:team-a:kuberay-operator"
    assert provenance.created_by(pod(), {"username": other_ns}, [kuberay]) == "other"


def test_the_annotation_patch_overwrites_what_the_client_wrote() -> None:
    forged = pod(created_by="controller")
    ops = provenance.annotation_patch(forged, "other")
    assert ops == [
        {
            "op": "add",
            "path": "/metadata/annotations/vllm-preflight.io~1created-by",
            "value": "other",
        }
    ]
    assert provenance.annotation_patch(pod(), "other") == [
        {
            "op": "add",
            "path": "/metadata/annotations",
            "value": {constants.ANNOTATION_CREATED_BY: "other"},
        }
    ]
    assert provenance.annotation_patch(pod(created_by="other"), "other") == []


def review(
    operation: str, obj: dict[str, Any], old: dict[str, Any] | None, user: str
) -> dict[str, Any]:
    request = {"uid": "u", "operation": operation, "object": obj, "userInfo": {"username": user}}
    if old is not None:
        request["oldObject"] = old
    answer = asyncio.run(review_provenance_async((), {"request": request}))
    return dict(answer["response"])


def test_a_user_cannot_create_a_pod_marked_as_the_controllers() -> None:
    denied = review("CREATE", pod(created_by="controller"), None, TENANT)
    assert denied["allowed"] is False
    assert constants.ANNOTATION_CREATED_BY in denied["status"]["message"]
    assert review("CREATE", pod(created_by="controller"), None, RS_CONTROLLER)["allowed"]
    assert review("CREATE", pod(created_by="other"), None, TENANT)["allowed"]
    assert review("CREATE", pod(), None, TENANT)["allowed"]


def test_nobody_changes_the_annotation_later() -> None:
    before = pod(created_by="other")
    for user in (TENANT, RS_CONTROLLER, "system:serviceaccount:vllm-preflight:vllm-preflight"):
        assert review("UPDATE", pod(created_by="controller"), before, user)["allowed"] is False
    assert review("UPDATE", pod(), before, TENANT)["allowed"] is False  # removing it too
    assert review("UPDATE", pod(created_by="other"), before, TENANT)["allowed"]  # unchanged


@pytest.mark.parametrize(
    ("kind", "name", "owner", "expected"),
    [
        ("Deployment", "vllm", {"kind": "ReplicaSet", "name": "vllm-h1", "controller": True}, True),
        (
            "Deployment",
            "vllm",
            {"kind": "ReplicaSet", "name": "vllm-zz", "controller": True},
            False,
        ),
        ("StatefulSet", "vllm", {"kind": "StatefulSet", "name": "vllm", "controller": True}, True),
        ("StatefulSet", "vllm", {"kind": "ReplicaSet", "name": "vllm", "controller": True}, False),
        ("LeaderWorkerSet", "g", {"kind": "StatefulSet", "name": "g-0", "controller": True}, True),
        ("Job", "j", {"kind": "Job", "name": "j", "controller": True}, True),
        ("Pod", "bare", {"kind": "ReplicaSet", "name": "x", "controller": False}, False),
    ],
)
def test_trust_needs_the_record_and_the_controllers_own_reference(
    kind: str, name: str, owner: dict[str, Any], expected: bool
) -> None:
    assert provenance.trusted(pod(owner=owner, created_by="controller"), kind, name) is expected
    assert provenance.trusted(pod(owner=owner, created_by="other"), kind, name) is False
    assert provenance.trusted(pod(owner=owner), kind, name) is False


def test_the_mutating_webhook_records_the_creator() -> None:
    """The annotation rides on the injection's JSON patch (webhook/admissionreview.py)."""
    from preflight_operator.core.injection import Injection
    from preflight_operator.webhook.admissionreview import review_mutation_async

    class Service:
        pod_creators: tuple[str, ...] = ()

        async def mutate_pod(self, body: Any) -> Injection:
            return Injection(init_containers=[], volumes=[], labels={}, container="vllm")

    def patch_for(user: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        request = {
            "uid": "u",
            "operation": "CREATE",
            "object": body,
            "userInfo": {"username": user},
        }
        answer = asyncio.run(review_mutation_async(Service(), {"request": request}))  # type: ignore[arg-type]
        return list(json.loads(base64.b64decode(answer["response"]["patch"])))

    forged = pod(created_by="controller")
    assert {
        "op": "add",
        "path": "/metadata/annotations/vllm-preflight.io~1created-by",
        "value": "other",
    } in patch_for(TENANT, forged)
    ops = patch_for(RS_CONTROLLER, pod())
    assert {
        "op": "add",
        "path": "/metadata/annotations",
        "value": {constants.ANNOTATION_CREATED_BY: "controller"},
    } in ops


def unlabelled(created_by: str = "controller", **labels: str) -> dict[str, Any]:
    body = pod(created_by=created_by)
    body["metadata"]["labels"] = {"pod-template-hash": "h1", **labels}
    return body


def test_the_label_later_pod_is_refused() -> None:
    """Issue 34: a pods-only user creates a pod with ``inject: disabled`` (no webhook runs)
    and ``created-by: controller``, then labels it injected. The annotation did not
    change, so the UPDATE was admitted and the operator trusted the pod."""
    before = unlabelled(**{constants.LABEL_INJECT: "disabled"})
    after = unlabelled(**{constants.LABEL_INJECT: "disabled", constants.LABEL_INJECTED: "true"})
    for user in (TENANT, RS_CONTROLLER):
        denied = review("UPDATE", after, before, user)
        assert denied["allowed"] is False
        assert constants.LABEL_INJECTED in denied["status"]["message"]
    # other labels of an injected pod change freely
    relabelled = pod(created_by="other")
    relabelled["metadata"]["labels"]["team"] = "a"
    assert review("UPDATE", relabelled, pod(created_by="other"), TENANT)["allowed"]


def test_a_status_write_changes_no_mark() -> None:
    """Issue 34: ``pods/status`` can change labels and annotations, and no rule for
    ``pods`` matches it. The chart's entry now names the subresource; the review is the
    same UPDATE with ``subResource: status``."""
    before = pod(created_by="other")
    request = {
        "uid": "u",
        "operation": "UPDATE",
        "subResource": "status",
        "object": pod(created_by="controller"),
        "oldObject": before,
        "userInfo": {"username": TENANT},
    }
    answer = asyncio.run(review_provenance_async((), {"request": request}))
    assert answer["response"]["allowed"] is False


def test_the_workload_label_is_the_webhooks_too() -> None:
    before = pod(created_by="other")
    before["metadata"]["labels"][constants.LABEL_WORKLOAD] = "deployment.vllm"
    after = pod(created_by="other")
    after["metadata"]["labels"][constants.LABEL_WORKLOAD] = "deployment.victim"
    denied = review("UPDATE", after, before, TENANT)
    assert denied["allowed"] is False
    assert constants.LABEL_WORKLOAD in denied["status"]["message"]


def test_a_pod_that_opts_out_carries_no_check_of_ours() -> None:
    """The mutating webhook never runs on ``inject: disabled``: whatever it carries is not
    the check vllm-preflight injected, so its marks are not trusted even where the
    validating webhook was unreachable when they were written."""
    body = pod(created_by="controller")
    assert provenance.trusted(body, "Deployment", "vllm")
    body["metadata"]["labels"][constants.LABEL_INJECT] = "disabled"
    assert not provenance.trusted(body, "Deployment", "vllm")


def test_a_pod_that_comes_with_a_check_of_its_own_is_never_the_controllers() -> None:
    """Issue 34: the pod must carry the check the webhook itself injected. A template
    with a ``preflight-check`` of its own (a tenant's ReplicaSet) is skipped by the
    injection as already injected; its pod, created by the ReplicaSet controller, was
    recorded ``controller``."""
    from preflight_operator.core.injection import Skip
    from preflight_operator.webhook.admissionreview import review_mutation_async

    class Service:
        pod_creators: tuple[str, ...] = ()

        async def mutate_pod(self, body: Any) -> Skip:
            return Skip("already-injected")

    body = pod(created_by="controller")
    body["spec"] = {"initContainers": [{"name": constants.CHECK_CONTAINER, "image": "x"}]}
    request = {
        "uid": "u",
        "operation": "CREATE",
        "object": body,
        "userInfo": {"username": RS_CONTROLLER},
    }
    answer = asyncio.run(review_mutation_async(Service(), {"request": request}))  # type: ignore[arg-type]
    ops = json.loads(base64.b64decode(answer["response"]["patch"]))
    assert {
        "op": "add",
        "path": "/metadata/annotations/vllm-preflight.io~1created-by",
        "value": "other",
    } in ops
