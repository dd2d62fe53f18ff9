"""The rules in their budgeted child process (rulesworker.py): same answers as in-process,
a hostile manifest stopped by the memory or time budget without touching the operator,
the worker replaced after, and the webhook's answer under each action."""

from __future__ import annotations

import copy
import os
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_operator.core import rules
from preflight_operator.core.admissiondecision import unchecked
from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.operatorconfig import OperatorConfig, PolicySpec
from preflight_operator.core.policy import PolicyBook, ResolvedPolicy, parse_policy
from preflight_operator.core.workloads import WorkloadRef
from preflight_operator.runtime.rulesworker import BudgetExceeded, RulesWorker, isolate
from preflight_operator.webhook.webhooks import AdmissionService

MANIFESTS = Path(__file__).resolve().parents[1] / "data" / "manifests"


def deployment(name: str = "bad-tp4-deployment.yaml") -> dict[str, Any]:
    doc: dict[str, Any] = next(
        d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d["kind"] == "Deployment"
    )
    doc["metadata"]["namespace"] = "team"
    return doc


def hostile(mode: str = "grow") -> dict[str, Any]:
    """A workload whose rules grow without bound (or spin): what a $(A)$(A) expansion bomb
    did before the rules capped expansion, made deterministic by the test child."""
    doc = deployment("good-tp2-deployment.yaml")
    doc["metadata"].setdefault("annotations", {})["test/rules"] = mode
    return doc


CHILD = (str(Path(__file__).with_name("rulesworker_hostile_child.py")),)


@pytest.fixture(scope="module")
def worker() -> Iterator[RulesWorker]:
    w = RulesWorker(budget=3.0, memory_mib=256, entry=CHILD)
    w.start()
    yield w
    w.close()


def test_the_worker_answers_as_the_rules_do_in_process(worker: RulesWorker) -> None:
    local = RulesAnalyser()
    for body in (deployment(), deployment("good-tp2-deployment.yaml")):
        assert worker.analyse(body, PolicySpec()) == local.analyse(body, PolicySpec())
    pod_spec = deployment()["spec"]["template"]
    meta = {"namespace": "team", **pod_spec["metadata"]}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec["spec"]}
    assert worker.injection_target(pod, PolicySpec()) == local.injection_target(pod, PolicySpec())


def test_cluster_lookups_are_answered_by_the_parent() -> None:
    service = {"metadata": {"name": "vllm", "namespace": "team"}, "spec": {"ports": [{"port": 80}]}}
    asked: list[str] = []

    def services(namespace: str) -> list[dict[str, Any]]:
        asked.append(namespace)
        return [service]

    lookup = rules.ClusterLookup(services=services)
    with_worker = RulesWorker(lookup)
    try:
        got = with_worker.analyse(deployment("good-tp2-deployment.yaml"), PolicySpec())
    finally:
        with_worker.close()
    want = RulesAnalyser(lookup).analyse(deployment("good-tp2-deployment.yaml"), PolicySpec())
    assert got == want
    assert asked == ["team", "team"]  # once through the worker, once in-process


def test_a_hostile_manifest_hits_the_memory_budget_not_the_operator(worker: RulesWorker) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    old_pid = worker.pid
    with pytest.raises(BudgetExceeded, match="256 MiB memory budget"):
        worker.analyse(hostile("grow"), PolicySpec())
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # KiB
    assert worker.pid != old_pid  # replaced
    assert old_pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(old_pid, 0)
    assert worker.analyse(deployment(), PolicySpec()).verdict == "fail"  # and working


def test_past_the_time_budget_the_worker_is_killed_and_replaced(worker: RulesWorker) -> None:
    worker.analyse(deployment(), PolicySpec())  # started and warm
    old_pid, budget = worker.pid, worker.budget
    worker.budget = 0.5
    try:
        with pytest.raises(BudgetExceeded, match=r"not done within 0\.5 s"):
            worker.analyse(hostile("spin"), PolicySpec())
    finally:
        worker.budget = budget
    assert worker.pid != old_pid
    assert worker.analyse(deployment(), PolicySpec()).verdict == "fail"


def test_a_memory_error_inside_the_rules_counts_as_over_budget() -> None:
    """The rules engine turns a crash into a rules-internal-error finding; a MemoryError
    so reported is the memory budget, not a verdict."""
    from preflight_operator.core.analysis import out_of_memory
    from preflight_operator.core.rules.vocabulary import ContainerResult, Finding

    def result(message: str) -> Any:
        finding = Finding("rules-internal-error", "warn", message, "spec", "report it")
        return ContainerResult(
            kind="Deployment", name="x", namespace="team", container="vllm", plan=None,
            gpus_needed=None, gpus_requested=None, findings=(finding,),
        )  # fmt: skip

    assert out_of_memory([result("a rule crashed: MemoryError")])
    assert not out_of_memory([result("a rule crashed: KeyError: 'x'")])


def test_isolate_only_wraps_the_real_rules() -> None:
    config = OperatorConfig(rules_budget_seconds=2.5, rules_memory_mib=200)
    wrapped = isolate(RulesAnalyser(), config)
    assert wrapped is not None
    assert wrapped.budget == 2.5
    assert [(w.budget, w.memory_mib) for w in wrapped.workers] == [(2.5, 200), (2.5, 200)]
    assert isolate(object(), config) is None


REF = WorkloadRef("team", "Deployment", "vllm", "apps/v1")


def test_past_the_budget_enforce_denies_saying_why_warn_warns_audit_admits() -> None:
    deny = unchecked(ResolvedPolicy("", PolicySpec()), REF, "over its 256 MiB memory budget")
    assert not deny.allowed
    assert "could not be checked in time" in deny.message
    assert "under Enforce nothing unchecked is admitted" in deny.message
    assert "Fix: remove the self-doubling references" in deny.message
    warn = unchecked(ResolvedPolicy("p", PolicySpec(action="Warn")), REF, "not done within 3 s")
    assert warn.allowed
    assert "admitted unchecked" in warn.warnings[0]
    assert len(warn.warnings[0]) <= 400
    assert unchecked(ResolvedPolicy("p", PolicySpec(action="Audit")), REF, "x").allowed


def test_the_validating_webhook_with_the_worker_denies_the_hostile_one_and_judges_the_next(
    worker: RulesWorker,
) -> None:
    book = PolicyBook()
    service = AdmissionService(OperatorConfig(), worker, book, events=None)
    first = service.validate(hostile(), old=None, operation="CREATE", dry_run=False)
    assert first.outcome == "over-budget"
    assert not first.decision.allowed
    # the TP=4-on-2-GPU Deployment right after is judged, not admitted by a timeout
    second = service.validate(deployment(), old=None, operation="CREATE", dry_run=False)
    assert (second.outcome, second.decision.allowed) == ("denied", False)
    book.put(
        parse_policy({"metadata": {"namespace": "team", "name": "w"}, "spec": {"action": "Warn"}})
    )
    third = service.validate(copy.deepcopy(hostile()), old=None, operation="CREATE", dry_run=False)
    assert (third.outcome, third.decision.allowed) == ("over-budget", True)
    assert service.validate(
        deployment(), old=None, operation="CREATE", dry_run=False
    ).decision.warnings


def test_a_worker_busy_in_the_rules_dies_with_a_sigkilled_operator(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "child.pid"
    script = f"""
import sys, threading, time
sys.path[:0] = {sys.path!r}
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.runtime.rulesworker import RulesWorker
import yaml
worker = RulesWorker(entry={CHILD!r}, budget=600)
worker.start()
body = yaml.safe_load({yaml.safe_dump(hostile("spin"))!r})
threading.Thread(target=worker.analyse, args=(body, PolicySpec()), daemon=True).start()
time.sleep(1.5)
open({str(pid_file)!r}, "w").write(str(worker.pid))
time.sleep(600)
"""
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        for _ in range(100):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.1)
        child = int(pid_file.read_text())
        os.kill(child, 0)  # spinning
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        for _ in range(50):
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        raise AssertionError("the rules worker outlived the operator")
    finally:
        parent.kill()


def test_a_slow_manifest_holds_up_neither_the_event_loop_nor_other_requests() -> None:
    """One manifest spinning in a worker: the other worker answers the next request at
    once; with both busy, a request is still answered within its budget instead of
    waiting (the API server's timeout would admit it silently under Ignore)."""
    import asyncio
    import time

    from preflight_operator.runtime.rulesworker import RulesPool

    workers = [RulesWorker(budget=1.5, entry=CHILD) for _ in range(2)]
    pool = RulesPool(workers, budget=1.5)
    pool.start()
    service = AdmissionService(OperatorConfig(), pool, PolicyBook(), events=None)

    async def timed(body: dict[str, Any]) -> tuple[str, float]:
        started = time.monotonic()
        result = await service.validate_async(body, old=None, operation="CREATE", dry_run=False)
        return result.outcome, time.monotonic() - started

    nonlocal_state: dict[str, bool] = {}

    async def scenario() -> list[tuple[str, float]]:
        spin = asyncio.ensure_future(timed(hostile("spin")))
        await asyncio.sleep(0.2)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while not spin.done():
                ticks += 1
                await asyncio.sleep(0.05)

        ticking = asyncio.ensure_future(ticker())
        good = await timed(deployment())
        nonlocal_state["spin_done_when_good_answered"] = spin.done()
        spin2 = asyncio.ensure_future(timed(hostile("spin")))
        await asyncio.sleep(0.2)
        starved = await timed(deployment())  # both workers spin
        results = [await spin, good, await spin2, starved]
        await ticking
        assert ticks > 10  # the loop kept running while the rules spun
        return results

    try:
        first, good, second, starved = asyncio.run(scenario())
    finally:
        pool.close()
    # No wall-clock bounds (a loaded machine stretches them): the order of events shows it.
    assert first[0] == "over-budget"
    assert good[0] == "denied"  # bad-tp4: judged, by the free worker, at once:
    assert nonlocal_state["spin_done_when_good_answered"] is False  # while the other spun
    assert second[0] == "over-budget"
    # both workers busy: it waits for one, but the wait is part of its own budget, so it
    # is answered (judged, or over budget), never left to time out
    assert starved[0] in ("denied", "over-budget")


def test_with_both_workers_busy_past_the_budget_the_answer_is_over_budget() -> None:
    from preflight_operator.runtime.rulesworker import RulesPool

    worker = RulesWorker(budget=5.0, entry=CHILD)
    pool = RulesPool([worker], budget=0.5)
    pool.start()
    taken = pool._free.get()  # as if busy with another manifest for longer than 0.5 s
    try:
        with pytest.raises(BudgetExceeded, match=r"no rules worker was free within 0\.5 s"):
            pool.analyse(deployment(), PolicySpec())
    finally:
        pool._free.put(taken)
        pool.close()


def test_an_unpicklable_lookup_answer_is_none_and_the_worker_stays_in_step() -> None:
    import threading

    def services(namespace: str) -> Any:
        return [threading.Lock()]  # cannot be sent to the worker

    worker = RulesWorker(rules.ClusterLookup(services=services))
    try:
        got = worker.analyse(deployment("good-tp2-deployment.yaml"), PolicySpec())
        assert got == RulesAnalyser().analyse(deployment("good-tp2-deployment.yaml"), PolicySpec())
        assert worker.analyse(deployment(), PolicySpec()).verdict == "fail"  # in step
    finally:
        worker.close()


def test_the_async_path_answers_lookups_and_keeps_the_memory_budget() -> None:
    import asyncio

    from preflight_operator.runtime.rulesworker import RulesPool

    service = {"metadata": {"name": "vllm", "namespace": "team"}, "spec": {"ports": [{"port": 80}]}}
    lookup = rules.ClusterLookup(services=lambda namespace: [service])
    pool = RulesPool([RulesWorker(lookup, memory_mib=256, entry=CHILD)], budget=3.0)
    pool.start()

    async def scenario() -> tuple[Any, str, Any]:
        got = await pool.analyse_async(deployment("good-tp2-deployment.yaml"), PolicySpec())
        try:
            await pool.analyse_async(hostile("grow"), PolicySpec())
        except BudgetExceeded as exc:
            grown = exc.reason
        else:
            grown = ""
        after = await pool.analyse_async(deployment(), PolicySpec())
        return got, grown, after

    try:
        got, grown, after = asyncio.run(scenario())
    finally:
        pool.close()
    want = RulesAnalyser(lookup).analyse(deployment("good-tp2-deployment.yaml"), PolicySpec())
    assert got == want
    assert "vllm-port-service" in {f.id for f in got.findings}
    assert grown == "over its 256 MiB memory budget"
    assert after.verdict == "fail"


def test_plain_objects_are_judged_in_process_and_the_rest_in_a_worker() -> None:
    """The fast path: a small object with few `$` references skips the round trip; the
    hostile doubling Deployment (48 references) always goes to the budgeted child."""
    import asyncio

    from preflight_operator.runtime.rulesworker import plain

    doubling = deployment()
    container = doubling["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "V0", "value": "x"}] + [
        {"name": f"V{i}", "value": f"$(V{i - 1})$(V{i - 1})"} for i in range(1, 25)
    ]
    assert plain(deployment())
    assert not plain(doubling)
    huge = deployment()
    huge["metadata"]["annotations"] = {"note": "x" * 40_000}
    assert not plain(huge)
    pool = isolate(RulesAnalyser(), OperatorConfig())
    assert pool is not None
    calls: list[str] = []

    async def counted(op: str, body: Any, policy: Any) -> Any:
        calls.append(op)
        raise BudgetExceeded("the worker was asked")

    pool._acall = counted  # type: ignore[method-assign]
    static = asyncio.run(pool.analyse_async(deployment(), PolicySpec()))
    assert static.verdict == "fail"  # judged, and here
    assert calls == []
    with pytest.raises(BudgetExceeded):
        asyncio.run(pool.analyse_async(doubling, PolicySpec()))
    assert calls == ["analyse"]
