"""The whole checker in a group: three checker processes over the fake driver meet on
127.0.0.1 after their local checks (as three pods of a LeaderWorkerSet would), and the
deep tier's group all-reduce (gloo over CPU, with torch's own virtualenv)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from preflight_check import group_allreduce as ga
from preflight_dev.testing import torchenv

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_member(
    tmp: Path, index: int, size: int, port: int, *, args: str, deadline: int = 20
) -> tuple[subprocess.Popen[bytes], Path]:
    report = tmp / f"report-{index}.json"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "LWS_LEADER_ADDRESS": "127.0.0.1",
        "LWS_GROUP_SIZE": str(size),
        "LWS_WORKER_INDEX": str(index),
        "PREFLIGHT_GROUP_PORT": str(port),
        "PREFLIGHT_GROUP_BIND": "127.0.0.1",
        "PREFLIGHT_VLLM_ARGS": args,  # the rules' reading, as the injector writes it
        "PREFLIGHT_NODE_NAME": f"node-{index}",
        "PREFLIGHT_TP": "2",
        "PREFLIGHT_DEADLINE": str(deadline),
        "PYTHONPATH": os.pathsep.join(str(REPO / d) for d in ("initcontainer", "operator", "dev")),
    }
    cmd = [sys.executable, "-m", "preflight_dev.demo.fakecheck", "--gpus", "2", "--"]
    cmd += ["--json", str(report), "--termination-log", str(tmp / f"term-{index}")]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return proc, report


def group_result(report: Path) -> dict[str, Any]:
    data = json.loads(report.read_text())
    found = [c for c in data["checks"] if c["id"] == "group"]
    assert found, [c["id"] for c in data["checks"]]
    return found[0]


# PP 3 over the three pods (--nnodes): two GPUs each
ARGS = "vllm serve m -tp 2 -pp 3 --nnodes 3 --dtype bfloat16"


def test_three_checkers_meet_and_agree(tmp_path: Path) -> None:
    port = free_port()
    members = [start_member(tmp_path, i, 3, port, args=ARGS) for i in (2, 0, 1)]
    codes = [proc.wait(60) for proc, _ in members]
    assert codes == [0, 0, 0], [p.stderr.read() for p, _ in members if p.stderr]
    for _, report in members:
        result = group_result(report)
        assert result["status"] == "pass", result
        assert result["evidence"]["joined"] == [0, 1, 2]
    leader = group_result(members[1][1])
    assert leader["evidence"]["role"] == "leader"
    nodes = {m["node"] for m in leader["evidence"]["members"]}
    assert nodes == {"node-0", "node-1", "node-2"}
    assert leader["evidence"]["slowest"]["member"].endswith(")")
    # the fake machines share GPU UUIDs, which is a duplicate only on one node
    assert [m.get("gpu_count") for m in leader["evidence"]["members"]] == [2, 2, 2]


def test_mismatched_args_and_a_member_that_never_starts(tmp_path: Path) -> None:
    port = free_port()
    leader = start_member(tmp_path, 0, 3, port, args=ARGS, deadline=15)
    odd = start_member(
        tmp_path, 1, 3, port, args=ARGS.replace("-pp 3 --nnodes 3", "-pp 2 --nnodes 2"), deadline=15
    )
    # worker 2 never starts: the members still end, by their own deadline (wait() would
    # raise TimeoutExpired after 60 s otherwise; not timed here, a loaded machine is slow)
    codes = [leader[0].wait(60), odd[0].wait(60)]
    assert codes == [1, 1]  # Enforce: the group failed
    result = group_result(leader[1])
    assert result["status"] == "fail"
    assert "worker 2" in result["message"]
    assert "never joined" in result["message"]
    assert "worker 1 (node-1) runs vLLM with other engine arguments" in result["message"]
    assert "pp 3 vs 2" in result["message"]
    member = group_result(odd[1])
    assert member["status"] == "fail"
    assert "pp 3 vs 2" in member["message"]


# -- deep tier ------------------------------------------------------------------------


def test_layout_and_bus_bandwidth() -> None:
    lay = ga.layout({0: 8, 1: 8, 2: 8})
    assert (lay.backend, lay.world, lay.ranks[2]) == ("nccl", 24, (16, 8))
    cpu = ga.layout({0: 1, 1: 0, 2: 0})
    assert (cpu.backend, cpu.world, cpu.ranks) == ("gloo", 3, {0: (0, 1), 1: (1, 1), 2: (2, 1)})
    assert ga.Layout.from_dict(cpu.to_dict()) == cpu
    assert ga.Layout.from_dict({"ranks": "x"}) is None
    # nccl-tests: busBw = algBw x 2 (n - 1) / n
    assert ga.bus_bandwidth_gbps(1_000_000_000, 1.0, 4) == pytest.approx(1.5)
    assert ga.expected_value(3) == 6.0


def test_rank_orchestration_with_a_stand_in_worker() -> None:
    """run_ranks starts one process per rank and reads its JSON line; a rank that says
    nothing or hangs is a failure naming it (the worker here is a stand-in: no torch)."""
    lay = ga.layout({0: 2, 1: 1}, ga.GLOO)
    script = (
        "import json, os, sys, time; r = json.loads(os.environ['PREFLIGHT_GROUP_ALLREDUCE']);"
        "time.sleep(5) if r['rank'] == 1 else None;"
        "print(json.dumps({'rank': r['rank'], 'ok': True, 'seconds': 0.01}))"
    )
    # rank 1 answers after 5 s: "timed out" below can only come from the 1.5 s deadline
    results = ga.run_ranks(
        lay, 0, "127.0.0.1", 1, time.monotonic() + 1.5, command=[sys.executable, "-c", script]
    )
    assert [r["rank"] for r in results] == [0, 1]
    assert results[0]["ok"]
    assert results[1] == {"rank": 1, "ok": False, "step": "wait", "error": "timed out"}
    status, message, _ = ga.summarize(results, lay)
    assert status == "fail"
    assert "rank 1 at wait" in message
    status, message, evidence = ga.summarize([results[0]], lay)
    assert status == "pass"
    assert evidence["bus_bandwidth_gbps"] > 0


def test_group_allreduce_over_gloo_across_three_members() -> None:
    """The deep tier's all-reduce across three members over gloo (CPU), with real torch: the
    ranks run with the python of torch's own virtualenv (preflight_dev.testing.torchenv,
    made by hack/prepare_tests.sh), since the suite's has none."""
    interpreter = torchenv.python()
    if interpreter is None:
        pytest.fail(
            f"torch's virtualenv ({torchenv.venv_dir()}) is not made: run `make prepare` "
            "(or `python -m preflight_dev.testing.torchenv`)"
        )
    command = [str(interpreter), *ga.worker_command()[1:]]
    lay = ga.layout({0: 0, 1: 0, 2: 0})
    port = free_port()
    deadline = time.monotonic() + 60
    out: dict[int, list[dict[str, Any]]] = {}

    def member(index: int) -> None:
        out[index] = ga.run_ranks(lay, index, "127.0.0.1", port, deadline, command=command)

    threads = [threading.Thread(target=member, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    results = [r for i in sorted(out) for r in out[i]]
    assert [r["rank"] for r in results] == [0, 1, 2]
    assert all(r["ok"] for r in results), results
    status, _, evidence = ga.summarize(results, lay)
    assert status == "pass"
    assert evidence["bus_bandwidth_gbps"] > 0


def test_two_jobset_members_meet_with_the_injectors_env(tmp_path: Path) -> None:
    """Two pods of a JobSet (one Job of parallelism 2, coordinator pod 0) with the group env
    the injector writes for them (issue 26): they meet and agree. The coordinator's DNS
    name is replaced by 127.0.0.1 (no cluster DNS here); the LWS variables are absent."""
    if str(REPO / "tests" / "unit") not in sys.path:
        sys.path.insert(0, str(REPO / "tests" / "unit"))  # the pods as the controllers make them
    from test_inject_jobset import COORDINATED, group_env, jobset, pods_of, runtime

    body = jobset(coordinator=COORDINATED)
    port = free_port()
    procs = []
    for pod in reversed(pods_of(body)):  # the member first: it dials until the leader listens
        env = runtime(group_env(pod, body))
        assert env["PREFLIGHT_GROUP_ADDRESS"] == "serve-vllm-0-0.serve"
        index = int(env["PREFLIGHT_GROUP_INDEX"])
        env.update(
            PATH=os.environ.get("PATH", ""),
            PREFLIGHT_GROUP_ADDRESS="127.0.0.1",
            PREFLIGHT_GROUP_PORT=str(port),
            PREFLIGHT_GROUP_BIND="127.0.0.1",
            PREFLIGHT_NODE_NAME=f"node-{index}",
            PREFLIGHT_TP="8",  # the plan's share per pod: TP 8 x PP 2 over --nnodes 2
            PREFLIGHT_DEADLINE="20",
            PYTHONPATH=os.pathsep.join(str(REPO / d) for d in ("initcontainer", "operator", "dev")),
        )
        report = tmp_path / f"report-{index}.json"
        cmd = [sys.executable, "-m", "preflight_dev.demo.fakecheck", "--gpus", "8", "--"]
        cmd += ["--json", str(report), "--termination-log", str(tmp_path / f"term-{index}")]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        procs.append((proc, report, index))
    codes = [proc.wait(60) for proc, _, _ in procs]
    assert codes == [0, 0], [p.stderr.read() for p, _, _ in procs if p.stderr]
    for _, report, index in procs:
        result = group_result(report)
        assert result["status"] == "pass", result
        assert result["evidence"]["joined"] == [0, 1]
        assert result["evidence"]["group"] == "team/serve#0"
        assert result["evidence"]["role"] == ("leader" if index == 0 else "member")
    leader = group_result(next(r for _, r, i in procs if i == 0))
    assert {m["node"] for m in leader["evidence"]["members"]} == {"node-0", "node-1"}
