#!/usr/bin/env python3
"""The performance floor of the fast tier (docs/GPU_FACTS.md): a bare process doing cuInit,
one thread per GPU binding its primary context, and a 1 MiB allocation on each.

Run it the leanest way, as the benchmark does: python3 -S -I hack/gpu/floor.py
Prints one JSON line: GPUs bound, cuInit ms, wall ms.
"""

import ctypes
import json
import sys
import threading
import time

started = time.perf_counter()
cuda = ctypes.CDLL("libcuda.so.1")
if cuda.cuInit(0) != 0:
    sys.exit("cuInit failed")
init_ms = (time.perf_counter() - started) * 1000.0
count = ctypes.c_int(0)
cuda.cuDeviceGetCount(ctypes.byref(count))
results = [None] * count.value


def bind(ordinal):
    device = ctypes.c_int(0)
    context = ctypes.c_void_p(None)
    pointer = ctypes.c_uint64(0)
    ok = (
        cuda.cuDeviceGet(ctypes.byref(device), ordinal) == 0
        and cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0
        and cuda.cuCtxSetCurrent(context) == 0
        and cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(1 << 20)) == 0
        and cuda.cuCtxSynchronize() == 0
    )
    results[ordinal] = ok


threads = [threading.Thread(target=bind, args=(i,)) for i in range(count.value)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(
    json.dumps(
        {
            "gpus": count.value,
            "bound": sum(bool(r) for r in results),
            "cuInit_ms": round(init_ms, 1),
            "wall_ms": round((time.perf_counter() - started) * 1000.0, 1),
        }
    )
)
