#!/usr/bin/env python3
"""Print every NVML read of the fast-tier hardware checks (issue 16) on this machine.

    python3 hack/gpu/nvml_health.py [--json out.json]

For every GPU: the raw pynvml answer of each call (or the NVML error it raised), then
what the checker's binding (preflight_check.driver.nvml) made of it, with the time each
read took. Then the XID event registration and a drain of its events. The values go into
docs/GPU_RUNS.md and the defaults of dev/preflight_dev/fakedriver/fake.py's FakeGpu.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time
from typing import Any, Callable, Dict

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(REPO, "initcontainer")]

import pynvml  # noqa: E402

from preflight_check.driver.nvml import (  # noqa: E402
    FIELD_GPU_RECOVERY_ACTION,
    NVLINK_MAX_LINKS,
    PynvmlLibrary,
)


def raw(call: Callable[[], Any]) -> Any:
    try:
        value = call()
    except pynvml.NVMLError as exc:
        return f"NVMLError {getattr(exc, 'value', '?')}: {exc}"
    except Exception as exc:  # a pynvml without the call
        return f"{type(exc).__name__}: {exc}"
    return value


def fabric_v3(handle: Any) -> Any:
    info = pynvml.c_nvmlGpuFabricInfo_v3_t()
    pynvml.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info))
    return {
        "state": info.state,
        "status": info.status,
        "cliqueId": info.cliqueId,
        "healthMask": info.healthMask,
        "healthSummary": info.healthSummary,
    }


def field(handle: Any) -> Any:
    value = pynvml.nvmlDeviceGetFieldValues(handle, [FIELD_GPU_RECOVERY_ACTION])[0]
    return {"nvmlReturn": value.nvmlReturn, "uiVal": value.value.uiVal}


def read_gpu(index: int, h: Any) -> Dict[str, Any]:
    """Every raw pynvml answer for one GPU."""
    links = [
        raw(lambda link=link: pynvml.nvmlDeviceGetNvLinkState(h, link))
        for link in range(NVLINK_MAX_LINKS)
    ]
    gpu: Dict[str, Any] = {
        "index": index,
        "uuid": raw(lambda: pynvml.nvmlDeviceGetUUID(h)),
        "raw": {
            "nvmlDeviceGetRemappedRows": raw(lambda: pynvml.nvmlDeviceGetRemappedRows(h)),
            "nvmlDeviceGetRetiredPagesPendingStatus": raw(
                lambda: pynvml.nvmlDeviceGetRetiredPagesPendingStatus(h)
            ),
            "field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION": raw(lambda: field(h)),
            "nvmlDeviceGetNvLinkState[0..]": links,
            "nvmlDeviceGetCurrPcieLinkGeneration": raw(
                lambda: pynvml.nvmlDeviceGetCurrPcieLinkGeneration(h)
            ),
            "nvmlDeviceGetMaxPcieLinkGeneration": raw(
                lambda: pynvml.nvmlDeviceGetMaxPcieLinkGeneration(h)
            ),
            "nvmlDeviceGetGpuMaxPcieLinkGeneration": raw(
                lambda: pynvml.nvmlDeviceGetGpuMaxPcieLinkGeneration(h)
            ),
            "nvmlDeviceGetCurrPcieLinkWidth": raw(lambda: pynvml.nvmlDeviceGetCurrPcieLinkWidth(h)),
            "nvmlDeviceGetMaxPcieLinkWidth": raw(lambda: pynvml.nvmlDeviceGetMaxPcieLinkWidth(h)),
            "nvmlDeviceGetCurrentClocksEventReasons": raw(
                lambda: hex(pynvml.nvmlDeviceGetCurrentClocksEventReasons(h))
            ),
            "nvmlDeviceGetSupportedClocksEventReasons": raw(
                lambda: hex(pynvml.nvmlDeviceGetSupportedClocksEventReasons(h))
            ),
            "nvmlDeviceGetGpuFabricInfoV(v3)": raw(lambda: fabric_v3(h)),
            "nvmlDeviceGetSupportedEventTypes": raw(
                lambda: hex(pynvml.nvmlDeviceGetSupportedEventTypes(h))
            ),
        },
    }
    return gpu


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    pynvml.nvmlInit()
    out: Dict[str, Any] = {
        "driver": raw(pynvml.nvmlSystemGetDriverVersion),
        "pynvml": getattr(pynvml, "__version__", "?"),
        "gpus": [],
    }
    for index in range(pynvml.nvmlDeviceGetCount()):
        gpu = read_gpu(index, pynvml.nvmlDeviceGetHandleByIndex(index))
        out["gpus"].append(gpu)
    pynvml.nvmlShutdown()

    # The checker's own binding, as the collector calls it, with the time of each read.
    library = PynvmlLibrary()
    library.init()
    for gpu in out["gpus"]:
        device = library.device(gpu["index"])
        seen: Dict[str, Any] = {}
        for name in (
            "remapped_rows",
            "retired_pages_pending",
            "recovery_action",
            "nvlink_states",
            "pcie_link",
            "clock_event_reasons",
            "fabric_info",
        ):
            started = time.perf_counter()
            try:
                value: Any = getattr(device, name)()
            except Exception as exc:  # printed: it is what we measure
                value = f"raised {type(exc).__name__}: {exc}"
            seen[name] = {"value": value, "ms": round((time.perf_counter() - started) * 1e3, 2)}
        gpu["checker"] = seen
    started = time.perf_counter()
    watched = library.watch_xids([g["index"] for g in out["gpus"]])
    out["watch_xids"] = {"watched": watched, "ms": round((time.perf_counter() - started) * 1e3, 2)}
    started = time.perf_counter()
    out["xid_events"] = {
        "events": library.xid_events(),
        "ms": round((time.perf_counter() - started) * 1e3, 2),
    }
    library.shutdown()
    text = json.dumps(out, indent=1, default=str)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
