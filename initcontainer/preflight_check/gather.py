"""The collection phase: everything that talks to the driver, run concurrently.

Timeline (each line starts as early as its inputs allow):

  t0  rank probes start (one fresh interpreter per rank; they cuInit on their own)
  t0  deep workers start (importing torch takes seconds; they wait at their gate)
  t0  NVML inventory in a thread (memory and processes read before any context of ours)
  t0  libcuda + cuInit + every ordinal's UUID / PCI bus id in this thread
      -> gate opens once NVML is done: probes and one thread per GPU bind contexts
  end collect probes and workers with timeouts

The checker's wall time is therefore about one driver start-up plus one context per
GPU, the same work a vLLM worker does, not the sum of the steps.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from typing import Dict, List, Optional, Set

from preflight_check.children import Child, collect
from preflight_check.collect import bind_all_from_threads, collect_cuda, collect_nvml
from preflight_check.driver.api import (
    COMPUTE_MODE_EXCLUSIVE_PROCESS,
    COMPUTE_MODE_EXCLUSIVE_THREAD,
    uuid_key,
)
from preflight_check.facts import Facts, NvmlView
from preflight_check.host import Host
from preflight_check.options import Options

# Environment variables that decide or explain the GPU view (kept in the facts).
RELEVANT_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "LD_PRELOAD",
    "CUDA_VERSION",
)
# How long contexts wait for the NVML snapshot before going ahead without it.
NVML_GATE_TIMEOUT_S = 5.0
# Once one deep worker failed, how long its peers get before they are stopped.
DEEP_GRACE_S = 10.0


def _rank_count(options: Options, host: Host) -> int:
    """Ranks to probe: the plan's, but never more than the GPU device nodes present."""
    nodes = host.device_nodes()
    wanted = options.plan.gpus_needed
    return wanted if nodes is None else min(wanted, max(nodes, 1))


def _exclusive_uuids(nvml: Optional[NvmlView]) -> Set[str]:
    if nvml is None:
        return set()
    return {
        uuid_key(g.uuid)
        for g in nvml.gpus
        if g.compute_mode in (COMPUTE_MODE_EXCLUSIVE_PROCESS, COMPUTE_MODE_EXCLUSIVE_THREAD)
    }


def gather(options: Options, host: Host) -> Facts:
    started = time.perf_counter()
    plan = options.plan
    facts = Facts(
        plan=plan, environ={k: host.environ[k] for k in RELEVANT_ENV if k in host.environ}
    )
    timings: Dict[str, float] = facts.timings_ms

    def mark(name: str) -> None:
        timings[name] = round((time.perf_counter() - started) * 1000.0, 1)

    nvml_done = threading.Event()
    nvml_box: List[NvmlView] = []

    def nvml_job() -> None:
        nvml_box.append(collect_nvml(host.load_nvml))
        nvml_done.set()

    nvml_thread = threading.Thread(target=nvml_job, name="nvml", daemon=True)
    # First: importing pynvml is the longest stretch of Python before the gate opens.
    nvml_thread.start()

    probes: List[Child] = []
    if options.enabled("context-ranks") or options.enabled("thread-discipline"):
        count = _rank_count(options, host)
        facts.ranks_not_probed = list(range(count, plan.gpus_needed))
        probe_command = host.command_for("rank_probe")
        for rank in range(count):
            request: Dict[str, object] = {
                "rank": rank,
                "thread_timeout_s": min(10.0, options.timeout_s / 2),
            }
            probes.append(Child(rank, probe_command, request, host.child_environ))
    workers: List[Child] = []
    store_dir: Optional[str] = None
    if options.tier == "deep":
        store_dir = tempfile.mkdtemp(prefix="vllm-preflight-")
        worker_command = host.command_for("deep_worker")
        for rank in range(plan.gpus_needed):
            request = {
                "rank": rank,
                "world": plan.gpus_needed,
                "tp": plan.tp,
                "store": os.path.join(store_dir, "rendezvous"),
                "timeout_s": options.deep_timeout_s,
            }
            workers.append(Child(rank, worker_command, request, host.child_environ))
    mark("children_started")

    facts.cuda, driver = collect_cuda(host.load_cuda, plan)
    mark("cuda_view")
    facts.shm = host.shm()
    facts.preload = host.preload(host.environ)
    facts.runtime = host.runtime(host.environ)
    mark("environment")

    nvml_in_time = nvml_done.wait(NVML_GATE_TIMEOUT_S)
    mark("nvml_gate")
    can_bind = facts.cuda.initialised
    for probe in probes:
        probe.release("go" if can_bind else "stop")
    enough = can_bind and facts.cuda.count >= plan.gpus_needed
    if workers and not enough:
        facts.deep_skipped = (
            "CUDA did not initialise"
            if not can_bind
            else f"CUDA sees {facts.cuda.count} GPUs and the plan needs {plan.gpus_needed}"
        )
    for worker in workers:
        worker.release("go" if enough else "stop")

    if driver is not None and can_bind and options.enabled("context-threads"):
        # A GPU in an exclusive compute mode takes one process's context: leave it to
        # its rank probe (the vLLM-like one) rather than collide with it.
        exclusive = _exclusive_uuids(nvml_box[0] if nvml_box else None)
        ordinals = [g.ordinal for g in facts.cuda.gpus if uuid_key(g.uuid) not in exclusive]
        facts.thread_bindings = bind_all_from_threads(driver, ordinals, options.timeout_s)
        mark("thread_bindings")

    facts.ranks = collect(probes, options.timeout_s)
    mark("rank_probes")
    if workers:
        facts.deep = collect(workers, options.deep_timeout_s, grace_after_failure_s=DEEP_GRACE_S)
        mark("deep_workers")
    if store_dir is not None:
        shutil.rmtree(store_dir, ignore_errors=True)

    nvml_thread.join(NVML_GATE_TIMEOUT_S)
    facts.nvml = nvml_box[0] if nvml_box else NvmlView(error="NVML did not answer in time")
    if not nvml_in_time:
        facts.nvml.before_own_contexts = False
    mark("total")
    return facts
