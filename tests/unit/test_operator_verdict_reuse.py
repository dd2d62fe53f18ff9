"""Verdict reuse (issue 29 item 3), the operator's pure side: which results are recorded,
the Node's record, the offers the injector writes, and that no other namespace's pass, no
untrusted pod's pass, no reused run and no tag-only image ever becomes an offer."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from tests.unit.test_inject import vllm_pod

from preflight_contract import envnames
from preflight_contract.report import CheckResult, GPUEntry, Report
from preflight_contract.reuse import (
    ANNOTATION,
    DEEP_PASS_KEY,
    DEEP_REUSED,
    Offer,
    format_offers,
    hardware_key,
    parse_offers,
    pick,
    plan_shape,
)
from preflight_operator.core import constants, provenance
from preflight_operator.core import verdictreuse as vr
from preflight_operator.core.injection import Injection, plan_injection
from preflight_operator.core.operatorconfig import InjectionConfig, PolicySpec
from preflight_operator.core.podresults import PodResult
from preflight_operator.core.static import Plan

DIGEST = "sha256:" + "ab" * 32
IMAGE = f"vllm/vllm-openai@{DIGEST}"
KEY = hardware_key(["GPU-1", "GPU-0"], "580.159.04")
AT = "2026-12-01T08:00:00Z"
AT2 = "2026-12-01T08:10:00Z"
PLAN = Plan(tp=2, pp=1, dp=1, dp_local=1, gpus_needed=2, container="vllm")
SHAPE = plan_shape(2, 1, 1)
WL = "deployment.vllm"


def deep(namespace: str, key: str, pod: str, at: str = AT, workload: str = WL) -> vr.DeepPass:
    return vr.DeepPass(namespace, key, DIGEST, SHAPE, pod, at, workload)


def report(key: str | None = KEY, tier: str = "deep") -> str:
    plan: dict[str, Any] = {"tp": 2}
    if key is not None:
        plan[DEEP_PASS_KEY] = key
    return Report(
        checks=[CheckResult("deep-allreduce", "pass", "sum ok")],
        tier=tier,
        plan=plan,
        gpus=[GPUEntry(0, "GPU-0", "0000:06:00.0")],
    ).to_termination_message()


def pod(message: str, image_id: str = f"docker.io/vllm/vllm-openai@{DIGEST}") -> dict[str, Any]:
    env = [
        {"name": envnames.TP, "value": "2"},
        {"name": envnames.PP, "value": "1"},
        {"name": envnames.DP_LOCAL, "value": "1"},
    ]
    return {
        "metadata": {
            "name": "vllm-abc",
            "namespace": "team-a",
            "labels": {constants.LABEL_WORKLOAD: WL},
        },
        "spec": {
            "nodeName": "n1",
            "initContainers": [{"name": constants.CHECK_CONTAINER, "env": env}],
        },
        "status": {
            "initContainerStatuses": [
                {
                    "name": constants.CHECK_CONTAINER,
                    "imageID": image_id,
                    "state": {"terminated": {"exitCode": 0, "message": message}},
                }
            ]
        },
    }


def result(trusted: bool = True, verdict: str = "pass") -> PodResult:
    return PodResult(
        pod="vllm-abc",
        uid="u",
        node="n1",
        verdict=verdict,
        exit_code=0,
        restarts=0,
        checked_at=AT,
        created_by=provenance.CONTROLLER if trusted else provenance.OTHER,
    )


def test_a_trusted_deep_pass_is_recorded_with_its_hardware_image_and_plan() -> None:
    found = vr.deep_pass(pod(report()), result(), "team-a")
    assert found == deep("team-a", KEY, "team-a/vllm-abc")


@pytest.mark.parametrize(
    ("body", "res"),
    [
        (pod(report()), result(trusted=False)),  # anyone's pod (provenance.py)
        (pod(report()), result(verdict="fail")),
        (pod(report(key=None)), result()),  # a reused run (or a deep tier that failed)
        (pod(report(tier="fast")), result()),
        (pod(report(key="not-a-key")), result()),
        (pod(report(), image_id=""), result()),  # the image that ran is unknown
        (pod("not a report"), result()),
    ],
)
def test_nothing_else_is_recorded(body: dict[str, Any], res: PodResult) -> None:
    assert vr.deep_pass(body, res, "team-a") is None


def test_the_node_record_round_trips_merges_and_is_bounded() -> None:
    one = deep("team-a", KEY, "team-a/p1")
    newer = dataclasses.replace(one, pod="team-a/p2", at="2026-12-01T09:00:00Z")
    passes = vr.merged(vr.merged([], one), newer)
    assert passes == [newer]  # the same hardware, image and plan: the newest only
    assert vr.merged(passes, one) == passes  # an older run never replaces a newer one
    patch = vr.annotation_patch({}, passes)
    assert patch is not None
    node = {"metadata": {"annotations": patch["metadata"]["annotations"]}}
    assert vr.read_passes(node) == passes
    assert vr.annotation_patch(node, passes) is None
    many: list[vr.DeepPass] = []
    for i in range(40):
        many = vr.merged(many, dataclasses.replace(one, key=f"{i:032x}"))
    assert len(many) == vr.MAX_PER_NAMESPACE  # a namespace's own newest
    assert {p.key for p in many} == {f"{i:032x}" for i in range(36, 40)}


def at(minute: int) -> str:
    return f"2026-12-01T08:{minute:02d}:00Z"


def test_one_namespace_never_evicts_another_namespaces_record() -> None:
    """Issue 34: tenant B's 16 newer passes on a node left tenant A with no record (one
    newest-16 list per node). Before the fix the last assertion failed: A's was evicted."""
    mine = deep("team-a", KEY, "team-a/p", at(0))
    passes = vr.merged([], mine)
    for i in range(16):
        passes = vr.merged(passes, deep("team-b", f"{i:032x}", f"team-b/p{i}", at(i + 1)))
    assert mine in passes
    assert sum(p.namespace == "team-b" for p in passes) == vr.MAX_PER_NAMESPACE


def test_a_full_node_refuses_a_new_namespace_instead_of_making_room() -> None:
    passes: list[vr.DeepPass] = []
    for n in range(vr.MAX_PASSES // vr.MAX_PER_NAMESPACE):
        for i in range(vr.MAX_PER_NAMESPACE):
            passes = vr.merged(passes, deep(f"ns-{n}", f"{i:032x}", f"ns-{n}/p{i}", at(1)))
    assert len(passes) == vr.MAX_PASSES
    late = deep("late", KEY, "late/p", at(2))
    assert vr.merged(passes, late) == vr.bounded(passes)  # refused, nobody evicted
    # a namespace already there still replaces its own oldest
    again = deep("ns-0", KEY, "ns-0/q", at(3))
    assert again in vr.merged(passes, again)
    assert len(vr.merged(passes, again)) == vr.MAX_PASSES


def test_records_older_than_any_ttl_are_dropped() -> None:
    old = deep("team-a", KEY, "team-a/old", "2026-11-01T08:00:00Z")
    new = deep("team-b", KEY, "team-b/new", AT)
    assert vr.merged([old], new) == [new]


def test_a_node_record_over_the_bounds_is_read_within_them() -> None:
    """Anyone with patch on nodes may have written the annotation: what is read is bounded
    per namespace as what the operator writes."""
    many = [deep("team-b", f"{i:032x}", f"team-b/p{i}", at(i)) for i in range(30)]
    text = json.dumps([p.to_json() for p in many])
    read = vr.read_passes({"metadata": {"annotations": {ANNOTATION: text}}})
    assert len(read) == vr.MAX_PER_NAMESPACE


@pytest.mark.parametrize(
    "text",
    [
        "{",
        json.dumps({"a": 1}),
        json.dumps([{"namespace": "team-a"}]),
        json.dumps([deep("team-a", KEY, "team-b/p").to_json()]),
        json.dumps([deep("team-a", "k", "team-a/p").to_json()]),
        json.dumps([deep("team-a", KEY, "team-a/p", workload="").to_json()]),
        # a record of the format before issue 34 (no workload): not offered to anyone
        json.dumps([{**deep("team-a", KEY, "team-a/p").to_json(), "workload": None}]),
        "[" * 100_000,
    ],
)
def test_a_forged_or_broken_node_record_is_no_record(text: str) -> None:
    assert vr.read_passes({"metadata": {"annotations": {ANNOTATION: text}}}) == []


def offers(**overrides: Any) -> list[Offer]:
    args: dict[str, Any] = {
        "namespace": "team-a",
        "workload": WL,
        "image": IMAGE,
        "plan": SHAPE,
        "ttl_s": 3600,
        "now": "2026-12-01T08:30:00Z",
    }
    args.update(overrides)
    passes = {"n1": [deep("team-a", KEY, "team-a/vllm-abc")]}
    return vr.offers(passes, **args)


def test_offers_are_made_only_in_the_same_namespace_image_plan_and_ttl() -> None:
    assert offers() == [Offer.sealed("n1", KEY, "team-a/vllm-abc", AT, "2026-12-01T09:00:00Z")]
    assert offers(namespace="team-b") == []  # another tenant's pass: never
    # another workload of the namespace: never (only a probe could confirm it; issue 34)
    assert offers(workload="deployment.other") == []
    assert offers(workload="") == []
    assert offers(image="vllm/vllm-openai:v0.11.0") == []  # a tag may move
    assert offers(image="vllm/vllm-openai@sha256:" + "cd" * 32) == []
    assert offers(plan=plan_shape(4, 1, 1)) == []
    assert offers(ttl_s=0) == []  # 0 turns reuse off
    assert offers(now="2026-12-01T09:00:00Z") == []  # the TTL ran out


def test_the_offer_round_trips_and_the_checker_picks_only_its_node_and_key() -> None:
    made = offers()
    parsed, problem = parse_offers(format_offers(made))
    assert (parsed, problem) == (made, "")
    assert pick(parsed, "n1", KEY, "2026-12-01T08:59:59Z") == made[0]
    assert pick(parsed, "n2", KEY, "2026-12-01T08:30:00Z") is None
    assert pick(parsed, "n1", hardware_key(["GPU-0"], "580.159.04"), AT) is None
    assert pick(parsed, "n1", KEY, "2026-12-01T09:00:00Z") is None


def test_an_offer_tells_its_reader_no_node_pod_or_key() -> None:
    """Issue 34 item 6: the JSON patch may go to a forged review's caller; what it carries
    of another tenant's pass is a seal, a salt and two times, never the node, the pod or the
    hardware key, and two offers of one node share no value that links them."""
    text = format_offers(offers())
    for secret in ("n1", KEY, "team-a", "vllm-abc"):
        assert secret not in text
    two = vr.offers(
        {"n1": [deep("team-a", KEY, "team-a/a"), deep("team-a", KEY, "team-a/b", at=AT2)]},
        namespace="team-a",
        workload=WL,
        image=IMAGE,
        plan=SHAPE,
        ttl_s=3600,
        now="2026-12-01T08:30:00Z",
    )
    assert len({o.seal for o in two}) == len({o.salt for o in two}) == 2
    assert all(o.opens("n1", KEY) and not o.opens("n2", KEY) for o in two)
    # a forged offer (a seal of another salt) opens nothing
    forged = dataclasses.replace(two[0], salt="0" * 16)
    assert not forged.opens("n1", KEY)


def env_of(injection: Injection) -> dict[str, Any]:
    check = next(c for c in injection.init_containers if c["name"] == constants.CHECK_CONTAINER)
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in check["env"]}


def inject(tier: str, image: str, **kwargs: Any) -> Injection:
    body = vllm_pod()
    body["spec"]["containers"][0]["image"] = image
    # a tenant's own value in the vLLM container's env: never reaches the check
    body["spec"]["containers"][0]["env"].append(
        {"name": envnames.DEEP_REUSE, "value": format_offers(offers())}
    )
    out = plan_injection(
        body,
        container="vllm",
        plan=PLAN,
        policy=PolicySpec(tier=tier),
        config=InjectionConfig(),
        workload_label="deployment.vllm",
        **kwargs,
    )
    assert isinstance(out, Injection)
    return out


def test_the_injector_writes_the_offers_and_the_node_under_the_deep_tier_only() -> None:
    asked: list[tuple[str, str]] = []

    def reuse(image: str, plan: str) -> list[Offer]:
        asked.append((image, plan))
        return offers(image=image, plan=plan)

    env = env_of(inject("deep", IMAGE, reuse=reuse))
    assert asked == [(IMAGE, SHAPE)]
    assert parse_offers(env[envnames.DEEP_REUSE])[0] == offers()
    assert env[envnames.NODE_NAME] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    # no lookup (or nothing to offer): "[]", and the tenant's own value is gone
    assert env_of(inject("deep", IMAGE))[envnames.DEEP_REUSE] == "[]"
    assert env_of(inject("fast", IMAGE, reuse=reuse))[envnames.DEEP_REUSE] == "[]"
    assert len(asked) == 1  # the fast tier never asks


def test_the_gpuvalidation_says_whose_deep_pass_a_pod_reused() -> None:
    from preflight_operator.core.podresults import pod_result

    said = "deep tier reused from the deep pass of 2026-12-01T08:00:00Z on this node (same ...)"
    checks = [CheckResult(f"check-{i}", "pass", "x" * 200) for i in range(40)]
    message = Report(
        checks=[CheckResult("deep-reuse", "pass", said), *checks],
        tier="deep",
        plan={"tp": 2, DEEP_REUSED: said},
    ).to_termination_message()  # compacted: passing checks kept as ids only
    body = pod(message)
    body["metadata"]["uid"] = "u2"
    found = pod_result(body)
    assert found is not None
    assert found.to_status()["deepTier"] == said


def test_the_shell_offers_a_namespace_only_its_own_passes_and_writes_them_on_the_node() -> None:
    import asyncio

    from tests.unit.test_operator_nodefeedback import FakeApi, node

    from preflight_operator.runtime.nodehealth import NodeFeedback

    older = deep("team-a", "0" * 32, "team-a/old", "2026-12-01T07:00:00Z")
    api = FakeApi(node(annotations={ANNOTATION: json.dumps([older.to_json()])}))
    feedback = NodeFeedback(api, now=lambda: AT)  # type: ignore[arg-type]
    mine = deep("team-a", KEY, "team-a/vllm-abc")
    theirs = deep("team-b", KEY, "team-b/vllm-xyz")
    feedback.record_deep_pass("n1", mine)
    feedback.record_deep_pass("n1", theirs)
    assert feedback.deep_passes("team-a") == {"n1": [mine]}  # never team-b's
    assert feedback.deep_passes("team-c") == {}
    asyncio.run(feedback.write_deep_pass("n1", mine))
    assert api.node is not None
    written = vr.read_passes(api.node)
    assert set(written) == {older, mine, theirs}  # merged with what the Node held
    assert set(feedback.deep_passes("team-a")["n1"]) == {older, mine}  # read back
