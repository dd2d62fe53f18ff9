"""The operator's model configs for the model rules at admission, never on the network.

Two opt-in sources, both off by default (``models`` in the operator's config file, read
by ``load_model_sources`` beside ``operatorconfig.load_config``):

* a ``modelConfigs`` ConfigMap (air-gapped clusters): ``models.configMap`` names it, in
  ``models.configMapNamespace`` (default: the release namespace). One key per file:
  ``<org>--<name>.json`` is the model's config.json, ``<org>--<name>.hf_quant_config.json``
  and ``<org>--<name>.model.safetensors.index.json`` the others (Hub repo ids never
  contain ``--``, so the key names the model unambiguously). Values are the files' JSON.
  The weights' size is then the checkpoint's own (exact), not arithmetic over config.json,
  when the index is there (its ``metadata.total_size``) or
  ``<org>--<name>.hub-safetensors.json``: the Hub's per-dtype parameter counts (the
  ``safetensors`` field of the Hub's ``/api/models/<org>/<name>``: ``{"parameters":
  {"BF16": n, ...}}``).
* a fetch from the Hub or a mirror (``models.fetch: true``, ``models.endpoint`` as
  HF_ENDPOINT, the operator's own ``HF_TOKEN``, ``models.timeoutSeconds``), run in a
  background thread; results are kept in memory and, with ``models.cacheDir``, on disk as
  ``<cacheDir>/<org>/<name>/config.json``.

``lookup(model)`` is what the rules call on the webhook's request path: it only reads
what is already here. A miss schedules a fetch (when enabled) and answers None at once,
so the rules say "unknown" for this request and know the model on the next one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from preflight_contract import safejson
from preflight_contract.modelfacts import CONFIG, HF_QUANT, HUB_SAFETENSORS, INDEX
from preflight_contract.modelsource import directory_lookup, fetch_hub, is_repo_id
from preflight_operator.core.operatorconfig import DEFAULT_CONFIG_PATH, ConfigError

logger = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "https://huggingface.co"
# Key suffixes in the ConfigMap, longest first.
_SUFFIXES = (
    (f".{HF_QUANT}", HF_QUANT),
    (f".{INDEX}", INDEX),
    (f".{HUB_SAFETENSORS}", HUB_SAFETENSORS),
    (".json", CONFIG),
)
# A ConfigMap holds at most 1 MiB of data in all (the API server's limit)
MAX_CONFIG_BYTES = 1 << 20
Files = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class ModelSources:
    fetch: bool = False
    endpoint: str = DEFAULT_ENDPOINT
    timeout_seconds: float = 5.0
    cache_dir: str | None = None
    config_map: str | None = None
    config_map_namespace: str | None = None
    # how long a model that could not be fetched is not asked for again
    retry_seconds: float = 300.0

    @property
    def enabled(self) -> bool:
        """Any source configured: only then do the model rules run at admission."""
        return bool(self.fetch or self.config_map or self.cache_dir)


def parse_model_sources(value: Any, where: str = "models") -> ModelSources:
    """``models`` of the operator's config; ValueError names the field and the fix."""
    if value is None:
        return ModelSources()
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected a mapping, got {type(value).__name__}")
    unknown = sorted(
        set(value)
        - {"fetch", "endpoint", "timeoutSeconds", "cacheDir", "configMap", "configMapNamespace",
           "retrySeconds"}
    )  # fmt: skip
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}")
    fetch = value.get("fetch", False)
    if not isinstance(fetch, bool):
        raise ValueError(f"{where}.fetch: expected true or false, got {fetch!r}")
    timeout = value.get("timeoutSeconds", 5.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 60:
        raise ValueError(f"{where}.timeoutSeconds: expected a number of seconds in (0, 60]")
    retry = value.get("retrySeconds", 300.0)
    if isinstance(retry, bool) or not isinstance(retry, (int, float)) or retry < 0:
        raise ValueError(f"{where}.retrySeconds: expected a number of seconds >= 0")
    texts = {}
    for key in ("endpoint", "cacheDir", "configMap", "configMapNamespace"):
        item = value.get(key)
        if item is not None and (not isinstance(item, str) or not item):
            raise ValueError(f"{where}.{key}: expected a non-empty string, got {item!r}")
        texts[key] = item
    endpoint = texts["endpoint"] or DEFAULT_ENDPOINT
    if not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"{where}.endpoint: expected an http(s) URL, got {endpoint!r}")
    return ModelSources(
        fetch=fetch,
        endpoint=endpoint,
        timeout_seconds=float(timeout),
        cache_dir=texts["cacheDir"],
        config_map=texts["configMap"],
        config_map_namespace=texts["configMapNamespace"],
        retry_seconds=float(retry),
    )


def load_model_sources(path: Path | None) -> ModelSources:
    """``models`` of the operator's config file (the file load_config reads)."""
    if path is None:
        if not DEFAULT_CONFIG_PATH.exists():
            return ModelSources()
        path = DEFAULT_CONFIG_PATH
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    try:
        return parse_model_sources(data.get("models") if isinstance(data, Mapping) else None)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def files_from_config_map(data: Mapping[str, Any]) -> dict[str, Files]:
    """Model repo id -> its files, from a modelConfigs ConfigMap's data (bad entries are
    skipped: they make that model unknown, never the webhook fail)."""
    models: dict[str, Files] = {}
    for key, text in data.items():
        if not isinstance(key, str) or not isinstance(text, str) or "--" not in key:
            continue
        for suffix, file_name in _SUFFIXES:  # noqa: B007 (used after the loop)
            if key.endswith(suffix):
                org, _, name = key[: -len(suffix)].partition("--")
                break
        else:
            continue
        if not org or not name:
            continue
        try:
            # bounded (size, depth measured before decoding): this runs in the operator's
            # event loop, when the rules ask for a model and the ConfigMap changed
            parsed = safejson.loads(text, max_bytes=MAX_CONFIG_BYTES)
        except safejson.Rejected as exc:
            logger.warning(
                "modelConfigs: %s is not read (%s: %s); model %s/%s stays unknown",
                key, exc.reason, exc, org, name,
            )  # fmt: skip
            continue
        models.setdefault(f"{org}/{name}", {})[file_name] = parsed
    return {model: files for model, files in models.items() if CONFIG in files}


Fetcher = Callable[[str, Mapping[str, str], float], tuple[Files | None, str]]


class ModelCache:
    """The model lookup of the rules (ClusterLookup.model): never blocks."""

    def __init__(
        self,
        sources: ModelSources,
        config_maps: Callable[[], Iterable[Mapping[str, Any]]] | None = None,
        environ: Mapping[str, str] | None = None,
        fetcher: Fetcher = fetch_hub,
    ) -> None:
        self.sources = sources
        self._config_maps = config_maps
        env = dict(os.environ if environ is None else environ)
        env["HF_ENDPOINT"] = sources.endpoint
        env.pop("HF_HUB_OFFLINE", None)  # fetching was asked for explicitly
        self._environ = env
        self._fetcher = fetcher
        self._lock = threading.Lock()
        self._fetched: dict[str, tuple[float, Files | None, str]] = {}
        self._pending: set[str] = set()
        self._parsed: tuple[str, dict[str, Files]] = ("", {})
        self._pool: ThreadPoolExecutor | None = None
        self._disk = directory_lookup(sources.cache_dir) if sources.cache_dir else None

    # -- the request path -------------------------------------------------------------
    def lookup(self, model: str) -> Mapping[str, Any] | None:
        found = self._from_config_maps(model)
        if found is not None:
            return found
        if not is_repo_id(model):
            return None
        with self._lock:
            entry = self._fetched.get(model)
        if entry is not None and entry[1] is not None:
            return entry[1]
        if self._disk is not None:
            with contextlib.suppress(Exception):
                on_disk = self._disk(model)
                if on_disk is not None:
                    return on_disk
        if self.sources.fetch and (
            entry is None or time.monotonic() - entry[0] >= self.sources.retry_seconds
        ):
            self._schedule(model)
        return None

    def _from_config_maps(self, model: str) -> Mapping[str, Any] | None:
        if self._config_maps is None:
            return None
        try:
            bodies = list(self._config_maps())
        except Exception:
            return None
        version = ",".join(
            str((b.get("metadata") or {}).get("resourceVersion", id(b))) for b in bodies
        )
        with self._lock:
            cached_version, parsed = self._parsed
        if version != cached_version:
            parsed = {}
            for body in bodies:
                data = body.get("data")
                if isinstance(data, Mapping):
                    parsed.update(files_from_config_map(data))
            with self._lock:
                self._parsed = (version, parsed)
        return parsed.get(model.strip().rstrip("/"))

    # -- the background fetch ---------------------------------------------------------
    def _schedule(self, model: str) -> None:
        with self._lock:
            if model in self._pending:
                return
            self._pending.add(model)
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="model-fetch")
            pool = self._pool
        pool.submit(self._fetch, model)

    def _fetch(self, model: str) -> None:
        try:
            files, where = self._fetcher(model, self._environ, self.sources.timeout_seconds)
        except Exception as exc:  # unknown, never fatal
            files, where = None, repr(exc)
        if files is None:
            logger.info(
                "model %s: config not fetched (%s); its model rules stay unknown", model, where
            )
        elif self.sources.cache_dir:
            self._save(model, files)
        with self._lock:
            self._fetched[model] = (time.monotonic(), files, where)
            self._pending.discard(model)

    def _save(self, model: str, files: Files) -> None:
        assert self.sources.cache_dir is not None
        folder = os.path.join(self.sources.cache_dir, *model.split("/"))
        try:
            os.makedirs(folder, exist_ok=True)
            for name, content in files.items():
                with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
                    json.dump(content, handle)
        except OSError as exc:
            logger.warning("model %s: cannot write the cache at %s: %s", model, folder, exc)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """For tests: True once no fetch is pending."""
        deadline = time.monotonic() + timeout
        while True:  # looks at least once (timeout 0: is it idle now?)
            with self._lock:
                if not self._pending:
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
