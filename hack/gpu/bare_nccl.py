#!/usr/bin/env python3
"""The deep tier's baseline: a bare torch + NCCL run, one process per GPU.

Each process imports torch, sets its device, joins an NCCL group (file rendezvous),
all-reduces one tensor, synchronises and exits. The parent is plain python (no torch),
exactly as the checker's parent is. Usage: python3 hack/gpu/bare_nccl.py [GPUS]
"""

import json
import os
import subprocess
import sys
import tempfile
import time

WORKER = r"""
import datetime, os, sys
import torch, torch.distributed as dist
rank, world, store = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
torch.cuda.set_device(rank)
device = torch.device("cuda", rank)
x = torch.ones(1 << 18, device=device)
dist.init_process_group("nccl", init_method="file://" + store, rank=rank, world_size=world,
                        timeout=datetime.timedelta(seconds=120), device_id=device)
dist.all_reduce(x)
torch.cuda.synchronize(device)
assert float(x[0]) == world
os._exit(0)
"""


def main() -> int:
    started = time.perf_counter()
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        procs = [
            subprocess.Popen([sys.executable, "-c", WORKER, str(r), str(world), store])
            for r in range(world)
        ]
        codes = [p.wait() for p in procs]
    print(
        json.dumps(
            {
                "gpus": world,
                "exit_codes": codes,
                "wall_ms": round((time.perf_counter() - started) * 1000.0, 1),
            }
        )
    )
    return 0 if not any(codes) else 1


if __name__ == "__main__":
    sys.exit(main())
