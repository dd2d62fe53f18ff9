"""The tensor bytes of a checkpoint's *.safetensors files on disk: the checkpoint's own
size, for ``modelfacts.checkpoint_bytes`` (exact, unlike arithmetic over config.json).

The imperative shell around a directory (a mounted volume, or a Hugging Face cache
snapshot, whose entries are links to blobs: sizes follow them). Which files count is
vLLM's choice (vLLM 0.33.0, ``vllm/model_executor/model_loader/weight_utils.py``
``filter_duplicate_safetensors_files``): with a ``model.safetensors.index.json`` only the
files its ``weight_map`` names (so Mistral's ``consolidated.safetensors`` beside the
sharded files is not counted twice), else every ``*.safetensors`` in the directory itself.
A file's tensor bytes are its size less the 8-byte header length and the JSON header
(the safetensors layout), read as 8 bytes per file: no file is read further.

Incomplete (a file the index names is missing, or none is there) is said, never guessed:
``checkpoint_bytes`` then does not take the sum as exact.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional

SUFFIX = ".safetensors"
# A safetensors header is JSON describing every tensor: megabytes at most in practice;
# past this the file is not a safetensors file and its whole size is counted.
MAX_HEADER_BYTES = 100 << 20
# More files than any checkpoint has (DeepSeek-V3: 163): past this the listing stops.
MAX_FILES = 4096


def tensor_bytes(path: str) -> Optional[int]:
    """The bytes of a safetensors file's tensors (its size less the headers); None when
    it cannot be read."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            head = handle.read(8)
    except OSError:
        return None
    if len(head) < 8:
        return None
    header = int.from_bytes(head, "little")
    if header > MAX_HEADER_BYTES or 8 + header > size:
        return size
    return size - 8 - header


def safetensors_sizes(
    directory: str, index: Optional[Mapping[str, Any]] = None
) -> Optional[Dict[str, Any]]:
    """``{"files": {name: tensor bytes}, "complete": bool, "where": directory}`` for the
    files vLLM would load from ``directory``; None when it holds no *.safetensors file and
    no index names one (the checkpoint is elsewhere, or in another format)."""
    try:
        present = sorted(n for n in os.listdir(directory) if n.endswith(SUFFIX))[:MAX_FILES]
    except OSError:
        return None
    weight_map = index.get("weight_map") if isinstance(index, Mapping) else None
    wanted = (
        sorted({str(v) for v in weight_map.values()})[:MAX_FILES]
        if isinstance(weight_map, Mapping) and weight_map
        else present
    )
    if not wanted:
        return None
    files: Dict[str, int] = {}
    complete = True
    for name in wanted:
        if os.sep in name or name.startswith(".") or name not in present:
            complete = False
            continue
        got = tensor_bytes(os.path.join(directory, name))
        if got is None:
            complete = False
            continue
        files[name] = got
    return {"files": files, "complete": complete and bool(files), "where": directory}
