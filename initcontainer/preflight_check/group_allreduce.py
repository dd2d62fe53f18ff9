"""Deep tier of the group phase: one all-reduce over every GPU of the group.

After the leader's verdict says the group agrees, every pod starts one process per GPU
(``gpu_count`` of its facts); together they form one ``torch.distributed`` world whose
rank 0 runs on the leader and listens at the leader's address on the group port + 1. Each
rank all-reduces a buffer of ``bytes`` (float32 ones times rank + 1) ``iterations`` times,
verifies the sum and reports the time; the bus bandwidth is NCCL's ``busBw`` for
all-reduce: ``bytes / time x 2 (n - 1) / n``. The backend is NCCL when every member has
GPUs, gloo over CPU tensors otherwise (a member without GPUs counts as one rank), so the
same logic runs in CI without GPUs.

The layout and the arithmetic are pure functions; ``run_ranks`` starts the processes
(``python -c ... group_allreduce.main()``, with site-packages: torch) and reads one JSON
line from each. The worker imports torch only in its own process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from preflight_contract import envnames

DEFAULT_BYTES = 64 << 20
CPU_BYTES = 4 << 20
ITERATIONS = 5
# NCCL's connection lines ("Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0") are INIT/NET
# INFO output, printed to stdout unless NCCL_DEBUG_FILE says otherwise (NCCL's env docs)
NCCL_LOG_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
MAX_LOG_LINES = 400
NCCL = "nccl"
GLOO = "gloo"


@dataclass(frozen=True)
class Layout:
    """Every member's first rank and rank count, the world size and the backend."""

    ranks: Dict[int, Tuple[int, int]]
    world: int
    backend: str
    bytes: int

    def to_dict(self) -> Dict[str, Any]:
        return {
            "ranks": {str(k): list(v) for k, v in sorted(self.ranks.items())},
            "world": self.world,
            "backend": self.backend,
            "bytes": self.bytes,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Optional[Layout]:
        try:
            ranks = {int(k): (int(v[0]), int(v[1])) for k, v in dict(raw["ranks"]).items()}
            return cls(ranks, int(raw["world"]), str(raw["backend"]), int(raw["bytes"]))
        except (KeyError, TypeError, ValueError, IndexError):
            return None


def layout(gpu_counts: Mapping[int, int], force_backend: str = "") -> Layout:
    """Ranks in member order: the leader's GPUs are ranks 0..n-1, then worker 1's, ..."""
    backend = force_backend or (NCCL if all(c > 0 for c in gpu_counts.values()) else GLOO)
    ranks: Dict[int, Tuple[int, int]] = {}
    first = 0
    for index in sorted(gpu_counts):
        count = max(1, gpu_counts[index]) if backend == GLOO else gpu_counts[index]
        ranks[index] = (first, count)
        first += count
    size = DEFAULT_BYTES if backend == NCCL else CPU_BYTES
    return Layout(ranks, first, backend, size)


def bus_bandwidth_gbps(size: int, seconds: float, world: int) -> float:
    """NCCL's bus bandwidth of an all-reduce (nccl-tests' busBw), in GB/s."""
    if seconds <= 0 or world < 1:
        return 0.0
    factor = 2.0 * (world - 1) / world if world > 1 else 1.0
    return size / seconds * factor / 1e9


def expected_value(world: int) -> float:
    """Every element after the sum of ranks' (rank + 1)."""
    return world * (world + 1) / 2.0


def summarize(results: Sequence[Mapping[str, Any]], lay: Layout) -> Tuple[str, str, Dict[str, Any]]:
    """(status, message, evidence) over this pod's ranks' results."""
    failed = [r for r in results if not r.get("ok")]
    times = [float(r["seconds"]) for r in results if r.get("ok") and r.get("seconds")]
    evidence: Dict[str, Any] = {"world": lay.world, "backend": lay.backend, "bytes": lay.bytes}
    if failed:
        first = failed[0]
        evidence["failed_ranks"] = [r.get("rank") for r in failed][:16]
        return (
            "fail",
            f"the group all-reduce ({lay.backend}, {lay.world} ranks) failed on rank "
            f"{first.get('rank')} at {first.get('step', '?')}: {first.get('error', 'no answer')}",
            evidence,
        )
    if not times:
        return "fail", "the group all-reduce reported no result", evidence
    slowest = max(times)
    bandwidth = bus_bandwidth_gbps(lay.bytes, slowest, lay.world)
    evidence["seconds_per_op"] = round(slowest, 6)
    evidence["bus_bandwidth_gbps"] = round(bandwidth, 2)
    return (
        "pass",
        f"all-reduce over the group's {lay.world} ranks ({lay.backend}, {lay.bytes >> 20} MiB): "
        f"sum verified, bus bandwidth {bandwidth:.2f} GB/s",
        evidence,
    )


def worker_command() -> List[str]:
    from preflight_check.children import interpreter_command  # noqa: PLC0415

    return interpreter_command("group_allreduce", minimal=False)


def run_ranks(
    lay: Layout,
    index: int,
    master: str,
    port: int,
    deadline: float,
    *,
    command: Optional[List[str]] = None,
    clock: Callable[[], float] = time.monotonic,
) -> List[Dict[str, Any]]:
    """Start this member's ranks, wait for each until ``deadline``, return their results."""
    first, count = lay.ranks.get(index, (0, 0))
    argv = command or worker_command()
    procs = []
    for local in range(count):
        request = {
            "rank": first + local,
            "local": local,
            "world": lay.world,
            "backend": lay.backend,
            "bytes": lay.bytes,
            "iterations": ITERATIONS,
            "init": f"tcp://{master}:{port}",
            "timeout_s": max(1.0, deadline - clock()),
        }
        env = {**os.environ, envnames.GROUP_ALLREDUCE: json.dumps(request)}
        if lay.backend == NCCL:
            env.update(NCCL_LOG_ENV)  # the transport check reads NCCL's own choice
            env.pop("NCCL_DEBUG_FILE", None)  # ... from this process's output
        procs.append(
            (
                first + local,
                subprocess.Popen(
                    argv,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                    env=env,
                ),
            )
        )
    results: List[Dict[str, Any]] = []
    for rank, proc in procs:
        try:
            out, err = proc.communicate(timeout=max(0.1, deadline - clock()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            results.append({"rank": rank, "ok": False, "step": "wait", "error": "timed out"})
            continue
        results.append(_parse(rank, out, err, proc.returncode))
    return results


def _parse(rank: int, out: bytes, err: bytes, code: int) -> Dict[str, Any]:
    text = out.decode("utf-8", "replace")
    log = nccl_lines(text + "\n" + err.decode("utf-8", "replace"))
    for line in reversed(text.splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "ok" in record:
            record["nccl_log"] = log
            return record
    tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {code}"]
    return {"rank": rank, "ok": False, "step": "start", "error": tail[0][:300], "nccl_log": log}


def nccl_lines(text: str) -> List[str]:
    """NCCL's INFO lines that say how it connects (bounded: the transport check's input)."""
    keep = ("via ", "Using network", "NCCL version", "NET/IB :", "NET/Socket :", "NET/Plugin")
    out = []
    for line in text.splitlines():
        if "NCCL" in line and any(k in line for k in keep):
            out.append(line[:512])
            if len(out) >= MAX_LOG_LINES:
                break
    return out


def main() -> None:
    """One rank: join the world, all-reduce, verify, print one JSON line."""
    request = json.loads(os.environ.get(envnames.GROUP_ALLREDUCE, "{}"))
    rank = int(request.get("rank", 0))
    step = "import torch"
    out: Dict[str, Any] = {"rank": rank, "ok": False}
    try:
        import datetime  # noqa: PLC0415

        import torch  # noqa: PLC0415 - only in the worker
        import torch.distributed as dist  # noqa: PLC0415

        backend = str(request["backend"])
        world = int(request["world"])
        device = torch.device("cpu")
        if backend == NCCL:
            step = "torch.cuda.set_device"
            torch.cuda.set_device(int(request["local"]))
            device = torch.device("cuda", int(request["local"]))
        step = f"init_process_group({backend})"
        dist.init_process_group(
            backend,
            init_method=str(request["init"]),
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=float(request["timeout_s"])),
        )
        step = "all_reduce"
        elements = int(request["bytes"]) // 4
        tensor = torch.full((elements,), float(rank + 1), dtype=torch.float32, device=device)
        dist.all_reduce(tensor)  # warm-up: connections and buffers
        iterations = int(request.get("iterations", ITERATIONS))
        work = torch.ones(elements, dtype=torch.float32, device=device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        dist.barrier()
        started = time.perf_counter()
        for _ in range(iterations):
            dist.all_reduce(work)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = (time.perf_counter() - started) / iterations
        step = "verify"
        want = expected_value(world)
        got = float(tensor[0].item())
        if abs(got - want) > 1e-3 or abs(float(tensor[-1].item()) - want) > 1e-3:
            raise RuntimeError(f"sum is {got}, expected {want}")
        out.update({"ok": True, "seconds": seconds, "device": str(device)})
        dist.destroy_process_group()
    except BaseException as exc:  # the report says which step; never a traceback
        out.update({"step": step, "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
