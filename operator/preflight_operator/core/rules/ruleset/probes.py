"""Probes that kill a vLLM pod that is still loading (rule ``probe-window``).

The kubelet restarts a container whose startupProbe (or, without one, livenessProbe) has
failed ``failureThreshold`` times in a row. vLLM answers nothing on its port until the
weights are loaded and the engine is up, so a probe that reaches vLLM fails for the whole
start-up. The window the kubelet gives is ``initialDelaySeconds + failureThreshold x
periodSeconds`` (Kubernetes' probe defaults 0, 3 and 10; kubernetes.io "Configure
Liveness, Readiness and Startup Probes"); a start-up longer than the window is a restart
loop that never serves.

The start time is estimated as the weights' bytes over the bandwidth of where they come
from, plus the engine's own start-up (docs/RULES.md "probe-window" gives every figure and
its source):

* ``LOAD_BYTES_PER_S``: a Hub download 0.5 GB/s, a PersistentVolumeClaim or network file
  system 0.3 GB/s, a local disk (hostPath, an emptyDir on the node's disk, the image)
  2 GB/s, memory (an emptyDir with medium Memory) 5 GB/s;
* ``ENGINE_START_S``: 60 s with torch.compile and CUDA graph capture (vLLM's default),
  20 s with ``--enforce-eager``.

Certainty. The estimate is a WARN with both figures and the fix. A FAIL needs a known
lower bound: the weights' exact size (the safetensors index's total_size) over the fastest
host-to-GPU link there is, NVLink-C2C at 450 GB/s per direction for each GPU of the plan,
with no engine start-up at all. Only a window of a second or two against hundreds of GB
reaches it; the engine downgrades a FAIL whose weights were only estimated.

Measured. Once the workload's pods have started, the operator knows how long they took
(loadtime.py: their containers' start to Ready, only pods its controller made, bounded),
and the rule judges the window against the slowest of the last starts instead of the
estimate, saying so ("measured"). The lower bound's FAIL still rests on the weights alone.

Also WARNed: a livenessProbe with no startupProbe on weights over a few GB whose window is
under twice the start (``LIVENESS_RISK_FACTOR``: one slow part alone reaches that), and a
probe on a port nothing in
the pod serves, or on a path vLLM's server answers 404 on (it then fails forever).

The docs of its rules (hack/gen_rule_docs.py renders them into docs/RULES.md):

### `probe-window`
It fails only on a lower bound resting on exact inputs; every estimate is a warning.
vLLM answers nothing on its port until the weights are loaded and the engine is up, so a
probe that reaches it (httpGet, tcpSocket or grpc on vLLM's `--port`, 8000 by default) fails
for the whole start-up. The kubelet restarts the container after `failureThreshold`
consecutive failures: the window is `initialDelaySeconds + failureThreshold x
periodSeconds` of the startupProbe, or, without one, of the livenessProbe (Kubernetes'
defaults 0, 3 and 10; kubernetes.io, "Configure Liveness, Readiness and Startup Probes").
An exec probe, a probe on another container's declared port, and a container whose
command is not `vllm serve` / the OpenAI API server are not judged.

The start time is estimated as the weights' size (the model rules' weight bytes: exact from
`model.safetensors.index.json`'s `total_size`, else estimated from config.json) over the
bandwidth of where they come from, plus the engine's start-up:

| where the weights come from | how it is read from the manifest | figure | source |
|---|---|---|---|
| a Hub download (first start) | a Hub repo id, no `HF_HUB_OFFLINE` | 0.5 GB/s | modelplaneai/modelplane#204: Hub to EFS, ~960 GB in ~31 min |
| a PersistentVolumeClaim, a network volume (nfs, csi, cephfs, azureFile, ...) | `--model` path (or the HF cache under `HF_HUB_OFFLINE`) on that volume | 0.3 GB/s | modelplaneai/modelplane#204: EFS, 894 GiB read in ~43 min (~0.35 GB/s); vllm-project/vllm#5405: JuiceFS at 0.1 GB/s |
| a local disk (hostPath, an emptyDir on the node's disk, an image volume, the image) | same | 2 GB/s | vllm-project/vllm#15862: NVMe ~7 GB/s, SATA 0.5 GB/s; 2 GB/s between |
| memory (an emptyDir with `medium: Memory`) | same | 5 GB/s | vllm-project/vllm-omni#4896: 158 GB page-cache resident, loaded in 25 s (~6 GB/s) |
| engine start-up, default | no `--enforce-eager` | 60 s | vllm-project/vllm#20264: torch.compile 7.5 s (warm cache), CUDA graph capture 17 s, engine init 34 s, first answer 59 s after start for a 3.4 GiB model; kubernetes-sigs/gateway-api-inference-extension#550: torch.compile 28.8 s cold |
| engine start-up, `--enforce-eager` | `--enforce-eager` | 20 s | neither torch.compile nor CUDA graphs (docs.vllm.ai, "How to debug the vLLM-torch.compile integration"); process start, model init and memory profile remain |

These are planning figures, not measurements of this cluster: they make a warning, never a
failure. To measure one on a real GPU (docs/GPU_RUNS.md), time a pod from container start to
Ready (`kubectl get pod -o jsonpath='{.status.containerStatuses[0].state.running.startedAt}
{.status.conditions[?(@.type=="Ready")].lastTransitionTime}'`), or run
`vllm serve MODEL` and read its `Loading weights took`, `torch.compile takes` and
`Graph capturing finished` lines.

*Measured, once the workload has run (the operator only).* The operator records how long
each of the workload's pods took from its containers' `state.running.startedAt` to its
`Ready` condition's `lastTransitionTime` on the GPUValidation (`status.runtime.loadTime`:
`lastSeconds`, `p50Seconds`, `maxSeconds` over the newest 20 starts, one per pod). At
admission the rule then judges the window against the slowest measured start instead of
the estimate, and says so: "this workload's pods took up to 900 s to become Ready (measured
4 start(s) of this workload's pods: last 700 s, median 650 s, slowest 900 s)"; the fix
proposes twice that. A measured start within the window replaces a pessimistic estimate:
no warning. Only pods the workload's controller made count (a pod anyone else made in the
namespace cannot claim a one-second start to silence the warning); a figure outside
(0 s, 24 h], a Ready before the start (a container restarted after Ready) or a timestamp
that is not RFC 3339 is dropped, and the record read back from the status is checked the
same way (core/loadtime.py). The FAIL's lower bound still rests on the weights alone.
`lint` has no cluster, so it always estimates.

*Verdicts:*
* **fail**: the weights' exact size over the fastest host-to-GPU link there is
  (NVLink-C2C on GH200/GB200, 450 GB/s each way, per GPU of the plan), with no engine
  start-up at all, exceeds the window. This lower bound holds on any hardware; only a window
  of a second or two against hundreds of GB reaches it. With weights only estimated the
  engine downgrades it to a warning (rules.certainty).
* **warn**: the estimate (or the slowest measured start, above) exceeds the window; the
  message gives both figures and how each was made, the fix a startupProbe (or a larger
  `failureThreshold`) of twice the estimate.
  Without the model's files (no `--model-config`, no model fetch) only the engine start-up
  is compared, and the message says the weights were not counted.
* **warn**: a livenessProbe with no startupProbe on weights over 5 GB whose window covers
  the estimate (or the slowest measured start) by less than 2x: one slow part alone (JuiceFS
  at 0.1 GB/s against the 0.3 GB/s planned, vllm-project/vllm#5405; torch.compile 28.8 s
  cold against 7.5 s warm) reaches that, and every restart starts the load again. The
  message says how many times the start the window is. A window of 2x or more (what the
  fix proposes) is not warned: a 630 s window on an estimated 191 s start says nothing.
* **warn**: a probe on a port no container of the pod declares and that is not vLLM's
  (`--port`), a named port the container does not have, or an httpGet path vLLM's server
  answers 404 on (it serves `/health`, `/ping`, `/load`, `/version`, `/v1/models`,
  `/metrics`, ...; vllm/entrypoints/openai/api_server.py): the probe fails for ever.

*Symptom:* the pod restarts with `Liveness probe failed` / `Startup probe failed: ...
connection refused` in its events, the last log lines show weights still loading or
`Capturing CUDA graphs`, and `RESTARTS` grows (CrashLoopBackOff) without vLLM ever serving.
*Fix:* a startupProbe on `httpGet /health` of vLLM's port with `failureThreshold x
periodSeconds` above the start time (the message proposes numbers); the livenessProbe then
starts only once vLLM is up.

On the real-world corpus (`tests/data/realworld`, 168 workloads, counted 2026-12-06) `lint`
gives no `probe-window` finding without model configs (the weights are unknown); with
`--model-config tests/data/models` it warns two workloads and fails none, each a
livenessProbe alone guarding the start at under twice the estimate:
`vllm/k8s-doc-nvidia-gpu.yaml` (Mistral-7B, a 90 s window for an estimated 89 s start, 1.0x)
and `oracle/arbm-nemotron-a10.yaml` (63 GB, 270 s against 186 s, 1.4x). Before issue 35 it
also warned `tutorials/gemma3-tpu-v5e-gcsfuse.yaml` (390 s) and `gaie/cpu-deployment.yaml`
(1205 s), whose windows cover their estimates more than twice over. Command:
`vllm-preflight lint --format json --model-config tests/data/models tests/data/realworld`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from preflight_contract import modelfacts as mf
from preflight_contract.verdicts import FAIL, WARN
from preflight_contract.vllm_args import API_SERVER, SERVE
from preflight_operator.core.loadtime import MAX_LOAD_SECONDS, LoadSummary
from preflight_operator.core.rules.certainty import VENDOR_DOC, Basis, Input
from preflight_operator.core.rules.context import ContainerContext
from preflight_operator.core.rules.inputs import plan_input
from preflight_operator.core.rules.registry import register
from preflight_operator.core.rules.ruleset.modelfit import fact_input
from preflight_operator.core.rules.vocabulary import Finding, Policy

RULE = "probe-window"
GB = 1_000_000_000

# Kubernetes' defaults for a probe's fields (core/v1 Probe).
DEFAULT_INITIAL_DELAY_S = 0
DEFAULT_PERIOD_S = 10
DEFAULT_FAILURE_THRESHOLD = 3

# Where the weights come from -> bytes per second read into the engine (docs/RULES.md).
HUB = "a Hugging Face Hub download"
PVC = "a PersistentVolumeClaim"
NETWORK = "a network volume"
LOCAL = "a local disk"
MEMORY = "a memory-backed emptyDir"
IMAGE = "the container image"
LOAD_BYTES_PER_S: dict[str, float] = {
    HUB: 0.5 * GB,
    PVC: 0.3 * GB,
    NETWORK: 0.3 * GB,
    LOCAL: 2 * GB,
    IMAGE: 2 * GB,
    MEMORY: 5 * GB,
}
ENGINE_START_S = 60.0  # torch.compile + CUDA graph capture + process start
ENGINE_START_EAGER_S = 20.0  # --enforce-eager: neither
# The fastest host-to-GPU link per GPU (NVLink-C2C, GH200/GB200: 450 GB/s each way): no
# load can be faster, whatever the storage.
FASTEST_LINK_BYTES_PER_S = 450 * GB
# "A model over a few GB": a liveness probe alone is then a guess at the load time.
BIG_MODEL_BYTES = 5 * GB
# How much the fix's window exceeds the estimate, for a slow day.
FIX_MARGIN = 2.0
# A livenessProbe alone is at risk only when its window is under this many times the
# workload's own start (estimated or measured). The same factor the fix proposes, so a
# window the fix set is never warned; and one slow part alone reaches it in the sources
# of LOAD_BYTES_PER_S / ENGINE_START_S (docs/RULES.md): JuiceFS at 0.1 GB/s against the
# 0.3 GB/s planned for network volumes (vllm-project/vllm#5405, 3x), torch.compile 28.8 s
# cold against 7.5 s warm (gateway-api-inference-extension#550, vllm#20264, 3.8x).
# Issue 35 item 6: a 630 s window against an estimated 191 s start (Qwen3-32B) warned before.
LIVENESS_RISK_FACTOR = FIX_MARGIN

# The paths vLLM's OpenAI-compatible server answers GET on (vllm/entrypoints/openai/
# api_server.py and its routers; /metrics from the Prometheus mount): a probe elsewhere
# gets 404 and fails for ever.
VLLM_PATHS = frozenset(
    (
        "/health",
        "/ping",
        "/load",
        "/version",
        "/v1/models",
        "/metrics",
        "/is_sleeping",
        "/server_info",
        "/get_tokenizer_info",
    )
)
# Volume types read over the network, like a PVC.
_NETWORK_VOLUMES = ("nfs", "csi", "cephfs", "glusterfs", "azureFile", "iscsi", "fc", "rbd")


@dataclass(frozen=True)
class Window:
    """The seconds a probe lets a container fail before the kubelet kills it."""

    probe: str  # startupProbe | livenessProbe
    seconds: int
    text: str  # "initialDelaySeconds 0 + failureThreshold 3 x periodSeconds 10"


def _field(probe: Mapping[str, Any], name: str, default: int) -> int | None:
    value = probe.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def window_of(name: str, probe: Mapping[str, Any]) -> Window | None:
    """``initialDelaySeconds + failureThreshold x periodSeconds``; None when a field is not
    a literal number (a template, a variable)."""
    delay = _field(probe, "initialDelaySeconds", DEFAULT_INITIAL_DELAY_S)
    period = _field(probe, "periodSeconds", DEFAULT_PERIOD_S)
    threshold = _field(probe, "failureThreshold", DEFAULT_FAILURE_THRESHOLD)
    if delay is None or period is None or threshold is None:
        return None
    period = period or DEFAULT_PERIOD_S  # 0 is defaulted by the API server
    threshold = threshold or DEFAULT_FAILURE_THRESHOLD
    return Window(
        name,
        delay + threshold * period,
        f"initialDelaySeconds {delay} + failureThreshold {threshold} x periodSeconds {period}",
    )


def _probe(container: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    probe = container.get(name)
    return probe if isinstance(probe, Mapping) else None


def _declared_ports(spec: Mapping[str, Any]) -> set[int]:
    """Every containerPort of the pod's containers."""
    numbers: set[int] = set()
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        for container in containers if isinstance(containers, list) else []:
            ports = container.get("ports") if isinstance(container, Mapping) else None
            for port in ports if isinstance(ports, list) else []:
                if isinstance(port, Mapping) and isinstance(port.get("containerPort"), int):
                    numbers.add(port["containerPort"])
    return numbers


def _named_ports(container: Mapping[str, Any]) -> dict[str, int]:
    ports = container.get("ports")
    out: dict[str, int] = {}
    for port in ports if isinstance(ports, list) else []:
        if (
            isinstance(port, Mapping)
            and isinstance(port.get("name"), str)
            and isinstance(port.get("containerPort"), int)
        ):
            out[port["name"]] = port["containerPort"]
    return out


@dataclass(frozen=True)
class Target:
    """What a probe reaches: the handler, its port (None: unknown or not a port) and path."""

    handler: str  # httpGet | tcpSocket | grpc | exec | unknown
    port: int | None
    port_text: str
    path: str | None


def target_of(probe: Mapping[str, Any], container: Mapping[str, Any]) -> Target:
    for handler in ("httpGet", "tcpSocket", "grpc"):
        body = probe.get(handler)
        if not isinstance(body, Mapping):
            continue
        raw = body.get("port")
        port: int | None = None
        if isinstance(raw, int) and not isinstance(raw, bool):
            port = raw
        elif isinstance(raw, str) and raw.isdigit():
            port = int(raw)
        elif isinstance(raw, str):
            port = _named_ports(container).get(raw)
        path = None
        if handler == "httpGet":
            text = body.get("path")
            path = (text if isinstance(text, str) else "/").split("?", 1)[0] or "/"
        return Target(handler, port, str(raw), path)
    return Target("exec" if isinstance(probe.get("exec"), Mapping) else "unknown", None, "", None)


def _mount_for(container: Mapping[str, Any], path: str) -> Mapping[str, Any] | None:
    """The volumeMount whose mountPath holds ``path`` (the longest)."""
    best: Mapping[str, Any] | None = None
    mounts = container.get("volumeMounts")
    for mount in mounts if isinstance(mounts, list) else []:
        where = mount.get("mountPath") if isinstance(mount, Mapping) else None
        if not isinstance(where, str) or not where.startswith("/"):
            continue
        root = where.rstrip("/") or "/"
        inside = path == root or path.startswith(root.rstrip("/") + "/")
        if inside and (best is None or len(root) > len(str(best.get("mountPath", "")).rstrip("/"))):
            best = mount
    return best


def volume_source(ctx: ContainerContext, path: str) -> tuple[str, str]:
    """(kind, what) of where a path's bytes are read from: the volume mounted there."""
    mount = _mount_for(ctx.container, path)
    if mount is None:
        return IMAGE, f"{path} (no volume mounted there: the container image)"
    volumes = ctx.spec.get("volumes")
    for volume in volumes if isinstance(volumes, list) else []:
        if not isinstance(volume, Mapping) or volume.get("name") != mount.get("name"):
            continue
        name = f"volume {volume.get('name')!r} at {mount.get('mountPath')}"
        if isinstance(volume.get("persistentVolumeClaim"), Mapping) or isinstance(
            volume.get("ephemeral"), Mapping
        ):
            return PVC, name
        empty = volume.get("emptyDir")
        if isinstance(empty, Mapping):
            return (MEMORY if empty.get("medium") == "Memory" else LOCAL), name
        if isinstance(volume.get("hostPath"), Mapping) or isinstance(volume.get("image"), Mapping):
            return LOCAL, name
        if any(isinstance(volume.get(k), Mapping) for k in _NETWORK_VOLUMES):
            return NETWORK, name
        return PVC, name
    return PVC, f"volume {mount.get('name')!r} at {mount.get('mountPath')}"


def weights_source(ctx: ContainerContext, model: str) -> tuple[str, str]:
    """Where vLLM reads the weights from: a path's volume, or for a Hub repo id the Hub
    (the first start downloads), or the cache volume under HF_HUB_OFFLINE."""
    if model.startswith("/"):
        return volume_source(ctx, model)
    offline, _ = ctx.process_env("HF_HUB_OFFLINE")
    if (offline or "").strip().lower() in ("1", "true", "yes", "on"):
        for name in ("HF_HUB_CACHE", "HF_HOME"):
            value, _ = ctx.process_env(name)
            if value and value.startswith("/"):
                kind, what = volume_source(ctx, value)
                return kind, f"the Hugging Face cache ({name}={value}): {what}"
        return LOCAL, "the Hugging Face cache (HF_HUB_OFFLINE is set)"
    return HUB, "a Hugging Face Hub download (the first start)"


@dataclass(frozen=True)
class Estimate:
    seconds: float
    text: str  # how it was made
    weight_bytes: int | None
    weights: Input | None  # the weights' certainty
    measured: bool = False  # the workload's own pods' slowest recent start (loadtime.py)


def estimate_start(ctx: ContainerContext) -> Estimate:
    """Weights over the source's bandwidth plus the engine's start-up; the weights part
    is left out (and said) when the model's files are not available here."""
    eager = ctx.parsed.enforce_eager
    engine = ENGINE_START_EAGER_S if eager else ENGINE_START_S
    how = "--enforce-eager" if eager else "torch.compile and CUDA graph capture"
    engine_text = f"{engine:.0f} s engine start-up ({how})"
    model = ctx.parsed.model or ""
    weights = _weights(ctx, model)
    if weights is None or weights.value is None:
        return Estimate(engine, f"{engine_text}; the weights' size is not known here", None, None)
    kind, what = weights_source(ctx, model)
    rate = LOAD_BYTES_PER_S[kind]
    load = weights.value / rate
    text = (
        f"{weights.value / GB:.1f} GB of weights from {what} at {rate / GB:g} GB/s "
        f"= {load:.0f} s, + {engine_text}"
    )
    fact = mf.Fact("weight_bytes", weights.certainty, weights.source)
    return Estimate(load + engine, text, weights.value, fact_input(fact, model))


def measured_start(ctx: ContainerContext) -> LoadSummary | None:
    """The workload's measured starts (ClusterLookup.load_time), when the operator has
    recorded some; anything but a sound summary is ignored (the estimate stands)."""
    lookup, template = ctx.lookup.load_time, ctx.template
    if lookup is None or template.namespace is None or not template.name:
        return None
    try:
        found = lookup(template.namespace, template.kind, template.name)
    except Exception:  # a lookup that breaks is unknown, never fatal
        return None
    if not isinstance(found, LoadSummary) or found.samples < 1:
        return None
    if not all(0 < v <= MAX_LOAD_SECONDS for v in (found.last, found.p50, found.max)):
        return None
    return found


def with_measurement(estimate: Estimate, measured: LoadSummary | None) -> Estimate:
    """The start the window is judged against: the slowest measured start when there is
    one (the estimate's weights kept for the lower bound), else the estimate."""
    if measured is None:
        return estimate
    return dataclasses.replace(
        estimate, seconds=float(measured.max), text=measured.text(), measured=True
    )


def _weights(ctx: ContainerContext, model: str) -> mf.WeightBytes | None:
    """The bytes a load reads: the checkpoint's own size (exact) where the model's files
    tell it, else config.json's arithmetic (estimated); None without the model's files."""
    lookup = ctx.lookup.model
    if lookup is None or not model or "$" in model:
        return None
    try:
        files = lookup(model)
    except Exception:  # a lookup that breaks is unknown, never fatal
        return None
    if files is None:
        return None
    stored = mf.checkpoint_bytes(files)
    return stored if stored.value is not None else mf.weight_bytes(files)


def _fix(window: Window, needed_s: float, has_startup: bool) -> str:
    period = DEFAULT_PERIOD_S
    threshold = max(1, math.ceil(needed_s * FIX_MARGIN / period))
    if has_startup:
        return (
            f"raise the startupProbe's failureThreshold to {threshold} (periodSeconds {period}: "
            f"{threshold * period} s) so that a slow load is not killed"
        )
    return (
        f"add a startupProbe on the same endpoint (httpGet /health on vLLM's port) with "
        f"periodSeconds: {period} and failureThreshold: {threshold} ({threshold * period} s); "
        "the livenessProbe then starts only once vLLM is up"
    )


def _target_problem(ctx: ContainerContext, name: str, target: Target) -> Finding | None:
    """A probe that fails for ever whatever the load time: a port nothing serves, a path
    vLLM answers 404 on."""
    field = f"{ctx.path}.{name}"
    port = ctx.parsed.port if ctx.parsed.port is not None else 8000
    if target.port is None:
        return _finding(
            WARN,
            f"the {name} names port {target.port_text!r}, which no port of container "
            f"{ctx.name!r} is called: the kubelet cannot probe it and restarts the container",
            f"{field}.{target.handler}.port",
            f"use vLLM's port number ({port}) or name a containerPort {target.port_text!r}",
        )
    port_known = ctx.parsed.port is not None or "port" not in ctx.parsed.origins
    if port_known and target.port != port and target.port not in _declared_ports(ctx.spec):
        return _finding(
            WARN,
            f"the {name} probes port {target.port}, but vLLM listens on {port} and no "
            "container of the pod declares that port: the probe fails for ever and the "
            "kubelet restarts the container in a loop",
            f"{field}.{target.handler}.port",
            f"probe port {port} (vLLM's --port)",
        )
    # the path only where the port is known to be vLLM's: another port may be a sidecar's
    on_vllm = port_known and target.port == port
    if on_vllm and target.path is not None and target.path.rstrip("/") not in VLLM_PATHS:
        return _finding(
            WARN,
            f"the {name} asks for {target.path} on vLLM's port, which vLLM's server answers "
            "with 404: the probe fails for ever and the kubelet restarts the container",
            f"{field}.httpGet.path",
            "probe /health (200 once the engine is up)",
        )
    return None


def _reaches_vllm(ctx: ContainerContext, target: Target) -> bool:
    """A network probe on vLLM's port (or a port unknown here): it fails until vLLM is up."""
    if target.handler not in ("httpGet", "tcpSocket", "grpc"):
        return False  # an exec probe: what it tests is not known here
    if ctx.parsed.port is None and "port" in ctx.parsed.origins:
        return True  # --port from a value unknown here
    return target.port == (ctx.parsed.port if ctx.parsed.port is not None else 8000)


@register(
    RULE,
    FAIL,
    "a startup or liveness probe kills vLLM before it can have loaded",
    Basis(
        VENDOR_DOC,
        "Kubernetes probe semantics (kubelet restarts after failureThreshold failures); "
        "NVLink-C2C 450 GB/s as the fastest host-to-GPU link; load and start-up figures in "
        "docs/RULES.md",
    ),
    fix=(
        "add a startupProbe on `/health` of vLLM's port with failureThreshold x periodSeconds "
        "above the start time (the message gives both figures); probe vLLM's port and a path it "
        "serves"
    ),
)
def probe_window(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    if ctx.parsed.entrypoint not in (SERVE, API_SERVER):
        return  # another server (a Ray worker, a wrapper): its routes and port are not vLLM's
    startup = _probe(ctx.container, "startupProbe")
    name, probe = (
        ("startupProbe", startup)
        if startup is not None
        else (
            "livenessProbe",
            _probe(ctx.container, "livenessProbe"),
        )
    )
    if probe is None:
        return
    target = target_of(probe, ctx.container)
    if target.handler in ("httpGet", "tcpSocket", "grpc"):
        problem = _target_problem(ctx, name, target)
        if problem is not None:
            yield problem
            return
    window = window_of(name, probe)
    if window is None or not _reaches_vllm(ctx, target):
        return
    yield from _timing(ctx, window, has_startup=startup is not None)


def _timing(ctx: ContainerContext, window: Window, has_startup: bool) -> Iterator[Finding]:
    """The window against the lower bound (FAIL), the estimate (WARN), and a liveness
    probe alone on a big model (WARN)."""
    field = f"{ctx.path}.{window.probe}"
    name = window.probe
    estimate = with_measurement(estimate_start(ctx), measured_start(ctx))
    inputs: tuple[Input, ...] = (plan_input(ctx),)
    if estimate.weights is not None:
        inputs = (*inputs, estimate.weights)
    fix = _fix(window, estimate.seconds, has_startup)
    if estimate.weight_bytes is not None and ctx.pod_gpus:
        lower = estimate.weight_bytes / (ctx.pod_gpus * FASTEST_LINK_BYTES_PER_S)
        if lower > window.seconds:
            yield _finding(
                FAIL,
                f"the {name} kills the container after {window.seconds} s ({window.text}), "
                f"but copying {estimate.weight_bytes / GB:.1f} GB of weights into "
                f"{ctx.pod_gpus} GPU(s) takes at least {lower:.1f} s even at "
                f"{FASTEST_LINK_BYTES_PER_S / GB:.0f} GB/s per GPU: vLLM never starts",
                field,
                fix,
                inputs,
            )
            return
    if estimate.seconds > window.seconds:
        over = f"{estimate.seconds / max(1, window.seconds):.1f}x the window"
        said = (
            f"this workload's pods took up to {estimate.seconds:.0f} s to become Ready "
            f"({estimate.text})"
            if estimate.measured
            else f"vLLM's start is estimated at {estimate.seconds:.0f} s ({estimate.text})"
        )
        yield _finding(
            WARN,
            f"the {name} kills the container after {window.seconds} s ({window.text}), but "
            f"{said}, {over}: the pod may restart before it ever serves",
            field,
            fix,
            inputs,
        )
        return
    at_risk = window.seconds < LIVENESS_RISK_FACTOR * estimate.seconds
    if not has_startup and at_risk and (estimate.weight_bytes or 0) > BIG_MODEL_BYTES:
        yield _finding(
            WARN,
            f"only a livenessProbe guards start-up ({window.seconds} s: {window.text}) for "
            f"{(estimate.weight_bytes or 0) / GB:.0f} GB of weights, "
            f"{window.seconds / max(1.0, estimate.seconds):.1f}x the "
            f"{'measured' if estimate.measured else 'estimated'} start of "
            f"{estimate.seconds:.0f} s ({estimate.text}), under the "
            f"{LIVENESS_RISK_FACTOR:g}x a slower volume or a cold compile cache alone can "
            "take: the pod may restart in a loop, and every restart loads the weights again",
            field,
            fix,
            inputs,
        )


def _finding(
    severity: str, message: str, field: str, fix: str, inputs: tuple[Input, ...] = ()
) -> Finding:
    return Finding(RULE, severity, message, field, fix, inputs)
