"""GPU requests and limits of a container, read exactly and tolerantly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from preflight_operator.core.constants import GPU_RESOURCE
from preflight_operator.core.rules.accelerators import (
    CUDA,
    SHM_PLATFORMS,
    TPU,
    TpuGeneration,
    accelerator,
    devices_per_unit,
    fix_resource,
    image_platform,
    is_accelerator,
    node_platform,
    tpu_generation,
)
from preflight_operator.core.rules.discovery import MIG_PREFIX
from preflight_operator.core.rules.dra import ClaimDevices, container_claims
from preflight_operator.core.rules.quantity import parse_quantity
from preflight_operator.core.rules.template import Resolve, resolve_nothing, running_containers

_MISSING = object()


@dataclass(frozen=True)
class GpuEntry:
    """One GPU-like resource (nvidia.com/gpu, nvidia.com/mig-1g.10gb, ...)."""

    resource: str
    limit_raw: object
    request_raw: object
    limit_path: str
    request_path: str

    @property
    def has_limit(self) -> bool:
        return self.limit_raw is not _MISSING

    @property
    def has_request(self) -> bool:
        return self.request_raw is not _MISSING

    @property
    def limit(self) -> Fraction | None:
        return parse_quantity(self.limit_raw) if self.has_limit else None

    @property
    def request(self) -> Fraction | None:
        return parse_quantity(self.request_raw) if self.has_request else None

    @property
    def effective_raw(self) -> object:
        # the device plugin allocates the limit (requests must equal it anyway)
        return self.limit_raw if self.has_limit else self.request_raw

    @property
    def effective_path(self) -> str:
        return self.limit_path if self.has_limit else self.request_path

    @property
    def count(self) -> int | None:
        """Whole devices, or None when the quantity is not a non-negative integer."""
        value = parse_quantity(self.effective_raw)
        if value is None or value < 0 or value.denominator != 1:
            return None
        return int(value)

    @property
    def is_mig(self) -> bool:
        return self.resource.startswith(MIG_PREFIX)

    @property
    def platform(self) -> str | None:
        found = accelerator(self.resource)
        return found.platform if found else None


@dataclass(frozen=True)
class GpuResources:
    """The accelerators a container gets: extended resources (``resources.limits``) and
    DRA claims (``resources.claims``), and the platform they (or the image) say."""

    entries: tuple[GpuEntry, ...]
    malformed: tuple[tuple[str, str], ...]  # (path, what is wrong)
    claims: tuple[ClaimDevices, ...] = ()
    image_platform: str | None = None
    node_platform: str | None = None
    forced_unknown: str = ""  # the count is known to be unknowable (a cluster-side profile)
    tpu: TpuGeneration | None = None  # the TPU generation the pod's nodeSelector names

    def per_unit(self, entry: GpuEntry) -> tuple[int | None, str]:
        """(devices vLLM counts per unit of the entry's resource, why unknown)."""
        found = accelerator(entry.resource)
        if found is None:
            return None, f"{entry.resource} is not a known accelerator"
        return devices_per_unit(found, self.tpu)

    def _claim_per_unit(self, claim: ClaimDevices) -> int | None:
        """A DRA TPU device is a chip too (tpu.google.com); other classes count devices."""
        if claim.platform != TPU:
            return 1
        return self.tpu.devices_per_chip if self.tpu else None

    @property
    def accelerator_claims(self) -> tuple[ClaimDevices, ...]:
        """DRA claims for accelerators. A claim of an unknown class counts only when the
        container gets no accelerator otherwise (it may be a NIC or any other device)."""
        known = tuple(c for c in self.claims if c.platform is not None)
        if self.entries or known:
            return known
        return self.claims

    @property
    def platform(self) -> str | None:
        """The pod's accelerator platform: from what it requests, else its vLLM image,
        else its nodeSelector; None when nothing says (the rules then assume CUDA)."""
        for entry in self.entries:
            if entry.platform:
                return entry.platform
        for claim in self.claims:
            if claim.platform:
                return claim.platform
        return self.image_platform or self.node_platform

    @property
    def on_nvidia(self) -> bool:
        """Rules about CUDA's own view apply (CUDA_VISIBLE_DEVICES, MIG, ...)."""
        return (self.platform or CUDA) == CUDA

    @property
    def uses_shm(self) -> bool:
        """vLLM's workers on this platform talk over NCCL/RCCL and /dev/shm."""
        return (self.platform or CUDA) in SHM_PLATFORMS

    @property
    def fix_resource(self) -> str:
        """The resource a fix names: the one requested, else the platform's usual one."""
        for entry in self.entries:
            if not entry.is_mig:
                return entry.resource
        return fix_resource(self.platform)

    @property
    def unknown(self) -> str | None:
        """Why the number of devices cannot be known here; None when it can."""
        if self.forced_unknown:
            return self.forced_unknown
        for entry in self.entries:
            per_unit, why = self.per_unit(entry)
            if per_unit is None:
                return f"{entry.effective_path}: {why}"
        for claim in self.accelerator_claims:
            if not claim.known:
                return f"{claim.path} (DRA claim {claim.claim!r}): {claim.reason}"
            if self._claim_per_unit(claim) is None:
                return (
                    f"{claim.path} (DRA claim {claim.claim!r}) counts TPU chips and vLLM's "
                    "TPU backend counts JAX devices, and the pod's TPU generation is not "
                    "known here (nodeSelector cloud.google.com/gke-tpu-accelerator)"
                )
        return None

    @property
    def requested(self) -> int | None:
        """Devices the container gets (full GPUs, MIG slices, other accelerators, DRA
        devices); None if it asks none. Meaningless while ``unknown`` is set."""
        claims = self.accelerator_claims
        if not self.entries and not claims:
            return None
        return sum((e.count or 0) * (self.per_unit(e)[0] or 1) for e in self.entries) + sum(
            (c.count or 0) * (self._claim_per_unit(c) or 1) for c in claims
        )

    @property
    def units(self) -> int | None:
        """What the manifest asks, in its own units (TPU chips, GPUs, ...)."""
        claims = self.accelerator_claims
        if not self.entries and not claims:
            return None
        return sum(e.count or 0 for e in self.entries) + sum(c.count or 0 for c in claims)

    @property
    def mig(self) -> int:
        return sum(e.count or 0 for e in self.entries if e.is_mig)

    @property
    def mig_entries(self) -> tuple[GpuEntry, ...]:
        return tuple(e for e in self.entries if e.is_mig)

    def primary_path(self, container_path: str) -> str:
        """Where a fix goes: the first accelerator entry or claim, else the usual key."""
        if self.entries:
            return self.entries[0].effective_path
        if self.accelerator_claims:
            return self.accelerator_claims[0].path
        return f'{container_path}.resources.limits["{self.fix_resource}"]'


def gpu_resources(
    container: Mapping[str, Any],
    path: str,
    spec: Mapping[str, Any] | None = None,
    resolve: Resolve = resolve_nothing,
) -> GpuResources:
    """The container's accelerators; ``spec`` (its PodSpec) and ``resolve`` let DRA
    claims be counted from the pod's resourceClaims and their claims or templates."""
    resources = container.get("resources", {})
    malformed: list[tuple[str, str]] = []
    if resources is None:
        resources = {}
    pod = spec if spec is not None else {}
    claims = container_claims(pod, container, path, resolve) if spec is not None else ()
    platforms: dict[str, Any] = {
        "image_platform": image_platform(container.get("image")),
        "node_platform": node_platform(pod),
        "tpu": tpu_generation(pod),
    }
    if not isinstance(resources, Mapping):
        return GpuResources((), ((f"{path}.resources", "is not a mapping"),), (), **platforms)
    sections: dict[str, Mapping[str, Any]] = {}
    for section in ("limits", "requests"):
        value = resources.get(section)
        if value is None:
            sections[section] = {}
        elif isinstance(value, Mapping):
            sections[section] = value
        else:
            malformed.append((f"{path}.resources.{section}", "is not a mapping"))
            sections[section] = {}
    names = [str(k) for k in sections["limits"] if is_accelerator(str(k))]
    names += [
        str(k) for k in sections["requests"] if is_accelerator(str(k)) and str(k) not in names
    ]
    entries = tuple(
        GpuEntry(
            name,
            sections["limits"].get(name, _MISSING),
            sections["requests"].get(name, _MISSING),
            f'{path}.resources.limits["{name}"]',
            f'{path}.resources.requests["{name}"]',
        )
        for name in names
    )
    return GpuResources(entries, tuple(malformed), claims, **platforms)


NVIDIA_GPU = GPU_RESOURCE


def nvidia_gpus(container: Mapping[str, Any], path: str = "") -> int:
    """Whole NVIDIA GPUs (``nvidia.com/gpu``) a container asks, read as every other count
    is (the limit, else the request, as a Kubernetes quantity); 0 when it asks none or the
    count is not a whole number. The injector's one reader (issue 28: one GPU count)."""
    found = gpu_resources(container, path)
    return sum(e.count or 0 for e in found.entries if e.resource == NVIDIA_GPU)


def pod_gpus(spec: Mapping[str, Any], path: str, resolve: Resolve = resolve_nothing) -> int | None:
    """Accelerator devices of all app containers and native sidecars of a pod (what the
    pod holds while it serves: Kubernetes sums them; ordinary init containers have ended);
    None when a count is unknown (a DRA claim that cannot be counted here)."""
    total = 0
    for key, i, container in running_containers(spec):
        found = gpu_resources(container, f"{path}.{key}[{i}]", spec, resolve)
        if found.unknown:
            return None
        total += found.requested or 0
    return total


def format_raw(value: object) -> str:
    return (
        "(missing)" if value is _MISSING else repr(value) if not isinstance(value, str) else value
    )
