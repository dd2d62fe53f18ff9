"""What CUDA shows after cuInit, read through the driver API as plain data.

Used by rank 0's probe process (which reports it to the checker, so the checker
process needs no cuInit of its own) and by the checker itself when no probe runs.
Light imports only: it runs inside the rank probe child.
"""

from __future__ import annotations

from preflight_check.driver.basics import CUDA_SUCCESS, format_uuid

TYPE_CHECKING = False  # see binding.py: keeps typing out of the rank probe's start-up
if TYPE_CHECKING:
    from typing import Any, Dict, List

    from preflight_check.driver.api import CudaDriver


def tp_groups(tp: int, gpus_needed: int) -> List[List[int]]:
    """vLLM's tensor-parallel groups: consecutive ordinals, TP innermost."""
    size = max(1, min(tp, gpus_needed))
    return [list(range(s, min(s + size, gpus_needed))) for s in range(0, gpus_needed, size)]


def read_view(driver: CudaDriver, groups: List[List[int]]) -> Dict[str, Any]:
    """Every ordinal's identity and peer access inside each TP group (after cuInit)."""
    view: Dict[str, Any] = {"gpus": [], "peer": [], "errors": []}
    errors: List[str] = view["errors"]
    code, count = driver.device_count()
    if code != CUDA_SUCCESS:
        errors.append(f"cuDeviceGetCount: {driver.error_name(code)}")
        return view
    handles: List[int] = []
    for ordinal in range(count):
        code, device = driver.device_get(ordinal)
        if code != CUDA_SUCCESS:
            errors.append(f"cuDeviceGet({ordinal}): {driver.error_name(code)}")
            continue
        handles.append(device)
        view["gpus"].append(_read_gpu(driver, ordinal, device, errors))
    for group in groups:
        members = [o for o in group if o < len(handles)]
        for a in members:
            for b in members:
                if a != b:
                    code, ok = driver.can_access_peer(handles[a], handles[b])
                    view["peer"].append([a, b, bool(ok) and code == CUDA_SUCCESS])
    return view


def _read_gpu(driver: CudaDriver, ordinal: int, device: int, errors: List[str]) -> Dict[str, Any]:
    """One ordinal's UUID, PCI bus id, name and memory (what the driver would not say: empty)."""
    gpu: Dict[str, Any] = {"ordinal": ordinal, "uuid": "", "pci_bus_id": "", "name": ""}
    code, raw = driver.device_uuid(device)
    if code == CUDA_SUCCESS and len(raw) == 16:
        gpu["uuid"] = format_uuid(raw)
    elif code == CUDA_SUCCESS:
        # A short UUID would join to no NVML GPU and read as a different GPU.
        errors.append(f"cuDeviceGetUuid({ordinal}): {len(raw)} bytes instead of 16")
    else:
        errors.append(f"cuDeviceGetUuid({ordinal}): {driver.error_name(code)}")
    code, bus = driver.device_pci_bus_id(device)
    if code == CUDA_SUCCESS:
        gpu["pci_bus_id"] = bus.lower()
    code, name = driver.device_name(device)
    if code == CUDA_SUCCESS:
        gpu["name"] = name
    code, total = driver.device_total_mem(device)
    if code == CUDA_SUCCESS:
        gpu["total_memory"] = total
    return gpu


def library_note(driver: CudaDriver) -> Dict[str, Any]:
    library = driver.library()
    return {
        "requested": library.requested,
        "path": library.path,
        "providers": [[p.symbol, p.path] for p in library.providers],
    }
