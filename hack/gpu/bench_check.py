#!/usr/bin/env python3
"""Benchmark of `vllm-preflight check` against its floors, measured in the same run.

    python3 hack/gpu/bench_check.py --zipapp dist/vllm-preflight.pyz --reps 5 [--deep]

Fast tier: the checker (`--tp <all GPUs>`) vs hack/gpu/floor.py (cuInit + a binding
thread per GPU + 1 MiB each) run as `python3 -S -I`. Variants of the checker show what
each part costs. Deep tier: `--deep` vs hack/gpu/bare_nccl.py. Runs are interleaved, one
repetition after another, so drift of the machine hits all variants alike; repetition 0
(the machine's first CUDA use in this run) is reported apart and left out of the medians.
Wall time is measured around each process; peak RSS from wait4 (the process and its
waited-for children) and, for the checker, its own report (checker process alone).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(command: List[str], env: Dict[str, str]) -> Dict[str, Any]:
    """Wall time and peak RSS of one process (output to files: no pipe can fill up)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = (time.perf_counter() - started) * 1000.0
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {
            "wall_ms": round(wall, 1),
            "tree_maxrss_mb": round(usage.ru_maxrss / 1024.0, 1),
            "exit": process.returncode,
            "stdout_tail": out.read().decode(errors="replace")[-300:],
            "stderr_tail": err.read().decode(errors="replace")[-300:],
        }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zipapp", required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--gpus", type=int, default=0, help="default: every GPU CUDA sees")
    parser.add_argument("--deep", action="store_true")
    parser.add_argument("--json", default="")
    parser.add_argument(
        "--visible", default="", help="CUDA_VISIBLE_DEVICES for every variant (a GPU subset)"
    )
    args = parser.parse_args()
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    if args.visible:
        env["CUDA_VISIBLE_DEVICES"] = args.visible
    python = sys.executable
    floor = timed([python, "-S", "-I", os.path.join(HERE, "floor.py")], env)
    gpus = args.gpus or json.loads(floor["stdout_tail"].strip().splitlines()[-1])["gpus"]
    tmp = tempfile.mkdtemp()
    report = os.path.join(tmp, "report.json")

    def check(*extra: str) -> List[str]:
        return [python, args.zipapp, "--tp", str(gpus), "--json", report, *extra]

    variants: Dict[str, List[str]] = {
        "floor": [python, "-S", "-I", os.path.join(HERE, "floor.py")],
        "check": check(),
        "check --skip context-threads": check("--skip", "context-threads"),
        "check --skip context-ranks,thread-discipline": check(
            "--skip", "context-ranks,thread-discipline"
        ),
    }
    if args.deep:
        variants["bare torch+NCCL"] = [python, os.path.join(HERE, "bare_nccl.py"), str(gpus)]
        variants["check --deep"] = check("--deep")
    runs = run_interleaved(variants, args.reps, env, report)
    summary: Dict[str, Any] = {"gpus": gpus, "reps": args.reps, "variants": summarise(runs)}
    summary["runs"] = runs
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(summary, handle, indent=1)
    subset = f" (CUDA_VISIBLE_DEVICES={args.visible})" if args.visible else ""
    print(f"GPUs {gpus}{subset}, {args.reps} repetitions (+1 first run), medians:")
    print_table(summary["variants"])
    print_timings(runs)
    return 0


def run_interleaved(
    variants: Dict[str, List[str]], reps: int, env: Dict[str, str], report: str
) -> Dict[str, List[Dict[str, Any]]]:
    """Every variant once per repetition (rep 0 included), the order reversed every other
    repetition; a checker run also carries what its own report says."""
    runs: Dict[str, List[Dict[str, Any]]] = {name: [] for name in variants}
    for rep in range(reps + 1):
        names = list(variants)
        if rep % 2:
            names.reverse()
        for name in names:
            result = timed(variants[name], env)
            result["rep"] = rep
            if name.startswith("check") and os.path.exists(report):
                result.update(read_report(report))
                os.unlink(report)
            runs[name].append(result)
    return runs


def read_report(report: str) -> Dict[str, Any]:
    """The verdict, the checker's own peak RSS, its timings and the deep steps of a run."""
    with open(report, encoding="utf-8") as handle:
        data = json.load(handle)
    inventory = data.get("inventory", {})
    return {
        "verdict": data.get("verdict"),
        "checker_maxrss_mb": inventory.get("peak_rss_mb", {}).get("checker"),
        "timings_ms": inventory.get("timings_ms"),
        "deep_step_ms": {
            c["id"]: c.get("evidence", {}).get("step_ms")
            for c in data.get("checks", [])
            if c["id"].startswith("deep-")
        },
    }


def summarise(runs: Dict[str, List[Dict[str, Any]]]) -> Dict[str, Any]:
    """Per variant: medians over the repetitions after the first, and the ratio to its floor."""
    out: Dict[str, Any] = {}
    floor_median = statistics.median(r["wall_ms"] for r in runs["floor"][1:])
    bare = runs.get("bare torch+NCCL")
    bare_median = statistics.median(r["wall_ms"] for r in bare[1:]) if bare else None
    for name, items in runs.items():
        walls = [r["wall_ms"] for r in items[1:]]
        median = statistics.median(walls)
        base = bare_median if name in ("check --deep",) else floor_median
        out[name] = {
            "median_ms": round(median, 1),
            "min_ms": min(walls),
            "max_ms": max(walls),
            "first_run_ms": items[0]["wall_ms"],
            "ratio": round(median / base, 3)
            if base and name not in ("floor", "bare torch+NCCL")
            else None,
            "tree_maxrss_mb": max(r["tree_maxrss_mb"] for r in items),
            "checker_maxrss_mb": max((r.get("checker_maxrss_mb") or 0) for r in items) or None,
            "verdicts": sorted({str(r.get("verdict")) for r in items if "verdict" in r}),
            "exits": sorted({r["exit"] for r in items}),
        }
    return out


def print_table(variants: Dict[str, Any]) -> None:
    header = ("variant", "median", "min", "max", "first", "ratio", "RSS MB")
    print(
        f"{header[0]:<46} "
        + " ".join(f"{h:>8}" for h in header[1:5])
        + f" {header[5]:>6} {header[6]:>14}"
    )
    for name, row in variants.items():
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] else "-"
        rss = f"{row['checker_maxrss_mb'] or '-'}/{row['tree_maxrss_mb']}"
        print(
            f"{name:<46} {row['median_ms']:>8.0f} {row['min_ms']:>8.0f} {row['max_ms']:>8.0f} "
            f"{row['first_run_ms']:>8.0f} {ratio:>6} {rss:>14}"
        )
    print("ratio: median / median floor (deep: / median bare torch+NCCL); RSS: checker/tree max")


def print_timings(runs: Dict[str, List[Dict[str, Any]]]) -> None:
    """The checker's collection timings and the deep workers' steps, as medians."""
    for name in ("check", "check --deep"):
        timings = [r.get("timings_ms") or {} for r in runs.get(name, [])[1:]]
        keys = sorted(
            {k for t in timings for k in t},
            key=lambda k: statistics.median(t.get(k, 0) for t in timings),
        )
        shown = ", ".join(
            f"{k} {statistics.median(t.get(k, 0) for t in timings):.0f}" for k in keys
        )
        print(f"{name}: median ms since start of collection: {shown}")
    deep = [r.get("deep_step_ms") or {} for r in runs.get("check --deep", [])[1:]]
    steps: Dict[str, List[float]] = {}
    for item in deep:
        for check_steps in item.values():
            for per_rank in (check_steps or {}).values():
                for step, ms in per_rank.items():
                    steps.setdefault(step, []).append(ms)
    if steps:
        shown = ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in steps.items())
        print(f"deep worker steps, median ms over ranks and runs: {shown}")


if __name__ == "__main__":
    sys.exit(main())
