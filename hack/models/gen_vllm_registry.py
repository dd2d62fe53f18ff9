"""Generate initcontainer/preflight_contract/vllm_registry.py from vLLM's source.

Why: vLLM refuses a model whose ``architectures`` it does not register ("Model
architectures [...] are not supported for now"), unless its Transformers backend takes it.
The rule ``model-arch-unregistered`` warns before that, and needs vLLM's own list: the
keys of every ``_*_MODELS`` dict in vllm/model_executor/models/registry.py (the ones
``_VLLM_MODELS`` merges), the removed ones (``_PREVIOUSLY_SUPPORTED_MODELS``, with the last
version that had them), the suffixes ``try_match_architecture_defaults`` swaps
(``_SUFFIX_TO_DEFAULTS`` in vllm/config/model.py), and the model types vLLM reads with a
config class of its own (``_CONFIG_REGISTRY`` in vllm/transformers_utils/config.py).

The source is read as text (``ast``), never imported: vLLM needs torch and a GPU stack.

    python3 hack/models/gen_vllm_registry.py VLLM_SOURCE_DIR VERSION COMMIT

VLLM_SOURCE_DIR is a vLLM tree (a checkout, the sdist ``pip download vllm==VERSION
--no-deps --no-binary :all:`` unpacks, or an installed ``vllm`` package's parent). The
committed table came from the vLLM 0.33.0 sdist (its ``vllm/_version.py`` names commit
4ba787ec9). tests/unit/test_model_tables.py regenerates it from the release's sdist (fetched by
hack/vllm/fetch_source.py, which hack/prepare_tests.sh runs; VLLM_SOURCE overrides it)
and compares on every `make test`.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "initcontainer" / "preflight_contract" / "vllm_registry.py"
REGISTRY = "vllm/model_executor/models/registry.py"
CONFIG = "vllm/transformers_utils/config.py"
MODEL = "vllm/config/model.py"


def _assigned(tree: ast.Module, name: str) -> ast.expr | None:
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        else:
            continue
        if name in targets and node.value is not None:
            return node.value
    return None


def _dict_keys(node: ast.expr | None) -> list[str]:
    """The literal string keys of a dict display (``**`` unpackings are merges of other
    registry dicts, whose keys are read on their own)."""
    if not isinstance(node, ast.Dict):
        return []
    return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def read(source: Path) -> dict[str, Any]:
    registry = ast.parse((source / REGISTRY).read_text(encoding="utf-8"))
    archs: set[str] = set()
    merged = _assigned(registry, "_VLLM_MODELS")
    parts = [
        v.id
        for v in (merged.values if isinstance(merged, ast.Dict) else [])
        if isinstance(v, ast.Name)
    ]
    for part in parts:
        archs.update(_dict_keys(_assigned(registry, part)))
    previous_node = _assigned(registry, "_PREVIOUSLY_SUPPORTED_MODELS")
    previous: dict[str, str] = {}
    if isinstance(previous_node, ast.Dict):
        for key, value in zip(previous_node.keys, previous_node.values):
            if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                previous[str(key.value)] = str(value.value)
    config = ast.parse((source / CONFIG).read_text(encoding="utf-8"))
    classes: set[str] = set()
    call = _assigned(config, "_CONFIG_REGISTRY")
    if isinstance(call, ast.Call):
        for kw in call.keywords:
            if kw.arg is not None:
                classes.add(kw.arg)
            else:
                classes.update(_dict_keys(kw.value))
    else:
        classes.update(_dict_keys(call))
    model = ast.parse((source / MODEL).read_text(encoding="utf-8"))
    suffixes: list[str] = []
    listed = _assigned(model, "_SUFFIX_TO_DEFAULTS")
    for item in listed.elts if isinstance(listed, ast.List) else []:
        if isinstance(item, ast.Tuple) and isinstance(item.elts[0], ast.Constant):
            suffixes.append(str(item.elts[0].value))
    if not archs or not suffixes:
        raise SystemExit(f"{source}: no registry found (is it a vLLM source tree?)")
    return {
        "architectures": sorted(archs),
        "previously_supported": dict(sorted(previous.items())),
        "config_classes": sorted(classes),
        "suffixes": suffixes,
    }


def render(data: dict[str, Any], version: str, commit: str) -> str:
    def block(name: str, kind: str, values: Any) -> list[str]:
        if isinstance(values, dict):
            body = [f"    {json.dumps(k)}: {json.dumps(v)}," for k, v in values.items()]
            return [f"{name}: {kind} = {{", *body, "}", ""]
        body = [f"    {json.dumps(v)}," for v in values]
        return [f"{name}: {kind} = (", *body, ")", ""]

    lines = [
        '"""GENERATED: the architectures vLLM registers, and what its registry does around them.',
        "",
        f"Made by hack/models/gen_vllm_registry.py from vLLM {version} (commit {commit}):",
        f"{REGISTRY} (every ``_*_MODELS`` dict ``_VLLM_MODELS`` merges;",
        "``_PREVIOUSLY_SUPPORTED_MODELS``), vllm/config/model.py ``_SUFFIX_TO_DEFAULTS`` and",
        f"{CONFIG} ``_CONFIG_REGISTRY``. Do not edit.",
        '"""',
        "",
        "from typing import Dict, Tuple",
        "",
        f"VLLM_VERSION = {json.dumps(version)}",
        f"VLLM_COMMIT = {json.dumps(commit)}",
        "",
    ]
    lines += block("ARCHITECTURES", "Tuple[str, ...]", data["architectures"])
    lines += block("PREVIOUSLY_SUPPORTED", "Dict[str, str]", data["previously_supported"])
    lines += block("SUFFIXES", "Tuple[str, ...]", data["suffixes"])
    lines += block("CONFIG_CLASSES", "Tuple[str, ...]", data["config_classes"])
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    source, version, commit = Path(argv[0]), argv[1], argv[2]
    OUT.write_text(render(read(source), version, commit), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
