"""Issue 39, end to end: every declarer of a gang through the three paths a manifest takes,
each entered where a unit test can reach its outer edge:

* ``lint``: the engine's ``check_objects`` over the manifests;
* admission: ``webhook.admissionreview.review_validation_async`` (AdmissionReview in, response
  out) for every object the chart routes to ``/validate`` (its ValidatingWebhookConfiguration
  rules, read from the chart below), under Enforce; and, for the pods a controller makes,
  ``review_mutation_async`` (the injection webhook, which reads the gang a pod names);
* the operator: ``Controller.observe_workload`` (what its watches call) for every object of a
  kind it watches (``runtime.watches.watched``), bare pods through ``observe_pod``, then one
  reconcile worker: the GPUValidation status it writes.

Why: test_gang_wiring proves each declarer's reader reaches the group rules in ``lint``; a
declarer can still be cut off where it matters in a cluster (the webhook never sent the
object, the operator never watched it). Each (path, declarer) is one of:

* REACHES: a good gang gives no group finding; a broken one (the workers' TP other than the
  leader's; ``--nnodes`` other than the pods; a Ray cluster with fewer GPUs than TP x PP)
  gives the group rule in that path's own output (lint's findings, the admission response's
  denial or warnings, the GPUValidation's ``status.static.findings``); and cutting that
  declarer's reader (its group never handed to the rules) loses it.
* a gap, by design (GAPS says which and why): the path never holds the gang. The test shows
  what the path does instead, so that wiring it later is a visible change here.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_gang_wiring import MODEL, jobset, kueue, leader, pod, podgroup_pods, rbg, volcano, worker
from test_operator_controller import FakeApi, controller
from test_webhook_workloadapi import Api  # the API server's answers by path, reads recorded

from preflight_operator.core import constants
from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.gangindex import GangIndex
from preflight_operator.core.operatorconfig import OperatorConfig, PolicySpec
from preflight_operator.core.policy import PolicyBook
from preflight_operator.core.rules import ClusterLookup, crdgroups, gang_named, kinds, namedgangs
from preflight_operator.core.rules.engine import check_objects
from preflight_operator.core.rules.registry import RULE_INFO
from preflight_operator.core.workloads import ADMITTED_KINDS, FAMILIES, POD, WorkloadKind
from preflight_operator.runtime.watches import watched
from preflight_operator.webhook.admissionreview import (
    review_mutation_async,
    review_validation_async,
)
from preflight_operator.webhook.webhooks import AdmissionService

NS = "ml"
# every rule that judges a group (LeaderWorkerSet-shaped or a Ray cluster), from the registry
GROUP_RULES = frozenset(r for r in RULE_INFO if r.startswith(("lws-", "ray-")))
CHART = Path(__file__).resolve().parents[2] / "charts" / "vllm-preflight" / "templates"

# -- the declarers: test_gang_wiring's builders, and those of the kinds it does not cover ------


def lws(lead: dict[str, Any], work: dict[str, Any], workers: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "vllm-mn", "namespace": NS},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": 1 + workers,
                "leaderTemplate": {"spec": lead},
                "workerTemplate": {"spec": work},
            },
        },
    }


def kthena(lead: dict[str, Any], work: dict[str, Any], workers: int = 1) -> dict[str, Any]:
    role = {"name": "engine", "replicas": 1, "entryTemplate": {"spec": lead},
            "workerReplicas": workers, "workerTemplate": {"spec": work}}  # fmt: skip
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": "vllm-mn", "namespace": NS},
        "spec": {"replicas": 1, "template": {"roles": [role]}},
    }


def workload_api_pods(lead: dict[str, Any], work: dict[str, Any]) -> list[dict[str, Any]]:
    """Two bare Pods naming one Kubernetes Workload API PodGroup (``spec.schedulingGroup``,
    1.36's v1alpha2; rules/workloadapi.py), its gang ``minCount`` 2, as podgroup_pods names a
    Volcano PodGroup."""
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "vllm-pg", "namespace": NS},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    return [group] + [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
         "spec": {**spec, "schedulingGroup": {"podGroupName": "vllm-pg"}}}
        for name, spec in (("leader", lead), ("worker", work))
    ]  # fmt: skip


def kueue_pods(lead: dict[str, Any], work: dict[str, Any]) -> list[dict[str, Any]]:
    """Two bare Pods of one Kueue plain pod group (kueue.x-k8s.io/pod-group-name and its
    total count, as Kueue's pod integration documents them), managed by a LocalQueue."""
    labels = {"kueue.x-k8s.io/pod-group-name": "vllm-pg", "kueue.x-k8s.io/queue-name": "q"}
    notes = {"kueue.x-k8s.io/pod-group-total-count": "2"}
    return [
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": NS, "labels": labels, "annotations": notes},
         "spec": spec}
        for name, spec in (("leader", lead), ("worker", work))
    ]  # fmt: skip


RAY_HEAD = (f"ray start --head --port=6379 && vllm serve {MODEL} --tensor-parallel-size 4 "
            "--pipeline-parallel-size 2 --distributed-executor-backend ray")  # fmt: skip


def ray_spec(worker_gpus: int) -> dict[str, Any]:
    """A head of 4 GPUs running TP 4 x PP 2 on Ray, and one worker pod joining it."""
    join = ["ray", "start", "--address=$(RAY_IP):6379", "--block"]
    return {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": pod(["sh", "-c", RAY_HEAD])}},
        "workerGroupSpecs": [
            {"groupName": "gpu", "replicas": 1, "rayStartParams": {},
             "template": {"spec": pod(join, gpus=worker_gpus)}}
        ],
    }  # fmt: skip


def ray(kind: str, where: tuple[str, ...]) -> Callable[[int], dict[str, Any]]:
    def make(worker_gpus: int) -> dict[str, Any]:
        spec: dict[str, Any] = ray_spec(worker_gpus)
        for key in reversed(where):
            spec = {key: spec}
        return {"apiVersion": "ray.io/v1", "kind": kind,
                "metadata": {"name": "vllm-mn", "namespace": NS}, "spec": spec}  # fmt: skip

    return make


RAY = {
    "raycluster": ray("RayCluster", ()),
    "rayjob": ray("RayJob", ("rayClusterSpec",)),
    "rayservice": ray("RayService", ("rayClusterConfig",)),
}
# (builder, the worker's rank as its controller makes it right, the leader's address)
LEADER_WORKER: dict[str, tuple[Callable[..., Any], str, str]] = {
    "volcano-job": (volcano, "$((VC_TASK_INDEX+1))", "leader-0"),
    "volcano-podgroup": (podgroup_pods, "1", "leader-0"),
    "kueue-workload": (kueue, "1", "leader-0"),
    "jobset": (jobset, "$((JOB_COMPLETION_INDEX+1))", "leader-0"),
    "rolebasedgroup": (rbg, "$(RBG_LWP_WORKER_INDEX)", "leader-0"),
    "kthena": (kthena, "$(WORKER_INDEX)", "$(ENTRY_ADDRESS)"),
    "leaderworkerset": (lws, "$(LWS_WORKER_INDEX)", "$(LWS_LEADER_ADDRESS)"),
    "workload-api": (workload_api_pods, "1", "leader-0"),
    "kueue-pods": (kueue_pods, "1", "leader-0"),
}
DECLARERS = sorted([*LEADER_WORKER, *RAY])
# how each is broken, and the group finding that says so
BREAKS = {"tp": ("lws-args-mismatch", "fail"), "nnodes": ("lws-nnodes-mismatch", "fail"),
          "gpus": ("ray-gpu-total", "fail")}  # fmt: skip
# pods naming a Volcano PodGroup or a Workload API group are counted only within the checked
# manifests: an estimate
ESTIMATED = {(d, "nnodes"): ("lws-nnodes-mismatch", "warn")
             for d in ("volcano-podgroup", "workload-api", "kueue-pods")}  # fmt: skip


def breaks(declarer: str) -> tuple[str, ...]:
    return ("gpus",) if declarer in RAY else ("tp", "nnodes")


def manifests(declarer: str, broken: str | None = None) -> list[dict[str, Any]]:
    """The declarer's objects: a good gang, or one broken as ``broken`` says. ``nnodes``:
    ``--nnodes 3`` over the two pods of a leader and one worker."""
    if declarer in RAY:
        return [RAY[declarer](2 if broken == "gpus" else 4)]
    make, rank, addr = LEADER_WORKER[declarer]
    tp, nnodes = (6, 3) if broken == "nnodes" else (8, 2)
    lead = leader(tp=tp, nnodes=nnodes, addr=addr)
    work = worker(rank, tp=4 if broken == "tp" else tp, nnodes=nnodes, addr=addr)
    made = make(lead, work)
    return made if isinstance(made, list) else [made]


def expected(declarer: str, broken: str, path: str = "lint") -> tuple[str, str]:
    """The group finding a broken gang gives on ``path``. Admission and the operator meet a
    named gang's members one object at a time and compare them with the others as last
    seen (rules.namedgangs): a warning, never a denial of the rollout that is about to
    make them agree."""
    rule, severity = ESTIMATED.get((declarer, broken), BREAKS[broken])
    if path != "lint" and declarer in NAMED_GANGS:
        return rule, "warn"
    return rule, severity


# -- the paths ---------------------------------------------------------------------------------

Found = list[tuple[str, str]]  # (rule, severity) of the group rules a path reports


def lint(objs: list[dict[str, Any]]) -> Found:
    return [(f.id, f.severity) for r in check_objects(objs) for f in r.findings
            if f.id in GROUP_RULES]  # fmt: skip


def _chart_rules() -> set[tuple[str, str]]:
    """(API group, resource) pairs the chart's ValidatingWebhookConfiguration sends to
    /validate: its literal rules, and the serving stacks' (templates/_kinds.tpl, every
    workloadKinds value on, as by default)."""
    webhook = (CHART / "validatingwebhookconfiguration.yaml").read_text()
    literal = re.findall(
        r"- apiGroups: \[([^\]{]*)\]\s+apiVersions: \[[^\]]*\]\s+operations: \[[^\]]*\]\s+"
        r"resources: \[([^\]]*)\]", webhook)  # fmt: skip
    stacks = re.findall(r'"group" "([^"]+)" "resources" \(list ([^)]*)\)',
                        (CHART / "_kinds.tpl").read_text())  # fmt: skip
    rules = set()
    for group, resources in [*literal, *stacks]:
        for resource in re.split(r"[,\s]+", resources.replace('"', "").strip()):
            rules.add((group.strip().strip('"'), resource))
    return rules


ROUTED = _chart_rules()


def routed(obj: dict[str, Any]) -> bool:
    """Does the API server send this object to /validate?"""
    spec = kinds.kind_spec(obj)
    return spec is not None and (spec.group, spec.resource) in ROUTED


def enforce(gangs: GangIndex[Any] | None = None) -> AdmissionService:
    """The webhook under Enforce; ``gangs``: what the operator has observed, read through
    the rules' lookup as main.py wires it (ClusterLookup.object, GANG_MEMBERS)."""
    policy = PolicySpec(action="Enforce")
    lookup = ClusterLookup(object=gangs.lookup) if gangs is not None else ClusterLookup()
    return AdmissionService(OperatorConfig(default_policy=policy), RulesAnalyser(lookup),
                            PolicyBook(), events=None)  # fmt: skip


def review(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-1", "operation": "CREATE", "object": obj,
                        "userInfo": {"username": "alice"}}}  # fmt: skip


def said(response: dict[str, Any]) -> Found:
    """The rules an admission response names: a denial's numbered failures, its "Also:"
    lines and each warning, with the severity the response gives them."""
    found: Found = []
    message = (response.get("status") or {}).get("message", "")
    for line in message.splitlines():
        if m := re.match(r"\d+\. ([a-z0-9-]+): ", line):
            found.append((m.group(1), "fail"))
        elif m := re.match(r"- ([a-z0-9-]+): ", line):
            found.append((m.group(1), "warn"))
    for warning in response.get("warnings") or []:
        if m := re.match(r"vllm-preflight (fail|warn)[^:]*: ([a-z0-9-]+): ", warning):
            found.append((m.group(2), m.group(1)))
    return found


def admission(objs: list[dict[str, Any]]) -> Found:
    """Every object the chart routes to /validate, each in its own AdmissionReview, as
    ``kubectl apply`` of the manifests sends them. An admitted object is then observed by
    the operator (its gang index: a later member's review reads it), as the watch does."""
    found: Found = []
    gangs: GangIndex[Any] = GangIndex()
    for i, obj in enumerate(filter(routed, objs)):
        response = asyncio.run(review_validation_async(enforce(gangs), review(obj)))["response"]
        if not response["allowed"]:
            assert response["status"]["code"] == 403
        else:
            gangs.note((NS, str(obj["kind"]), str(i)), obj["kind"], obj)
        found += [(rule, sev) for rule, sev in said(response) if rule in GROUP_RULES]
    return found


def watched_kind(obj: dict[str, Any]) -> WorkloadKind | None:
    """The kind the operator's watches read this object as (every serving stack on)."""
    group = kinds.api_group(obj)
    return next(
        (k for k in [*watched(FAMILIES), POD] if k.kind == obj.get("kind") and k.group == group),
        None,
    )


def gpuvalidations(objs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """What the operator writes for the objects it watches: each observed as its watch
    delivers it (a bare Pod only once injected, through the injected-pods watch), then
    every queued key reconciled once by one worker (the queue closed first, so the worker
    returns when it is empty)."""

    async def scenario() -> FakeApi:
        api = FakeApi()
        ctl = controller(api)
        ctl.analyser = RulesAnalyser(ClusterLookup(object=ctl.gangs.lookup))  # as main.py
        ctl.scope.observe_namespace(NS, opted_in=True)
        for i, obj in enumerate(objs):
            kind = watched_kind(obj)
            meta = {**obj["metadata"], "uid": f"uid-{i}", "generation": 1}
            if kind is POD:
                meta["labels"] = {**meta.get("labels", {}), constants.LABEL_INJECTED: "true"}
                ctl.observe_pod({**obj, "metadata": meta}, deleted=False)
            elif kind is not None:
                ctl.observe_workload(kind, {**obj, "metadata": meta}, deleted=False)
        ctl.workers.close()
        with contextlib.suppress(asyncio.CancelledError):
            await ctl.workers.run()
        return api

    return asyncio.run(scenario()).gpuvals


def operator(objs: list[dict[str, Any]]) -> Found:
    return [
        (f["id"], f["severity"])
        for gv in gpuvalidations(objs).values()
        for f in ((gv.get("status") or {}).get("static") or {}).get("findings") or []
        if f["id"] in GROUP_RULES
    ]


PATHS: dict[str, Callable[[list[dict[str, Any]]], Found]] = {
    "lint": lint,
    "admission": admission,
    "operator": operator,
}
VALIDATED = ("jobset", "kthena", "leaderworkerset", "rolebasedgroup", "volcano-job", *RAY)
# (path, declarer) -> why the path never holds the gang
NOT_SENT = "its kind is LINT only in rules/kinds.py: the chart routes no such object to /validate"
NOT_WATCHED = "its kind is LINT only in rules/kinds.py: the operator watches none"
# Kueue's controller makes each Workload from the user's Job or JobSet (judged at its own
# admission): a denial would only make that controller retry, unseen (docs/CHECKS.md)
GAPS: dict[tuple[str, str], str] = {
    ("admission", "kueue-workload"): NOT_SENT,
    ("operator", "kueue-workload"): NOT_WATCHED,
}
# the declarers whose members are bare Pods naming a gang: each pod is its own object at
# admission and in the operator, grouped with the others through the gang index
NAMED_GANGS = ("volcano-podgroup", "workload-api", "kueue-pods")
CELLS = [(p, d) for p in PATHS for d in DECLARERS]
REACHES = [c for c in CELLS if c not in GAPS]
BROKEN = [(p, d, b) for p, d in REACHES for b in breaks(d)]
UNHELD = [(p, d, b) for p, d in GAPS for b in breaks(d)]


def test_the_paths_each_declarer_reaches_are_those_the_product_sends_it_to() -> None:
    """REACHES is not a wish list: admission reaches exactly the declarers whose object the
    chart routes to /validate, the operator exactly those whose kind it watches (a Pod
    aside: a bare one is judged alone). A kind made VALIDATED in rules/kinds.py fails here
    until its cells are moved out of GAPS and proven. docs/RULES.md "Gangs: which declarers
    reach the group rules" is the same table."""

    def named(o: dict[str, Any]) -> bool:
        return o["kind"] == "Pod" and gang_named(o) is not None

    sent = {d for d in DECLARERS if any(routed(o) for o in manifests(d) if o["kind"] != "Pod")}
    held = {d for d in DECLARERS if any(watched_kind(o) not in (None, POD) for o in manifests(d))}
    pods = {d for d in DECLARERS if any(routed(o) and named(o) for o in manifests(d))}
    assert pods == set(NAMED_GANGS)
    assert {d for d in DECLARERS if any(watched_kind(o) is POD and named(o)
                                        for o in manifests(d))} == pods  # fmt: skip
    assert {d for p, d in REACHES if p == "admission"} == sent | pods == {*VALIDATED, *pods}
    assert {d for p, d in REACHES if p == "operator"} == held | pods == {*VALIDATED, *pods}
    assert {d for p, d in REACHES if p == "lint"} == set(DECLARERS)


@pytest.mark.parametrize(("path", "declarer"), CELLS)
def test_a_good_gang_gives_no_group_finding(path: str, declarer: str) -> None:
    assert PATHS[path](manifests(declarer)) == []


@pytest.mark.parametrize(("path", "declarer", "broken"), BROKEN)
def test_a_broken_gang_gives_the_group_finding(path: str, declarer: str, broken: str) -> None:
    assert expected(declarer, broken, path) in PATHS[path](manifests(declarer, broken))


def test_under_enforce_a_broken_gang_is_denied_naming_the_rule() -> None:
    """The denial itself, not only a line of it: the object never exists."""
    response = asyncio.run(
        review_validation_async(enforce(), review(manifests("kthena", "tp")[0]))
    )["response"]
    assert response["allowed"] is False
    assert "ModelServing/vllm-mn cannot run" in response["status"]["message"]
    first = "1. lws-args-mismatch: --tensor-parallel-size is 8 on the leader"
    assert first in response["status"]["message"]


def test_the_gpuvalidation_of_a_broken_gang_fails_statically() -> None:
    (gv,) = gpuvalidations(manifests("jobset", "nnodes")).values()
    assert gv["status"]["staticVerdict"] == "fail"
    assert gv["spec"]["workloadRef"]["kind"] == "JobSet"


@pytest.mark.parametrize(("path", "declarer", "broken"), UNHELD)
def test_where_a_path_never_holds_the_gang_it_gives_no_group_finding(
    path: str, declarer: str, broken: str
) -> None:
    """The gap, pinned: the path's mechanics are checked for the reason GAPS gives."""
    objs = manifests(declarer, broken)
    assert PATHS[path](objs) == []
    why = GAPS[path, declarer]
    if why == NOT_SENT:
        assert not any(routed(o) for o in objs)
    elif why == NOT_WATCHED:
        assert all(watched_kind(o) is None for o in objs)
        assert gpuvalidations(objs) == {}
    else:
        raise AssertionError(f"no check for the gap {why!r}")


def test_the_chart_rules_read_here_are_the_webhooks() -> None:
    """The routing above is the chart's: every kind the webhook judges (ADMITTED_KINDS) has
    its rule, and the LINT only declarer (Kueue's Workload) has none."""
    assert {("apps", "deployments"), ("batch", "jobs"), ("", "pods"),
            ("leaderworkerset.x-k8s.io", "leaderworkersets"), ("jobset.x-k8s.io", "jobsets"),
            ("workload.serving.volcano.sh", "modelservings"), ("batch.volcano.sh", "jobs"),
            ("workloads.x-k8s.io", "rolebasedgroups"), ("ray.io", "rayjobs")} <= ROUTED  # fmt: skip
    assert {(k.group, k.plural) for k in ADMITTED_KINDS.values()} <= ROUTED
    assert "kueue.x-k8s.io" not in {g for g, _ in ROUTED}


# -- mutations: a declarer cut off from the group rules fails a test in every path -------------


def _without_groups(extract: Any) -> Any:
    def extracted(*args: Any) -> Any:
        return [dataclasses.replace(t, group=None, group_leader=False) for t in extract(*args)]

    return extracted


@contextlib.contextmanager
def reader_cut(declarer: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The declarer's reader hands the rules no group: its kind's extractor with every
    template's group dropped; for pods naming a Volcano PodGroup (no kind of their own),
    the gang they form in the checked manifests; for pods naming a Workload API group, the
    reading of their reference alone (the Volcano annotation still read); for a Kueue plain
    pod group, the reading of its label."""
    if declarer == "volcano-podgroup":
        monkeypatch.setattr(namedgangs, "leader_worker_gang", lambda *a, **k: None)
    elif declarer == "workload-api":
        monkeypatch.setattr(namedgangs, "workload_reference", lambda *a, **k: None)
    elif declarer == "kueue-pods":
        monkeypatch.setattr(namedgangs, "KUEUE_GROUP", "kueue.x-k8s.io/not-read")
    else:
        spec = kinds.kind_spec(manifests(declarer)[0])
        assert spec is not None
        cut = dataclasses.replace(spec, extract=_without_groups(spec.extract))
        monkeypatch.setitem(kinds._BY_KIND, (spec.group, spec.kind), cut)
    yield
    monkeypatch.undo()


@pytest.mark.parametrize(("path", "declarer"), REACHES)
def test_mutation_cutting_the_declarers_reader_loses_its_finding(
    path: str, declarer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = breaks(declarer)[0]
    objs = manifests(declarer, broken)
    assert expected(declarer, broken, path) in PATHS[path](objs)
    with reader_cut(declarer, monkeypatch):
        assert PATHS[path](objs) == []


SHARED = [(p, d) for p, d in REACHES if d in ("volcano-job", "volcano-podgroup",
                                              "kueue-workload", "jobset")]  # fmt: skip


@pytest.mark.parametrize(("path", "declarer"), SHARED)
def test_mutation_cutting_leader_worker_gang_loses_the_finding(
    path: str, declarer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one path of the declarers whose gang is read from their pods' own vLLM
    (crdgroups.leader_worker_gang; kinds imports it for JobSet, namedgangs for pods naming a
    gang): cut, every one of them loses its group finding in every path it reaches."""
    objs = manifests(declarer, "tp")
    assert expected(declarer, "tp", path) in PATHS[path](objs)
    monkeypatch.setattr(crdgroups, "leader_worker_gang", lambda *a, **k: None)
    monkeypatch.setattr(kinds, "leader_worker_gang", lambda *a, **k: None)
    monkeypatch.setattr(namedgangs, "leader_worker_gang", lambda *a, **k: None)
    assert PATHS[path](objs) == []


# -- admission of the pods a gang's controller makes: what the injection webhook reads ---------


def volcano_job_pods(job: dict[str, Any], uid: str = "u-7") -> list[dict[str, Any]]:
    """The pods Volcano's job controller makes of ``job`` (volcano-sh/volcano at
    ed72c7c815a9fd547a787134676f73d42e9d049c, pkg/controllers/job/job_controller_util.go
    createJobPod: ``<job>-<task>-<i>``, the Job as controller, the PodGroup ``<job>-<uid>``
    in ``scheduling.k8s.io/group-name``; the env plugin's ``VC_TASK_INDEX``)."""
    name = job["metadata"]["name"]
    owner = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": name,
             "uid": uid, "controller": True}  # fmt: skip
    pods = []
    for task in job["spec"]["tasks"]:
        for i in range(task["replicas"]):
            spec = task["template"]["spec"]
            env = [{"name": "VC_TASK_INDEX", "value": str(i)}]
            containers = [{**c, "env": [*c.get("env", []), *env]} for c in spec["containers"]]
            meta = {"name": f"{name}-{task['name']}-{i}", "namespace": NS,
                    "annotations": {"scheduling.k8s.io/group-name": f"{name}-{uid}"},
                    "ownerReferences": [owner]}  # fmt: skip
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                         "spec": {**spec, "containers": containers}})  # fmt: skip
    return pods


def volcano_podgroup(name: str, min_member: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"minMember": min_member}}  # fmt: skip


def mutation_warnings(pods: list[dict[str, Any]], api: Api) -> list[str]:
    svc = AdmissionService(OperatorConfig(), RulesAnalyser(), PolicyBook(), events=None,
                           api_get=api)  # fmt: skip
    found: list[str] = []
    for body in pods:
        response = asyncio.run(review_mutation_async(svc, review(body)))["response"]
        assert response.get("patch"), response  # injected: a pod of a multi-node engine
        found += response.get("warnings") or []
    return found


SHORT = re.compile(r"less than the (\d+) pods the engine needs")


@pytest.mark.parametrize("broken", [None, "nnodes"])
def test_a_volcano_jobs_pods_have_their_podgroup_read_at_admission(broken: str | None) -> None:
    """What admission judges of a Volcano Job's gang: each pod names the PodGroup its Job
    made (minMember = the Job's minAvailable), which the webhook reads; a gang under the
    engine's --nnodes is a warning. The TP of another task's pods is never seen here."""
    (job,) = manifests("volcano-job", broken)
    path = crdgroups.podgroup_path(NS, "vllm-mn-u-7")
    api = Api({path: volcano_podgroup("vllm-mn-u-7", job["spec"]["minAvailable"])})
    warnings = mutation_warnings(volcano_job_pods(job), api)
    assert len(warnings) == 2
    assert all("pod of a volcano group 'vllm-mn-u-7'" in w for w in warnings)
    assert [m.group(1) for w in warnings if (m := SHORT.search(w))] == (
        ["3", "3"] if broken else []
    )
    assert api.reads == [path]  # once for the burst


@pytest.mark.parametrize("broken", [None, "nnodes"])
def test_pods_naming_a_volcano_podgroup_have_it_read_at_admission(broken: str | None) -> None:
    objs = manifests("volcano-podgroup", broken)
    api = Api({crdgroups.podgroup_path(NS, "vllm-pg"): objs[0]})
    warnings = mutation_warnings(objs[1:], api)
    assert len(warnings) == 2
    assert bool([w for w in warnings if SHORT.search(w)]) == bool(broken)


@pytest.mark.parametrize("broken", [None, "nnodes"])
def test_pods_naming_a_workload_api_gang_have_it_read_at_admission(broken: str | None) -> None:
    objs = manifests("workload-api", broken)
    discovery = {"versions": [{"groupVersion": "scheduling.k8s.io/v1alpha2"}]}
    gang = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{NS}/podgroups/vllm-pg"
    api = Api({"/apis/scheduling.k8s.io": discovery, gang: objs[0]})
    warnings = mutation_warnings(objs[1:], api)
    assert len(warnings) == 2
    assert all("pod of a workload-api group 'vllm-pg'" in w for w in warnings)
    assert [m.group(1) for w in warnings if (m := SHORT.search(w))] == (
        ["3", "3"] if broken else []
    )


def test_a_kueue_pod_group_is_not_judged_at_admission_only_said_to_name_no_leader() -> None:
    """Kueue's pods say their group's name and size, never a leader: the same warning for a
    good gang and a broken one (the TP of the other pods is not read)."""
    said_of = []
    for broken in (None, "tp"):
        (workload,) = manifests("kueue-workload", broken)
        pods = []
        for podset in workload["spec"]["podSets"]:
            meta = {"name": podset["name"], "namespace": NS,
                    "labels": {"kueue.x-k8s.io/pod-group-name": "g"},
                    "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}}  # fmt: skip
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                         "spec": podset["template"]["spec"]})  # fmt: skip
        said_of.append(mutation_warnings(pods, Api({})))
    good, bad = said_of
    assert len(good) == 2
    assert good == bad
    assert all("the leader's address (Kueue pod groups name none)" in w for w in good)
