"""Issue 39: the workloads whose pods name one gang (a Volcano PodGroup, a Workload API
group), as the operator observes them one by one (core/gangindex.py), and what admission
and the operator make of them: the rules group the object under review with the others,
and a mismatch against members as last seen warns (a rollout applies them one at a time).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from test_gang_paths import enforce, gpuvalidations, manifests, said
from test_gang_wiring import MODEL, leader, worker
from test_rules_support import deployment as rules_deployment

from preflight_operator.core import gangindex
from preflight_operator.core.gangindex import GangIndex
from preflight_operator.core.rules import GANG_MEMBERS, ClusterLookup, check_object
from preflight_operator.webhook.admissionreview import review_validation_async

NS = "ml"
VOLCANO = "scheduling.k8s.io/group-name"


def deployment(name: str, spec: dict[str, Any], gang: str = "vllm-pg") -> dict[str, Any]:
    """A Deployment of one pod naming a Volcano PodGroup (as a leader's and a worker's
    Deployment of one engine do, scheduled together by Volcano)."""
    obj = rules_deployment({**spec, "schedulerName": "volcano"}, name, NS)
    obj["spec"]["replicas"] = 1
    obj["spec"]["template"]["metadata"] = {"annotations": {VOLCANO: gang}}
    return obj


def gpus(spec: dict[str, Any], count: int) -> dict[str, Any]:
    spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = count
    return spec


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return (NS, obj["kind"], obj["metadata"]["name"])


def test_members_join_leave_and_change_the_gangs_revision() -> None:
    index: GangIndex[str] = GangIndex()
    lead, work = deployment("lead", leader()), deployment("work", worker("1"))
    assert index.note(key(lead), "Deployment", lead) == []
    first = index.revision(key(lead))
    others = index.note(key(work), "Deployment", work)
    assert [m.body["metadata"]["name"] for m in others] == ["lead"]  # observed again
    assert index.revision(key(lead)) == index.revision(key(work)) > first
    gang = "Volcano PodGroup 'vllm-pg'"
    assert sorted(b["metadata"]["name"] for b in index.members(NS, gang)) == ["lead", "work"]
    assert index.lookup(NS, GANG_MEMBERS, gang) == {"items": index.members(NS, gang)}
    assert index.lookup(NS, "ResourceClaim", gang) is None  # another lookup's kind
    # a status update changes nothing the rules read: no revision, nobody observed again
    before = index.revision(key(lead))
    updated = {**copy.deepcopy(lead), "status": {"readyReplicas": 1}}
    assert index.note(key(lead), "Deployment", updated) == []
    assert index.revision(key(lead)) == before
    # a spec change does
    changed = deployment("lead", leader(tp=16))
    assert [m.body["metadata"]["name"] for m in index.note(key(lead), "Deployment", changed)] == [
        "work"
    ]
    assert index.revision(key(work)) > before
    # gone: the others are observed again, the last one leaves no gang behind
    assert [m.body["metadata"]["name"] for m in index.forget(key(lead))] == ["work"]
    assert index.forget(key(work)) == []
    assert index.members(NS, gang) == []
    assert len(index) == 0
    assert index.forget(key(work)) == []  # twice: nothing


def test_a_workload_that_stops_naming_the_gang_leaves_it() -> None:
    index: GangIndex[str] = GangIndex()
    lead, work = deployment("lead", leader()), deployment("work", worker("1"))
    index.note(key(lead), "Deployment", lead)
    index.note(key(work), "Deployment", work)
    moved = deployment("work", worker("1"), gang="other")
    others = index.note(key(work), "Deployment", moved)
    assert [m.body["metadata"]["name"] for m in others] == ["lead"]
    assert [b["metadata"]["name"] for b in index.members(NS, "Volcano PodGroup 'other'")] == [
        "work"
    ]
    plain = {**deployment("lead", leader())}
    plain["spec"]["template"]["metadata"]["annotations"] = {}
    assert index.note(key(lead), "Deployment", plain) == []
    assert index.members(NS, "Volcano PodGroup 'vllm-pg'") == []
    assert index.revision(key(lead)) == 0  # names no gang


def test_members_are_observed_again_only_where_a_group_may_change() -> None:
    """The rules group at most GANG_OBJECTS members; a third member's arrival ends a group
    of two (the two are observed again), a fourth and later ones change nothing for the
    others: 32 members arriving cost 3 re-observations, not 496. Leaving, the same: only
    from 3 members down may a group form."""
    index: GangIndex[str] = GangIndex()
    again = []
    for i in range(gangindex.MAX_MEMBERS):
        obj = deployment(f"w{i}", worker("1"))
        again.append(len(index.note(key(obj), "Deployment", obj)))
    assert again[:4] == [0, 1, 2, 0]
    assert sum(again) == 3
    names = [f"w{i}" for i in range(gangindex.MAX_MEMBERS)]
    gone = [len(index.forget((NS, "Deployment", n))) for n in names[:-1]]
    assert gone[-3:] == [0, 2, 1]  # 4 -> 3: no group either way; 3 -> 2, 2 -> 1: may form
    assert sum(gone) == 3


def test_a_gang_holds_at_most_max_members() -> None:
    index: GangIndex[str] = GangIndex()
    for i in range(gangindex.MAX_MEMBERS + 5):
        obj = deployment(f"w{i}", worker("1"))
        index.note(key(obj), "Deployment", obj)
    assert len(index.members(NS, "Volcano PodGroup 'vllm-pg'")) == gangindex.MAX_MEMBERS


def test_what_names_no_gang_is_not_held() -> None:
    index: GangIndex[str] = GangIndex()
    obj = deployment("x", leader())
    obj["spec"]["template"]["metadata"].pop("annotations")
    assert index.note(key(obj), "Deployment", obj) == []
    assert len(index) == 0


def test_hostile_lookup_answers_are_read_as_manifests_are() -> None:
    """What the lookup answers is bounded and read by the manifest reader: junk items,
    another namespace's and another gang's members are left out, never a crash."""
    lead = deployment("lead", leader(tp=8))
    other_ns = {
        **deployment("work", worker("1", tp=4)),
        "metadata": {"name": "w", "namespace": "x"},
    }
    junk: list[Any] = [None, 3, "x", {"kind": "Deployment"}, other_ns,
                       deployment("w2", worker("1", tp=4), gang="another")]  # fmt: skip

    def lookup(namespace: str, kind: str, name: str) -> dict[str, Any]:
        return {"items": junk}

    results = check_object(lead, lookup=ClusterLookup(object=lookup))
    assert [f.id for r in results for f in r.findings if f.id.startswith("lws-")] == []


def test_an_update_applied_one_object_at_a_time_is_never_denied() -> None:
    """A leader's and a worker's Deployment naming one PodGroup, both moved from TP 8 to 16
    by one `kubectl apply`: the leader arrives first and meets the worker as last seen (TP
    8). Denying it would deny the rollout that makes them agree (and then the worker's, for
    the same reason): the mismatch warns, saying why, and nothing is left once both are in."""
    index: GangIndex[str] = GangIndex()
    old = {"lead": deployment("lead", leader(tp=8)), "work": deployment("work", worker("1", tp=8))}
    for obj in old.values():
        index.note(key(obj), "Deployment", obj)
    new_lead = deployment("lead", gpus(leader(tp=16), 8))
    new_work = deployment("work", gpus(worker("1", tp=16), 8))
    for obj, warned in ((new_lead, True), (new_work, False)):
        request = {"uid": "u", "operation": "UPDATE", "object": obj,
                   "oldObject": old[obj["metadata"]["name"]],
                   "userInfo": {"username": "alice"}}  # fmt: skip
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": request}  # fmt: skip
        response = asyncio.run(review_validation_async(enforce(index), review))["response"]
        assert response["allowed"] is True
        assert (("lws-args-mismatch", "warn") in said(response)) is warned
        if warned:
            text = " ".join(response.get("warnings") or [])
            assert "downgraded from fail: the gang's other members are as" in text
        index.note(key(obj), "Deployment", obj)


def test_the_operator_reanalyses_the_leader_when_its_worker_arrives() -> None:
    """Two bare pods naming one PodGroup, observed leader first: the leader's GPUValidation,
    written before the worker existed, is recomputed with it (the gang's revision)."""
    found = gpuvalidations(manifests("volcano-podgroup", "tp"))
    for name in ("pod-leader", "pod-worker"):
        findings = found[(NS, name)]["status"]["static"]["findings"]
        assert "lws-args-mismatch" in {f["id"] for f in findings}, name
    good = gpuvalidations(manifests("volcano-podgroup"))
    assert all(
        not any(f["id"].startswith("lws-") for f in gv["status"]["static"].get("findings") or [])
        for gv in good.values()
    )


def test_a_pod_its_controller_made_is_not_grouped_from_the_cluster() -> None:
    """The pods of a Deployment naming a gang carry its annotation too; the Deployment is
    the member (a pod would count its own Deployment's engine twice): a pod its controller
    made is never grouped from the cluster, whatever the index holds."""
    index: GangIndex[str] = GangIndex()
    work = deployment("work", worker("1", tp=4))
    index.note(key(work), "Deployment", work)  # the worker's Deployment, as observed
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "lead-abc", "namespace": NS,
                        "annotations": {VOLCANO: "vllm-pg"},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                             "name": "lead-abc", "uid": "1",
                                             "controller": True}]},
           "spec": leader(tp=8)}  # fmt: skip
    results = check_object(pod, lookup=ClusterLookup(object=index.lookup))
    assert not any(f.id.startswith("lws-") for r in results for f in r.findings)
    # the same pod made by nobody is a member, and meets the worker's TP 4
    bare = copy.deepcopy(pod)
    del bare["metadata"]["ownerReferences"]
    results = check_object(bare, lookup=ClusterLookup(object=index.lookup))
    assert any(f.id == "lws-args-mismatch" for r in results for f in r.findings), MODEL


def test_a_pod_created_with_generate_name_is_grouped_at_admission() -> None:
    """Kueue's own pod group example creates its pods with generateName: the webhook meets
    each one unnamed (the API server names it after admission), and groups it all the same
    with the members observed (named by then)."""
    index: GangIndex[str] = GangIndex()
    labels = {"kueue.x-k8s.io/pod-group-name": "sample-group"}

    def pod(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        meta = {"name": name} if name else {"generateName": "sample-pod-"}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {**meta, "namespace": NS, "labels": labels}, "spec": spec}  # fmt: skip

    lead = pod("sample-pod-x7k2p", leader(tp=8))
    index.note(key(lead), "Pod", lead)
    results = check_object(pod("", worker("1", tp=4)), lookup=ClusterLookup(object=index.lookup))
    said = [(f.id, f.severity, f.message) for r in results for f in r.findings]
    mismatch = [m for i, s, m in said if i == "lws-args-mismatch"]
    assert mismatch, said
    assert mismatch[0].startswith("Pod/sample-pod-x7k2p, the leader of its gang")
