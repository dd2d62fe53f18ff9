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
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from preflight_contract import envnames
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


_DEFAULT_PORTS = {"http": 80, "https": 443}


def keeps_credentials(old_url: str, new_url: str) -> bool:
    """Whether a redirect from ``old_url`` to ``new_url`` may carry the Authorization
    header: only to the same origin (scheme, host, port), and from http to https on the
    same host with default ports. This is requests' ``Session.should_strip_auth`` (which
    ``rebuild_auth`` calls on every redirect) and what huggingface_hub gets through it:
    the Hub redirects ``resolve/`` of an LFS file to a CDN on another host with a signed
    URL, which needs no token, and a mirror's redirect elsewhere must not receive it.
    urllib's own HTTPRedirectHandler copies every header it was given to any target."""
    import urllib.parse  # noqa: PLC0415  (see _get_json)

    try:
        old, new = urllib.parse.urlsplit(old_url), urllib.parse.urlsplit(new_url)
        old_port, new_port = old.port, new.port
    except ValueError:
        return False
    if old.hostname != new.hostname:
        return False
    if (
        old.scheme == "http"
        and old_port in (80, None)
        and new.scheme == "https"
        and new_port in (443, None)
    ):
        return True
    return old.scheme == new.scheme and (old_port or _DEFAULT_PORTS.get(old.scheme)) == (
        new_port or _DEFAULT_PORTS.get(new.scheme)
    )


def _open(request: Any, timeout_s: float) -> Any:
    """urlopen with a redirect handler that drops credentials on the way to another
    origin (:func:`keeps_credentials`)."""
    import urllib.request  # noqa: PLC0415  (see _get_json)

    class _Redirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(  # type: ignore[no-untyped-def]  # noqa: PLR0917 (urllib's)
            self, req, fp, code, msg, headers, newurl
        ):
            new = super().redirect_request(req, fp, code, msg, headers, newurl)
            if new is not None and not keeps_credentials(req.full_url, new.full_url):
                for name in list(new.headers):
                    if name.lower() in ("authorization", "proxy-authorization") or (
                        "token" in name.lower()
                    ):
                        del new.headers[name]
            return new

    return urllib.request.build_opener(_Redirects).open(request, timeout=timeout_s)


def _get_json(url: str, token: Optional[str], timeout_s: float) -> Tuple[Optional[Any], str]:
    # imported here: urllib.request costs ~20 ms at start-up (measured on an H200 host,
    # docs/PERFORMANCE.md), and most checks never ask the Hub
    import urllib.error  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415

    request = urllib.request.Request(url, headers={"User-Agent": "vllm-preflight"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with _open(request, timeout_s) as response:
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
    "MAX_MODEL_WRITERS",
    "FoundModel",
    "Readiness",
    "check_source",
    "collect_model",
    "directory_lookup",
    "fetch_hub",
    "find_model",
    "model_writers_value",
    "parse_model_writers",
    "read_cache",
    "read_model_dir",
    "written_later",
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


# -- will vLLM find the weights? (check 'model-source') ----------------------------------
#
# The Hub's answers read here (huggingface/huggingface_hub, src/huggingface_hub/utils/
# _http.py hf_raise_for_status and hf_api.py model_info, commit 01dd37b8): a response's
# ``X-Error-Code`` header is ``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound`` or
# ``GatedRepo``; 401 is returned for a missing repo, and for a private or gated one asked
# without a token; 403 for a token without access. ``GET /api/models/<repo>/revision/<rev>
# ?blobs=true`` gives ``sha``, ``gated`` (false, "auto" or "manual") and ``siblings``
# [{rfilename, size}].

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


def cached_snapshot(
    model: str, revision: str, environ: Mapping[str, str], cache: str
) -> Optional[str]:
    """The snapshot directory of ``revision`` in a Hugging Face cache, if there is one."""
    repo = os.path.join(cache, "models--" + model.replace("/", "--"))
    snapshots = os.path.join(repo, "snapshots")
    candidate = os.path.join(snapshots, revision)
    if len(revision) == 40 and os.path.isdir(candidate):
        return candidate
    try:
        with open(os.path.join(repo, "refs", revision), encoding="utf-8") as handle:
            commit = handle.read(100).strip()
    except OSError:
        return None
    chosen = os.path.join(snapshots, commit)
    return chosen if commit and os.path.isdir(chosen) else None


def _free_bytes(path: str) -> Tuple[Optional[str], Optional[int], bool]:
    """(the nearest existing directory, its free bytes, writable)."""
    probe = os.path.abspath(path)
    while probe and not os.path.isdir(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    try:
        stat = os.statvfs(probe)
    except OSError:
        return None, None, False
    return probe, stat.f_bavail * stat.f_frsize, os.access(probe, os.W_OK | os.X_OK)


def on_volume(path: str) -> bool:
    """Whether ``path`` lies on a mounted volume (a mount point other than /). The check
    sees the vLLM container's volumes (the operator mounts them into it, read-only), but
    not necessarily its image: a path missing outside any volume may be in vLLM's image."""
    probe = os.path.abspath(path)
    while True:
        parent = os.path.dirname(probe)
        if parent == probe:
            return False
        if os.path.ismount(probe):
            return True
        probe = parent


def _hub_call(
    url: str, token: Optional[str], timeout_s: float, method: str = "GET"
) -> Tuple[int, Dict[str, str], Optional[Any], str]:
    """(HTTP status or 0 when unreachable, headers, JSON body or None, why)."""
    import urllib.error  # noqa: PLC0415  (see _get_json)
    import urllib.request  # noqa: PLC0415

    request = urllib.request.Request(url, method=method, headers={"User-Agent": "vllm-preflight"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with _open(request, max(0.05, timeout_s)) as response:
            status = response.status
            headers = {k.lower(): v for k, v in response.headers.items()}
            body = response.read(MAX_FILE_BYTES + 1) if method == "GET" else b""
    except urllib.error.HTTPError as exc:
        headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
        return exc.code, headers, None, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return 0, {}, None, f"{getattr(exc, 'reason', exc)}"
    if len(body) > MAX_FILE_BYTES:
        return status, headers, None, "too large"
    try:
        return status, headers, json.loads(body.decode("utf-8")) if body else None, ""
    except ValueError:
        return status, headers, None, "not JSON"


def _download_bytes(siblings: Any) -> Optional[int]:
    """Bytes vLLM downloads: the safetensors weights (else the .bin ones) and the small
    files; Mistral's consolidated.safetensors is skipped when sharded files exist."""
    if not isinstance(siblings, list):
        return None
    sizes: Dict[str, int] = {}
    for entry in siblings:
        if isinstance(entry, dict) and isinstance(entry.get("rfilename"), str):
            size = entry.get("size")
            sizes[entry["rfilename"]] = size if isinstance(size, int) else 0
    st = {n: s for n, s in sizes.items() if n.endswith(".safetensors") and "/" not in n}
    if len(st) > 1:
        st = {n: s for n, s in st.items() if not n.startswith("consolidated")}
    weights = st or {n: s for n, s in sizes.items() if n.endswith((".bin", ".pt")) and "/" not in n}
    small = {
        n: s for n, s in sizes.items() if n.endswith((".json", ".txt", ".model")) and "/" not in n
    }
    return sum(weights.values()) + sum(small.values())


@dataclass(frozen=True)
class _Ask:
    """One Hub repo to ask about, with what the pod's env says of the Hub and the cache."""

    model: str
    revision: str
    endpoint: str
    token: Optional[str]
    token_env: Optional[str]
    cache: str
    cache_env: str
    deadline: float
    timeout_s: float

    @property
    def left(self) -> float:
        return self.deadline - time.monotonic()

    def evidence(self) -> Dict[str, Any]:
        return {"endpoint": self.endpoint, "repo": self.model, "revision": self.revision}


def _cache_env(environ: Mapping[str, str], download_dir: Optional[str]) -> str:
    if download_dir:
        return "--download-dir"
    for name in ("HF_HUB_CACHE", "HF_HOME"):
        if environ.get(name):
            return name
    return "HOME"


def _offline(ask: _Ask, partial: Optional[Readiness]) -> Readiness:
    """HF_HUB_OFFLINE and no complete cached copy: vLLM has nothing to load."""
    status = READY_FAIL if (partial is not None or on_volume(ask.cache)) else READY_WARN
    if partial is not None:
        what = partial.message
    else:
        what = f"there is no cached copy of {ask.model}@{ask.revision} under {ask.cache} "
        what += f"({ask.cache_env})"
    if status == READY_WARN:
        what += " (not on a volume here: a cache inside vLLM's own image is not visible)"
    return Readiness(
        status,
        f"HF_HUB_OFFLINE is set, so vLLM reads only the cache, and {what}",
        f"pre-fill the cache volume at {ask.cache} with {ask.model} (huggingface-cli download "
        f"{ask.model} --revision {ask.revision}), or unset HF_HUB_OFFLINE so vLLM downloads it",
        {"cache": ask.cache, "env": "HF_HUB_OFFLINE"},
    )


def _refused(ask: _Ask, status: int, code: str) -> Optional[Readiness]:
    """The Hub's answer settles it: no such revision, no such repo, or no access."""
    evidence = ask.evidence()
    if code == "RevisionNotFound":
        return Readiness(
            READY_FAIL,
            f"revision {ask.revision!r} of {ask.model} does not exist on {ask.endpoint} "
            f"(HTTP {status})",
            "give a branch, tag or commit that exists (--revision), or drop --revision for main",
            evidence,
        )
    if status in (401, 403) or code == "RepoNotFound":
        who = "without a token" if ask.token is None else f"with the token in {ask.token_env}"
        why = "HF_TOKEN is not set" if ask.token is None else "that token cannot read it"
        evidence["env"] = ask.token_env or "HF_TOKEN"
        return Readiness(
            READY_FAIL,
            f"{ask.endpoint} answers HTTP {status} for {ask.model} {who}: the repo does not "
            f"exist, or it is private and {why}",
            "check the repo id; for a private repo set HF_TOKEN (from a Secret) to a token "
            "that can read it",
            evidence,
        )
    return None


def _gated(ask: _Ask, repo: str, rev: str) -> Optional[Readiness]:
    """A gated repo: its model info is public, its files need a token with access."""
    status, _, _, why = _hub_call(
        f"{ask.endpoint}/{repo}/resolve/{rev}/{CONFIG}", ask.token, ask.left, method="HEAD"
    )
    evidence = {**ask.evidence(), "env": ask.token_env or "HF_TOKEN"}
    if status == 0:
        return Readiness(
            READY_WARN,
            f"{ask.model} is gated and the Hub did not answer the access check in time ({why})",
            "retry; check the network path to the Hub",
            evidence,
        )
    if status not in (401, 403):
        return None
    if ask.token is None:
        return Readiness(
            READY_FAIL,
            f"{ask.model} is a gated repo and HF_TOKEN is not set: the Hub answers HTTP {status}",
            f"accept the model's terms at {ask.endpoint}/{ask.model} with your account, then "
            "set HF_TOKEN from a Secret (env: [{name: HF_TOKEN, valueFrom: {secretKeyRef: "
            "...}}]) in the vLLM container",
            evidence,
        )
    return Readiness(
        READY_FAIL,
        f"{ask.model} is a gated repo and the token in {ask.token_env} has no access to it "
        f"(HTTP {status})",
        f"request access at {ask.endpoint}/{ask.model} with the account of that token, or put "
        f"a token of an account that has access in {ask.token_env}",
        evidence,
    )


def _room(ask: _Ask, info: Mapping[str, Any]) -> Readiness:
    """The cache's free space against the bytes vLLM will download."""
    needed = _download_bytes(info.get("siblings"))
    where, free, writable = _free_bytes(ask.cache)
    # writable here is evidence only: the operator mounts the vLLM container's volumes
    # read-only into the check, so "read-only here" says nothing of vLLM's mount
    evidence = {
        **ask.evidence(),
        "gated": info.get("gated"),
        "cache": ask.cache,
        "download_bytes": needed,
        "free_bytes": free,
        "writable_here": writable,
    }
    if needed and free is not None and free < needed:
        return Readiness(
            READY_FAIL,
            f"{ask.model}@{ask.revision} needs {needed / 1e9:.1f} GB downloaded into "
            f"{ask.cache} ({ask.cache_env}), but {where} has {free / 1e9:.1f} GB free",
            f"give the cache volume at least {needed / 1e9 * 1.1:.0f} GB, or pre-fill it",
            evidence,
        )
    size = f"{needed / 1e9:.1f} GB to download" if needed else "sizes not given"
    gated = " (gated; the token has access)" if info.get("gated") else ""
    free_text = f"{free / 1e9:.0f} GB free" if free is not None else "free space unknown"
    return Readiness(
        READY_PASS,
        f"{ask.model}@{ask.revision} is on {ask.endpoint}{gated}; {size}, {free_text} in "
        f"{ask.cache}",
        "",
        evidence,
    )


def check_hub(
    model: str,
    revision: str,
    environ: Mapping[str, str],
    timeout_s: float,
    *,
    download_dir: Optional[str] = None,
    tokenizer_given: bool = False,
    load_format: Optional[str] = None,
    known_index: Optional[Tuple[str, Mapping[str, Any]]] = None,
) -> Readiness:
    """A Hub repo id: a complete cached copy needs nothing else; else the Hub must answer,
    the revision exist, a gated repo accept the token, the cache take the download."""
    token_env = next((k for k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN") if environ.get(k)), None)
    ask = _Ask(
        model=model,
        revision=revision,
        endpoint=(environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/"),
        token=environ.get(token_env) if token_env else None,
        token_env=token_env,
        cache=download_dir or cache_dirs(environ)[0],
        cache_env=_cache_env(environ, download_dir),
        deadline=time.monotonic() + timeout_s,
        timeout_s=timeout_s,
    )
    snapshot = cached_snapshot(model, revision, environ, ask.cache)
    partial: Optional[Readiness] = None
    if snapshot is not None:
        found = check_directory(snapshot, ask.deadline, tokenizer_given, load_format, known_index)
        if found.status in (READY_PASS, READY_WARN):
            found.message = f"complete cached copy of {model}@{revision}: {found.message}"
            found.evidence["cache"] = ask.cache
            return found
        partial = found
    if environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUTHY:
        return _offline(ask, partial)
    import urllib.parse  # noqa: PLC0415  (see _get_json)

    repo = urllib.parse.quote(model, safe="/")
    rev = urllib.parse.quote(revision, safe="")
    status, headers, info, why = _hub_call(
        f"{ask.endpoint}/api/models/{repo}/revision/{rev}?blobs=true", ask.token, ask.left
    )
    if status == 0:
        return Readiness(
            READY_WARN,
            f"the Hub at {ask.endpoint} did not answer within {timeout_s:.1f} s ({why}) and "
            f"there is no complete cached copy of {model} under {ask.cache}: vLLM will try to "
            "download it",
            "let the pod reach the Hub (HF_ENDPOINT, a proxy, the network policy), or pre-fill "
            f"the cache at {ask.cache}",
            ask.evidence(),
        )
    refused = _refused(ask, status, headers.get("x-error-code", ""))
    if refused is not None:
        return refused
    if status != 200 or not isinstance(info, dict):
        return Readiness(
            READY_WARN,
            f"{ask.endpoint} answered HTTP {status} ({why or 'unexpected body'}) for {model}",
            "retry; if it persists, check HF_ENDPOINT",
            ask.evidence(),
        )
    if info.get("gated"):
        denied = _gated(ask, repo, rev)
        if denied is not None:
            return denied
    return _room(ask, info)


def check_source(
    model: str,
    environ: Mapping[str, str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    revision: Optional[str] = None,
    download_dir: Optional[str] = None,
    tokenizer: Optional[str] = None,
    load_format: Optional[str] = None,
    known_index: Optional[Tuple[str, Mapping[str, Any]]] = None,
) -> Readiness:
    """Will vLLM find the weights of ``model``? Never raises; bounded by ``timeout_s``.
    ``revision``, ``download_dir``, ``tokenizer`` and ``load_format`` are vLLM's options
    of those names, as written; ``known_index`` (directory, safetensors index) one the
    model rules already parsed."""
    started = time.perf_counter()
    options = {"revision": revision, "download_dir": download_dir, "tokenizer": tokenizer}
    try:
        ready = _check_source(
            model, environ, timeout_s, options, load_format=load_format, known_index=known_index
        )
    except Exception as exc:  # the contract: unknown, never a crash
        ready = Readiness(READY_WARN, f"the model source could not be checked: {exc!r}")
    ready.ms = round((time.perf_counter() - started) * 1000.0, 1)
    return ready


def _check_source(
    model: str,
    environ: Mapping[str, str],
    timeout_s: float,
    options: Mapping[str, Optional[str]],
    *,
    load_format: Optional[str] = None,
    known_index: Optional[Tuple[str, Mapping[str, Any]]] = None,
) -> Readiness:
    tokenizer = options.get("tokenizer")
    lowered = model.lower()
    for scheme in SCHEMES:
        if lowered.startswith(scheme):
            return Readiness(
                READY_SKIP,
                f"the model is {model}: fetched by a loader or controller ({scheme}), not checked "
                "here",
                "",
                {"scheme": scheme},
            )
    expanded = os.path.expanduser(model)
    deadline = time.monotonic() + timeout_s
    if os.path.isdir(expanded):
        return check_directory(expanded, deadline, bool(tokenizer), load_format, known_index)
    if os.path.isfile(expanded):
        return Readiness(READY_PASS, f"{expanded} is a file (a GGUF model): present")
    if not is_repo_id(model) and not on_volume(expanded):
        return Readiness(
            READY_SKIP,
            f"--model {model} is not visible here and lies on no volume: it may be inside "
            "vLLM's own image, not checked",
            "",
            {"path": model},
        )
    if not is_repo_id(model):
        # on a volume, but perhaps filled by an init container that runs after the check
        return Readiness(
            READY_WARN,
            f"--model {model} does not exist on the volume mounted there (and is not a Hub "
            "repo id): vLLM cannot load it unless an init container of the pod creates it "
            "after this check",
            "mount the volume that holds the model at that path (volumeMounts), or fix the path",
            {"path": model},
        )
    return check_hub(
        model,
        options.get("revision") or "main",
        environ,
        timeout_s,
        download_dir=options.get("download_dir"),
        tokenizer_given=bool(tokenizer),
        load_format=load_format,
        known_index=known_index,
    )


# -- written after the check (PREFLIGHT_MODEL_WRITERS) -----------------------------------
#
# The injected check runs before every init container of the pod (docs/dev/
# OPERATOR_CONTRACT.md "Injected init containers"). One that mounts the model's volume
# writable (a downloader: `aws s3 sync`, `gsutil rsync`, `huggingface-cli download`, a copy
# from a PVC; a native sidecar too) runs after it and may still add or finish the files:
# what the check sees there is not the copy vLLM will load. The injector names those
# containers (preflight_operator/core/inject_models.py model_writers).

# A container's name: an RFC 1123 label, the API server's rule for every container.
_CONTAINER_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
# The first names are enough to say who writes: a pod with more is named by its first 8.
MAX_MODEL_WRITERS = 8
# 8 names of at most 63 characters, with their commas (and some spaces)
MAX_MODEL_WRITERS_CHARS = 8 * 64 + 64


def model_writers_value(names: Iterable[object]) -> str:
    """The injector's value: the names that are container names, in order, each once, at
    most MAX_MODEL_WRITERS of them ("" for none)."""
    out: List[str] = []
    for name in names:
        if isinstance(name, str) and _CONTAINER_NAME.match(name) and name not in out:
            out.append(name)
            if len(out) == MAX_MODEL_WRITERS:
                break
    return ",".join(out)


def parse_model_writers(text: str) -> Tuple[List[str], str]:
    """The checker's reading: (the names, "") or ([], why the value was ignored). Only a
    list of container names is taken: the value may come from the pod's own env (as
    PREFLIGHT_SKIP may), and is quoted into the report."""
    if not text.strip():
        return [], ""
    if len(text) > MAX_MODEL_WRITERS_CHARS:
        return [], f"{len(text)} characters, more than {MAX_MODEL_WRITERS_CHARS}"
    names = [name.strip() for name in text.split(",")]
    if len(names) > MAX_MODEL_WRITERS:
        return [], f"{len(names)} names, more than {MAX_MODEL_WRITERS}"
    for name in names:
        if not _CONTAINER_NAME.match(name):
            return [], f"{ascii(name)[:40]} is not a container name"
    return names, ""


def written_later(ready: Readiness, writers: Sequence[str]) -> Readiness:
    """A fail when ``writers`` (init containers of the pod) write the model's volume after
    the check: a warning that names them, with what was seen.

    Every fail ``check_source`` makes rests on what the volume holds now, which a later
    copy changes: a directory's files (no config.json, an index not (yet) readable, no
    weights, a missing or short shard), a cache partial or absent under HF_HUB_OFFLINE,
    and, for a Hub repo id read through a cache on such a volume, the Hub's refusals and
    the room for a download, which a complete cached copy makes moot (check_hub passes a
    complete copy without asking the Hub, as vLLM loads it). So each becomes a warning;
    none is kept as a fail. A pass stays a pass (the copy is complete already)."""
    if ready.status != READY_FAIL or not writers:
        return ready
    names = ", ".join(writers)
    who = (
        f"init container {names} of the pod writes"
        if len(writers) == 1
        else (f"init containers {names} of the pod write")
    )
    return Readiness(
        READY_WARN,
        f"not judged: the {who} the volume the model is read from after this check, so the "
        f"files seen now are not the ones vLLM will load; as they are now: {ready.message}",
        f"nothing to do if {names} finish{'es' if len(writers) == 1 else ''} the copy; if "
        f"vLLM then fails while loading, read {'its' if len(writers) == 1 else 'their'} logs "
        f"({ready.fix})",
        {**ready.evidence, "writers": list(writers), "seen": READY_FAIL},
        ready.ms,
    )
