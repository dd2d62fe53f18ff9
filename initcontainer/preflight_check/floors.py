"""Floors of bus bandwidth by link type: below one, the link works at a fraction of itself.

Each row is a vendor's per-direction figure for one link (GB/s, 1e9 bytes) with its
source; the floor is ``FLOOR_FRACTION`` of it. nccl-tests' all-reduce ``busBw`` on a healthy
link reaches most of the per-direction rate (the "Performance" notes of nccl-tests'
doc/PERFORMANCE.md define busBw so that it compares with the hardware's peak), so half of
it is a floor that only a degraded link (a fallback to TCP, a link trained down, a missing
GPUDirect RDMA) goes under, never a merely busy one. A measurement below the floor is a
warning: a floor is a rule of thumb, not a fault.

For the inter-node hop the floor is one port's: every ring of the all-reduce crosses at
least one NIC, so a healthy RDMA group reaches one port's rate even with a single channel,
while TCP sockets over the same fabric stay near 1-3 GB/s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

FLOOR_FRACTION = 0.5


@dataclass(frozen=True)
class Link:
    name: str
    per_direction_gbps: float  # GB/s, one direction, the whole link (all its lanes/links)
    source: str


# Per link (one NVLink link, one PCIe lane, one port): GB/s in one direction.
_NVLINK_PER_LINK: Dict[int, Tuple[float, str]] = {
    # V100: 6 links, 300 GB/s total (both directions): 25 GB/s per link per direction
    2: (25.0, "NVIDIA Tesla V100 datasheet: NVLink 300 GB/s over 6 links"),
    # A100: 12 links, 600 GB/s total
    3: (25.0, "NVIDIA A100 datasheet: third-generation NVLink 600 GB/s over 12 links"),
    # H100 SXM: 18 links, 900 GB/s total
    4: (25.0, "NVIDIA H100 datasheet: fourth-generation NVLink 900 GB/s over 18 links"),
    # B200: 18 links, 1.8 TB/s total
    5: (50.0, "NVIDIA Blackwell (B200) datasheet: fifth-generation NVLink 1.8 TB/s over 18 links"),
}
# PCIe per lane per direction after line coding (PCI-SIG specifications: 8 GT/s 128b/130b,
# 16 GT/s, 32 GT/s)
_PCIE_PER_LANE: Dict[int, Tuple[float, str]] = {
    3: (0.985, "PCI-SIG PCIe 3.0: 8 GT/s, 128b/130b"),
    4: (1.969, "PCI-SIG PCIe 4.0: 16 GT/s, 128b/130b"),
    5: (3.938, "PCI-SIG PCIe 5.0: 32 GT/s, 128b/130b"),
}
# InfiniBand 4X port data rates (InfiniBand Trade Association roadmap; the kernel's
# rate_show prints the same: "200 Gb/sec (4X HDR)")
_IB_4X: Dict[str, Tuple[float, str]] = {
    "EDR": (12.5, "IBTA: EDR 4X 100 Gb/s"),
    "HDR": (25.0, "IBTA: HDR 4X 200 Gb/s"),
    "NDR": (50.0, "IBTA: NDR 4X 400 Gb/s"),
    "XDR": (100.0, "IBTA: XDR 4X 800 Gb/s"),
}
# EFA per GPU (AWS instance documentation: p4d 400 Gbps for 8 GPUs, p5 3200 Gbps for 8)
_EFA: Dict[int, Tuple[float, str]] = {
    1: (6.25, "AWS p4d.24xlarge: 400 Gbps EFA, 8 A100 GPUs"),
    2: (50.0, "AWS p5.48xlarge: 3200 Gbps EFA (v2), 8 H100 GPUs"),
}


def nvlink(generation: int, links: int) -> Optional[Link]:
    row = _NVLINK_PER_LINK.get(generation)
    if row is None or links < 1:
        return None
    return Link(f"NVLink{generation} x{links}", row[0] * links, row[1])


def pcie(generation: int, width: int) -> Optional[Link]:
    row = _PCIE_PER_LANE.get(generation)
    if row is None or width < 1:
        return None
    return Link(f"PCIe Gen{generation} x{width}", round(row[0] * width, 2), row[1])


def infiniband(speed: str) -> Optional[Link]:
    row = _IB_4X.get(speed.upper())
    return Link(f"InfiniBand {speed.upper()} 4X", row[0], row[1]) if row else None


def efa(generation: int) -> Optional[Link]:
    row = _EFA.get(generation)
    return Link(f"EFA v{generation} per GPU", row[0], row[1]) if row else None


_RATE = re.compile(r"\(\s*(\d+)X\s+([A-Z0-9]+)\s*\)")


def from_ib_rate(rate: str) -> Optional[Link]:
    """The link a sysfs ``rate`` names (``"400 Gb/sec (4X NDR)"``); None for a width other
    than 4X, a speed not in the table, or text the kernel does not print."""
    found = _RATE.search(rate or "")
    if not found or found.group(1) != "4":
        return None
    return infiniband(found.group(2))


def floor_gbps(link: Link) -> float:
    return round(link.per_direction_gbps * FLOOR_FRACTION, 2)


def judge(measured_gbps: float, link: Optional[Link]) -> Tuple[str, str]:
    """("pass"|"warn", text) of one measurement against the link's floor; ("pass", "")
    when the link is unknown (no floor: nothing to say)."""
    if link is None:
        return "pass", ""
    floor = floor_gbps(link)
    if measured_gbps < floor:
        return (
            "warn",
            f"bus bandwidth {measured_gbps:.2f} GB/s is below the floor of {floor:.2f} GB/s for "
            f"{link.name} ({link.per_direction_gbps:g} GB/s per direction: {link.source})",
        )
    return "pass", f"at or above the {floor:.2f} GB/s floor for {link.name}"
