"""Verdict reuse (issue 29 item 3) end to end over the fake driver: a restart on the same
node, GPUs and driver, offered an earlier pod's deep pass, skips the deep tier and says so;
any difference (node, a GPU, the driver, an expired TTL, a malformed offer) runs it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from preflight_contract import envnames
from preflight_contract.report import Report
from preflight_contract.reuse import (
    DEEP_PASS_KEY,
    DEEP_REUSED,
    Offer,
    format_offers,
    hardware_key,
)
from preflight_contract.verdicts import FAIL, PASS, SKIP
from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check

pytestmark = pytest.mark.timeout(60)

NODE = "gpu-node-1"
# A deep tier that would fail if it ran: proof that a reused run never ran it.
HANG = {"hang": [1, "all_reduce(tp group)"]}
DEEP = ["--tp", "2", "--deep", "--deep-timeout", "3"]


def first_pass(tmp_path: Path) -> Report:
    tmp_path.mkdir()
    run = run_check(fake_host(h200_machine(2), deep_plan={}), ["--tp", "2", "--deep"], tmp_path)
    assert run.code == 0, run.stdout
    assert run.check("deep-allreduce").status == PASS
    return run.report


def offer_of(report: Report, node: str = NODE, until: str = "2999-01-01T00:00:00Z") -> Offer:
    """What the operator offers from a trusted deep pass: the key its report carries, which
    is the key of its GPUs and driver."""
    key = hardware_key([g.uuid for g in report.gpus], str(report.inventory["driver_version"]))
    assert report.plan[DEEP_PASS_KEY] == key  # kept by every compaction (the plan)
    return Offer.sealed(node, key, "team-a/vllm-7d9f-abcde", "2026-12-01T08:00:00Z", until)


def restart(tmp_path: Path, offers: str, node: str = NODE, machine=None):  # type: ignore[no-untyped-def]
    env = {envnames.DEEP_REUSE: offers, envnames.NODE_NAME: node}
    tmp_path.mkdir(exist_ok=True)
    host = fake_host(machine or h200_machine(2), env, deep_plan=HANG)
    return run_check(host, DEEP, tmp_path)


def test_a_restart_on_the_same_node_gpus_and_driver_skips_the_deep_tier_and_says_so(
    tmp_path: Path,
) -> None:
    offer = offer_of(first_pass(tmp_path / "a"))
    run = restart(tmp_path / "b", format_offers([offer]))
    assert run.code == 0, run.stdout
    reused = run.check("deep-reuse")
    assert reused.status == PASS
    assert "deep tier reused from the deep pass of 2026-12-01T08:00:00Z on this node" in (
        reused.message
    )
    for check_id in ("deep-workers", "deep-allreduce", "deep-peer-copy"):
        assert run.check(check_id).status == SKIP
        assert run.check(check_id).message == reused.message
    assert run.check("context-ranks").status == PASS  # the fast tier always runs
    assert DEEP_PASS_KEY not in run.report.plan  # a reuse is no new deep pass: no chain
    # whose pass, in the part of the report every compaction keeps (the GPUValidation)
    assert run.report.plan[DEEP_REUSED] == reused.message
    assert json.loads(run.report.to_termination_message(1200))["plan"][DEEP_REUSED]


@pytest.mark.parametrize("what", ["another node", "another GPU", "another driver", "expired"])
def test_any_difference_runs_the_deep_tier(tmp_path: Path, what: str) -> None:
    report = first_pass(tmp_path / "a")
    offer = offer_of(report)
    machine = h200_machine(2)
    node = NODE
    if what == "another node":
        node = "gpu-node-2"
    elif what == "another GPU":
        machine = h200_machine(3)  # GPUs 0 and 1 of it are the same; the pod sees three
    elif what == "another driver":
        machine = dataclasses.replace(machine, driver_version="580.200.01")
    else:
        offer = dataclasses.replace(offer, until="2020-01-01T00:00:00Z")
    run = restart(tmp_path / "b", format_offers([offer]), node, machine)
    assert run.check("deep-allreduce").status == FAIL  # it ran (and the fake hangs it)
    assert run.check("deep-reuse").status == SKIP
    assert "the deep tier ran" in run.check("deep-reuse").message


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        json.dumps({"node": NODE}),
        json.dumps([{"node": NODE, "key": "x" * 32}]),
        # the old plain form (node, key, pod): not an offer any more
        json.dumps(
            [
                {
                    "node": NODE,
                    "key": "a" * 32,
                    "pod": "p",
                    "at": "2026-12-01T08:00:00Z",
                    "until": "2999-01-01T00:00:00Z",
                }
            ]
        ),
        "[" + "1," * 20000 + "1]",
    ],
)
def test_a_malformed_offer_is_no_offer(tmp_path: Path, text: str) -> None:
    run = restart(tmp_path, text)
    assert run.check("deep-allreduce").status == FAIL  # it ran
    assert run.check("deep-reuse").status == SKIP


def test_without_offers_a_deep_run_reports_nothing_about_reuse(tmp_path: Path) -> None:
    run = run_check(fake_host(h200_machine(2), deep_plan={}), ["--tp", "2", "--deep"], tmp_path)
    assert [c for c in run.report.checks if c.id == "deep-reuse"] == []
    (tmp_path / "failed").mkdir()
    failed = run_check(fake_host(h200_machine(2), deep_plan=HANG), DEEP, tmp_path / "failed")
    assert DEEP_PASS_KEY not in failed.report.plan  # only a pass is worth reusing


# The workers' "torch import" never ends and the deep timeout is an hour: a checker that
# waits for a stopped worker to reach its gate never returns, and the module's timeout
# fails the test; one that ends the workers returns as soon as the fast tier is done.
IMPORT_FOREVER = {"import_forever": True}
AN_HOUR = ["--deep-timeout", "3600"]


def test_a_reuse_ends_the_deep_workers_without_waiting_for_their_torch_import(
    tmp_path: Path,
) -> None:
    """On an H200 a reuse cost 3.0-4.0 s against the fast tier's 0.4-0.6 s: the checker told
    the workers to stop at their gate and then waited for each to finish importing torch
    before it could read that (docs/GPU_RUNS.md, run 19)."""
    offer = offer_of(first_pass(tmp_path / "a"))
    env = {envnames.DEEP_REUSE: format_offers([offer]), envnames.NODE_NAME: NODE}
    host = fake_host(h200_machine(2), env, deep_plan=IMPORT_FOREVER)
    (tmp_path / "b").mkdir()
    run = run_check(host, ["--tp", "2", "--deep", *AN_HOUR], tmp_path / "b")
    assert run.code == 0, run.stdout
    assert run.check("deep-reuse").status == PASS
    for check_id in ("deep-workers", "deep-allreduce", "deep-peer-copy"):
        assert run.check(check_id).status == SKIP
        assert "did not reach" not in run.check(check_id).message


def test_too_few_gpus_ends_the_deep_workers_too(tmp_path: Path) -> None:
    """The other reason the deep tier does not run (CUDA shows fewer GPUs than the plan
    needs) ends the workers the same way."""
    host = fake_host(h200_machine(1), deep_plan=IMPORT_FOREVER)
    run = run_check(host, ["--tp", "2", "--deep", *AN_HOUR], tmp_path)
    assert run.check("deep-workers").status == SKIP
    assert "deep tier not run: CUDA sees 1 GPUs" in run.check("deep-workers").message
