"""Start the checker's children: the first thing `check` does once it knows the plan.

Kept apart from the collectors so that starting the rank probes needs only this module
and ``children``: every import the checker process does before the probes start is on
the critical path (a zipapp compiles its sources at each run).
"""

from __future__ import annotations

import os
import time
from typing import Dict, List, Optional

from preflight_check.children import Child
from preflight_check.host import Host
from preflight_check.options import Options


class Launched:
    """The children as started, and what the collectors need to know about them."""

    def __init__(self) -> None:
        self.probes: List[Child] = []
        self.workers: List[Child] = []
        self.store_dir: Optional[str] = None
        self.ranks_not_probed: List[int] = []
        # Ranks held back until CUDA says how many GPUs it sees (no device nodes to count).
        self.deferred: List[int] = []
        self.started = time.perf_counter()


# Without device nodes to count (no /dev/nvidiactl: no driver, or API-remoting vGPU) at
# most this many probes start at once; the rest wait for the GPU count CUDA reports, so
# `check --tp 1024` on a host without GPUs starts 8 probes, not 1024.
FIRST_WAVE = 8


def rank_count(options: Options, host: Host) -> int:
    """Ranks to probe now: the plan's, but never more than the GPU device nodes present
    (or FIRST_WAVE when there are none to count)."""
    nodes = host.device_nodes()
    wanted = options.plan.gpus_needed
    return min(wanted, FIRST_WAVE) if nodes is None else min(wanted, max(nodes, 1))


def _start_probe(launched: Launched, options: Options, host: Host, rank: int) -> None:
    plan = options.plan
    request: Dict[str, object] = {
        "rank": rank,
        "thread_timeout_s": min(10.0, options.timeout_s / 2),
    }
    if rank == 0:
        # Rank 0 also reports what CUDA shows: the checker needs no cuInit.
        request.update(view=1, tp=plan.tp, needed=plan.gpus_needed)
    probe = Child(rank, host.command_for("rank_probe"), request, host.child_environ)
    probe.release("go")
    launched.probes.append(probe)


def launch_deferred(launched: Launched, options: Options, host: Host, gpus_seen: int) -> None:
    """Start the held-back ranks that have a GPU now that CUDA counted ``gpus_seen``;
    the others are not probed (gpu-count reports the shortfall)."""
    for rank in launched.deferred:
        if rank < gpus_seen:
            _start_probe(launched, options, host, rank)
        else:
            launched.ranks_not_probed.append(rank)
    launched.deferred = []


def launch(options: Options, host: Host) -> Launched:
    """Rank probes (fast tier) and torch workers (deep tier), started at once.

    The probes wait for nothing. The deep workers wait at their gate until the checker
    knows CUDA sees enough GPUs.
    """
    if options.plan.unknown:
        # no plan to size the ranks by: one per GPU device node, as many as CUDA can see
        # at most (or the first wave without nodes to count); a rank past what CUDA sees
        # finds no GPU, which 'context-ranks' reports as such, never as a failure
        nodes = host.device_nodes()
        options.plan = options.plan.seen(FIRST_WAVE if nodes is None else nodes)
    plan = options.plan
    launched = Launched()
    if options.enabled("context-ranks") or options.enabled("thread-discipline"):
        count = rank_count(options, host)
        rest = list(range(count, plan.gpus_needed))
        if host.device_nodes() is None:
            launched.deferred = rest
        else:
            launched.ranks_not_probed = rest
        for rank in range(count):
            _start_probe(launched, options, host, rank)
    if options.tier == "deep":
        import tempfile  # noqa: PLC0415 - only the deep tier needs a rendezvous directory

        launched.store_dir = tempfile.mkdtemp(prefix="vllm-preflight-")
        worker_command = host.command_for("deep_worker")
        for rank in range(plan.gpus_needed):
            request = {
                "rank": rank,
                "world": plan.gpus_needed,
                "tp": plan.tp,
                "store": os.path.join(launched.store_dir, "rendezvous"),
                "timeout_s": options.deep_timeout_s,
            }
            launched.workers.append(Child(rank, worker_command, request, host.child_environ))
    launched.started = time.perf_counter()
    return launched
