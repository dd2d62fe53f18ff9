"""Issue 23, items 1 and 2, in the reliability suite: what a tenant can put in an object
or a pod's report, through the operator's own readers, in this process.

* API bodies (``decoding.py``): a Deployment whose managedFields is nested 1,000 and 10,000
  deep (the API server's own JSON limit is 10,000), a custom object deep in its spec, the
  shapes built to make the depth measurement slow, at up to 1.5 MiB (etcd's limit);
* pod reports (``podresults.pod_result``): deep, Infinity, 1e400, a 3,500-character check
  id, 1e308 in an integer field, a huge ordinal, broken text.

Each must come back as a value or a named refusal, never an exception, and within a bound
(the event loop decodes watch lines: the slowest one is printed). The real-process proof
is tests/e2e/test_operator_integrity.py (in `make test`).

    .venv/bin/python hack/reliability/integrity.py [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from preflight_operator.core import decoding
from preflight_operator.core.podresults import pod_result

MIB = 1024 * 1024


def _deployment(fields: str, spec: str = '{"replicas":1}') -> str:
    return (
        '{"type":"ADDED","object":{"kind":"Deployment","metadata":{"name":"d","namespace":"n",'
        f'"managedFields":[{{"manager":"m","fieldsV1":{fields}}}]}},"spec":{spec}}}}}'
    )


def _chain(levels: int) -> str:
    return '{"f:x":' * levels + "{}" + "}" * levels


def _padded(shape: bytes, size: int = 3 * MIB // 2) -> str:
    return (shape * (size // len(shape))).decode()


API_INPUTS: dict[str, str] = {
    "managedfields-1000-deep": _deployment(_chain(1000)),
    "managedfields-10000-deep": _deployment(_chain(10_000)),
    "spec-1000-deep": _deployment("{}", "[" * 1000 + "]" * 1000),
    "wide-1.5MiB": _deployment("[" + _padded(b"[],")[:-1] + "]"),
    "chains-1.5MiB": _deployment("[" + _padded(b"[" * 99 + b"]" * 99 + b",")[:-1] + "]"),
    "escaped-strings-1.5MiB": _deployment("[" + _padded(b'"\\"",')[:-1] + "]"),
    "not-json": '{"type":"ADDED","object":{"a":Infinity}}',
    # just under decoding.OBJECT_MAX_ITEMS (20,000 values): the costliest that is decoded
    "chains-at-the-bound": _deployment("[" + ("[" * 99 + "]" * 99 + ",") * 195 + "[]]"),
    "pairs-deep-at-the-bound": _deployment("[" * 150 + "[]," * 19_500 + "[]" + "]" * 150),
    "escaped-at-the-bound": _deployment("[" + '"\\"",' * 9_500 + '""]'),
}


def _report_pod(message: str) -> dict[str, Any]:
    terminated = {"exitCode": 1, "message": message, "finishedAt": "2026-12-01T00:00:00Z"}
    return {
        "metadata": {"name": "p", "uid": "u", "namespace": "n"},
        "spec": {"nodeName": "node"},
        "status": {
            "initContainerStatuses": [
                {"name": "preflight-check", "restartCount": 0, "state": {"terminated": terminated}}
            ]
        },
    }


_HEAD = '{"schema":1,"verdict":"fail","action":"Enforce","plan":'
REPORT_INPUTS: dict[str, str] = {
    "deep-plan": _HEAD + "[" * 2000 + "]" * 2000 + "}",
    "infinity": _HEAD + '{"tp":Infinity}}',
    "overflow": _HEAD + '{},"group":{"joined":1e400}}',
    "float-in-int-field": _HEAD + '{},"group":{"joined":1e308}}',
    "long-check-id": _HEAD + '{},"checks":[{"id":"' + "x" * 3500 + '","status":"fail"}]}',
    "huge-ordinal": _HEAD + '{},"gpus":[{"ordinal":1e300,"uuid":"GPU-a"}]}',
    "broken": _HEAD + "{",
}


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started


def run() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, text in API_INPUTS.items():
        try:
            (event, why), seconds = _timed(lambda t=text: decoding.decode_event(t, "/x"))
            outcome = why.reason if why is not None else ("used" if event else "dropped")
        except Exception as exc:  # a crash is what this script looks for
            outcome, seconds = f"CRASH {type(exc).__name__}", 0.0
        rows.append({"input": f"api/{name}", "bytes": len(text), "outcome": outcome, "s": seconds})
    for name, text in REPORT_INPUTS.items():
        try:
            result, seconds = _timed(lambda t=text: pod_result(_report_pod(t)))
            outcome = f"{result.verdict}/{result.reason}" if result else "none"
        except Exception as exc:
            outcome, seconds = f"CRASH {type(exc).__name__}", 0.0
        rows.append(
            {"input": f"report/{name}", "bytes": len(text), "outcome": outcome, "s": seconds}
        )
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--max-seconds", type=float, default=1.0)
    args = parser.parse_args(argv)
    rows = run()
    for row in rows:
        print(f"{row['input']:36} {row['bytes']:>9} B  {row['s'] * 1000:8.1f} ms  {row['outcome']}")
    crashed = [r for r in rows if r["outcome"].startswith("CRASH")]
    slow = [r for r in rows if r["s"] > args.max_seconds]
    slowest = max(rows, key=lambda r: r["s"])
    print(
        f"{len(rows)} inputs, {len(crashed)} crashed, slowest {slowest['input']}"
        f" {slowest['s'] * 1000:.1f} ms"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 1 if crashed or slow else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
