"""Fake GPU Nodes for the local control plane, so kube-scheduler places pods as in a cluster.

A Node here is only an API object: nothing heartbeats it, and nothing needs to, because the
local control plane runs no node-lifecycle controller (which is what would taint a silent
Node not-ready). kube-scheduler reads only the Node's labels, taints and allocatable
resources, so a Node written once with the capacity and labels of a real GPU node gets
exactly the scheduling decisions a real one would: pods that fit are bound to it, a pod
asking more nvidia.com/gpu than any Node has stays Pending with PodScheduled=False,
reason Unschedulable, "0/N nodes are available: N Insufficient nvidia.com/gpu".

The GPU description is the one NVIDIA's GPU feature discovery labels a node with, taken
from a measured machine (docs/CONTROL_PLANE.md: `nvidia-smi --query-gpu=name,memory.total`
on an H200 host of docs/GPU_FACTS.md said "NVIDIA H200, 143771 MiB", driver
580.159.04). Like GKE's GPU node pools the Nodes carry the taint
nvidia.com/gpu=present:NoSchedule, and the API server runs the ExtendedResourceToleration
admission plugin (flags.py), which gives every pod that requests nvidia.com/gpu the
matching toleration: GPU pods land on GPU nodes and nothing else does.

kwok (sigs.k8s.io/kwok) was considered: it would add heartbeats and a pod lifecycle, but
nothing here needs heartbeats, and its pod lifecycle would mark pods Running without
running their init containers, which is exactly the part fakekubelet plays for real.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from preflight_dev.testing.base import Cluster

GPU_RESOURCE = "nvidia.com/gpu"
NODE_ROLE_LABEL = "vllm-preflight.io/fake-gpu-node"  # what delete_gpu_nodes() selects


@dataclass(frozen=True)
class GPUNode:
    name: str
    gpus: int
    product: str = "NVIDIA-H200"  # GFD: the product name with spaces as dashes
    memory_mib: int = 143771
    driver: str = "580.159.04"
    cpu: str = "64"
    memory: str = "512Gi"


# The two machine shapes docs/GPU_FACTS.md was measured on: 4 and 2 H200s.
DEFAULT_NODES = (GPUNode("gpu-h200-0", gpus=4), GPUNode("gpu-h200-1", gpus=2))


def node_manifest(node: GPUNode) -> dict[str, Any]:
    major, _, rest = node.driver.partition(".")
    minor = rest.partition(".")[0]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "labels": {
                "kubernetes.io/hostname": node.name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": node.product,
                "nvidia.com/gpu.count": str(node.gpus),
                "nvidia.com/gpu.memory": str(node.memory_mib),
                "nvidia.com/cuda.driver.major": major,
                "nvidia.com/cuda.driver.minor": minor,
                NODE_ROLE_LABEL: "true",
            },
        },
        "spec": {"taints": [{"key": GPU_RESOURCE, "value": "present", "effect": "NoSchedule"}]},
    }


def node_status(node: GPUNode) -> dict[str, Any]:
    """What a kubelet with NVIDIA's device plugin reports: the GPUs as an extended
    resource, allocatable equal to capacity, and Ready."""
    resources = {
        "cpu": node.cpu,
        "memory": node.memory,
        "pods": "110",
        "ephemeral-storage": "500Gi",
        GPU_RESOURCE: str(node.gpus),
    }
    return {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
            }
        ],
        "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux"},
    }


def create_gpu_nodes(cluster: Cluster, nodes: Sequence[GPUNode] = DEFAULT_NODES) -> list[str]:
    """Creates (or replaces) the Nodes and writes their status; returns their names."""
    for node in nodes:
        cluster.kubectl("delete", "node", node.name, "--ignore-not-found", "--wait=false")
        cluster.apply(node_manifest(node))
        cluster.kubectl(
            "patch", "node", node.name, "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": node_status(node)}),
        )  # fmt: skip
        # The TaintNodesByCondition admission plugin gave the new Node the
        # node.kubernetes.io/not-ready:NoSchedule taint; the node-lifecycle controller would
        # lift it once the Node reports Ready, as it now does. Do its part.
        cluster.kubectl(
            "patch", "node", node.name, "--type=merge",
            "-p", json.dumps({"spec": node_manifest(node)["spec"]}),
        )  # fmt: skip
    return [n.name for n in nodes]


def delete_gpu_nodes(cluster: Cluster) -> None:
    cluster.kubectl("delete", "node", "-l", f"{NODE_ROLE_LABEL}=true", "--ignore-not-found")
