"""``FoundModel`` and ``collect_model``: ``find_model`` as one fact, with the source check
and the model writers, timed and never raising (what the checker gathers).

Separate because it puts the other parts together (it is the only one that imports them
all).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from preflight_contract import envnames
from preflight_contract.modelfacts import INDEX
from preflight_contract.modelsource.directory_check import Readiness
from preflight_contract.modelsource.find import DEFAULT_TIMEOUT_S, Files, find_model
from preflight_contract.modelsource.source_check import check_source
from preflight_contract.modelsource.writers import parse_model_writers


@dataclass
class FoundModel:
    """The model the pod's vLLM will serve, and what could be read of it (for Facts)."""

    model: str
    files: Optional[Files] = None
    where: str = ""  # where the files came from, or why there are none
    ms: float = 0.0
    # vLLM's own switches that change a model rule (VLLM_ALLOW_LONG_MAX_MODEL_LEN)
    flags: Dict[str, str] = field(default_factory=dict)
    # will vLLM find the weights (check 'model-source'); None when not looked at
    ready: Optional[Readiness] = None
    # the init containers that write the model's volume after the check (PREFLIGHT_MODEL_
    # WRITERS), and why a value given was ignored ("" when none was, or it was read)
    writers: List[str] = field(default_factory=list)
    writers_ignored: str = ""


def _parsed_index(files: Optional[Files], where: str) -> Optional[Tuple[str, Mapping[str, Any]]]:
    """(directory, safetensors index) find_model already read, for check_source."""
    index = files.get(INDEX) if files is not None else None
    if not isinstance(index, Mapping):
        return None
    prefix = "Hugging Face cache "
    return (where[len(prefix) :] if where.startswith(prefix) else where), index


def collect_model(
    model: str,
    environ: Mapping[str, str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    source: Optional[Mapping[str, Any]] = None,
) -> FoundModel:
    """find_model as a fact, then (with ``source``: --revision, --download-dir,
    --tokenizer as model_args holds them) check_source in what is left of ``timeout_s``:
    never raises, times itself."""
    started = time.perf_counter()
    try:
        files, where = find_model(model, environ, timeout_s)
    except Exception as exc:  # the contract: unknown, never a crash
        files, where = None, f"could not look for the model: {exc!r}"
    flags = {k: environ[k] for k in ("VLLM_ALLOW_LONG_MAX_MODEL_LEN",) if k in environ}
    ms = round((time.perf_counter() - started) * 1000.0, 1)
    found = FoundModel(model, files, where, ms, flags)
    found.writers, found.writers_ignored = parse_model_writers(
        environ.get(envnames.MODEL_WRITERS) or ""
    )
    if source is not None:
        left = max(0.05, timeout_s - (time.perf_counter() - started))
        found.ready = check_source(
            model,
            environ,
            left,
            revision=source.get("revision"),
            download_dir=source.get("download_dir"),
            tokenizer=source.get("tokenizer"),
            load_format=source.get("load_format"),
            known_index=_parsed_index(files, where),
        )
    return found
