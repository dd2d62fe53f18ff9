"""The hostile-input half of the reliability suite (issue 19 item 9): every input of
tests/data/hostile/corpus.py through `vllm-preflight lint`, through the rules engine as the
webhook calls it (check_object), and through `vllm-preflight check` over the fake driver.

Each run is its own process, so its wall time and peak RSS (os.wait4) are its own. A crash
is a traceback, an exit code other than the expected ones, an engine exception or a
rules-internal-error finding, or (check) a report or termination message not written.

    .venv/bin/python hack/reliability/inputs.py [--json OUT.json]

Prints one line per input and the totals; exits 1 when anything crashed or an input took
longer than --max-seconds or more than --max-rss-mib. `make reliability` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "data" / "hostile"))
sys.path.insert(0, str(ROOT / "dev"))  # preflight_dev.fakedriver
import corpus  # noqa: E402

PYTHON = sys.executable


def _run(
    argv: list[str], stdin: str | None = None, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run a child; its exit code, output, wall seconds and peak RSS in MiB."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
    out, err = proc.communicate(stdin.encode() if stdin is not None else None, timeout=300)
    # communicate() reaped it; wait4 on an already-reaped child is not possible, so the
    # children measure themselves (ru_maxrss) and print it last when they can.
    wall = time.perf_counter() - started
    return {
        "code": proc.returncode,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
        "wall_s": round(wall, 3),
    }


def _measured(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``argv`` under this script's --measure wrapper, which reports the child's RSS."""
    result = _run([PYTHON, __file__, "--measure", "--", *argv], env=env)
    lines = result["stderr"].rstrip().splitlines()
    if lines and lines[-1].startswith("MEASURE "):
        measure = json.loads(lines[-1][len("MEASURE ") :])
        result["stderr"] = "\n".join(lines[:-1])
        result["code"] = measure["code"]
        result["rss_mib"] = measure["rss_mib"]
        result["wall_s"] = measure["wall_s"]
    return result


def _measure(argv: list[str]) -> int:
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    measure = {
        "code": proc.returncode,
        "rss_mib": round(usage.ru_maxrss / 1024.0, 1),
        "wall_s": round(time.perf_counter() - started, 3),
    }
    sys.stderr.write("MEASURE " + json.dumps(measure) + "\n")
    return 0


def lint_inputs(workdir: Path, full: bool) -> list[dict[str, Any]]:
    rows = []
    for name, file_name, text, codes in corpus.lint_cases(full=full):
        path = workdir / file_name
        if name == "not-utf8":
            path.write_bytes(text.encode("latin-1"))
        else:
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        result = _measured([PYTHON, "-m", "preflight_operator.cli", "lint", str(path)])
        crashed = "Traceback" in result["stderr"] or result["code"] not in codes
        rows.append(
            {
                "surface": "lint",
                "input": name,
                "expected": list(codes),
                **result,
                "crashed": crashed,
            }
        )
    return rows


def engine_inputs(full: bool) -> list[dict[str, Any]]:
    rows = []
    for name, _ in corpus.object_cases(full=full):
        result = _measured([PYTHON, __file__, "--engine-child", name])
        crashed = result["code"] != 0 or "Traceback" in result["stderr"]
        rows.append(
            {"surface": "engine", "input": name, "expected": [0], **result, "crashed": crashed}
        )
    return rows


def _engine_child(name: str) -> int:
    from preflight_operator.core.rules import check_object  # noqa: PLC0415 - in the child only

    obj = dict(corpus.object_cases(full=True))[name]
    started = time.perf_counter()
    results = check_object(obj)
    spent = time.perf_counter() - started
    internal = [f.message for r in results for f in r.findings if f.id == "rules-internal-error"]
    print(json.dumps({"results": len(results), "internal_errors": internal, "rules_s": spent}))
    return 1 if internal else 0


def check_inputs(workdir: Path) -> list[dict[str, Any]]:
    rows = []
    for name, _argv, _env, code in corpus.check_cases():
        result = _measured([PYTHON, __file__, "--check-child", name, str(workdir / name)])
        written = result["stdout"].strip().splitlines()[-1:] if result["stdout"].strip() else []
        files = json.loads(written[0]) if written else {}
        crashed = (
            "Traceback" in result["stderr"]
            or result["code"] != code
            or not files.get("report")
            or not files.get("termination_log")
        )
        rows.append(
            {"surface": "check", "input": name, "expected": [code], **result, "crashed": crashed}
        )
    return rows


def _check_child(name: str, outdir: str) -> int:
    import io  # noqa: PLC0415 - in the child only

    from preflight_check.cli import main  # noqa: PLC0415
    from preflight_dev.fakedriver.fake import h200_machine  # noqa: PLC0415
    from preflight_dev.fakedriver.harness import fake_host  # noqa: PLC0415

    argv, env = next((a, e) for n, a, e, _ in corpus.check_cases() if n == name)
    os.makedirs(outdir, exist_ok=True)
    report, term = os.path.join(outdir, "report.json"), os.path.join(outdir, "termination-log")
    host = fake_host(h200_machine(2), env, no_driver="no-driver" in name)
    code = main(
        [*argv, "--json", report, "--termination-log", term],
        host=host,
        out=io.StringIO(),
        err=sys.stderr,
    )
    print(json.dumps({"report": os.path.exists(report), "termination_log": os.path.exists(term)}))
    return code


def main(argv: list[str]) -> int:
    if argv[:1] == ["--measure"]:
        return _measure(argv[2:])
    if argv[:1] == ["--engine-child"]:
        return _engine_child(argv[1])
    if argv[:1] == ["--check-child"]:
        return _check_child(argv[1], argv[2])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write every row and the totals here")
    parser.add_argument("--quick", action="store_true", help="leave out the 1 MB inputs")
    parser.add_argument("--max-seconds", type=float, default=5.0)
    parser.add_argument("--max-rss-mib", type=float, default=200.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vllm-preflight-hostile-") as tmp:
        work = Path(tmp)
        rows = (
            lint_inputs(work, not args.quick) + engine_inputs(not args.quick) + check_inputs(work)
        )
    slow = [r for r in rows if r["wall_s"] > args.max_seconds]
    fat = [r for r in rows if r.get("rss_mib", 0) > args.max_rss_mib]
    for row in rows:
        mark = "CRASH" if row["crashed"] else "ok"
        print(
            f"{row['surface']:<7} {row['input']:<24} exit {row['code']:<3} "
            f"(expected {'/'.join(map(str, row['expected']))})  {row['wall_s']:6.2f} s  "
            f"{row.get('rss_mib', float('nan')):6.1f} MiB  {mark}"
        )
        if row["crashed"]:
            print("    " + (row["stderr"].strip().splitlines() or [""])[-1][:300])
    totals = {
        "inputs": len(rows),
        "crashes": sum(r["crashed"] for r in rows),
        "over_time": len(slow),
        "over_memory": len(fat),
        "max_wall_s": max(r["wall_s"] for r in rows),
        "max_rss_mib": max(r.get("rss_mib", 0) for r in rows),
    }
    print(
        f"\n{totals['inputs']} inputs: {totals['crashes']} crashes, {totals['over_time']} over "
        f"{args.max_seconds:g} s, {totals['over_memory']} over {args.max_rss_mib:g} MiB; "
        f"slowest {totals['max_wall_s']:.2f} s, largest peak RSS {totals['max_rss_mib']:.1f} MiB"
    )
    if args.json:
        for row in rows:
            row["stdout"] = row["stdout"][-2000:]
            row["stderr"] = row["stderr"][-2000:]
        Path(args.json).write_text(json.dumps({"totals": totals, "rows": rows}, indent=2))
    return 1 if totals["crashes"] or slow or fat else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
