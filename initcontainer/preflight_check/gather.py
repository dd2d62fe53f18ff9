"""The collection phase: everything that talks to the driver, run concurrently.

Timeline (each line starts as early as its inputs allow; docs/PERFORMANCE.md says why):

  t0  rank probes start: one fresh interpreter per rank; each runs cuInit and binds its
      own GPU from its main thread and from a fresh thread, as a vLLM worker does; rank 0
      also reports what CUDA shows, so this process runs no cuInit of its own
  t0  deep workers start (importing torch takes seconds; they wait at their gate until
      the CUDA view says there are enough GPUs)
  t0  this process, in a thread: NVML init and inventory; /dev/shm, preloads and the
      image's CUDA runtime meanwhile in the main thread
  end collect probes and workers (with timeouts); then read NVML's memory and process
      usage, once every child has exited and no context of ours is left

This process creates no context when rank probes run; its wall time is about one
driver start-up plus one context per GPU, the same work a vLLM worker does.
"""

from __future__ import annotations

import shutil
import threading
import time
from typing import Callable, Dict, List, Optional, Set

from preflight_check.children import collect
from preflight_check.collect import (
    NvmlSession,
    bind_all_from_threads,
    collect_cuda,
    cuda_view_from_probe,
)
from preflight_check.driver.api import (
    COMPUTE_MODE_EXCLUSIVE_PROCESS,
    COMPUTE_MODE_EXCLUSIVE_THREAD,
    CudaDriver,
    uuid_key,
)
from preflight_check.facts import CudaView, Facts, NvmlView
from preflight_check.host import Host
from preflight_check.launch import Launched, launch, launch_deferred
from preflight_check.options import Options
from preflight_check.reuse import describe, take
from preflight_contract.modelsource import DEFAULT_TIMEOUT_S, FoundModel, collect_model

# Environment variables that decide or explain the GPU view (kept in the facts).
RELEVANT_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "LD_PRELOAD",
    "CUDA_VERSION",
)
# Once one deep worker failed, how long its peers get before they are stopped.
DEEP_GRACE_S = 10.0


def _exclusive_uuids(nvml: Optional[NvmlView]) -> Set[str]:
    if nvml is None:
        return set()
    return {
        uuid_key(g.uuid)
        for g in nvml.gpus
        if g.compute_mode in (COMPUTE_MODE_EXCLUSIVE_PROCESS, COMPUTE_MODE_EXCLUSIVE_THREAD)
    }


class _Clock:
    """Time since the start of gathering: the --deadline budget and the timings marks."""

    def __init__(
        self, started: float, deadline_s: Optional[float], timings: Dict[str, float]
    ) -> None:
        self.started = started
        self.deadline_s = deadline_s
        self.timings = timings

    def within(self, limit_s: float) -> float:
        """``limit_s``, cut to what is left of --deadline (never below zero)."""
        if self.deadline_s is None:
            return limit_s
        left = self.deadline_s - (time.perf_counter() - self.started)
        return max(0.0, min(limit_s, left))

    def mark(self, name: str, at: Optional[float] = None) -> None:
        """Record ``name`` at ``at`` (a perf_counter reading; default: now), in ms."""
        when = time.perf_counter() if at is None else at
        self.timings[name] = round((when - self.started) * 1000.0, 1)


def gather(
    options: Options,
    host: Host,
    while_waiting: Optional[Callable[[], None]] = None,
    launched: Optional[Launched] = None,
) -> Facts:
    """Collect every fact; ``while_waiting`` runs while the children work (the CLI
    imports the checks then)."""
    started = time.perf_counter()
    plan = options.plan
    facts = Facts(
        plan=plan, environ={k: host.environ[k] for k in RELEVANT_ENV if k in host.environ}
    )
    clock = _Clock(started, options.deadline_s, facts.timings_ms)

    launched = launched or launch(options, host)
    probes, workers = launched.probes, launched.workers
    facts.ranks_not_probed = launched.ranks_not_probed
    clock.mark("children_started", launched.started)

    # 2. What the GPUs are, from NVML, meanwhile (its usage is read later, see below).
    nvml_box: List[NvmlSession] = []
    nvml_thread = threading.Thread(
        target=lambda: nvml_box.append(NvmlSession(host.load_nvml)), daemon=True
    )
    nvml_thread.start()
    # The model's config (a directory, the HF cache or the Hub, bounded), meanwhile.
    model = str(options.model_args.get("model") or "")
    model_box: List[FoundModel] = []
    model_thread = threading.Thread(
        target=lambda: model_box.append(
            collect_model(model, host.environ, clock.within(DEFAULT_TIMEOUT_S), options.model_args)
        ),
        daemon=True,
    )
    if model:
        model_thread.start()
    facts.shm = host.shm()
    facts.kernel_log = host.kernel_log()
    facts.preload = host.preload(host.environ)
    facts.runtime = host.runtime(host.environ)
    facts.vllm_release = host.vllm_release()

    def nvml_driver() -> str:  # verdict reuse only: waits for NVML's inventory
        nvml_thread.join(clock.within(options.timeout_s))
        return nvml_box[0].view.driver_version if nvml_box else ""

    driver = _cuda_view(facts, launched, options, host, clock, nvml_driver=nvml_driver)

    nvml_thread.join()
    session = nvml_box[0] if nvml_box else None
    clock.mark("nvml")
    _bind_in_process(facts, launched, options, session=session, driver=driver, clock=clock)

    if while_waiting is not None:
        while_waiting()
    _collect_children(facts, launched, options, clock)
    _read_nvml(facts, session, children_ran=bool(probes or workers))
    if model:
        model_thread.join(clock.within(DEFAULT_TIMEOUT_S))
        facts.model = model_box[0] if model_box else FoundModel(model, None, "timed out")
    clock.mark("total")
    return facts


def _cuda_view(
    facts: Facts,
    launched: Launched,
    options: Options,
    host: Host,
    clock: _Clock,
    *,
    nvml_driver: Callable[[], str] = lambda: "",
) -> Optional[CudaDriver]:
    """3. What CUDA shows, into ``facts.cuda``; then the deep workers are let go or stopped.

    Rank 0's probe reports it (this process then never runs cuInit: five processes
    initialising the driver at once are slower than four); without probes, or if rank 0
    could not say, this process asks the driver, and the driver it opened is returned.
    """
    plan = options.plan
    probes, workers = launched.probes, launched.workers
    driver: Optional[CudaDriver] = None
    view: Optional[CudaView] = None
    if probes:
        probes[0].wait_note("view", clock.within(options.timeout_s))
        view = cuda_view_from_probe(probes[0].outcome)
    if view is None:
        view, driver = collect_cuda(host.load_cuda, plan)
    facts.cuda = view
    if plan.unknown and view.initialised:  # every GPU CUDA sees, none compared with a plan
        facts.plan = plan.seen(view.count)
    clock.mark("cuda_view")
    if launched.deferred:  # the probe cap: only ranks CUDA has a GPU for (launch.py)
        launch_deferred(launched, options, host, view.count if view.initialised else 0)
        facts.ranks_not_probed = launched.ranks_not_probed
    enough = facts.cuda.initialised and facts.cuda.count >= plan.gpus_needed
    if workers and not enough:
        facts.deep_skipped = (
            "CUDA did not initialise"
            if not facts.cuda.initialised
            else f"CUDA sees {facts.cuda.count} of the {plan.gpus_needed} GPU device nodes "
            "(plan unknown: a worker per device node was started)"
            if plan.unknown
            else f"CUDA sees {facts.cuda.count} GPUs and the plan needs {plan.gpus_needed}"
        )
    if workers and enough and options.reuse_offers:
        offer = take(
            options.reuse_offers, options.node_name, [g.uuid for g in view.gpus], nvml_driver
        )
        if offer is not None:
            facts.deep_reused = describe(offer)
            facts.deep_skipped = facts.deep_reused
            enough = False  # the workers are stopped: nothing of the deep tier runs
            clock.mark("deep_reused")
    for worker in workers:
        if enough:
            worker.release("go")
        else:
            worker.stop()  # ended now: not waited for through torch's import
    return driver


def _bind_in_process(
    facts: Facts,
    launched: Launched,
    options: Options,
    *,
    session: Optional[NvmlSession],
    driver: Optional[CudaDriver],
    clock: _Clock,
) -> None:
    """Without rank processes this process binds every GPU from its own threads, after
    reading NVML's usage (no context of ours exists yet)."""
    probes, workers = launched.probes, launched.workers
    in_process = not probes and options.enabled("context-threads")
    if session is not None and not (probes or workers):
        session.read_usage()
    if in_process and driver is not None and facts.cuda.initialised:
        exclusive = _exclusive_uuids(session.view if session else None)
        ordinals = [g.ordinal for g in facts.cuda.gpus if uuid_key(g.uuid) not in exclusive]
        facts.thread_bindings = bind_all_from_threads(
            driver, ordinals, clock.within(options.timeout_s)
        )
        clock.mark("thread_bindings")


def _collect_children(facts: Facts, launched: Launched, options: Options, clock: _Clock) -> None:
    """Wait for the rank probes and deep workers (bounded), then drop their shared store."""
    facts.ranks = collect(launched.probes, clock.within(options.timeout_s))
    clock.mark("rank_probes")
    if launched.workers:
        wait_s = clock.within(options.deep_timeout_s)
        facts.deep_bound = (
            f"within {options.deep_timeout_s:g} s"
            if wait_s >= options.deep_timeout_s
            else f"before the check's deadline ({options.deadline_s:g} s, PREFLIGHT_DEADLINE)"
        )
        facts.deep = collect(launched.workers, wait_s, grace_after_failure_s=DEEP_GRACE_S)
        clock.mark("deep_workers")
    if launched.store_dir is not None:
        shutil.rmtree(launched.store_dir, ignore_errors=True)


def _read_nvml(facts: Facts, session: Optional[NvmlSession], children_ran: bool) -> None:
    """NVML's view into ``facts.nvml``; its usage is read once no context of ours is left."""
    if session is None:
        facts.nvml = NvmlView(error="NVML did not answer")
        return
    if children_ran:
        # Every child has exited, and with it every context this checker made.
        session.read_usage()
    session.close()
    facts.nvml = session.view
