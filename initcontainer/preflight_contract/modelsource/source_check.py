"""Will vLLM find the weights of a repo id or a path: the Hugging Face cache (a complete
snapshot), HF_HUB_OFFLINE, the Hub's answers (a missing or gated repo, a refused token)
and the room a download needs, or a path on a volume; ``check_source`` picks which.

Separate from the directory check it stands on: this is the part that asks the Hub and
reads the pod's mounts.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from preflight_contract.modelfacts import CONFIG
from preflight_contract.modelsource.directory_check import (
    READY_FAIL,
    READY_PASS,
    READY_SKIP,
    READY_WARN,
    SCHEMES,
    TRUTHY,
    Readiness,
    check_directory,
)
from preflight_contract.modelsource.find import (
    DEFAULT_ENDPOINT,
    DEFAULT_TIMEOUT_S,
    MAX_FILE_BYTES,
    _open,
    cache_dirs,
    is_repo_id,
)

# -- will vLLM find the weights? (check 'model-source') ----------------------------------
#
# The Hub's answers read here (huggingface/huggingface_hub, src/huggingface_hub/utils/
# _http.py hf_raise_for_status and hf_api.py model_info, commit 01dd37b8): a response's
# ``X-Error-Code`` header is ``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound`` or
# ``GatedRepo``; 401 is returned for a missing repo, and for a private or gated one asked
# without a token; 403 for a token without access. ``GET /api/models/<repo>/revision/<rev>
# ?blobs=true`` gives ``sha``, ``gated`` (false, "auto" or "manual") and ``siblings``
# [{rfilename, size}].


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
