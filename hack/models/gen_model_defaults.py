"""Generate initcontainer/preflight_contract/model_defaults.py from transformers' config classes.

Why: vLLM reads a model's config through transformers (``AutoConfig``), so a key that
config.json leaves out takes the config class's default (``Qwen3MoeConfig`` gives
``num_experts=128``). The checker is standard library only and cannot import transformers,
so the defaults the model rules read (``modelfacts.DEFAULTED_KEYS``) are kept as a table.

For every model type transformers registers (``CONFIG_MAPPING``) the class is built with no
arguments and each key read with ``getattr`` (so ``attribute_map`` aliases such as
Mixtral's ``num_experts`` -> ``num_local_experts`` are followed, as vLLM's ``getattr`` does).
A key whose default follows another key is probed (the other key changed, the class built
again) and kept as a relation: ``num_key_value_heads`` = ``num_attention_heads``,
``head_dim`` = ``hidden_size // num_attention_heads``. A key the class maps to another
(``attribute_map``: gpt-oss's ``num_experts`` is ``num_local_experts``) is kept as an alias,
never as a default of its own. Model types that vLLM reads with a
config class of its own (``_CONFIG_REGISTRY`` in vllm/transformers_utils/config.py, kept in
``vllm_registry.CONFIG_CLASSES``) are left out: their defaults are not transformers'.

    make venv        # the dev extra pins the transformers of the table; never a product dependency
    .venv/bin/python hack/models/gen_model_defaults.py

tests/unit/test_model_tables.py regenerates the table in memory and compares it with the
committed one, with the transformers the dev extra pins (on every `make test`).
"""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "initcontainer" / "preflight_contract" / "model_defaults.py"
sys.path.insert(0, str(ROOT / "initcontainer"))

from preflight_contract.modelfacts import DEFAULTED_KEYS  # noqa: E402
from preflight_contract.vllm_registry import CONFIG_CLASSES  # noqa: E402

_MISSING = object()
# (key, the key it may follow, how): probed, kept only when the class really derives it
_RELATIONS = (
    ("num_key_value_heads", "num_attention_heads", "copy"),
    ("head_dim", "num_attention_heads", "hidden_size // num_attention_heads"),
)


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return False


def _build(cls: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(**kwargs)


def _relation(cls: Any, base: Any, key: str, other: str, how: str) -> str | None:
    try:
        return _probe(cls, base, key, other, how)
    except Exception:  # a class that refuses the probe keeps its literal default
        return None


def _probe(cls: Any, base: Any, key: str, other: str, how: str) -> str | None:
    heads = getattr(base, other, None)
    if not isinstance(heads, int) or isinstance(heads, bool) or heads < 1:
        return None
    probe_heads = heads * 2
    try:
        probed = _build(cls, **{other: probe_heads})
    except Exception:
        return None
    got = getattr(probed, key, None)
    if how == "copy" and got == probe_heads and getattr(base, key, None) == heads:
        return "=" + other
    hidden = getattr(probed, "hidden_size", None)
    if how != "copy" and isinstance(hidden, int) and got == hidden // probe_heads:
        return how
    return None


def _default(base: Any, key: str) -> Any:
    """The class's value for ``key``, or _MISSING when none can be kept (None, not a
    plain value, not finite, or a class that refuses to say)."""
    try:
        value = getattr(base, key, _MISSING)
    except Exception:
        return _MISSING
    if value is _MISSING or value is None or not _plain(value):
        return _MISSING
    if isinstance(value, float) and not math.isfinite(value):
        return _MISSING
    return list(value) if isinstance(value, tuple) else value


def _entry(cls: Any, base: Any) -> dict[str, Any]:
    """One class's defaults, relations, aliases and text config type."""
    entry: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    derived: dict[str, str] = {}
    aliases: dict[str, str] = {}
    attribute_map = getattr(cls, "attribute_map", None) or {}
    for key in DEFAULTED_KEYS:
        target = attribute_map.get(key) if isinstance(attribute_map, dict) else None
        if isinstance(target, str) and target != key:
            aliases[key] = target  # getattr(config, key) reads config.<target>
            value = getattr(base, target, None)
            if _plain(value) and value is not None and not isinstance(value, (list, tuple)):
                defaults[target] = value
            continue
        value = _default(base, key)
        if value is not _MISSING:
            defaults[key] = value
    for key, other, how in _RELATIONS:
        if key in defaults:
            rel = _relation(cls, base, key, other, how)
            if rel is not None:
                derived[key] = rel
                del defaults[key]
    if defaults:
        entry["defaults"] = defaults
    if derived:
        entry["derived"] = derived
    if aliases:
        entry["aliases"] = dict(sorted(aliases.items()))
    sub = getattr(cls, "sub_configs", None) or {}
    text_cls = sub.get("text_config") if isinstance(sub, dict) else None
    text_type = getattr(text_cls, "model_type", "") if text_cls is not None else ""
    if text_type:
        entry["text"] = text_type
    return entry


def table() -> dict[str, Any]:
    """model type -> {"defaults": {key: value}, "derived": {key: relation}, "aliases":
    {key: the attribute it reads}, "text": type}."""
    import transformers  # noqa: PLC0415
    from transformers import CONFIG_MAPPING  # noqa: PLC0415

    logging.disable(logging.WARNING)
    out: dict[str, Any] = {}
    for model_type in sorted(CONFIG_MAPPING.keys()):
        if model_type in CONFIG_CLASSES:
            continue
        try:
            cls = CONFIG_MAPPING[model_type]
            base = _build(cls)
        except Exception:
            continue
        out[model_type] = _entry(cls, base)
    return {"version": transformers.__version__, "models": out}


def _literal(value: Any) -> str:
    """A Python literal, dict keys sorted (stable output; no inf/nan: they are dropped)."""
    if isinstance(value, dict):
        items = ", ".join(f"{json.dumps(k)}: {_literal(v)}" for k, v in sorted(value.items()))
        return "{" + items + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def render(data: dict[str, Any]) -> str:
    lines = [
        '"""GENERATED: the transformers config-class defaults of the keys the model rules read.',
        "",
        "Made by hack/models/gen_model_defaults.py from transformers "
        f"{data['version']}: do not edit.",
        "Per model type: ``defaults`` (key -> the class's value), ``derived`` (key -> the key",
        "it follows: ``=num_attention_heads``, or ``hidden_size // num_attention_heads``) and",
        "``text`` (the model type of the class's ``text_config``). A key absent here has no",
        "default in the class (None): vLLM's own fallback applies. A model type absent here is",
        "unknown: its omitted keys are unknown to the rules.",
        '"""',
        "",
        "from typing import Any, Dict",
        "",
        f"TRANSFORMERS_VERSION = {json.dumps(data['version'])}",
        "",
        "MODELS: Dict[str, Dict[str, Any]] = {",
    ]
    for model_type, entry in data["models"].items():
        lines.append(f"    {json.dumps(model_type)}: {_literal(entry)},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    OUT.write_text(render(table()), encoding="utf-8")
    ruff = ROOT / ".venv" / "bin" / "ruff"
    if ruff.exists():
        subprocess.run([str(ruff), "format", "-q", str(OUT)], check=False)
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
