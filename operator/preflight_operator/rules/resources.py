"""GPU requests and limits of a container, read exactly and tolerantly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from preflight_operator.rules.discovery import MIG_PREFIX, is_gpu_resource
from preflight_operator.rules.quantity import parse_quantity

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


@dataclass(frozen=True)
class GpuResources:
    entries: tuple[GpuEntry, ...]
    malformed: tuple[tuple[str, str], ...]  # (path, what is wrong)

    @property
    def requested(self) -> int | None:
        """Devices the container gets (full GPUs and MIG slices); None if it asks none."""
        if not self.entries:
            return None
        return sum(e.count or 0 for e in self.entries)

    @property
    def mig(self) -> int:
        return sum(e.count or 0 for e in self.entries if e.is_mig)

    @property
    def mig_entries(self) -> tuple[GpuEntry, ...]:
        return tuple(e for e in self.entries if e.is_mig)

    def primary_path(self, container_path: str) -> str:
        """Where a fix goes: the first GPU entry, else the usual limits key."""
        if self.entries:
            return self.entries[0].effective_path
        return f'{container_path}.resources.limits["nvidia.com/gpu"]'


def gpu_resources(container: Mapping[str, Any], path: str) -> GpuResources:
    resources = container.get("resources", {})
    malformed: list[tuple[str, str]] = []
    if resources is None:
        resources = {}
    if not isinstance(resources, Mapping):
        return GpuResources((), ((f"{path}.resources", "is not a mapping"),))
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
    names = [str(k) for k in sections["limits"] if is_gpu_resource(str(k))]
    names += [
        str(k) for k in sections["requests"] if is_gpu_resource(str(k)) and str(k) not in names
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
    return GpuResources(entries, tuple(malformed))


def pod_gpus(spec: Mapping[str, Any], path: str) -> int:
    """GPU devices of all app containers of a pod (what the pod takes from its node)."""
    containers = spec.get("containers")
    if not isinstance(containers, list):
        return 0
    total = 0
    for i, container in enumerate(containers):
        if isinstance(container, Mapping):
            total += gpu_resources(container, f"{path}.containers[{i}]").requested or 0
    return total


def format_raw(value: object) -> str:
    return (
        "(missing)" if value is _MISSING else repr(value) if not isinstance(value, str) else value
    )
