"""Runs a Python module under cProfile; SIGUSR2 writes the stats so far (the benchmark
sends it before it stops the process, as SIGTERM would end it before any atexit).

    python hack/bench/profiled.py STATS_PATH -m MODULE [ARGS...]

Read the stats with ``python -m pstats STATS_PATH`` (sort cumtime / tottime).
"""

from __future__ import annotations

import cProfile
import runpy
import signal
import sys
from typing import Any


def main() -> None:
    stats_path, flag, module, *rest = sys.argv[1:]
    if flag != "-m":
        raise SystemExit("usage: profiled.py STATS_PATH -m MODULE [ARGS...]")
    profile = cProfile.Profile()

    def dump(*_: Any) -> None:
        profile.disable()
        profile.dump_stats(stats_path)
        profile.enable()

    signal.signal(signal.SIGUSR2, dump)
    sys.argv = [module, *rest]
    profile.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        profile.disable()
        profile.dump_stats(stats_path)


if __name__ == "__main__":
    main()
