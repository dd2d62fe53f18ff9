"""`--config FILE`: find the file in a ConfigMap mounted into the container.

The file is resolved through the container's volumeMounts (longest mountPath first,
``subPath`` and ``items`` honoured) to a ConfigMap volume or a projected volume's
ConfigMap source, then read from the ConfigMap's ``data``. Anything else (a file baked
into the image, a PVC, a Secret) is "not available here", never a guess.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from preflight_contract.vllm_args import ConfigUnavailable
from preflight_operator.core.rules.kubeenv import ConfigMapGetter


class ConfigResolver:
    """A ``load_config`` callback for parse_vllm_args, bound to one container."""

    def __init__(
        self,
        container: Mapping[str, Any],
        pod_spec: Mapping[str, Any],
        config_map: ConfigMapGetter,
    ) -> None:
        self.container = container
        self.pod_spec = pod_spec
        self.config_map = config_map
        # "ConfigMap/NAME data[KEY]" once a file was found: where its options live
        self.source: str | None = None

    def __call__(self, path: str) -> Mapping[str, object]:
        if not path.startswith("/"):
            workdir = self.container.get("workingDir")
            if not isinstance(workdir, str) or not workdir.startswith("/"):
                raise ConfigUnavailable(f"{path!r} is relative to the image's working directory")
            path = posixpath.join(workdir, path)
        path = posixpath.normpath(path)
        cm_name, key = self._locate(path)
        cm = self.config_map(cm_name)
        if cm is None:
            raise ConfigUnavailable(f"ConfigMap {cm_name!r} is not in the manifests or cluster")
        data = cm.get("data")
        if not isinstance(data, Mapping) or key not in data:
            raise ValueError(f"ConfigMap {cm_name!r} has no key {key!r}")
        self.source = f'ConfigMap/{cm_name} data["{key}"]'
        return _load_yaml(str(data[key]), self.source)

    def _locate(self, path: str) -> tuple[str, str]:
        mounts = self.container.get("volumeMounts")
        volumes = self.pod_spec.get("volumes")
        if not isinstance(mounts, list) or not isinstance(volumes, list):
            raise ConfigUnavailable(f"{path} is not in a mounted ConfigMap")
        candidates = []
        for mount in mounts:
            if not isinstance(mount, Mapping) or not isinstance(mount.get("mountPath"), str):
                continue
            mount_path = posixpath.normpath(mount["mountPath"])
            if path == mount_path or path.startswith(mount_path.rstrip("/") + "/"):
                candidates.append((len(mount_path), mount_path, mount))
        for _, mount_path, mount in sorted(candidates, key=lambda c: -c[0]):
            rel = posixpath.relpath(path, mount_path) if path != mount_path else ""
            sub = mount.get("subPath")
            if isinstance(sub, str) and sub:
                rel = posixpath.join(sub, rel) if rel else sub
            for volume in volumes:
                if isinstance(volume, Mapping) and volume.get("name") == mount.get("name"):
                    found = _in_volume(volume, rel)
                    if found is not None:
                        return found
        raise ConfigUnavailable(f"{path} is not in a mounted ConfigMap")


def _in_volume(volume: Mapping[str, Any], rel: str) -> tuple[str, str] | None:
    sources: list[Mapping[str, Any]] = []
    if isinstance(volume.get("configMap"), Mapping):
        sources.append(volume["configMap"])
    projected = volume.get("projected")
    if isinstance(projected, Mapping) and isinstance(projected.get("sources"), list):
        sources += [
            s["configMap"]
            for s in projected["sources"]
            if isinstance(s, Mapping) and isinstance(s.get("configMap"), Mapping)
        ]
    for source in sources:
        name = source.get("name")
        if not isinstance(name, str):
            continue
        items = source.get("items")
        if isinstance(items, list) and items:
            for item in items:
                if isinstance(item, Mapping) and item.get("path") == rel:
                    return name, str(item.get("key"))
            continue
        if rel and "/" not in rel:
            return name, rel
    return None


def _load_yaml(text: str, where: str) -> Mapping[str, object]:
    # imported here, only when a config file is actually read: the webhook path stays lean
    import yaml  # noqa: PLC0415

    from preflight_operator.core.rules import boundedyaml  # noqa: PLC0415

    try:
        content = boundedyaml.load(text)
    except boundedyaml.Refused as exc:
        # over a limit (aliases, depth, size): vLLM would read it (safe_load takes aliases),
        # so it is unknown here, never "invalid"
        raise ConfigUnavailable(f"{where} is not read here: {exc} ({exc.reason})") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{where} is not valid YAML: {exc}") from None
    return content  # type: ignore[no-any-return]
