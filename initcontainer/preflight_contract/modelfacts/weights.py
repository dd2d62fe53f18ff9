"""The weight bytes: the checkpoint's own data first (the safetensors sizes on a volume,
the index's total size, the Hub's per-dtype counts), else the estimate
(``weight_bytes``, ``checkpoint_bytes``).

Separate from the lower bound (``floor``): this is the estimate the rule warns on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from preflight_contract.modelfacts.config_text import (
    _dtype,
    _quant_bits,
    quant_method_of,
    text_part,
)
from preflight_contract.modelfacts.defaults import resolve
from preflight_contract.modelfacts.fact import ESTIMATED, EXACT, FACT_UNKNOWN
from preflight_contract.modelfacts.ids import CONFIG, INDEX
from preflight_contract.modelfacts.keys import _int
from preflight_contract.modelfacts.layers import _param_estimate

# -- weight bytes: the checkpoint's own data first -----------------------------------------

# Files the model lookups may add beside config.json (never on the Hub under these names):
# the tensor bytes of the *.safetensors files on a mounted volume or in the HF cache
# (weightfiles.safetensors_sizes: {"files": {name: bytes}, "complete": bool, "where": ...}),
# and the Hub's per-dtype parameter counts (the "safetensors" field of the Hub's model info:
# {"parameters": {"BF16": n, ...}, "total": n}), e.g. from the modelConfigs ConfigMap.
SAFETENSORS_SIZES = "safetensors-sizes.json"
HUB_SAFETENSORS = "hub-safetensors.json"
# bytes per element of the safetensors dtypes the Hub counts parameters in
_DTYPE_BYTES: Dict[str, float] = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}


@dataclass(frozen=True)
class WeightBytes:
    """A size in bytes with its certainty (EXACT from the checkpoint's own data,
    ESTIMATED from config arithmetic, FACT_UNKNOWN) and where it came from."""

    value: Optional[int]
    certainty: str
    source: str


def checkpoint_bytes(files: Mapping[str, Any]) -> WeightBytes:
    """The bytes of the checkpoint's tensors as stored (what a load reads), from the
    checkpoint's own data only: the safetensors index's ``metadata.total_size``, the
    tensor bytes of every *.safetensors file vLLM would load (on a volume or in the HF
    cache, all of them present), or the Hub's per-dtype parameter counts. Exact, or
    unknown: never an estimate (``weight_bytes`` estimates when this is unknown)."""
    index = files.get(INDEX)
    if isinstance(index, Mapping):
        metadata = index.get("metadata")
        total = _int(metadata.get("total_size")) if isinstance(metadata, Mapping) else None
        if total and total > 0:
            return WeightBytes(total, EXACT, f"{INDEX} metadata.total_size")
    sizes = files.get(SAFETENSORS_SIZES)
    if isinstance(sizes, Mapping) and sizes.get("complete") is True:
        listed = sizes.get("files")
        counts = [_int(v) for v in listed.values()] if isinstance(listed, Mapping) else []
        if counts and all(c is not None and c >= 0 for c in counts):
            total = sum(c for c in counts if c is not None)
            if total > 0:
                where = str(sizes.get("where") or "the model directory")
                return WeightBytes(total, EXACT, f"{len(counts)} *.safetensors file(s) in {where}")
    hub = files.get(HUB_SAFETENSORS)
    params = hub.get("parameters") if isinstance(hub, Mapping) else None
    if isinstance(params, Mapping) and params:
        total_f = 0.0
        for dtype, count in params.items():
            width, number = _DTYPE_BYTES.get(str(dtype).upper()), _int(count)
            if width is None or number is None or number < 0:
                break
            total_f += width * number
        else:
            if total_f > 0:
                kinds = ", ".join(sorted(str(k) for k in params))
                return WeightBytes(int(total_f), EXACT, f"the Hub's parameter counts ({kinds})")
    return WeightBytes(
        None,
        FACT_UNKNOWN,
        f"no {INDEX} total_size, complete *.safetensors files or Hub parameter counts",
    )


def weight_bytes(files: Mapping[str, Any]) -> WeightBytes:
    """The weights' bytes in GPU memory once vLLM has loaded them at the checkpoint's
    dtype: the checkpoint's own size (``checkpoint_bytes``, EXACT; a float32 checkpoint is
    cast to 16 bits on load, so half), else config arithmetic (ESTIMATED), else unknown."""
    config = files.get(CONFIG)
    if not isinstance(config, Mapping):
        return WeightBytes(None, FACT_UNKNOWN, "no config.json")
    dtype = _dtype(config)
    method = quant_method_of(files)
    stored = checkpoint_bytes(files)
    if stored.value is not None:
        if method is None and dtype == "float32":
            return WeightBytes(
                stored.value // 2,
                EXACT,
                f"{stored.source} {stored.value} (float32 on disk, loaded as 16-bit)",
            )
        return stored
    text, model_type = text_part(config)
    merged, _ = resolve(text, model_type)
    estimate = _param_estimate(merged, model_type)
    if estimate is None:
        return WeightBytes(None, FACT_UNKNOWN, "config.json lacks the model's dimensions")
    embed, base, experts = estimate
    bits = _quant_bits(files, method)
    size: float
    if bits is None:
        size = (embed + base + experts) * 2
        text_out = f"estimated: {(embed + base + experts) / 1e9:.3g}B parameters x 2 bytes"
    elif method == "mxfp4" or (method or "").endswith("_mxfp4"):
        size = (embed + base) * 2 + experts * bits / 8
        text_out = f"estimated: {(embed + base + experts) / 1e9:.3g}B parameters, experts MXFP4"
    else:
        size = embed * 2 + (base + experts) * bits / 8
        text_out = (
            f"estimated: {(embed + base + experts) / 1e9:.3g}B parameters, {bits:g} bits ({method})"
        )
    return WeightBytes(int(size), ESTIMATED, text_out)
