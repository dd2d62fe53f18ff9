"""The runtime model checks with real model configs against this machine's real GPUs.

No weights are needed: the configs of tests/data/models are judged against what NVML
reports here (each GPU's name, total and used memory) through the checker's own code
(``preflight_check.checks.model``: the same rules as lint and admission). Then one real
``vllm-preflight check --vllm-args`` run per case proves the whole path (collection,
model lookup from a mounted directory, report).

    PYTHONPATH=initcontainer python3 hack/gpu/model_fit.py            # table + 3 checks
    PYTHONPATH=initcontainer python3 hack/gpu/model_fit.py --json out.json

Prints, per model and TP: the weights per GPU, the budget (total x 0.9), the room left
for the KV cache, and the verdicts of model-weights-fit, model-dtype-capability and
model-quant-capability. docs/GPU_RUNS.md keeps the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "initcontainer"))

from preflight_check.checks import model as _model_checks  # noqa: E402, F401 (registers)
from preflight_check.checks.base import REGISTRY  # noqa: E402
from preflight_check.collect import NvmlSession  # noqa: E402
from preflight_check.facts import CudaGpu, CudaView, Facts  # noqa: E402
from preflight_check.host import real_host  # noqa: E402
from preflight_check.options import Options  # noqa: E402
from preflight_check.plan import Plan  # noqa: E402
from preflight_contract import modelfacts as mf  # noqa: E402
from preflight_contract.modelsource import FoundModel, read_model_dir  # noqa: E402

CORPUS = REPO / "tests" / "data" / "models"
GIB = float(1 << 30)
RULES = (mf.WEIGHTS_FIT, mf.DTYPE_CAPABILITY, mf.QUANT_CAPABILITY, mf.TP_HEADS)
# (model, --vllm-args extra) run through the whole checker at the end
WHOLE = (
    ("meta-llama/Meta-Llama-3.1-8B", ""),
    ("meta-llama/Meta-Llama-3.1-70B", ""),
    ("Qwen/Qwen2.5-0.5B-Instruct", ""),
)


def nvml_facts() -> Facts:
    host = real_host()
    session = NvmlSession(host.load_nvml)
    session.read_usage()
    session.close()
    view = session.view
    if not view.available:
        sys.exit(f"NVML unavailable: {view.error}")
    # The plan's GPUs by NVML index (this script creates no CUDA context).
    cuda = CudaView(loaded=True, init_code=0)
    cuda.gpus = [
        CudaGpu(g.index, g.uuid, g.pci_bus_id, g.name, g.memory_total or 0) for g in view.gpus
    ]
    facts = Facts(plan=Plan())
    facts.cuda, facts.nvml = cuda, view
    return facts


def judge(facts: Facts, model: str, tp: int) -> Dict[str, Any]:
    files, where = read_model_dir(str(CORPUS / model))
    plan = Plan(tp=tp)
    facts.plan = plan
    facts.model = FoundModel(model, files, where)
    options = Options(plan=plan, model_args={"model": model})
    row: Dict[str, Any] = {"model": model, "tp": tp}
    for rule in RULES:
        (result,) = REGISTRY[rule](facts, options)
        row[rule] = result.status
        if rule == mf.WEIGHTS_FIT:
            row["evidence"] = result.evidence
            row["message"] = result.message
    return row


def whole_check(model: str, tp: int, extra: str) -> Dict[str, Any]:
    """The real checker, end to end, the model as a mounted directory. The corpus holds
    config.json files only, no weights: model-source (will vLLM find the weights?) is
    skipped here, as it would rightly fail each of them."""
    args = f"vllm serve {CORPUS / model} -tp {tp} {extra}".strip()
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "preflight_check", "check", "--vllm-args", args, "--json", "-",
         "--action", "Warn", "--skip", "model-source"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO / "initcontainer"), "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    took = time.perf_counter() - started
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        return {"model": model, "tp": tp, "error": proc.stderr[-2000:]}
    checks = {c["id"]: c for c in report.get("checks", [])}
    return {
        "model": model,
        "tp": tp,
        "seconds": round(took, 2),
        "verdict": report.get("verdict"),
        "model_checks": {
            k: (v["status"], v["message"]) for k, v in checks.items() if k.startswith("model-")
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    facts = nvml_facts()
    gpus = facts.nvml.gpus
    print(f"{len(gpus)} GPU(s):")
    for g in gpus:
        used = (g.memory_used or 0) / GIB
        print(f"  {g.index}: {g.name}, {(g.memory_total or 0) / GIB:.1f} GiB total, "
              f"{used:.1f} GiB in use, capability "
              f"{mf.gpu_from_product(g.name).capability or '?'} (from the name)")  # fmt: skip
    tps = [n for n in (1, 2, 4, 8) if n <= len(gpus)]
    models = sorted(str(p.parent.relative_to(CORPUS)) for p in CORPUS.glob("*/*/config.json"))
    rows: List[Dict[str, Any]] = []
    print()
    print(f"{'model':<42} {'TP':>2} {'weights/GPU':>11} {'budget':>8} {'KV room':>8}  "
          "fit   dtype quant heads")  # fmt: skip
    for model in models:
        for tp in tps:
            row = judge(facts, model, tp)
            rows.append(row)
            ev = row.get("evidence", {})
            weights = ev.get("weights_per_gpu_gib")
            budget = ev.get("budget_gib")
            room = budget - weights - 2.0 if weights is not None and budget is not None else None
            print(
                f"{model:<42} {tp:>2} {weights if weights is not None else '?':>9} G "
                f"{budget if budget is not None else '?':>6} G "
                f"{f'{room:.1f}' if room is not None else '?':>6} G  "
                f"{row[mf.WEIGHTS_FIT]:<5} {row[mf.DTYPE_CAPABILITY]:<5} "
                f"{row[mf.QUANT_CAPABILITY]:<5} {row[mf.TP_HEADS]}"
            )
    print()
    whole = []
    for model, extra in WHOLE:
        for tp in tps[:2]:
            outcome = whole_check(model, tp, extra)
            whole.append(outcome)
            print(f"vllm-preflight check: {model} TP {tp}: verdict {outcome.get('verdict')} "
                  f"in {outcome.get('seconds')} s")  # fmt: skip
            for rule, (status, message) in sorted(outcome.get("model_checks", {}).items()):
                if status != "pass":
                    print(f"    {rule}: {status}: {message[:220]}")
            if "error" in outcome:
                print("    error:", outcome["error"][-500:])
    if args.json:
        Path(args.json).write_text(json.dumps({"gpus": [g.__dict__ for g in gpus], "rows": rows,
                                               "whole": whole}, indent=1, default=str))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
