"""Record vLLM's own verdicts over the model corpus, for tests/unit/test_modelfacts.py.

Runs vLLM's real validation, not a copy of it: ``ModelConfig`` (config.json reading,
``_get_and_verify_max_len``, dtype and quantization resolution) and
``ModelConfig.verify_with_parallel_config`` for every model of tests/data/models over a
grid of TP x PP x --enable-expert-parallel, plus each quantization method's
``get_min_capability()``. No GPU and no weights are needed (vLLM imports on CPU).

Run it in a throwaway venv outside the repository (installing vLLM is too heavy for CI):

    python3 -m venv /tmp/vllmenv && /tmp/vllmenv/bin/pip install vllm
    /tmp/vllmenv/bin/python hack/vllm/record_verdicts.py > tests/data/models/vllm_verdicts.json

Re-record when the vLLM version the rules follow moves.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "models"
TPS = (1, 2, 3, 4, 6, 8, 16)
PPS = (1, 2, 4)
COMMAND = (
    "python3 -m venv /tmp/vllmenv && /tmp/vllmenv/bin/pip install vllm && "
    "/tmp/vllmenv/bin/python hack/vllm/record_verdicts.py > tests/data/models/vllm_verdicts.json"
)


def _quiet() -> contextlib.AbstractContextManager[Any]:
    return contextlib.redirect_stdout(io.StringIO())


def _error(exc: BaseException) -> dict[str, str]:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    # pydantic wraps vLLM's ValueError: keep the line that says what is wrong
    useful = [line for line in lines if "validation error" not in line and " type=" not in line]
    return {"error": type(exc).__name__, "message": " ".join(useful or lines)[:400]}


def main() -> int:
    logging.disable(logging.WARNING)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import vllm  # noqa: PLC0415
    from vllm.config import ModelConfig, ParallelConfig  # noqa: PLC0415
    from vllm.model_executor.layers.quantization import (  # noqa: PLC0415
        QUANTIZATION_METHODS,
        get_quantization_config,
    )

    capability = {}
    for method in QUANTIZATION_METHODS:
        with contextlib.suppress(Exception):
            capability[method] = get_quantization_config(method).get_min_capability()
    models: dict[str, Any] = {}
    for config in sorted(CORPUS.glob("*/*/config.json")):
        model_id = str(config.parent.relative_to(CORPUS))
        print(f"recording {model_id}", file=sys.stderr)
        row: dict[str, Any] = {}
        try:
            with _quiet():
                mc = ModelConfig(model=str(config.parent), skip_tokenizer_init=True)
        except Exception as exc:  # vLLM refuses the config itself (e.g. an unknown arch)
            row["model_config"] = _error(exc)
            models[model_id] = row
            continue
        arch = mc.model_arch_config
        row.update(
            max_model_len=mc.max_model_len,
            num_attention_heads=arch.total_num_attention_heads,
            num_kv_heads=mc.get_total_num_kv_heads(),
            num_layers=mc.get_total_num_hidden_layers(),
            num_experts=mc.get_num_experts(),
            use_mla=bool(mc.use_mla),
            quantization=mc.quantization,
            dtype=str(mc.dtype).replace("torch.", ""),
        )
        try:
            with _quiet():
                ModelConfig(
                    model=str(config.parent),
                    skip_tokenizer_init=True,
                    max_model_len=mc.max_model_len + 1,
                )
            row["max_model_len_plus_one"] = {"verdict": "ok"}
        except Exception as exc:
            row["max_model_len_plus_one"] = _error(exc)
        grid = []
        for tp in TPS:
            for pp in PPS:
                for ep in (False, True):
                    cell: dict[str, Any] = {"tp": tp, "pp": pp, "ep": ep}
                    try:
                        pc = ParallelConfig(
                            tensor_parallel_size=tp,
                            pipeline_parallel_size=pp,
                            enable_expert_parallel=ep,
                        )
                        mc.verify_with_parallel_config(pc)
                        cell["verdict"] = "ok"
                    except Exception as exc:
                        cell.update(_error(exc))
                    grid.append(cell)
        row["grid"] = grid
        models[model_id] = row
    document = {
        "_about": [
            "vLLM's own verdicts over tests/data/models, recorded by "
            "hack/vllm/record_verdicts.py (real vLLM, CPU, no weights).",
            "grid: ModelConfig.verify_with_parallel_config(ParallelConfig(tp, pp, ep)); "
            "max_model_len: ModelConfig's derived length; max_model_len_plus_one: "
            "ModelConfig(max_model_len=derived+1); min_capability: get_min_capability().",
            "Not recorded (needs a GPU or torch.distributed): QKVParallelLinear's KV-head "
            "split, memory fit, the bfloat16 capability check.",
        ],
        "command": COMMAND,
        "vllm_version": vllm.__version__,
        "recorded": datetime.date.today().isoformat(),
        "min_capability": capability,
        "models": models,
    }
    json.dump(document, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
