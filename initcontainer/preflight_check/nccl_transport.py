"""Which transport NCCL chose, per peer, read from NCCL's own INFO output.

With ``NCCL_DEBUG=INFO`` (subsystems ``INIT,NET``) NCCL prints, for every connection it
sets up, a line such as (verbatim from public reports; tests/data/nccl/ cites each)::

    ... NCCL INFO Channel 00/0 : 1[0] -> 2[0] [receive] via NET/IBext_v8/1
    ... NCCL INFO Channel 03/0 : 15[7] -> 6[6] [send] via NET/Socket/3
    ... NCCL INFO Channel 01/0 : 8[0] -> 15[7] via P2P/IPC/read
    ... NCCL INFO Ring 00 : 0[1b000] -> 7[41000] via direct shared memory

``<rank>[<device or bus id>] -> <rank>[...]`` (the bracket absent in NCCL 2.4) then
``via <transport>``: ``NET/<network>/<n>`` (``/GDRDMA`` when GPUDirect RDMA is on),
``P2P/...``, ``SHM/...`` (older NCCL: "direct shared memory"). Older NCCL prints ``Ring``
instead of ``Channel``. ``Using network IB`` names the network NCCL loaded. Parsing is
bounded (2000 lines, 512 bytes each) and pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Set, Tuple

MAX_LINES = 2000
MAX_LINE = 512

_CONNECTION = re.compile(
    r"NCCL INFO (?:Channel|Ring) \d+(?:/\d+)? : (\d+)(?:\[[0-9a-fA-Fx]*\])? -> "
    r"(\d+)(?:\[[0-9a-fA-Fx]*\])?"
    r"(?: \[(?:send|receive)\])? via (.+?)\s*$"
)
_NETWORK = re.compile(r"NCCL INFO Using network (.+?)\s*$")
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")

SOCKET = "NET/Socket"
IB = "NET/IB"
OFI = "NET/OFI"  # libfabric (EFA) through the aws-ofi-nccl plugin
P2P = "P2P"
SHM = "SHM"


def classify(via: str) -> Tuple[str, bool]:
    """(transport, GPUDirect RDMA) of one ``via`` text."""
    text = via.strip()
    gdr = "/GDRDMA" in text
    if text.startswith("NET/"):
        network = text[4:].split("/", 1)[0]
        low = network.lower()
        if low == "socket":
            return SOCKET, False
        if low.startswith("ib"):  # IB, IBext, IBext_v8 (the RDMA SHARP plugin)
            return IB, gdr
        if "libfabric" in low or "ofi" in low:
            return OFI, gdr
        return "NET/" + network[:40], gdr
    if text.startswith("P2P"):
        return P2P, False
    if text.startswith("SHM") or "shared memory" in text:
        return SHM, False
    return text.split("/", 1)[0][:40], gdr


@dataclass
class Transports:
    """What one member's ranks' logs say."""

    # peer rank -> transports NCCL used with it (either direction)
    peers: Dict[int, Set[str]] = field(default_factory=dict)
    gdr: Set[int] = field(default_factory=set)  # peer ranks reached with GPUDirect RDMA
    network: str = ""  # "Using network ..."
    version: str = ""
    lines: int = 0  # connection lines read


def parse(lines: Iterable[str], own_ranks: Iterable[int]) -> Transports:
    """The transports between this member's ranks and every other rank, from NCCL's INFO
    lines (anything else is ignored)."""
    own = set(own_ranks)
    out = Transports()
    for count, raw in enumerate(lines):
        if count >= MAX_LINES:
            break
        line = raw[:MAX_LINE]
        found = _CONNECTION.search(line)
        if found:
            a, b = int(found.group(1)), int(found.group(2))
            peer = b if a in own else a if b in own else -1
            if peer < 0 or peer in own:
                continue  # between two of our own ranks, or two ranks elsewhere
            transport, gdr = classify(found.group(3))
            out.peers.setdefault(peer, set()).add(transport)
            if gdr:
                out.gdr.add(peer)
            out.lines += 1
            continue
        net = _NETWORK.search(line)
        if net:
            out.network = net.group(1)[:60]
            continue
        version = _VERSION.search(line)
        if version and not out.version:
            out.version = version.group(1)
    return out


def by_member(found: Transports, ranks: Mapping[int, Tuple[int, int]]) -> Dict[int, List[str]]:
    """Member index -> the sorted transports to its ranks (``ranks``: the layout's first
    rank and count per member)."""
    owner: Dict[int, int] = {}
    for member, (first, count) in ranks.items():
        for rank in range(first, first + count):
            owner[rank] = member
    out: Dict[int, Set[str]] = {}
    for peer, transports in found.peers.items():
        if peer in owner:
            out.setdefault(owner[peer], set()).update(transports)
    return {m: sorted(t) for m, t in sorted(out.items())}


def summary(per_member: Mapping[int, List[str]], gdr: bool) -> str:
    """One short text for the GPUValidation: the inter-pod transports, e.g. ``NET/IB+GDR``."""
    seen: List[str] = []
    for transports in per_member.values():
        for t in transports:
            if t not in seen:
                seen.append(t)
    if not seen:
        return ""
    text = ",".join(sorted(seen))
    return f"{text}+GDR" if gdr and any(t in (IB, OFI) for t in seen) else text


@dataclass(frozen=True)
class TransportVerdict:
    status: str
    message: str
    remediation: str
    transport: str


def judge(
    per_member: Mapping[int, List[str]],
    *,
    rdma_devices: int,
    reasons: Iterable[str],
    socket_action: str = "warn",
    gdr: bool = False,
    member_names: Optional[Mapping[int, str]] = None,
) -> TransportVerdict:
    """The verdict on the transports this member's ranks used to other pods.

    Sockets while this node has RDMA devices: ``socket_action`` (warn, or fail under the
    stricter setting), naming why when the rdma check found a reason. No connection line:
    a warning (the log said nothing; unknown is never a failure)."""
    names = member_names or {}
    transport = summary(per_member, gdr)
    if not per_member:
        return TransportVerdict(
            "warn",
            "NCCL printed no connection to another pod (NCCL_DEBUG=INFO output missing or "
            "in another format): the transport is unknown",
            "",
            "",
        )
    described = "; ".join(
        f"{names.get(m, f'member {m}')}: {', '.join(t)}" for m, t in per_member.items()
    )
    on_socket = [m for m, t in per_member.items() if SOCKET in t]
    if on_socket and rdma_devices > 0:
        why = "; ".join(reasons) or (
            "the RDMA devices look usable from here; NCCL's own log (NCCL_DEBUG=INFO, "
            "'NET/IB :' lines) says why it did not take them"
        )
        return TransportVerdict(
            "fail" if socket_action == "fail" else "warn",
            f"NCCL fell back to TCP sockets to other pods ({described}) although this node "
            f"has {rdma_devices} RDMA device(s): {why}",
            "give the pod its RDMA devices and leave NCCL_IB_DISABLE / NCCL_NET unset; "
            "expect a fraction of the bandwidth until then",
            transport,
        )
    note = " (no RDMA device on this node)" if on_socket else ""
    return TransportVerdict(
        "pass", f"NCCL transports to other pods: {described}{note}", "", transport
    )
