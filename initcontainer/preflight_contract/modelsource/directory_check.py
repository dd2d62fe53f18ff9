"""Will vLLM find the weights in a directory: ``Readiness`` (the 'model-source' check's
answer), the safetensors index and headers read within bounds, and ``check_directory``
(config.json, the index, every shard present and complete, a tokenizer).

Separate from the cache and Hub checks (``source_check``), which call it on a cached
snapshot as on a mounted directory.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from preflight_contract.modelfacts import CONFIG, INDEX
from preflight_contract.modelsource.find import MAX_FILE_BYTES

SCHEMES = ("s3://", "gs://", "pvc://", "oci://", "azure://", "hf://", "http://", "https://")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tekken.json", "vocab.json", "spiece.model")
ST_INDEX = INDEX
BIN_INDEX = "pytorch_model.bin.index.json"
SINGLE_WEIGHTS = ("model.safetensors", "consolidated.safetensors", "pytorch_model.bin")
# A safetensors header is at most 100 MB (the format's own limit); past it the file is
# not one.
MAX_HEADER_BYTES = 100_000_000
READY_PASS, READY_WARN, READY_FAIL, READY_SKIP = "pass", "warn", "fail", "skip"
TRUTHY = ("1", "true", "yes", "on")


@dataclass
class Readiness:
    """The answer to "will vLLM find the weights?": a status of preflight_contract.
    verdicts (pass, warn, fail, skip), the sentence, the fix, the evidence."""

    status: str
    message: str
    fix: str = ""
    evidence: Dict[str, Any] = field(default_factory=dict)
    ms: float = 0.0


def _safetensors_size(path: str) -> Tuple[Optional[int], str]:
    """The size a safetensors file must have (8 + header + the end of its last tensor),
    from its header; (None, why) when the header cannot be read."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                return None, "shorter than a safetensors header"
            length = int.from_bytes(head, "little")
            if length <= 0 or length > MAX_HEADER_BYTES:
                return None, f"header length {length} is not a safetensors header"
            raw = handle.read(length)
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or exc}"
    if len(raw) < length:
        return None, "truncated inside its header"
    try:
        header = json.loads(raw.decode("utf-8"))
    except ValueError:
        return None, "its header is not JSON"
    end = 0
    for name, entry in header.items() if isinstance(header, dict) else []:
        if name == "__metadata__" or not isinstance(entry, dict):
            continue
        offsets = entry.get("data_offsets")
        if isinstance(offsets, list) and len(offsets) == 2 and isinstance(offsets[1], int):
            end = max(end, offsets[1])
    return 8 + length + end, ""


@dataclass
class _WeightList:
    """The weight files vLLM will open, where that list came from, the index's
    total_size (the sum of the tensors' bytes, None when not given), a problem."""

    names: List[str]
    listed_by: str
    total_size: Optional[int] = None
    problem: Optional[str] = None


def _read_index(full: str) -> Tuple[Optional[Any], str]:
    try:
        if os.path.getsize(full) > MAX_FILE_BYTES:
            return None, f"{full} is larger than {MAX_FILE_BYTES >> 20} MiB"
        with open(full, encoding="utf-8") as handle:
            return json.load(handle), ""
    except (OSError, ValueError) as exc:
        return None, f"{full} cannot be read: {exc}"


def _shards(path: str, known_index: Optional[Mapping[str, Any]] = None) -> _WeightList:
    """The weight files of a directory, from its index (``known_index``: the
    safetensors index already parsed for the model rules, not read twice)."""
    for index_name in (ST_INDEX, BIN_INDEX):
        full = os.path.join(path, index_name)
        if not os.path.isfile(full):
            continue
        data: Optional[Any] = known_index if index_name == ST_INDEX else None
        if data is None:
            data, why = _read_index(full)
            if data is None:
                return _WeightList([], index_name, problem=why)
        weight_map = data.get("weight_map") if isinstance(data, Mapping) else None
        if not isinstance(weight_map, Mapping) or not weight_map:
            return _WeightList([], index_name, problem=f"{full} has no weight_map")
        metadata = data.get("metadata") if isinstance(data, Mapping) else None
        total = metadata.get("total_size") if isinstance(metadata, Mapping) else None
        names = sorted({str(v) for v in weight_map.values()})
        return _WeightList(names, index_name, total if isinstance(total, int) else None)
    present = [n for n in SINGLE_WEIGHTS if os.path.isfile(os.path.join(path, n))]
    if present:
        return _WeightList(present[:1], present[0])
    try:
        loose = sorted(n for n in os.listdir(path) if n.endswith(".safetensors"))
    except OSError:
        loose = []
    return _WeightList(loose, "*.safetensors")


def _header_length(path: str) -> Optional[int]:
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
    except OSError:
        return None
    return int.from_bytes(head, "little") if len(head) == 8 else None


# --load-format values that read the checkpoint's *.safetensors / *.bin files; the others
# (dummy, runai_streamer, tensorizer, sharded_state, gguf, bitsandbytes, ...) read other
# files or none, and the weights are then not checked here
WEIGHT_FORMATS = (None, "auto", "safetensors", "pt", "fastsafetensors")


def _config_problem(path: str) -> Tuple[str, Optional[Readiness]]:
    """(the config file's name, a Readiness when there is none)."""
    if os.path.isfile(os.path.join(path, CONFIG)):
        return CONFIG, None
    if os.path.isfile(os.path.join(path, "params.json")):
        return "params.json", None  # Mistral's own format (--config-format mistral)
    try:
        empty = not os.listdir(path)
    except OSError:
        empty = True
    if empty:
        # the check runs before the pod's other init containers: one of them may fill it
        # (a downloader, KServe's storage-initializer)
        return CONFIG, Readiness(
            READY_WARN,
            f"{path} is empty: vLLM cannot load from it unless an init container of the pod "
            "fills it after this check",
            f"copy the model into the volume mounted at {path}, or fill it from an init container",
            {"path": path},
        )
    return CONFIG, Readiness(
        READY_FAIL,
        f"{path} has no config.json: vLLM cannot load the model from it",
        f"copy the model's files into {path} (config.json, the weights, the tokenizer), or "
        "point --model at the directory that holds them",
        {"path": path},
    )


@dataclass
class _Shards:
    missing: List[str] = field(default_factory=list)
    truncated: List[str] = field(default_factory=list)
    unverified: int = 0
    total: int = 0


def _verify(path: str, weights: _WeightList, deadline: float) -> _Shards:
    """Each weight file present; each safetensors one as long as its header says. Fast
    path: the tensors' bytes of every shard (its size less 8 and its header's length, one
    8-byte read each) add up to at least the index's total_size, so none is short. Else
    (or without a total_size) each header is read (until the deadline: the rest are
    counted as not verified) to name the short ones."""
    out = _Shards()
    sizes: Dict[str, int] = {}
    data_bytes = 0
    for name in weights.names:
        try:
            sizes[name] = os.path.getsize(os.path.join(path, name))
        except OSError:
            out.missing.append(name)
            continue
        out.total += sizes[name]
        if name.endswith(".safetensors") and weights.total_size is not None:
            length = _header_length(os.path.join(path, name))
            data_bytes += max(0, sizes[name] - 8 - (length or 0))
    if weights.total_size is not None and data_bytes >= weights.total_size:
        return out
    for name, size in sizes.items():
        if not name.endswith(".safetensors"):
            continue
        if time.monotonic() > deadline:
            out.unverified += 1
            continue
        expected, why = _safetensors_size(os.path.join(path, name))
        if expected is None:
            out.truncated.append(f"{name} ({why})")
        elif size < expected:
            out.truncated.append(f"{name} ({size} of {expected} bytes)")
    return out


def _listed(names: List[str], limit: int) -> str:
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


def check_directory(
    path: str,
    deadline: float,
    tokenizer_given: bool = False,
    load_format: Optional[str] = None,
    known_index: Optional[Tuple[str, Mapping[str, Any]]] = None,
) -> Readiness:
    """config.json, every weight file the index names with its full size, a tokenizer.
    ``known_index``: (directory, its safetensors index) already parsed, not read twice."""
    config_name, problem_config = _config_problem(path)
    if problem_config is not None:
        return problem_config
    if load_format not in WEIGHT_FORMATS:
        return Readiness(
            READY_PASS,
            f"{path}: {config_name} present; the weights are not checked with --load-format "
            f"{load_format}",
            "",
            {"path": path, "load_format": load_format},
        )
    index = known_index[1] if known_index is not None and known_index[0] == path else None
    weights = _shards(path, index)
    shards, listed_by = weights.names, weights.listed_by
    if weights.problem is not None:
        return Readiness(
            READY_FAIL, weights.problem, f"copy {listed_by} into {path} again", {"path": path}
        )
    if not shards:
        return Readiness(
            READY_FAIL,
            f"{path} has a {config_name} but no weights (*.safetensors, pytorch_model.bin)",
            f"copy the weight files into {path}",
            {"path": path},
        )
    found = _verify(path, weights, deadline)
    evidence: Dict[str, Any] = {
        "path": path,
        "weight_files": len(shards),
        "listed_by": listed_by,
        "bytes": found.total,
    }
    if found.missing or found.truncated:
        parts = []
        if found.missing:
            evidence["missing"] = found.missing[:20]
            parts.append(
                f"{len(found.missing)} of the {len(shards)} weight files {listed_by} names "
                f"are missing ({_listed(found.missing, 5)})"
            )
        if found.truncated:
            evidence["truncated"] = found.truncated[:20]
            parts.append(
                f"{len(found.truncated)} {'is' if len(found.truncated) == 1 else 'are'} "
                "shorter than their header says "
                f"({_listed(found.truncated, 3)})"
            )
        return Readiness(
            READY_FAIL,
            f"{path}: " + "; ".join(parts) + ": vLLM fails while loading the weights",
            f"finish copying the model into {path} (the volume or the download that fills it "
            "stopped part way), then restart the pod",
            evidence,
        )
    tokenizer = [n for n in TOKENIZER_FILES if os.path.isfile(os.path.join(path, n))]
    if not tokenizer and not tokenizer_given:
        return Readiness(
            READY_WARN,
            f"{path} holds the config and all {len(shards)} weight files but no tokenizer "
            f"({', '.join(TOKENIZER_FILES)}): vLLM loads its tokenizer from there",
            f"copy the tokenizer files into {path}, or give --tokenizer",
            evidence,
        )
    if found.unverified:
        evidence["not_verified"] = found.unverified
        return Readiness(
            READY_PASS,
            f"{path}: config and all {len(shards)} weight files present; the sizes of "
            f"{found.unverified} were not verified within the deadline",
            "",
            evidence,
        )
    return Readiness(
        READY_PASS,
        f"{path}: {config_name}, all {len(shards)} weight files at their full size "
        f"({found.total / 1e9:.1f} GB) and a tokenizer",
        "",
        evidence,
    )
