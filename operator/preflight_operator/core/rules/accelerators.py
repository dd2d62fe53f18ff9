"""Which accelerator a vLLM pod runs on: the one table of resources, device classes and
images the rules consult, and how many devices vLLM counts per unit of each.

vLLM runs on CUDA, ROCm, TPU, Neuron, Gaudi (HPU), Ascend (NPU), Intel XPU and CPU
builds. The rules must count the accelerator of the pod's own platform and name it in
every fix: a TPU Deployment that requests `google.com/tpu: 8` for `-tp 8` is right, and
telling its author to request `nvidia.com/gpu` is a false failure. Rules about CUDA's view
(`CUDA_VISIBLE_DEVICES`, `NVIDIA_VISIBLE_DEVICES`, MIG) only mean something on NVIDIA;
`/dev/shm` rules apply where vLLM's workers talk over NCCL/RCCL and shared memory
(CUDA and ROCm). The runtime check (libcuda + NVML) runs only on NVIDIA GPUs.

Device units: each row of ``ACCELERATORS`` says how many devices vLLM's backend counts
for one unit of the resource, and where that is written (``source``). Two are not a
constant:

- ``google.com/tpu`` counts TPU *chips* (GKE), while vLLM's TPU backend (tpu-inference)
  builds its mesh from JAX devices, one per chip on v4/v5p (megacore) and v5e/v6e (one
  TensorCore), two per chip on v2/v3 and TPU7x (two TensorCores, no megacore). The generation comes
  from the pod's `cloud.google.com/gke-tpu-accelerator` nodeSelector (``TPU_GENERATIONS``);
  without it, or for a generation whose JAX device count is not established here, the
  count is unknown (a warning, never a failure).
- ``aws.amazon.com/neuron`` counts Neuron *devices* of 2 (Inferentia2, Trainium1) or 8
  (Trainium2) NeuronCores each: vLLM's TP counts cores, so the count is unknown.

A resource that is not in the table is not an accelerator to the rules; a failure
message quotes the platform's own error (``SHORT_ERROR``), never CUDA's for a TPU.
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
    # devices vLLM counts per unit; None: not a constant (TPU: by generation; Neuron
    # devices: by instance family), see ``devices_per_unit``
    ranks_per_unit: int | None = 1
    source: str = ""  # where the unit and the count are documented

    def matches(self, name: str) -> bool:
        return name.startswith(self.resource) if self.prefix else name == self.resource


_SOURCES = {
    "nvidia": (
        "NVIDIA k8s-device-plugin README (one nvidia.com/gpu per GPU; time-slicing "
        "replicas; MIG strategy mixed: nvidia.com/mig-<profile> per MIG device); a MIG "
        "device is one CUDA device (NVIDIA MIG user guide, 'CUDA device enumeration')"
    ),
    "amd": (
        "ROCm/k8s-device-plugin README (amd.com/gpu per GPU or per compute partition); "
        "vLLM ROCm counts torch.cuda devices (vllm/platforms/rocm.py)"
    ),
    "tpu": (
        "GKE 'About TPUs in GKE' (google.com/tpu = TPU chips, "
        "https://cloud.google.com/kubernetes-engine/docs/concepts/tpus); devices per chip "
        "by generation: TPU_GENERATIONS"
    ),
    "neuroncore": (
        "AWS Neuron device plugin docs (aws.amazon.com/neuroncore = one NeuronCore; "
        "https://awsdocs-neuron.readthedocs-hosted.com, 'Neuron device plugin'); vLLM "
        "Neuron's tensor_parallel_size counts NeuronCores"
    ),
    "neuron": (
        "AWS Neuron device plugin docs (aws.amazon.com/neuron and neurondevice = one "
        "Neuron device: 2 NeuronCores on Inferentia2/Trainium1, 8 on Trainium2)"
    ),
    "gaudi": "Habana device plugin docs (habana.ai/gaudi = one Gaudi card = one HPU)",
    "ascend": "Ascend device plugin (huawei.com/Ascend910 etc. = one NPU)",
    "intel": "Intel device plugins for Kubernetes, GPU plugin (gpu.intel.com/i915|xe)",
}

# The table. Order matters only for prefixes (first match wins).
ACCELERATORS: tuple[Accelerator, ...] = (
    Accelerator("nvidia.com/gpu", CUDA, "GPU", source=_SOURCES["nvidia"]),
    Accelerator(
        "nvidia.com/gpu.shared", CUDA, "shared GPU (time-slicing)", source=_SOURCES["nvidia"]
    ),
    Accelerator("nvidia.com/mig-", CUDA, "MIG slice", prefix=True, source=_SOURCES["nvidia"]),
    Accelerator("amd.com/gpu", ROCM, "GPU", source=_SOURCES["amd"]),
    Accelerator("google.com/tpu", TPU, "TPU chip", ranks_per_unit=None, source=_SOURCES["tpu"]),
    Accelerator("aws.amazon.com/neuroncore", NEURON, "NeuronCore", source=_SOURCES["neuroncore"]),
    Accelerator(
        "aws.amazon.com/neuron",
        NEURON,
        "Neuron device",
        ranks_per_unit=None,
        source=_SOURCES["neuron"],
    ),
    Accelerator(
        "aws.amazon.com/neurondevice",
        NEURON,
        "Neuron device",
        ranks_per_unit=None,
        source=_SOURCES["neuron"],
    ),
    Accelerator("habana.ai/gaudi", HPU, "Gaudi card", source=_SOURCES["gaudi"]),
    Accelerator("huawei.com/Ascend", NPU, "Ascend NPU", prefix=True, source=_SOURCES["ascend"]),
    Accelerator("intel.com/gpu", XPU, "Intel GPU", source=_SOURCES["intel"]),
    Accelerator("gpu.intel.com/i915", XPU, "Intel GPU", source=_SOURCES["intel"]),
    Accelerator("gpu.intel.com/xe", XPU, "Intel GPU", source=_SOURCES["intel"]),
)


@dataclass(frozen=True)
class TpuGeneration:
    """One TPU generation: the GKE node label values that name it, and how many JAX
    devices (what vLLM's TPU backend counts for TP) one chip is."""

    name: str
    gke_accelerators: tuple[str, ...]  # cloud.google.com/gke-tpu-accelerator values
    tensor_cores: int  # physical TensorCores per chip
    megacore: bool  # the chip's TensorCores form one JAX device
    # JAX devices per chip: one per megacore or TensorCore. Never more than
    # ``tensor_cores``, so a shortfall counted with it is a shortfall on any reading.
    devices_per_chip: int | None
    source: str


_JAX_CHIPS = (
    "JAX docs, jax.experimental.pallas.tpu.ChipVersion (physical TensorCores per chip, "
    "megacore support; https://docs.jax.dev/en/latest/_autosummary/"
    "jax.experimental.pallas.tpu.ChipVersion.html)"
)
# The GKE label values: GKE 'Plan TPUs in GKE' / 'Deploy TPU workloads in GKE'
# (https://cloud.google.com/kubernetes-engine/docs/how-to/tpus), nodeSelector
# cloud.google.com/gke-tpu-accelerator.
TPU_GENERATIONS: tuple[TpuGeneration, ...] = (
    TpuGeneration("v2", ("tpu-v2",), 2, False, 2, _JAX_CHIPS + " (no megacore)"),
    TpuGeneration("v3", ("tpu-v3",), 2, False, 2, _JAX_CHIPS + " (no megacore)"),
    TpuGeneration(
        "v4",
        ("tpu-v4-podslice",),
        2,
        True,
        1,
        _JAX_CHIPS + "; 'on TPU v4, a JAX logical device is normally configured as a "
        "Megacore containing two physical TensorCores' (jax-ml/jax discussion 36155)",
    ),
    TpuGeneration(
        "v5e",
        ("tpu-v5-lite-podslice", "tpu-v5-lite-device"),
        1,
        False,
        1,
        _JAX_CHIPS + "; Cloud TPU v5e docs ('each v5e chip contains one TensorCore')",
    ),
    TpuGeneration("v5p", ("tpu-v5p-slice",), 2, True, 1, _JAX_CHIPS + " (megacore)"),
    TpuGeneration(
        "v6e",
        ("tpu-v6e-slice",),
        1,
        False,
        1,
        _JAX_CHIPS + "; tpu-inference tpu_info.get_num_cores_per_chip (v6e: 1)",
    ),
    TpuGeneration(
        "TPU7x (Ironwood)",
        ("tpu7x",),
        2,
        False,
        2,
        _JAX_CHIPS + "; Cloud TPU7x docs ('each TPU7x chip contains two TensorCores'); "
        "tpu-inference CI runs TP=2 on its one-chip tpu7x queue ('tp=1 is currently "
        "unsupported on tpu7x', .buildkite/pipeline_dev.yml; TENSOR_PARALLEL_SIZE_SINGLE=2 "
        "in .buildkite/scripts/bootstrap.sh, vllm-project/tpu-inference at "
        "b8692ff01fa191343836996c27a39dc95f008b88)",
    ),
)

# How vLLM's TPU backend counts devices: tpu-inference (vllm/platforms/tpu.py hands TPU
# to it when installed) takes jax.devices()[:total_devices] in its worker
# (tpu_inference/worker/tpu_worker.py) and its runner raises this when they are too few
# (tpu_inference/runner/tpu_runner.py, _create_2d_mesh), vllm-project/tpu-inference
# at b8692ff01fa191343836996c27a39dc95f008b88. vLLM's Ray executor pins TPU chips through
# TPU_VISIBLE_CHIPS (TpuPlatform.device_control_env_var).
TPU_SHORT_ERROR = "Insufficient devices for 2D mesh: found {have}, expected {need}"
# What each platform says when vLLM's world is larger than its devices.
SHORT_ERROR = {
    CUDA: "World size ({need}) is larger than the number of available GPUs ({have})",
    ROCM: "World size ({need}) is larger than the number of available GPUs ({have})",
    TPU: TPU_SHORT_ERROR,
}
_GENERIC_SHORT = "vLLM cannot start {need} workers on {have} devices"


def short_error(platform: str | None, need: int, have: int) -> str:
    """The platform's own failure for too few devices (CUDA's text only on CUDA/ROCm)."""
    text = SHORT_ERROR.get(platform or CUDA, _GENERIC_SHORT)
    return text.format(need=need, have=have)


def tpu_generation(spec: Mapping[str, Any]) -> TpuGeneration | None:
    """The TPU generation the pod's nodeSelector names; None when it names none."""
    selector = spec.get("nodeSelector")
    if not isinstance(selector, Mapping):
        return None
    value = selector.get("cloud.google.com/gke-tpu-accelerator")
    if not isinstance(value, str):
        return None
    for generation in TPU_GENERATIONS:
        for label in generation.gke_accelerators:
            if value == label or (label in ("tpu-v2", "tpu-v3") and value.startswith(label)):
                return generation
    return None


def devices_per_unit(entry: Accelerator, tpu: TpuGeneration | None) -> tuple[int | None, str]:
    """(devices vLLM counts per unit of ``entry``, why unknown when None)."""
    if entry.platform == TPU and entry.ranks_per_unit is None:
        if tpu is None:
            return None, (
                f"{entry.resource} counts TPU chips and vLLM's TPU backend counts JAX "
                "devices (1 per chip on v4, v5e, v5p, v6e; 2 on v2, v3, TPU7x), and the pod's TPU "
                "generation is not known here (nodeSelector "
                "cloud.google.com/gke-tpu-accelerator)"
            )
        if tpu.devices_per_chip is None:
            return None, (
                f"{entry.resource} counts TPU chips and how many JAX devices vLLM's TPU "
                f"backend sees per {tpu.name} chip is not known here"
            )
        return tpu.devices_per_chip, ""
    if entry.ranks_per_unit is None:
        return None, (
            f"{entry.resource} counts Neuron devices, each of several NeuronCores; "
            "vLLM's parallel sizes count cores"
        )
    return entry.ranks_per_unit, ""


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
    # intel/intel-resource-drivers-for-kubernetes, the Gaudi driver's DeviceClass
    "gaudi.intel.com": (HPU, "Gaudi card"),
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
