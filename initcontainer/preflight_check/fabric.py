"""The fabric a multi-node group will talk over: RDMA devices, GPUDirect RDMA, NCCL's env.

NCCL picks its inter-node transport at ``ncclCommInitRank``: InfiniBand or RoCE verbs
(``NET/IB``), a network plugin (EFA through the AWS OFI plugin, ``NET/AWS Libfabric``), or,
when none of them works, TCP sockets (``NET/Socket``), silently and at a fraction of the
speed. What it can use is visible before vLLM starts:

- the RDMA devices of the node, under ``/sys/class/infiniband/<dev>/ports/<n>/`` (``state``
  ``"4: ACTIVE"``, ``phys_state`` ``"5: LinkUp"``, ``link_layer`` ``InfiniBand`` or
  ``Ethernet`` (RoCE), ``rate`` ``"400 Gb/sec (4X NDR)"``): Linux
  Documentation/ABI/stable/sysfs-class-infiniband, formats from
  drivers/infiniband/core/sysfs.c (``state_show``, ``phys_state_show``, ``rate_show``,
  ``link_layer_show``). sysfs shows every device of the node (the RDMA subsystem's default
  "shared" network-namespace mode), so a device in sysfs is on the node;
- which of them the container can open: ``/sys/class/infiniband_verbs/uverbsN/ibdev`` names
  the device behind ``/dev/infiniband/uverbsN`` (same ABI file), and the device node exists
  in the container only when a device plugin or DRA driver put it there;
- GPUDirect RDMA: the ``nvidia_peermem`` module (``/sys/module/nvidia_peermem``; the driver
  ships it since R470), or dma-buf, which NVIDIA's GPU Operator documentation
  (gpu-operator-rdma, "GPUDirect RDMA and GPUDirect Storage") requires Linux >= 5.12, the open
  GPU kernel modules and driver >= 515 for; ``/proc/driver/nvidia/version`` says "Open Kernel
  Module" for those;
- the environment that forces or forbids a transport: ``NCCL_IB_DISABLE``, ``NCCL_NET``,
  ``NCCL_IB_HCA``, ``NCCL_SOCKET_IFNAME``, ``FI_PROVIDER`` (NCCL's environment-variable
  documentation; libfabric's ``fi_provider(7)``).

Reading is bounded (64 devices, 8 ports each, 256 bytes a file) and never raises: a file
missing or odd is unknown, and unknown is never a failure. ``judge_rdma`` is pure.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

MAX_DEVICES = 64
MAX_PORTS = 8
_READ = 256

IB = "InfiniBand"
ROCE = "RoCE"
EFA = "EFA"

# NCCL's variables (and libfabric's) that decide the inter-node transport, kept in the facts
TRANSPORT_ENV = (
    "NCCL_IB_DISABLE",
    "NCCL_NET",
    "NCCL_IB_HCA",
    "NCCL_SOCKET_IFNAME",
    "NCCL_NET_PLUGIN",
    "FI_PROVIDER",
)


@dataclass(frozen=True)
class RdmaPort:
    number: int
    state: str = ""  # "ACTIVE", "DOWN", ... ("" unknown)
    phys_state: str = ""  # "LinkUp", "Disabled", ...
    link_layer: str = ""  # "InfiniBand", "Ethernet"
    rate: str = ""  # "400 Gb/sec (4X NDR)"

    @property
    def active(self) -> bool:
        return self.state in ("ACTIVE", "ACTIVE_DEFER")


@dataclass(frozen=True)
class RdmaDevice:
    name: str
    kind: str  # IB, ROCE, EFA or "" (unknown)
    ports: Tuple[RdmaPort, ...] = ()
    # /dev/infiniband/uverbsN of this device exists here (None: sysfs does not say which N)
    in_container: Optional[bool] = None

    @property
    def active(self) -> bool:
        return any(p.active for p in self.ports)


@dataclass
class FabricFacts:
    devices: List[RdmaDevice] = field(default_factory=list)
    peermem: Optional[bool] = None  # nvidia_peermem (or nv_peer_mem) loaded
    kernel: str = ""  # uname release, "5.15.0-91-generic"
    driver: str = ""  # NVIDIA driver version, "535.104.05"
    open_modules: Optional[bool] = None  # the open GPU kernel modules
    env: Dict[str, str] = field(default_factory=dict)

    def to_evidence(self) -> Dict[str, Any]:
        return {
            "devices": [
                {
                    "name": d.name,
                    "kind": d.kind or "unknown",
                    "in_container": d.in_container,
                    "ports": [
                        {
                            "port": p.number,
                            "state": p.state,
                            "link_layer": p.link_layer,
                            "rate": p.rate,
                        }
                        for p in d.ports
                    ],
                }
                for d in self.devices[:16]
            ],
            "gpudirect_rdma": gpudirect(self)[1],
            "env": dict(self.env),
        }


def _read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(_READ).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _after_colon(text: str) -> str:
    """``"4: ACTIVE"`` -> ``"ACTIVE"`` (the kernel's ``"%d: %s"``)."""
    return text.split(":", 1)[1].strip() if ":" in text else text.strip()


def _listdir(path: str) -> List[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def read_fabric(
    root: str = "/",
    environ: Optional[Mapping[str, str]] = None,
    kernel: Optional[str] = None,
    driver: str = "",
) -> FabricFacts:
    """The fabric facts of this container; ``root`` is "/" in a pod, a tree in the tests."""
    environ = environ if environ is not None else os.environ
    sysfs = os.path.join(root, "sys")
    uverbs: Dict[str, str] = {}  # device name -> uverbsN
    verbs_dir = os.path.join(sysfs, "class", "infiniband_verbs")
    for entry in _listdir(verbs_dir)[: MAX_DEVICES * 2]:
        if entry.startswith("uverbs"):
            ibdev = _read(os.path.join(verbs_dir, entry, "ibdev"))
            if ibdev:
                uverbs[ibdev] = entry
    dev_dir = os.path.join(root, "dev", "infiniband")
    devices: List[RdmaDevice] = []
    ib_dir = os.path.join(sysfs, "class", "infiniband")
    for name in _listdir(ib_dir)[:MAX_DEVICES]:
        base = os.path.join(ib_dir, name)
        ports = []
        for number in _listdir(os.path.join(base, "ports"))[:MAX_PORTS]:
            if not number.isdigit():
                continue
            pdir = os.path.join(base, "ports", number)
            ports.append(
                RdmaPort(
                    int(number),
                    _after_colon(_read(os.path.join(pdir, "state"))),
                    _after_colon(_read(os.path.join(pdir, "phys_state"))),
                    _read(os.path.join(pdir, "link_layer")),
                    _read(os.path.join(pdir, "rate")),
                )
            )
        driver_link = ""
        with contextlib.suppress(OSError):
            driver_link = os.path.basename(os.readlink(os.path.join(base, "device", "driver")))
        in_container: Optional[bool] = None
        if name in uverbs:
            in_container = os.path.exists(os.path.join(dev_dir, uverbs[name]))
        devices.append(
            RdmaDevice(name, device_kind(name, driver_link, ports), tuple(ports), in_container)
        )
    peermem: Optional[bool] = None
    modules = os.path.join(sysfs, "module")
    if os.path.isdir(modules):
        peermem = any(
            os.path.isdir(os.path.join(modules, m)) for m in ("nvidia_peermem", "nv_peer_mem")
        )
    version_text = _read(os.path.join(root, "proc", "driver", "nvidia", "version"))
    open_modules = ("Open Kernel Module" in version_text) if version_text else None
    if not driver and version_text:
        found = re.search(r"\b(\d{3,4}\.\d+(?:\.\d+)?)\b", version_text)
        driver = found.group(1) if found else ""
    if kernel is None:
        try:
            kernel = os.uname().release
        except AttributeError:  # pragma: no cover - not Linux
            kernel = ""
    env = {k: str(environ[k])[:200] for k in TRANSPORT_ENV if k in environ}
    return FabricFacts(devices, peermem, kernel, driver, open_modules, env)


def device_kind(name: str, driver: str, ports: List[RdmaPort]) -> str:
    """EFA by its kernel driver (``efa``) or name; else RoCE when a port's link layer is
    Ethernet, InfiniBand when it is InfiniBand; "" when nothing says."""
    if driver == "efa" or name.startswith("efa"):
        return EFA
    layers = {p.link_layer for p in ports}
    if "Ethernet" in layers:
        return ROCE
    if IB in layers:
        return IB
    return ""


def _version(text: str, parts: int) -> Optional[Tuple[int, ...]]:
    found = re.match(r"\s*(\d+(?:\.\d+)*)", text or "")
    if not found:
        return None
    numbers = [int(x) for x in found.group(1).split(".")][:parts]
    return tuple(numbers + [0] * (parts - len(numbers)))


DMABUF_KERNEL = (5, 12)
DMABUF_DRIVER = 515


def gpudirect(facts: FabricFacts) -> Tuple[Optional[bool], str]:
    """(available, how): nvidia_peermem loaded, or dma-buf (Linux >= 5.12, the open GPU
    kernel modules, driver >= 515); None when the checker cannot tell."""
    if facts.peermem:
        return True, "nvidia_peermem loaded"
    kernel = _version(facts.kernel, 2)
    driver = _version(facts.driver, 1)
    missing = []
    if kernel is not None and kernel < DMABUF_KERNEL:
        missing.append(f"Linux {facts.kernel} (dma-buf needs 5.12 or later)")
    if driver is not None and driver[0] < DMABUF_DRIVER:
        missing.append(f"driver {facts.driver} (dma-buf needs 515 or later)")
    if facts.open_modules is False:
        missing.append("the proprietary GPU kernel modules (dma-buf needs the open ones)")
    if not missing and kernel is not None and driver is not None and facts.open_modules:
        return True, f"dma-buf (Linux {facts.kernel}, open kernel modules, driver {facts.driver})"
    if missing and facts.peermem is False:
        return False, "nvidia_peermem not loaded and no dma-buf: " + ", ".join(missing)
    return None, "unknown (" + (", ".join(missing) or "kernel, driver or modules unreadable") + ")"


def _truthy(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


def env_findings(facts: FabricFacts) -> List[str]:
    """Variables that keep NCCL off the RDMA devices this node has (empty when none)."""
    env = facts.env
    names = [d.name for d in facts.devices]
    out: List[str] = []
    if _truthy(env.get("NCCL_IB_DISABLE", "")):
        out.append(
            f"NCCL_IB_DISABLE={env['NCCL_IB_DISABLE']} set: NCCL will not use InfiniBand or RoCE"
        )
    net = env.get("NCCL_NET", "").strip()
    if net.lower() == "socket":
        out.append(f"NCCL_NET={net} set: NCCL is forced onto TCP sockets")
    hca = env.get("NCCL_IB_HCA", "").strip()
    if hca and names:
        chosen = hca_matches(hca, names)
        if not chosen:
            out.append(
                f"NCCL_IB_HCA={hca} selects none of this node's RDMA devices "
                f"({', '.join(names[:8])})"
            )
    provider = env.get("FI_PROVIDER", "").strip()
    if provider and any(d.kind == EFA for d in facts.devices) and "efa" not in provider.lower():
        out.append(f"FI_PROVIDER={provider} set: libfabric will not use the EFA devices")
    ifname = env.get("NCCL_SOCKET_IFNAME", "").strip()
    if ifname.lstrip("=^").startswith("lo"):
        out.append(f"NCCL_SOCKET_IFNAME={ifname} names the loopback: other nodes cannot reach it")
    return out


def hca_matches(spec: str, names: List[str]) -> List[str]:
    """The devices NCCL_IB_HCA selects: comma-separated prefixes (``mlx5``), ``=`` for exact
    names, ``^`` to exclude, ``:port`` ignored (NCCL's environment documentation)."""
    exclude = spec.startswith("^")
    body = spec.lstrip("^")
    exact = body.startswith("=")
    wanted = [w.split(":", 1)[0].strip() for w in body.lstrip("=").split(",") if w.strip()]

    def hit(name: str) -> bool:
        return any(name == w if exact else name.startswith(w) for w in wanted)

    return [n for n in names if hit(n) != exclude]


@dataclass(frozen=True)
class RdmaVerdict:
    status: str  # pass / warn
    message: str
    remediation: str
    evidence: Dict[str, Any]
    # why NCCL would fall back to sockets here (for the transport check's message)
    reasons: Tuple[str, ...] = ()


def judge_rdma(facts: FabricFacts) -> RdmaVerdict:
    """Can NCCL use this node's RDMA devices from this container? Pure; never a failure
    (what the checker sees is a prediction; the group all-reduce observes)."""
    evidence = facts.to_evidence()
    if not facts.devices:
        return RdmaVerdict(
            "pass",
            "no RDMA device on this node (/sys/class/infiniband is empty): NCCL will use TCP "
            "sockets between nodes",
            "",
            evidence,
        )
    listed = ", ".join(f"{d.name} ({d.kind or 'unknown'})" for d in facts.devices[:8])
    reasons: List[str] = []
    fixes: List[str] = []
    missing = [d.name for d in facts.devices if d.in_container is False]
    opened = [d for d in facts.devices if d.in_container is not False]
    if missing and not opened:
        reasons.append(
            f"RDMA devices present on the node but not in the container ({', '.join(missing[:8])}: "
            "no /dev/infiniband/uverbs node)"
        )
        fixes.append(
            "request the RDMA devices in the pod (the RDMA or EFA device plugin's resource, e.g. "
            "rdma/<pool> or vpc.amazonaws.com/efa, or a DRA claim)"
        )
    usable = [d for d in opened if d.active or not d.ports]
    if opened and not usable:
        states = ", ".join(
            f"{d.name} port {p.number} {p.state or '?'}" for d in opened for p in d.ports
        )
        reasons.append(f"no RDMA port is ACTIVE ({states[:300]})")
        fixes.append("bring the node's RDMA links up (ibstat; the subnet manager for InfiniBand)")
    env_reasons = env_findings(facts)
    reasons += env_reasons
    if env_reasons:
        fixes.append("unset the variables that forbid the RDMA transport in the pod's env")
    notes: List[str] = []
    gdr, how = gpudirect(facts)
    if gdr is False and not reasons:
        notes.append(f"GPUDirect RDMA unavailable ({how}): NCCL stages through host memory")
        fixes.append(
            "load nvidia_peermem on the node (GPU Operator driver.rdma.enabled) or use dma-buf"
        )
    if reasons or notes:
        return RdmaVerdict(
            "warn",
            f"RDMA devices {listed}: " + "; ".join(reasons + notes),
            "; ".join(fixes),
            evidence,
            tuple(reasons),
        )
    active = [d.name for d in usable]
    return RdmaVerdict(
        "pass",
        f"RDMA devices usable by NCCL: {', '.join(active[:8])}; GPUDirect RDMA: {how}",
        "",
        evidence,
    )
