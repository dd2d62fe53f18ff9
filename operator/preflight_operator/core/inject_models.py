"""Where the check reads the model (the injection, core/injection.py): the vLLM
container's mounts that hold the model or the Hugging Face cache (copied read-only), and
the pod's init containers that can still write there (PREFLIGHT_MODEL_WRITERS).
"""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Mapping
from typing import Any

from preflight_contract import envnames
from preflight_contract.modelsource import model_writers_value
from preflight_operator.core import constants
from preflight_operator.core.inject_paths import NO_TOKEN_VOLUME, SHM_PATH, TOKEN_MOUNT_PATH
from preflight_operator.core.rules import has_unknown

# Where the checker (preflight_contract.modelsource) looks for a model's files, as vLLM does:
# the model path itself, HF_HUB_CACHE, HF_HOME, or ~/.cache/huggingface.
HF_CACHE_ENV = ("HF_HOME", "HF_HUB_CACHE")
HF_DEFAULT_CACHE = "/.cache/huggingface"


def literal_env(vllm: Mapping[str, Any]) -> dict[str, str]:
    """The container's env entries of a literal value without $( ) references (the last of
    a name wins, as in the kubelet)."""
    out: dict[str, str] = {}
    for e in vllm.get("env") or []:
        if isinstance(e, Mapping) and isinstance(e.get("value"), str) and "$(" not in e["value"]:
            out[str(e.get("name"))] = e["value"]
    return out


def _related(mount_path: str, path: str) -> bool:
    """The mount holds ``path``, or is part of it (a cache's hub/ on its own volume)."""
    mount, wanted = posixpath.normpath(mount_path), posixpath.normpath(path)
    if mount == "/" or wanted == "/":
        return False
    return mount == wanted or wanted.startswith(mount + "/") or mount.startswith(wanted + "/")


def model_mounts(vllm: Mapping[str, Any], model: str | None) -> list[dict[str, Any]]:
    """The vLLM container's mounts that hold the model or the Hugging Face cache, read-only.

    The model counts when it is an absolute path (a mounted directory); HF_HOME and
    HF_HUB_CACHE when the container sets them to a literal path; the default cache is any
    mount at (or inside, or holding) ``<dir>/.cache/huggingface``: the image's HOME is not
    known here. Never the
    API token's path, nor /dev/shm (mounted as before); mountPropagation is dropped (the
    check is not privileged)."""
    wanted: list[str] = []
    if model and model.startswith("/") and not has_unknown(model):
        wanted.append(model)
    env = literal_env(vllm)
    wanted += [env[name] for name in HF_CACHE_ENV if env.get(name, "").startswith("/")]
    if env.get("HOME", "").startswith("/"):
        wanted.append(env["HOME"].rstrip("/") + HF_DEFAULT_CACHE)
    out: list[dict[str, Any]] = []
    for mount in vllm.get("volumeMounts") or []:
        if not isinstance(mount, Mapping) or not isinstance(mount.get("mountPath"), str):
            continue
        path = posixpath.normpath(mount["mountPath"])
        if path == SHM_PATH or _related(path, TOKEN_MOUNT_PATH):
            continue
        if _related(path, constants.MOUNT_PATH):  # our emptyDir's place
            continue
        if mount.get("name") in (constants.VOLUME_NAME, NO_TOKEN_VOLUME):
            continue
        default_cache = (
            path.endswith((HF_DEFAULT_CACHE, "/.cache")) or HF_DEFAULT_CACHE + "/" in path
        )
        if default_cache or any(_related(path, w) for w in wanted):
            copied = {k: copy.deepcopy(v) for k, v in mount.items() if k != "mountPropagation"}
            copied["readOnly"] = True
            out.append(copied)
    return out


# Volumes the pod cannot write: their content at the check is final.
_READ_ONLY_SOURCES = ("configMap", "secret", "downwardAPI", "projected")


def _subpath(mount: Mapping[str, Any]) -> str | None:
    """The part of its volume a mount shows, as a path inside the volume ("" the whole
    volume); None when not known here (a subPathExpr, filled by the kubelet)."""
    if mount.get("subPathExpr"):
        return None
    sub = mount.get("subPath")
    if not isinstance(sub, str) or not sub.strip("/"):
        return ""
    return posixpath.normpath(sub.strip("/"))


def _overlap(a: str | None, b: str | None) -> bool:
    if a is None or b is None or not a or not b:
        return True
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _model_parts(vllm: Mapping[str, Any], model: str | None) -> dict[str, list[str | None]]:
    """Volume name -> the parts of it (paths inside the volume) the check reads the model
    from: a directory --model only (its own volume), else the Hugging Face cache's mounts
    (model_mounts)."""
    directory = bool(model and model.startswith("/") and not has_unknown(model))
    parts: dict[str, list[str | None]] = {}
    for mount in model_mounts(vllm, model):
        name, path, sub = mount.get("name"), posixpath.normpath(mount["mountPath"]), _subpath(mount)
        if not isinstance(name, str):
            continue
        if directory and model is not None:
            if not _related(path, model):
                continue
            inside = posixpath.relpath(posixpath.normpath(model), path)
            if sub is not None and inside != "." and not inside.startswith(".."):
                sub = posixpath.join(sub, inside) if sub else inside
        parts.setdefault(name, []).append(sub)
    return parts


def model_writers(spec: Mapping[str, Any], vllm: Mapping[str, Any], model: str | None) -> list[str]:
    """The pod's init containers (native sidecars too) that can write where the check reads
    the model: they run after the check (OPERATOR_CONTRACT.md), so a partial copy it sees
    may still be finished (an `aws s3 sync`, `gsutil rsync`, `huggingface-cli download`
    into the volume). One counts when it mounts the same volume, not readOnly, over the
    model's part of it: compared inside the volume (subPath), since each container mounts
    it where it likes; a subPathExpr may be any part, so it counts. A volume nobody can
    write (a ConfigMap, a read-only claim) has no writer. In the pod's order, bounded and
    name-checked by model_writers_value."""
    parts = _model_parts(vllm, model)
    for volume in spec.get("volumes") or []:
        name = volume.get("name") if isinstance(volume, Mapping) else None
        if not isinstance(volume, Mapping) or not isinstance(name, str) or name not in parts:
            continue
        sources = [v for k, v in volume.items() if k != "name"]
        if any(k in volume for k in _READ_ONLY_SOURCES) or any(
            isinstance(v, Mapping) and v.get("readOnly") is True for v in sources
        ):
            del parts[name]
    out: list[object] = []
    for container in spec.get("initContainers") or []:
        if not isinstance(container, Mapping):
            continue
        for mount in container.get("volumeMounts") or []:
            if not isinstance(mount, Mapping) or mount.get("readOnly") is True:
                continue
            volume_name = mount.get("name")
            wanted = parts.get(volume_name) if isinstance(volume_name, str) else None
            if wanted and any(_overlap(_subpath(mount), part) for part in wanted):
                out.append(container.get("name"))
                break
    value = model_writers_value(out)
    return value.split(",") if value else []


def model_writers_env(
    env: list[dict[str, Any]], spec: Mapping[str, Any], vllm: Mapping[str, Any], model: str | None
) -> list[dict[str, Any]]:
    """PREFLIGHT_MODEL_WRITERS when the pod has such writers, in place of a value copied
    from the vLLM container's env, before PREFLIGHT_VLLM_ARGS (which stays last)."""
    writers = model_writers(spec, vllm, model)
    if not writers:
        return env
    kept = [e for e in env if e.get("name") != envnames.MODEL_WRITERS]
    at = next((i for i, e in enumerate(kept) if e.get("name") == envnames.VLLM_ARGS), len(kept))
    kept[at:at] = [{"name": envnames.MODEL_WRITERS, "value": ",".join(writers)}]
    return kept
