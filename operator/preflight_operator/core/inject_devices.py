"""What the check container asks for of the vLLM container's devices (the injection,
core/injection.py): its GPU (and MIG) requests and limits, its RDMA device-plugin
resources and its DRA claims, so that the check sees the devices vLLM will.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from preflight_operator.core import constants


def is_gpu_resource(name: str) -> bool:
    return name == constants.GPU_RESOURCE or name.startswith(constants.MIG_RESOURCE_PREFIX)


def gpu_resources(container: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The container's GPU (and MIG) requests and limits, as they are written."""
    resources = container.get("resources") or {}
    out: dict[str, dict[str, Any]] = {}
    for section in ("limits", "requests"):
        values = resources.get(section) or {}
        if not isinstance(values, Mapping):
            continue
        picked = {k: v for k, v in values.items() if is_gpu_resource(str(k))}
        if picked:
            out[section] = picked
    return out


# RDMA device-plugin resources (issue 26): the check container asks for the same ones as
# vLLM's, so that its rdma check and its group all-reduce see the /dev/infiniband nodes vLLM
# will (an init container's devices are reused by the app containers: the pod's request
# stays the larger of the two). rdma/: Mellanox k8s-rdma-shared-dev-plugin's default
# resourcePrefix; vpc.amazonaws.com/efa: the AWS EFA device plugin.
RDMA_RESOURCE_PREFIXES = ("rdma/",)
RDMA_RESOURCES = frozenset(("vpc.amazonaws.com/efa",))


def is_rdma_resource(name: str) -> bool:
    return name in RDMA_RESOURCES or name.startswith(RDMA_RESOURCE_PREFIXES)


def device_resources(container: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What the check container requests of vLLM's: its GPUs and its RDMA devices."""
    out = gpu_resources(container)
    resources = container.get("resources") or {}
    for section in ("limits", "requests"):
        values = resources.get(section) if isinstance(resources, Mapping) else None
        if isinstance(values, Mapping):
            rdma = {k: v for k, v in values.items() if is_rdma_resource(str(k))}
            if rdma:
                out.setdefault(section, {}).update(rdma)
    return out


def dra_claims(container: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The container's DRA claims (resources.claims). The check container names the same
    pod claims, so it sees the devices vLLM will (a pod's containers may share a claim)."""
    resources = container.get("resources") or {}
    claims = resources.get("claims") if isinstance(resources, Mapping) else None
    if not isinstance(claims, list):
        return []
    return [copy.deepcopy(dict(c)) for c in claims if isinstance(c, Mapping) and c.get("name")]
