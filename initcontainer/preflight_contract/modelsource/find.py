"""Finding a model's config files, in the order vLLM resolves ``--model``: a directory, the
Hugging Face cache, the Hub (``find_model``), each failure a reason string; with the
lookups the operator and lint use (``directory_lookup``, ``fetch_hub``) and the Hub
request that keeps the token to the Hub's own origin (``keeps_credentials``, ``_open``).

Separate from the checks of the weights: this reads the small JSON files the model rules
need, and is what the operator imports.
"""

from __future__ import annotations

import json
import os
import time
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
