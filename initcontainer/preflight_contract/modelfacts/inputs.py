"""The other side of the rules: ``--max-model-len`` as vLLM parses it, a compute
capability as text, and a GPU product name as capability and memory
(``gpu_from_product``).

Separate from the model's facts: these come from the command line and the node.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

from preflight_contract.modelfacts.ids import GIB
from preflight_contract.modelfacts.records import Gpu

# -- command-line values ------------------------------------------------------------------


def parse_max_model_len(text: Optional[str]) -> Tuple[Optional[int], str]:
    """vLLM's --max-model-len (human_readable_int_or_auto): '32k' = 32000, '32K' = 32768,
    '-1'/'auto' = fit to memory (None). Returns (value, problem)."""
    if text is None:
        return None, ""
    value = text.strip()
    if value.lower() == "auto" or value == "-1":
        return None, ""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", value)
    if match:
        number, suffix = match.groups()
        if suffix in "kmgt":
            return int(float(number) * 10 ** (3 * ("kmgt".index(suffix) + 1))), ""
        if "." in number:
            return None, f"{text!r}: decimals are not allowed with binary suffixes"
        return int(number) * 2 ** (10 * ("KMGT".index(suffix) + 1)), ""
    try:
        return int(value), ""
    except ValueError:
        return None, f"{text!r} is not a length (write e.g. 32768, 32k or 32K)"


def capability_text(capability: int) -> str:
    return f"{capability // 10}.{capability % 10}"


# -- GPU products -------------------------------------------------------------------------

# (pattern over the product name with '-' and ' ' alike, compute capability x 10, memory
# GiB or None). Names as NVML reports them and as GPU feature discovery labels them
# (nvidia.com/gpu.product: spaces become '-'). Capabilities: NVIDIA's CUDA GPU list.
_PRODUCTS: Tuple[Tuple[str, int, Optional[int]], ...] = (
    (r"GB300", 103, 279),
    (r"B300", 103, 268),
    (r"GB200", 100, 186),
    (r"B200", 100, 180),
    (r"GH200.*144", 90, 144),
    (r"GH200", 90, 96),
    (r"H200.*NVL", 90, 141),
    (r"H200", 90, 141),
    (r"H100.*NVL", 90, 94),
    (r"H100.*(PCIe|PCIE)", 90, 80),
    (r"H100", 90, 80),
    (r"H800", 90, 80),
    (r"H20", 90, 96),
    (r"L40S", 89, 45),
    (r"L40", 89, 45),
    (r"L4\b", 89, 22),
    (r"RTX.?PRO.?6000", 120, 96),
    (r"RTX.?5090", 120, 32),
    (r"RTX.?4090", 89, 24),
    (r"RTX.?6000.?Ada", 89, 48),
    (r"A100.*80GB", 80, 80),
    (r"A100", 80, 40),
    (r"A800", 80, 80),
    (r"A10G", 86, 22),
    (r"A10\b", 86, 22),
    (r"A30", 80, 24),
    (r"A40", 86, 45),
    (r"RTX.?A6000", 86, 48),
    (r"RTX.?3090", 86, 24),
    (r"T4\b", 75, 15),
    (r"V100.*32GB", 70, 32),
    (r"V100", 70, 16),
    (r"P100", 60, 16),
)


def gpu_from_product(name: str, source: str = "") -> Gpu:
    """Compute capability and memory of a GPU product by name; unknown stays None. A
    memory figure in the name (…-80GB-…) wins over the table's."""
    normal = name.replace("-", " ").replace("_", " ")
    for pattern, capability, memory in _PRODUCTS:
        if re.search(pattern.replace("-", " "), normal, re.IGNORECASE):
            sized = re.search(r"(\d+)\s?GB\b", normal, re.IGNORECASE)
            gib = int(sized.group(1)) if sized else memory
            # NVIDIA's "80GB" is decimal-ish marketing: the usable total is ~79.2 GiB.
            # The most it can be: + 10% (NVML totals: H100 80GB 81559 MiB, A100 80GB
            # 81920 MiB, L4 23034 MiB, T4 15360 MiB, H200 143771 MiB: all within)
            total = int(gib * GIB * 0.99) if gib else None
            upper = int(gib * GIB * 1.1) if gib else None
            return Gpu(name, total, capability, source, upper)
    return Gpu(name, None, None, source)
