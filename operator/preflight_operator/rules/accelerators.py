"""Which accelerator a vLLM pod runs on: the one table of resources, device classes and
images the rules consult.

vLLM runs on CUDA, ROCm, TPU, Neuron, Gaudi (HPU), Ascend (NPU), Intel XPU and CPU
builds. The rules must count the accelerator of the pod's own platform and name it in
every fix: a TPU Deployment that requests `google.com/tpu: 8` for `-tp 8` is right, and
telling its author to request `nvidia.com/gpu` is a false failure. Rules about CUDA's view
(`CUDA_VISIBLE_DEVICES`, `NVIDIA_VISIBLE_DEVICES`, MIG) only mean something on NVIDIA;
`/dev/shm` rules apply where vLLM's workers talk over NCCL/RCCL and shared memory
(CUDA and ROCm). The runtime check (libcuda + NVML) runs only on NVIDIA GPUs.

Device units: a tensor-parallel rank takes one device of these resources (a GPU, a MIG
slice, a TPU chip, a Gaudi card, an Ascend NPU, an Intel GPU, a NeuronCore). The
exception is `aws.amazon.com/neuron`, which counts Neuron *devices* of 2 (Inferentia2,
Trainium1) or 8 (Trainium2) NeuronCores each: vLLM's TP counts cores, so a device count
cannot be compared with TP and the count is unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CUDA = "cuda"
ROCM = "rocm"
TPU = "tpu"
NEURON = "neuron"
HPU = "hpu"
NPU = "npu"
XPU = "xpu"
CPU = "cpu"

# platforms whose vLLM workers use NCCL/RCCL and shared memory between processes
SHM_PLATFORMS = frozenset((CUDA, ROCM))


@dataclass(frozen=True)
class Accelerator:
    """One extended resource (or prefix) and what one unit of it is to vLLM."""

    resource: str  # exact name, or a prefix ending in "-" / "/" when ``prefix``
    platform: str
    what: str  # "GPU", "MIG slice", "TPU chip", ...
    prefix: bool = False
    ranks_per_unit: int | None = 1  # None: one unit holds an unknown number of ranks

    def matches(self, name: str) -> bool:
        return name.startswith(self.resource) if self.prefix else name == self.resource


# The table. Order matters only for prefixes (first match wins).
ACCELERATORS: tuple[Accelerator, ...] = (
    Accelerator("nvidia.com/gpu", CUDA, "GPU"),
    Accelerator("nvidia.com/gpu.shared", CUDA, "shared GPU (time-slicing)"),
    Accelerator("nvidia.com/mig-", CUDA, "MIG slice", prefix=True),
    Accelerator("amd.com/gpu", ROCM, "GPU"),
    Accelerator("google.com/tpu", TPU, "TPU chip"),
    Accelerator("aws.amazon.com/neuroncore", NEURON, "NeuronCore"),
    Accelerator("aws.amazon.com/neuron", NEURON, "Neuron device", ranks_per_unit=None),
    Accelerator("aws.amazon.com/neurondevice", NEURON, "Neuron device", ranks_per_unit=None),
    Accelerator("habana.ai/gaudi", HPU, "Gaudi card"),
    Accelerator("huawei.com/Ascend", NPU, "Ascend NPU", prefix=True),
    Accelerator("intel.com/gpu", XPU, "Intel GPU"),
    Accelerator("gpu.intel.com/i915", XPU, "Intel GPU"),
    Accelerator("gpu.intel.com/xe", XPU, "Intel GPU"),
)

# The resource a fix should name, per platform.
DEFAULT_RESOURCE = {
    CUDA: "nvidia.com/gpu",
    ROCM: "amd.com/gpu",
    TPU: "google.com/tpu",
    NEURON: "aws.amazon.com/neuroncore",
    HPU: "habana.ai/gaudi",
    NPU: "huawei.com/Ascend910",
    XPU: "gpu.intel.com/i915",
}

# DRA device classes (resource.k8s.io DeviceClass names) of the known drivers.
DEVICE_CLASSES: dict[str, tuple[str, str]] = {
    "gpu.nvidia.com": (CUDA, "GPU"),
    "mig.nvidia.com": (CUDA, "MIG slice"),
    "gpu.amd.com": (ROCM, "GPU"),
    "tpu.google.com": (TPU, "TPU chip"),
    "gpu.intel.com": (XPU, "Intel GPU"),
}

# vLLM's platform images, by the last path component of the repository (the tag and
# registry do not matter). vllm/vllm-openai is CUDA; the others are built for one
# platform each (vLLM's docker/Dockerfile.<platform> and the vendors' images).
_IMAGE_PLATFORMS: tuple[tuple[str, str], ...] = (
    ("vllm-tpu", TPU),
    ("vllm-openai-rocm", ROCM),
    ("vllm-rocm", ROCM),
    ("vllm-neuron", NEURON),
    ("pytorch-inference-vllm-neuronx", NEURON),
    ("vllm-gaudi", HPU),
    ("vllm-ascend", NPU),
    ("vllm-xpu", XPU),
    ("vllm-cpu", CPU),
    ("vllm-openai-cpu", CPU),
    ("vllm-cpu-release-repo", CPU),
)
# Registries whose vLLM images are one platform whatever the repository is called.
_REGISTRY_PLATFORMS: tuple[tuple[str, str], ...] = (
    ("rocm/", ROCM),
    ("docker.io/rocm/", ROCM),
    ("quay.io/ascend/", NPU),
    ("vault.habana.ai/", HPU),
)

# Node labels that pin a pod to one platform's nodes.
_NODE_LABELS: tuple[tuple[str, str], ...] = (
    ("cloud.google.com/gke-tpu-accelerator", TPU),
    ("cloud.google.com/gke-tpu-topology", TPU),
    ("nvidia.com/gpu.product", CUDA),
    ("nvidia.com/gpu.present", CUDA),
    ("cloud.google.com/gke-accelerator", CUDA),
    ("amd.com/gpu.product-name", ROCM),
)


def accelerator(name: str) -> Accelerator | None:
    for entry in ACCELERATORS:
        if entry.matches(name):
            return entry
    return None


def is_accelerator(name: str) -> bool:
    return accelerator(name) is not None


def image_platform(image: object) -> str | None:
    """The platform a vLLM image is built for, when its name says so."""
    if not isinstance(image, str) or not image:
        return None
    repo = image.split("@", 1)[0]
    last = repo.rsplit("/", 1)[-1].split(":", 1)[0]
    for needle, platform in _IMAGE_PLATFORMS:
        if last == needle or last.startswith(needle + "-"):
            return platform
    for registry, platform in _REGISTRY_PLATFORMS:
        if repo.startswith(registry) and "vllm" in repo:
            return platform
    return None


def node_platform(spec: Mapping[str, Any]) -> str | None:
    """The platform the pod's nodeSelector pins it to, if any."""
    selector = spec.get("nodeSelector")
    if not isinstance(selector, Mapping):
        return None
    for label, platform in _NODE_LABELS:
        if label in selector:
            return platform
    return None


def fix_resource(platform: str | None) -> str:
    """The resource a fix names for this platform (nvidia.com/gpu when unknown)."""
    return DEFAULT_RESOURCE.get(platform or CUDA, "nvidia.com/gpu")
