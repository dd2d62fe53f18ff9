"""The deep tier's worker: one per rank, a fresh interpreter that imports torch.

It does what a vLLM worker does first: set_device(rank), allocate, join an NCCL process
group, all-reduce over its tensor-parallel group (the sum is verified), and exchange a
buffer with its neighbours in the group (NCCL send/recv, the pipeline and custom
all-reduce paths' transport). Same line protocol as rank_probe; each step is announced
before it starts so a hang names the step.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional

from preflight_check.rank_probe import JsonLinesLog, gate_from_stdin, parse_request, write_stdout

ELEMENTS = 1 << 18  # 1 MiB of float32

# Step names: the protocol between worker and check (checks/deep.py reads them).
STEP_IMPORT = "import torch"
STEP_SET_DEVICE = "torch.cuda.set_device"
STEP_ALLOCATE = "allocate"
STEP_INIT = "init_process_group(nccl)"
STEP_ALL_REDUCE = "all_reduce(tp group)"
STEP_PEER_COPY = "peer copy (send/recv)"


def _run(log: JsonLinesLog, thread: str, step: str, function: Callable[[], Any]) -> Any:
    log.begin(step, thread)
    started = time.perf_counter()
    try:
        value = function()
    except Exception as exc:
        log.emit(
            {
                "e": step,
                "th": thread,
                "c": 1,
                "n": f"{type(exc).__name__}: {str(exc)[:300]}",
                "ms": round((time.perf_counter() - started) * 1000.0, 3),
            }
        )
        raise
    log.emit(
        {
            "e": step,
            "th": thread,
            "c": 0,
            "n": "ok",
            "v": value if isinstance(value, (int, float, str, bool)) else None,
            "ms": round((time.perf_counter() - started) * 1000.0, 3),
        }
    )
    return value


def run_worker(
    request: Dict[str, Any], log: JsonLinesLog, wait_for_gate: Callable[[], bool]
) -> int:
    rank, world, tp = int(request["rank"]), int(request["world"]), int(request["tp"])
    thread = "torch"
    try:
        torch: Any = _run(log, thread, STEP_IMPORT, lambda: __import__("torch"))
        import torch.distributed as dist  # noqa: PLC0415 - torch loads only in the worker

        log.emit({"note": "torch", "v": str(torch.__version__)})
        log.emit({"note": "torch_cuda", "v": str(torch.version.cuda)})
        if not wait_for_gate():
            log.emit({"note": "stopped", "v": "the checker stopped this worker"})
            log.emit({"done": True})
            return 0
        _run(log, thread, STEP_SET_DEVICE, lambda: torch.cuda.set_device(rank))
        device = torch.device("cuda", rank)
        tensor = _run(
            log,
            thread,
            STEP_ALLOCATE,
            lambda: torch.full((ELEMENTS,), float(rank + 1), device=device),
        )
        timeout = datetime.timedelta(seconds=float(request.get("timeout_s", 120)))

        def init_group() -> None:
            kwargs: Dict[str, Any] = {
                "backend": "nccl",
                "init_method": f"file://{request['store']}",
                "rank": rank,
                "world_size": world,
                "timeout": timeout,
            }
            try:
                dist.init_process_group(device_id=device, **kwargs)
            except TypeError:  # torch < 2.3 has no device_id
                dist.init_process_group(**kwargs)

        _run(log, thread, STEP_INIT, init_group)
        groups: List[List[int]] = [list(range(s, s + tp)) for s in range(0, world, tp)]
        mine = groups[rank // tp]
        group: Optional[Any] = None
        if len(groups) > 1:
            # Every rank creates every group, in the same order (torch requires it).
            created = [dist.new_group(g) for g in groups]
            group = created[rank // tp]
        expected = float(sum(r + 1 for r in mine))

        def all_reduce() -> float:
            dist.all_reduce(tensor, group=group)
            torch.cuda.synchronize(device)
            if not bool(torch.all(tensor == expected).item()):
                raise RuntimeError(
                    f"all-reduce gave {tensor[0].item()} on rank {rank}, expected {expected}"
                )
            return expected

        _run(log, thread, STEP_ALL_REDUCE, all_reduce)
        if len(mine) > 1:
            position = mine.index(rank)
            after, before = mine[(position + 1) % len(mine)], mine[position - 1]

            def peer_copy() -> str:
                outgoing = torch.full((ELEMENTS,), float(rank + 1), device=device)
                incoming = torch.zeros(ELEMENTS, device=device)
                ops = [
                    dist.P2POp(dist.isend, outgoing, after, group),
                    dist.P2POp(dist.irecv, incoming, before, group),
                ]
                for request_handle in dist.batch_isend_irecv(ops):
                    request_handle.wait()
                torch.cuda.synchronize(device)
                if not bool(torch.all(incoming == float(before + 1)).item()):
                    raise RuntimeError(f"rank {rank} received wrong data from rank {before}")
                return f"{before}->{rank}->{after}"

            _run(log, thread, STEP_PEER_COPY, peer_copy)
    except Exception:
        return 1
    log.emit({"done": True})
    return 0


def main() -> None:
    request = parse_request(sys.argv[1:])
    log = JsonLinesLog(write_stdout)
    code = run_worker(request, log, gate_from_stdin)
    # Skip interpreter and NCCL teardown: the process is done and exit frees it all.
    os._exit(code)


if __name__ == "__main__":
    main()
