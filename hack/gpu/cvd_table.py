#!/usr/bin/env python3
"""Measure how the driver reads CUDA_VISIBLE_DEVICES, and compare with the fake driver.

    python3 hack/gpu/cvd_table.py [--json out.json]

For every value (docs/GPU_FACTS.md's rows, with this machine's UUIDs, plus rows that table
leaves open) a fresh `python3 -S -I` process runs cuInit and reports the PCI bus ids CUDA
sees. The same value is given to the fake driver of preflight_dev.fakedriver, built from this
machine's NVML inventory. A mismatch means the fake (and docs/GPU_FACTS.md) must follow the
measurement; it is printed and the exit code is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(REPO, "initcontainer"), os.path.join(REPO, "dev")]

import pynvml  # noqa: E402

from preflight_check.driver.api import bus_id_key  # noqa: E402
from preflight_dev.fakedriver.fake import FakeGpu, FakeMachine, visible_devices  # noqa: E402

PROBE = r"""
import ctypes, json
cuda = ctypes.CDLL("libcuda.so.1")
rc = cuda.cuInit(0)
out = {"cuInit": rc, "buses": []}
if rc == 0:
    n = ctypes.c_int(0); cuda.cuDeviceGetCount(ctypes.byref(n))
    for i in range(n.value):
        d = ctypes.c_int(0); cuda.cuDeviceGet(ctypes.byref(d), i)
        b = ctypes.create_string_buffer(32); cuda.cuDeviceGetPCIBusId(b, 32, d)
        out["buses"].append(b.value.decode().lower())
    d = ctypes.c_int(-1)
    out["cuDeviceGet(count)"] = cuda.cuDeviceGet(ctypes.byref(d), n.value)
print(json.dumps(out))
"""


def machine_from_nvml() -> FakeMachine:
    pynvml.nvmlInit()
    gpus = []
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        uuid = pynvml.nvmlDeviceGetUUID(handle)
        bus = pynvml.nvmlDeviceGetPciInfo(handle).busId
        uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
        bus = bus.decode() if isinstance(bus, bytes) else bus
        gpus.append(FakeGpu(uuid=uuid, pci_bus_id=bus_id_key(bus)))
    pynvml.nvmlShutdown()
    return FakeMachine(gpus=gpus)


def values(machine: FakeMachine) -> List[Tuple[str, Optional[str]]]:
    uuids = [g.uuid for g in machine.gpus]
    first, second = uuids[0], uuids[1] if len(uuids) > 1 else uuids[0]
    rows: List[Tuple[str, Optional[str]]] = [
        ("GPU_FACTS", None),
        ("GPU_FACTS", ""),
        ("GPU_FACTS", "-1"),
        ("GPU_FACTS", "0"),
        ("GPU_FACTS", "1,0"),
        ("GPU_FACTS", "0,0"),
        ("GPU_FACTS", "0,1,0"),
        ("GPU_FACTS", "5"),
        ("GPU_FACTS", "0,5,1"),
        ("GPU_FACTS", "abc"),
        ("GPU_FACTS", "0,abc,1"),
        ("GPU_FACTS", " 0, 1"),
        ("GPU_FACTS", "0 ,1"),
        ("GPU_FACTS", second),
        ("GPU_FACTS", "GPU-" + second[4:].replace("-", "")),
        ("GPU_FACTS", first[:12]),
        ("GPU_FACTS", f"{second},{first}"),
        ("GPU_FACTS", "GPU-"),
        ("GPU_FACTS", "GPU-00000000-1111-2222-3333-444444444444"),
        # Rows docs/GPU_FACTS.md leaves open:
        ("open", "0,5,0"),
        ("open", "0,-1"),
        ("open", "1,abc"),
        ("open", "0,,1"),
        ("open", "01"),
        ("open", "+1"),
        ("open", f"0,{first}"),
        ("open", first[4:12]),
        ("open", "gpu-" + first[4:12]),
        ("open", "GPU-" + first[4:12].upper()),
        ("open", "GPU-" + first[4:8] + "-" + first[8:12]),
        # How a GPU named twice in different forms is read (x2 run: "0,GPU-<0>" -> GPU 0):
        ("open", f"0,{first},1"),
        ("open", f"{first},0,1"),
        ("open", f"{second},{second}"),
        ("open", f"{first[:12]},{first}"),
        ("open", f"0,1,{first[:12]}"),
        ("open", "+0,1"),
        ("open", "-0"),
        ("open", "1abc"),
        ("open", "0x1"),
        ("open", "1.0"),
    ]
    common = uuids[0]
    for uuid in uuids[1:]:
        while not uuid.startswith(common):
            common = common[:-1]
    if len(uuids) > 1 and len(common) > 4:
        rows.append(("open: prefix of several GPUs", common))
    return rows


def measure(value: Optional[str]) -> Dict[str, Any]:
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("CUDA_DEVICE_ORDER", None)
    if value is not None:
        env["CUDA_VISIBLE_DEVICES"] = value
    done = subprocess.run(
        [sys.executable, "-S", "-I", "-c", PROBE],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: Dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    machine = machine_from_nvml()
    rows = []
    mismatches = 0
    for source, value in values(machine):
        measured = measure(value)
        environ = {} if value is None else {"CUDA_VISIBLE_DEVICES": value}
        code, visible = visible_devices(machine, environ)
        fake_buses = [machine.gpus[i].pci_bus_id.lower() for i in visible]
        agree = measured["cuInit"] == code and measured["buses"] == fake_buses
        mismatches += not agree
        rows.append(
            {
                "source": source,
                "value": value,
                "cuInit": measured["cuInit"],
                "buses": measured["buses"],
                "cuDeviceGet(count)": measured.get("cuDeviceGet(count)"),
                "fake_cuInit": code,
                "fake_buses": fake_buses,
                "agree": agree,
            }
        )
    print(f"{'value':<48} {'cuInit':>6}  {'CUDA sees (bus)':<34} fake")
    for row in rows:
        shown = "unset" if row["value"] is None else repr(row["value"])
        buses = ", ".join(b.split(":", 1)[1] for b in row["buses"]) or "none"
        verdict = "same" if row["agree"] else f"DIFFERS: {row['fake_cuInit']} {row['fake_buses']}"
        print(f"{shown:<48} {row['cuInit']:>6}  {buses:<34} {verdict}")
    beyond = {r["cuDeviceGet(count)"] for r in rows if r["cuDeviceGet(count)"] is not None}
    print(f"cuDeviceGet(ordinal == count) returned {sorted(beyond)}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {"gpus": [g.pci_bus_id for g in machine.gpus], "rows": rows}, handle, indent=1
            )
    print(f"{mismatches} row(s) where the fake differs from the driver")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
