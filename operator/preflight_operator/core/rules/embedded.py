"""Pod specs embedded in objects of any kind, and whether one runs vLLM.

Many custom resources carry a pod spec or pod template somewhere inside (KServe's
InferenceService at ``spec.predictor``, KubeRay's RayService at
``spec.rayClusterConfig.headGroupSpec.template.spec``, Knative Services, Argo Workflows...).
Rather than a table of every CRD, this finds them by shape: a mapping with a ``containers``
list of mappings that have an ``image`` or a ``command``. ``lint`` lists such objects as
"kind not checked"; the rules engine can use the same finder to judge unknown kinds.

Pure and bounded: at most MAX_DEPTH levels deep and MAX_NODES mappings and lists visited,
so a hostile object costs the same as an ordinary one (one walk, _walk, serves both searches).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from typing import Any

from preflight_operator.core.rules.command import Invocation, find_invocation
from preflight_operator.core.rules.kubeenv import build_env, no_config_map
from preflight_operator.core.rules.recognition import recognise

MAX_DEPTH = 12
MAX_NODES = 20_000
_VLLM = re.compile(r"vllm", re.IGNORECASE)


def is_pod_spec(value: object) -> bool:
    """PodSpec-shaped: a ``containers`` list of mappings, one at least with image/command."""
    if not isinstance(value, Mapping):
        return False
    containers = value.get("containers")
    if not isinstance(containers, list) or not containers:
        return False
    if not all(isinstance(c, Mapping) for c in containers):
        return False
    return any("image" in c or "command" in c for c in containers)


def _walk(
    root: object, path: str, depth: int, leaf: Callable[[object], bool], skip: str = ""
) -> Iterator[tuple[str, object]]:
    """(path, value) of every ``leaf`` value under ``root``, in document order, not
    descending into a leaf nor into keys named ``skip``; bounded by MAX_DEPTH and
    MAX_NODES (leaves, mappings and lists visited)."""
    stack: list[tuple[str, object, int]] = [(path, root, depth)]
    visited = 0
    while stack and visited < MAX_NODES:
        path, value, depth = stack.pop()
        visited += 1
        if leaf(value):
            yield path, value
            continue
        if depth >= MAX_DEPTH:
            continue
        # Never take more children than visits are left: a list of 100,000 items costs
        # what MAX_NODES of them cost.
        budget = MAX_NODES - visited
        if isinstance(value, Mapping):
            pairs = islice(((k, c) for k, c in value.items() if k != skip), budget)
            items = [(f"{path}.{k}" if path else str(k), c) for k, c in pairs]
        elif isinstance(value, list):
            items = [(f"{path}[{i}]", c) for i, c in enumerate(islice(value, budget))]
        else:
            continue
        kept = [(p, c, depth + 1) for p, c in items if isinstance(c, (Mapping, list)) or leaf(c)]
        stack.extend(reversed(kept))


def embedded_pod_specs(obj: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(path, pod spec) of every PodSpec-shaped mapping in ``obj``, in document order.

    The object itself counts (a bare PodSpec gives path ""); the search does not descend
    into a pod spec it found. Paths read like the rules' fields: ``spec.predictor``,
    ``spec.workerGroupSpecs[0].template.spec``.
    """
    return [
        (path, value)
        for path, value in _walk(obj, "", 0, is_pod_spec, skip="metadata")
        if isinstance(value, Mapping)
    ]


def runs_vllm(spec: Mapping[str, Any], path: str = "spec") -> bool:
    """Does a container of this pod spec run vLLM (as the rules would recognise it)?

    The env is what the manifest alone tells (no ConfigMaps, no cluster): enough to find
    the command, which is all this answers. A container whose command line the reader
    cannot find counts when rules.recognition recognises it (the rules then name it as
    not judged): the same answer as the engine's, whether or not the plan can be read.
    """
    containers = spec.get("containers")
    if not isinstance(containers, list):
        return False
    for i, container in enumerate(containers):
        if not isinstance(container, Mapping):
            continue
        where = f"{path}.containers[{i}]"
        env = build_env(container, where, namespace=None, config_map=no_config_map)
        found = find_invocation(container, where, env)
        if isinstance(found, Invocation) or recognise(container, where, env.values):
            return True
    return False


def vllm_mentions(obj: Mapping[str, Any], limit: int = 3) -> list[str]:
    """Paths (under ``spec``) of strings that name vLLM: ``engine: VLLM``, an image
    ``vllm/vllm-openai``, a ``vllm serve`` script. For kinds whose controller builds the pod
    (KubeAI's Model, KAITO's Workspace, KServe's LLMInferenceService): what says they run
    vLLM when no pod spec in them does. Bounded like embedded_pod_specs."""
    found: list[str] = []
    for path, value in _walk(obj.get("spec"), "spec", 1, lambda v: isinstance(v, str)):
        if isinstance(value, str) and _VLLM.search(value):
            found.append(path)
            if len(found) >= limit:
                break
    return found
