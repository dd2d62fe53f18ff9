"""Finding a model's config files: a directory, the Hugging Face cache, or the Hub.

The imperative shell around ``modelfacts``: it reads files and (only at run time, in the
pod) asks the Hub, always with a short bounded timeout. Every failure becomes a reason
string, never an exception, so the model rules say "unknown" instead of crashing.

Order at run time, as vLLM itself resolves ``--model``:

1. the model is a directory (a mounted volume): its files;
2. the Hugging Face cache: ``HF_HUB_CACHE``, else ``HF_HOME``/hub, else
   ``~/.cache/huggingface/hub``; the snapshot ``refs/main`` points to (else the newest);
3. the Hub API at ``HF_ENDPOINT`` (default https://huggingface.co) with ``HF_TOKEN`` as a
   bearer token: ``/<org>/<name>/resolve/main/<file>``. Skipped when ``HF_HUB_OFFLINE``
   is set, as vLLM and huggingface_hub skip it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from preflight_contract.modelfacts import CONFIG, HF_QUANT, INDEX, MODEL_FILES, SAFETENSORS_SIZES
from preflight_contract.weightfiles import safetensors_sizes

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT_S = 5.0
# An index file lists every tensor; a 1 TB model's is a few MB. Past this it is not ours.
MAX_FILE_BYTES = 32 << 20

Files = Dict[str, Any]
ModelLookup = Callable[[str], Optional[Mapping[str, Any]]]


def read_model_dir(path: str) -> Tuple[Optional[Files], str]:
    """The model files present in a directory, parsed; (None, why) without config.json."""
    files: Files = {}
    for name in MODEL_FILES:
        full = os.path.join(path, name)
        if not os.path.isfile(full):
            continue
        try:
            if os.path.getsize(full) > MAX_FILE_BYTES:
                continue
            with open(full, encoding="utf-8") as handle:
                files[name] = json.load(handle)
        except (OSError, ValueError) as exc:
            if name == CONFIG:
                return None, f"{full} cannot be read: {exc}"
    if CONFIG not in files:
        return None, f"no config.json in {path}"
    # the checkpoint's own size, when its files are here (modelfacts.checkpoint_bytes)
    sizes = safetensors_sizes(path, files.get(INDEX))
    if sizes is not None:
        files[SAFETENSORS_SIZES] = sizes
    return files, path


def is_repo_id(model: str) -> bool:
    parts = model.split("/")
    return (
        len(parts) == 2
        and all(parts)
        and not model.startswith((".", "/", "~"))
        and all(p not in (".", "..") for p in parts)
    )


def directory_lookup(root: str) -> ModelLookup:
    """``lint --model-config DIR``: DIR/<org>/<name>/config.json by Hub repo id; a model
    given as a path is looked up by its path under DIR, then its last two parts, then its
    base name."""

    def lookup(model: str) -> Optional[Mapping[str, Any]]:
        clean = model.strip().rstrip("/")
        parts = [p for p in clean.split("/") if p and p not in (".", "..")]
        candidates = ["/".join(parts)] if parts else []
        if len(parts) > 2:
            candidates.append("/".join(parts[-2:]))
        if len(parts) > 1:
            candidates.append(parts[-1])
        for rel in candidates:
            path = os.path.join(root, rel)
            if os.path.isdir(path):
                files, _ = read_model_dir(path)
                if files is not None:
                    return files
        return None

    return lookup


def cache_dirs(environ: Mapping[str, str]) -> list[str]:
    """Where huggingface_hub keeps its cache, by its own precedence."""
    if environ.get("HF_HUB_CACHE"):
        return [environ["HF_HUB_CACHE"]]
    if environ.get("HF_HOME"):
        return [os.path.join(environ["HF_HOME"], "hub")]
    home = environ.get("HOME") or os.path.expanduser("~")
    return [os.path.join(home, ".cache", "huggingface", "hub")]


def read_cache(model: str, environ: Mapping[str, str]) -> Tuple[Optional[Files], str]:
    folder = "models--" + model.replace("/", "--")
    reasons = []
    for cache in cache_dirs(environ):
        repo = os.path.join(cache, folder)
        snapshots = os.path.join(repo, "snapshots")
        if not os.path.isdir(snapshots):
            reasons.append(f"not in the cache {cache}")
            continue
        chosen = None
        try:
            with open(os.path.join(repo, "refs", "main"), encoding="utf-8") as handle:
                chosen = os.path.join(snapshots, handle.read().strip())
        except OSError:
            entries = [os.path.join(snapshots, e) for e in os.listdir(snapshots)]
            entries = [e for e in entries if os.path.isdir(e)]
            chosen = max(entries, key=os.path.getmtime) if entries else None
        if chosen and os.path.isdir(chosen):
            files, why = read_model_dir(chosen)
            if files is not None:
                return files, f"Hugging Face cache {chosen}"
            reasons.append(why)
    return None, "; ".join(reasons)


def _get_json(url: str, token: Optional[str], timeout_s: float) -> Tuple[Optional[Any], str]:
    # imported here: urllib.request costs ~20 ms at start-up (measured on an H200 host,
    # docs/PERFORMANCE.md), and most checks never ask the Hub
    import urllib.error  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415

    request = urllib.request.Request(url, headers={"User-Agent": "vllm-preflight"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read(MAX_FILE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        return None, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return None, f"{reason}"
    if len(body) > MAX_FILE_BYTES:
        return None, "too large"
    try:
        return json.loads(body.decode("utf-8")), ""
    except ValueError as exc:
        return None, f"not JSON: {exc}"


def fetch_hub(
    model: str, environ: Mapping[str, str], timeout_s: float = DEFAULT_TIMEOUT_S
) -> Tuple[Optional[Files], str]:
    """The model's files from the Hub (or a mirror at HF_ENDPOINT), within ``timeout_s``
    in all; (None, why) on any failure."""
    if not is_repo_id(model):
        return None, f"{model!r} is not a Hub repo id"
    if environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return None, "HF_HUB_OFFLINE is set"
    endpoint = (environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    token = environ.get("HF_TOKEN") or environ.get("HUGGING_FACE_HUB_TOKEN")
    started = time.monotonic()
    import urllib.parse  # noqa: PLC0415  (see _get_json)

    quoted = urllib.parse.quote(model, safe="/")
    files: Files = {}
    for name in (CONFIG, HF_QUANT, INDEX):
        left = timeout_s - (time.monotonic() - started)
        if left <= 0:
            break
        data, why = _get_json(f"{endpoint}/{quoted}/resolve/main/{name}", token, left)
        if data is None and name == CONFIG:
            return None, f"{endpoint}/{quoted}/resolve/main/{CONFIG}: {why}"
        if data is not None:
            files[name] = data
    return files, f"{endpoint}/{quoted}"


def find_model(
    model: str, environ: Mapping[str, str], timeout_s: float = DEFAULT_TIMEOUT_S
) -> Tuple[Optional[Files], str]:
    """The model's files from wherever vLLM would take them; (files, where) or
    (None, why not)."""
    reasons = []
    expanded = os.path.expanduser(model)
    if os.path.isdir(expanded):
        return read_model_dir(expanded)
    if not is_repo_id(model):
        return None, f"{model} is neither a directory here nor a Hub repo id"
    files, why = read_cache(model, environ)
    if files is not None:
        return files, why
    reasons.append(why)
    files, where = fetch_hub(model, environ, timeout_s)
    if files is not None:
        return files, where
    reasons.append(where)
    return None, "; ".join(r for r in reasons if r)


__all__ = [
    "DEFAULT_TIMEOUT_S",
    "INDEX",
    "FoundModel",
    "collect_model",
    "directory_lookup",
    "fetch_hub",
    "find_model",
    "read_cache",
    "read_model_dir",
]


@dataclass
class FoundModel:
    """The model the pod's vLLM will serve, and what could be read of it (for Facts)."""

    model: str
    files: Optional[Files] = None
    where: str = ""  # where the files came from, or why there are none
    ms: float = 0.0
    # vLLM's own switches that change a model rule (VLLM_ALLOW_LONG_MAX_MODEL_LEN)
    flags: Dict[str, str] = field(default_factory=dict)


def collect_model(
    model: str, environ: Mapping[str, str], timeout_s: float = DEFAULT_TIMEOUT_S
) -> FoundModel:
    """find_model as a fact: never raises, times itself."""
    started = time.perf_counter()
    try:
        files, where = find_model(model, environ, timeout_s)
    except Exception as exc:  # the contract: unknown, never a crash
        files, where = None, f"could not look for the model: {exc!r}"
    flags = {k: environ[k] for k in ("VLLM_ALLOW_LONG_MAX_MODEL_LEN",) if k in environ}
    ms = round((time.perf_counter() - started) * 1000.0, 1)
    return FoundModel(model, files, where, ms, flags)
