"""A container's environment and `$(VAR)` expansion, as the kubelet builds them.

The kubelet (pkg/kubelet/kubelet_pods.go, third_party/forked/golang/expansion):
* ``envFrom`` sources first, in order (a ``prefix`` is prepended to each key), then
  ``env`` entries in order; later definitions replace earlier ones;
* each ``env`` value is expanded against the variables defined before it;
* Service link variables are added last, only for names not already defined;
* ``command`` and ``args`` are expanded against the final environment;
* ``$(NAME)`` becomes the value when NAME is defined and stays literally ``$(NAME)`` when it
  is not; ``$$`` is a literal ``$``; any other ``$`` stays as it is.

Values we cannot know here (Secrets, most downward-API fields, a ConfigMap neither in the
manifest set nor in the cluster) are "unknown": expansion substitutes an opaque marker
for them so the caller can tell "unknown" from "wrong".

Budgets: the kubelet expands without limit, so 24 variables that each say ``$(PREV)$(PREV)``
would make 2^24 copies. Here one expanded value is at most MAX_VALUE_CHARS and one
container's expansions together (env, command, args, shell words) at most
MAX_CONTAINER_CHARS; past either the value is an unknown marker that names the reason. The
work is linear in what is produced, so a hostile manifest costs milliseconds and a few MB,
and its rules say "unknown" (a warning), never crash.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Wraps the name of a variable whose value is unknown. NUL never occurs in a manifest
# string that reaches a container, so it cannot collide with user text.
_MARK = "\x00"
_MARKED = re.compile(r"\x00\$\(([^\x00]*)\)\x00")


MAX_VALUE_CHARS = 256 * 1024
MAX_CONTAINER_CHARS = 4 * 1024 * 1024


def unknown_marker(name: str) -> str:
    return f"{_MARK}$({name}){_MARK}"


_TOO_LONG = f"longer than {MAX_VALUE_CHARS} characters once expanded"


def too_long_marker(what: str) -> str:
    """The marker of a value whose expansion passed MAX_VALUE_CHARS."""
    return unknown_marker(f"{what}: {_TOO_LONG}")


def is_too_long(text: str) -> bool:
    """Holds a too-long marker: whatever embeds it is too long as well (and says so once,
    rather than doubling the markers)."""
    return _MARK in text and _TOO_LONG in text


class Budget:
    """Characters one container's expansions may still produce (MAX_CONTAINER_CHARS)."""

    def __init__(self, chars: int = MAX_CONTAINER_CHARS) -> None:
        self.left = chars

    def charge(self, chars: int) -> bool:
        """Take ``chars``; False (and nothing taken) when fewer are left."""
        if chars > self.left:
            self.left = 0
            return False
        self.left -= chars
        return True

    @staticmethod
    def exhausted_marker(what: str) -> str:
        return unknown_marker(
            f"{what}: not expanded, the container's expansions passed "
            f"{MAX_CONTAINER_CHARS} characters"
        )


def has_unknown(text: str) -> bool:
    return _MARK in text


def unknown_names(text: str) -> list[str]:
    return _MARKED.findall(text)


def display(text: str) -> str:
    """The text as a user would recognise it: markers shown as $(NAME), and shell parts
    that stayed unknown (``$((X*8))``, ``$?``) as written."""
    return _MARKED.sub(lambda m: m.group(1) if m.group(1)[:1] == "$" else f"$({m.group(1)})", text)


def expand(
    text: str,
    lookup: Callable[[str], str | None],
    budget: Budget | None = None,
    what: str = "value",
) -> str:
    """Kubernetes `$(VAR)` expansion. ``lookup`` returns None for undefined names.

    The result is at most MAX_VALUE_CHARS long and is charged to ``budget``; past either
    it is an unknown marker naming ``what`` and the reason.
    """
    if "$" not in text:
        return text
    if budget is not None and budget.left == 0:
        return budget.exhausted_marker(what)
    out: list[str] = []
    size = 0
    i, n = 0, len(text)
    while i < n:
        j = text.find("$", i)
        if j < 0 or j + 1 >= n:  # no more references ("$" at the very end stays as is)
            out.append(text[i:])
            size += n - i
            break
        out.append(text[i:j])
        size += j - i
        nxt = text[j + 1]
        if nxt == "$":  # escaped operator
            piece, i = "$", j + 2
        elif nxt == "(":
            close = text.find(")", j + 2)
            if close < 0:  # incomplete reference: kept as is
                piece, i = "$(", j + 2
            else:
                name = text[j + 2 : close]
                value = lookup(name)
                if value is not None and is_too_long(value):
                    return too_long_marker(what)
                piece, i = (f"$({name})" if value is None else value), close + 1
        else:
            piece, i = "$" + nxt, j + 2
        out.append(piece)
        size += len(piece)
        if size > MAX_VALUE_CHARS:
            return too_long_marker(what)
    if budget is not None and not budget.charge(size):
        return budget.exhausted_marker(what)
    return "".join(out)


@dataclass
class ContainerEnv:
    """The environment one container starts with, as far as the manifests tell.

    ``values[name]`` is the text, or an unknown marker. ``open_ended`` is True when an
    ``envFrom`` source could not be read: then any name might be defined.
    ``paths[name]`` is the manifest path of the definition.
    """

    values: dict[str, str] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)
    open_ended: bool = False
    explicit: set[str] = field(default_factory=set)  # defined by env/envFrom, not links
    budget: Budget = field(default_factory=Budget)  # what expansions may still produce

    def lookup(self, name: str) -> str | None:
        if name in self.values:
            return self.values[name]
        return unknown_marker(name) if self.open_ended else None


ConfigMapGetter = Callable[[str], Mapping[str, Any] | None]  # name -> ConfigMap, or None


def no_config_map(name: str) -> Mapping[str, Any] | None:
    """The getter of a caller that reads no ConfigMaps (the manifest alone)."""
    return None


def _configmap_data(cm: Mapping[str, Any] | None) -> dict[str, str] | None:
    if cm is None:
        return None
    data = cm.get("data")
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        return None
    return {str(k): str(v) for k, v in data.items()}


def _field_ref_value(field_path: object, namespace: str | None) -> str | None:
    if field_path == "metadata.namespace" and namespace:
        return namespace
    return None


def build_env(
    container: Mapping[str, Any],
    path: str,
    *,
    namespace: str | None,
    config_map: ConfigMapGetter,
    injected: Mapping[str, str] | None = None,
    service_links: Mapping[str, str] | None = None,
) -> ContainerEnv:
    """The container's environment. ``injected``: variables a controller adds to the pod
    (LeaderWorkerSet's LWS_*); ``service_links``: Service variables the kubelet adds."""
    env = ContainerEnv()
    for name, value in (injected or {}).items():
        env.values[name] = value
        env.paths[name] = path
    env_from = container.get("envFrom")
    if isinstance(env_from, list):
        _add_env_from(env, env_from, path, config_map)
    links = service_links or {}

    def defined_so_far(name: str) -> str | None:
        # env values may refer to earlier variables and to Service link variables
        found = env.lookup(name)
        if found is None or (has_unknown(found) and name in links):
            return links.get(name, found)
        return found

    entries = container.get("env")
    if isinstance(entries, list):
        for i, entry in enumerate(entries):
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                _add_env_entry(
                    env,
                    entry,
                    f"{path}.env[{i}]",
                    defined_so_far=defined_so_far,
                    namespace=namespace,
                    config_map=config_map,
                )
    for name, value in links.items():
        if name not in env.values:
            env.values[name] = value
    return env


def _add_env_from(
    env: ContainerEnv, env_from: list[Any], path: str, config_map: ConfigMapGetter
) -> None:
    """``envFrom``: every key of a ConfigMap we can see; anything else makes the env open."""
    for i, source in enumerate(env_from):
        if not isinstance(source, Mapping):
            continue
        prefix = str(source.get("prefix") or "")
        ref = source.get("configMapRef")
        data = None
        if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
            data = _configmap_data(config_map(ref["name"]))
        if data is None:
            # a Secret, or a ConfigMap we cannot see: any name may come from it
            env.open_ended = True
            continue
        for key, value in data.items():
            env.values[prefix + key] = value
            env.paths[prefix + key] = f"{path}.envFrom[{i}]"
            env.explicit.add(prefix + key)


def _add_env_entry(
    env: ContainerEnv,
    entry: Mapping[str, Any],
    path: str,
    *,
    defined_so_far: Callable[[str], str | None],
    namespace: str | None,
    config_map: ConfigMapGetter,
) -> None:
    """One ``env`` entry: a value ($(VAR) expanded against what is defined so far) or a
    valueFrom; an optional key that is absent leaves the variable unset."""
    name = entry["name"]
    env.explicit.add(name)
    env.paths[name] = path
    if "valueFrom" not in entry or entry.get("value") is not None:
        raw = entry.get("value")
        text = "" if raw is None else str(raw)
        env.values[name] = expand(text, defined_so_far, env.budget, name)
        return
    found = _value_from(entry.get("valueFrom"), name, namespace, config_map)
    if found is None:  # an optional key that is absent: the variable is not set
        env.explicit.discard(name)
        env.paths.pop(name, None)
        return
    env.values[name] = found


def _value_from(
    source: object, name: str, namespace: str | None, config_map: ConfigMapGetter
) -> str | None:
    if isinstance(source, Mapping):
        ref = source.get("configMapKeyRef")
        if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
            data = _configmap_data(config_map(ref["name"]))
            key = ref.get("key")
            if data is not None and isinstance(key, str):
                if key in data:
                    return data[key]
                if ref.get("optional") is True:
                    return None
        field_ref = source.get("fieldRef")
        if isinstance(field_ref, Mapping):
            value = _field_ref_value(field_ref.get("fieldPath"), namespace)
            if value is not None:
                return value
    return unknown_marker(name)
