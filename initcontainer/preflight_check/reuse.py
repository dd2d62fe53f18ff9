"""Verdict reuse in the checker (issue 29 item 3; preflight_contract/reuse.py says who
decides what): read the offers the injector wrote, and take the one of this node and these
GPUs and driver, once the fast tier's view of CUDA says which GPUs this pod has.

Taking an offer ends the deep workers (started at t0 to hide torch's import;
docs/PERFORMANCE.md) before their gate, without waiting for that import
(``children.Child.stop``): no NCCL group, no all-reduce, no peer copy. The deep checks then
say where their verdict came from (checks/deep.py, ``deep-reuse``).
"""

from __future__ import annotations

import time
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from preflight_contract import envnames
from preflight_contract.reuse import Offer, hardware_key, parse_offers, pick


def read_offers(environ: Mapping[str, str]) -> Tuple[List[Offer], str, str]:
    """(offers, this node's name, a problem with the offers or "")."""
    offers, problem = parse_offers(environ.get(envnames.DEEP_REUSE, ""))
    return offers, environ.get(envnames.NODE_NAME, ""), problem


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def take(
    offers: Sequence[Offer],
    node: str,
    gpu_uuids: Sequence[str],
    driver: Callable[[], str],
    now: Callable[[], str] = utc_now,
) -> Optional[Offer]:
    """The offer to reuse, or None (no offer, another node, other GPUs or driver, expired).
    ``driver`` is asked only when there is an offer (it waits for NVML): a sealed offer
    does not say its node, so which one is ours is known only with the hardware key."""
    if not offers or not node or not gpu_uuids:
        return None
    version = driver()
    if not version:
        return None  # the driver unknown: never reuse on a guess
    return pick(offers, node, hardware_key(gpu_uuids, version), now())


def describe(offer: Offer) -> str:
    return (
        f"deep tier reused from the deep pass of {offer.at} on this node (same GPUs, driver, "
        f"image digest and plan; the policy's TTL runs until {offer.until})"
    )
