"""Every check id, its tier and one line on what it looks at.

Ids are stable: the operator, the docs (docs/CHECKS.md) and users' --skip flags use them.
"""

from __future__ import annotations

from typing import Dict, Tuple

FAST = "fast"
DEEP = "deep"

# id -> (tier, what it checks)
CHECKS: Dict[str, Tuple[str, str]] = {
    "plan": (FAST, "the parallel plan: TP x PP x DP-local GPUs per pod"),
    "settings": (FAST, "PREFLIGHT_* values the check could not read (Warn/Audit: defaults used)"),
    "driver": (FAST, "libcuda.so.1 loads and cuInit succeeds"),
    "nvml": (FAST, "the NVML inventory of the GPUs in the container"),
    "cuda-visible-devices": (FAST, "CUDA_VISIBLE_DEVICES: what CUDA made of it, and why"),
    "vllm-device-ids": (FAST, "CUDA_VISIBLE_DEVICES entries vLLM can parse (it calls int())"),
    "device-order": (FAST, "CUDA vs nvidia-smi numbering (CUDA_DEVICE_ORDER)"),
    "nvidia-visible-devices": (FAST, "NVIDIA_VISIBLE_DEVICES vs the GPUs CUDA sees"),
    "gpu-count": (FAST, "GPUs CUDA sees vs GPUs the plan needs"),
    "context-threads": (FAST, "a context on every GPU, one fresh thread per GPU"),
    "context-ranks": (FAST, "a context per rank, one fresh process per rank"),
    "cuda-library": (FAST, "which libcuda answers: NVIDIA's driver or an interposer"),
    "thread-discipline": (FAST, "driver answers to threads without a context"),
    "cuda-compat": (FAST, "driver's CUDA version vs the image's CUDA runtime"),
    "shm": (FAST, "/dev/shm size for NCCL when TP x PP > 1"),
    "p2p": (FAST, "peer access between the GPUs of each TP group"),
    "compute-mode": (FAST, "GPU compute mode is Default"),
    "mig": (FAST, "MIG mode vs tensor parallelism"),
    "ecc": (FAST, "volatile uncorrectable ECC errors"),
    "gpu-memory": (FAST, "memory already in use vs --gpu-memory-utilization"),
    "gpu-processes": (FAST, "other processes already running on the GPUs"),
    "model-config-unknown": (FAST, "the model's config.json: found in a directory, cache or Hub"),
    "model-tp-heads": (FAST, "the model's attention heads divide over TP"),
    "model-tp-kv-heads": (FAST, "the model's KV heads divide over TP or divide TP"),
    "model-ep-experts": (FAST, "the model's experts vs --enable-expert-parallel's EP size"),
    "model-pp-layers": (FAST, "the model's layers >= PP"),
    "model-max-len": (FAST, "--max-model-len <= the model's length (RoPE scaling included)"),
    "model-weights-fit": (FAST, "weights per GPU vs memory x --gpu-memory-utilization"),
    "model-dtype-capability": (FAST, "bfloat16 vs the GPUs' compute capability"),
    "model-quant-capability": (FAST, "the quantization's minimum compute capability"),
    "model-tp-mamba-groups": (FAST, "the Mamba-2 layers' groups and heads split over TP"),
    "model-arch-unregistered": (FAST, "the model's architecture is registered in vLLM"),
    "model-source": (
        FAST,
        "will vLLM find the weights: a complete directory, or the Hub repo, revision and "
        "token, or a complete cache under HF_HUB_OFFLINE",
    ),
    "row-remap": (FAST, "memory row remapping pending or failed, retired pages pending"),
    "gpu-reset": (FAST, "GPUs NVML says need a reset (or are lost), recovery action"),
    "nvlink": (FAST, "NVLink links down against what the GPU's peers have up"),
    "pcie-link": (FAST, "PCIe link generation and width below the maximum"),
    "clock-throttle": (FAST, "clocks held down by hardware slowdown or power brake"),
    "fabric": (FAST, "NVSwitch fabric registration of each GPU (where offered)"),
    "xid": (FAST, "XID error events NVML reports while the check runs"),
    "group": (FAST, "multi-node group: every member joined and agrees (after the local checks)"),
    "deep-reuse": (DEEP, "a deep pass of this node reused: same GPUs, driver, image, plan, TTL"),
    "deep-workers": (DEEP, "torch worker per rank: set_device and allocate"),
    "deep-allreduce": (DEEP, "NCCL all-reduce over each TP group, sum verified"),
    "deep-peer-copy": (DEEP, "NCCL send/recv between neighbours of each TP group"),
    "group-allreduce": (DEEP, "multi-node group: all-reduce over every GPU of the group"),
    "rdma": (
        FAST,
        "multi-node group: RDMA devices in the container, ports, GPUDirect RDMA, NCCL env",
    ),
    "group-transport": (DEEP, "multi-node group: the transport NCCL chose per peer, and its floor"),
}

# Checks of the group phase: they run after the local checks (checks/group.py), not in
# runner.evaluate's pass.
GROUP_PHASE = frozenset(("group", "group-allreduce", "rdma", "group-transport"))


def tier_of(check_id: str) -> str:
    return CHECKS[check_id][0]
