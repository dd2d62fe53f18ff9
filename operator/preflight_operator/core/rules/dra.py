"""Devices a container gets through Dynamic Resource Allocation (resource.k8s.io).

A container lists ``resources.claims: [{name, request?}]``; each name is an entry of the
pod's ``spec.resourceClaims`` that points at a ResourceClaim (``resourceClaimName``) or a
ResourceClaimTemplate (``resourceClaimTemplateName``). The claim's
``spec.devices.requests`` say how many devices of which DeviceClass:

* resource.k8s.io/v1 (GA in Kubernetes 1.34) and v1beta2: ``{name, exactly:
  {deviceClassName, allocationMode, count}}`` or ``{name, firstAvailable: [...]}``;
* v1beta1: ``{name, deviceClassName, allocationMode, count}``.

``allocationMode`` is ``ExactCount`` (the default, ``count`` defaulting to 1) or ``All``
(every matching device on the node: the number is known only at allocation). The device
class says what a device is (``gpu.nvidia.com`` for NVIDIA's DRA driver). Whatever cannot
be counted here - an unknown class, ``All``, a claim or template neither in the manifest
set nor in the cluster, alternatives of different sizes - is *unknown*, never zero: the
injected check still verifies at run time what CUDA really sees.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from preflight_operator.core.rules.accelerators import DEVICE_CLASSES
from preflight_operator.core.rules.template import Resolve


@dataclass(frozen=True)
class ClaimDevices:
    """What one container claim gives the container."""

    claim: str  # the container's claim name
    path: str  # manifest path of the container's claim entry
    count: int | None  # devices; None when unknown
    platform: str | None  # accelerators.CUDA, ...; None when the class is not known
    what: str  # "GPU", ...
    reason: str = ""  # why the count is unknown

    @property
    def known(self) -> bool:
        return self.count is not None


def _requests(claim_spec: Any) -> list[Mapping[str, Any]]:
    devices = claim_spec.get("devices") if isinstance(claim_spec, Mapping) else None
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    return [r for r in requests if isinstance(r, Mapping)] if isinstance(requests, list) else []


def _exact(request: Mapping[str, Any]) -> Mapping[str, Any]:
    exactly = request.get("exactly")
    return exactly if isinstance(exactly, Mapping) else request


def _one(request: Mapping[str, Any]) -> tuple[int | None, str | None, str, str]:
    """(count, platform, what, reason) of one device request."""
    alternatives = request.get("firstAvailable")
    if isinstance(alternatives, list) and alternatives:
        found = {_one(a) for a in alternatives if isinstance(a, Mapping)}
        if len(found) == 1:
            return found.pop()
        return None, None, "device", "firstAvailable alternatives of different sizes or classes"
    body = _exact(request)
    device_class = body.get("deviceClassName")
    known = DEVICE_CLASSES.get(device_class) if isinstance(device_class, str) else None
    platform, what = known if known else (None, f"device of class {device_class!r}")
    if body.get("allocationMode", "ExactCount") == "All":
        return None, platform, what, "allocationMode: All takes every matching device"
    count = body.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        return None, platform, what, f"count {count!r} is not a positive integer"
    if known is None:
        return None, None, what, f"device class {device_class!r} is not one vLLM-preflight knows"
    return count, platform, what, ""


def _claim_spec(entry: Mapping[str, Any], resolve: Resolve) -> tuple[Any, str]:
    """The ResourceClaimSpec a pod claim entry points at, and a reason when unknown."""
    nested = entry.get("source")  # the alpha API's {source: {resourceClaimName}}
    source: Mapping[str, Any] = nested if isinstance(nested, Mapping) else entry
    name = source.get("resourceClaimName")
    if isinstance(name, str):
        obj = resolve("ResourceClaim", name)
        if obj is None:
            return None, f"ResourceClaim {name!r} is not in the manifests or the cluster"
        return obj.get("spec"), ""
    name = source.get("resourceClaimTemplateName")
    if isinstance(name, str):
        obj = resolve("ResourceClaimTemplate", name)
        if obj is None:
            return None, f"ResourceClaimTemplate {name!r} is not in the manifests or the cluster"
        spec = obj.get("spec")
        return (spec.get("spec") if isinstance(spec, Mapping) else None), ""
    return None, "the pod's resourceClaims entry names no claim or template"


def container_claims(
    spec: Mapping[str, Any],
    container: Mapping[str, Any],
    container_path: str,
    resolve: Resolve,
) -> tuple[ClaimDevices, ...]:
    """Every DRA claim of the container, counted where possible."""
    resources = container.get("resources")
    claims = resources.get("claims") if isinstance(resources, Mapping) else None
    if not isinstance(claims, list):
        return ()
    pod_claims = spec.get("resourceClaims")
    by_name = {
        c.get("name"): c
        for c in (pod_claims if isinstance(pod_claims, list) else [])
        if isinstance(c, Mapping)
    }
    out: list[ClaimDevices] = []
    for i, claim in enumerate(claims):
        if not isinstance(claim, Mapping) or not isinstance(claim.get("name"), str):
            continue
        name = claim["name"]
        path = f"{container_path}.resources.claims[{i}]"
        entry = by_name.get(name)
        if entry is None:
            out.append(
                ClaimDevices(name, path, None, None, "device", f"no spec.resourceClaims {name!r}")
            )
            continue
        claim_spec, reason = _claim_spec(entry, resolve)
        if claim_spec is None:
            out.append(ClaimDevices(name, path, None, None, "device", reason))
            continue
        requests = _requests(claim_spec)
        wanted = claim.get("request")
        if isinstance(wanted, str):
            requests = [r for r in requests if r.get("name") == wanted]
        if not requests:
            out.append(
                ClaimDevices(name, path, None, None, "device", "the claim requests no device")
            )
            continue
        counted = [_one(r) for r in requests]
        platforms = {p for _, p, _, _ in counted if p is not None}
        platform = platforms.pop() if len(platforms) == 1 else None
        unknown = [reason for count, _, _, reason in counted if count is None]
        what = counted[0][2]
        if unknown:
            out.append(ClaimDevices(name, path, None, platform, what, unknown[0]))
        else:
            total = sum(count or 0 for count, _, _, _ in counted)
            out.append(ClaimDevices(name, path, total, platform, what))
    return tuple(out)
