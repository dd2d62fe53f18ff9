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


def _is_builtin(obj: Mapping[str, Any]) -> bool:
    """A kind Kubernetes itself serves (core, apps, batch, *.k8s.io)."""
    api = obj.get("apiVersion")
    group = api.rpartition("/")[0] if isinstance(api, str) else ""
    return "." not in group or group.endswith(".k8s.io")


def default_runtime(obj: Mapping[str, Any]) -> str | None:
    """Kinds whose controller serves with vLLM unless told otherwise (nothing in the object
    names it): why, or None."""
    api, kind = obj.get("apiVersion"), obj.get("kind")
    group = api.rpartition("/")[0] if isinstance(api, str) else ""
    if (group, kind) == ("kaito.sh", "Workspace") and isinstance(obj.get("inference"), Mapping):
        return "runs an inference preset, which KAITO serves with vLLM by default"
    if (group, kind) == ("serving.kserve.io", "InferenceService"):
        spec = obj.get("spec")
        predictor = spec.get("predictor") if isinstance(spec, Mapping) else None
        model = predictor.get("model") if isinstance(predictor, Mapping) else None
        model_format = model.get("modelFormat") if isinstance(model, Mapping) else None
        name = model_format.get("name") if isinstance(model_format, Mapping) else None
        if isinstance(name, str) and name.lower() == "huggingface":
            return (
                "has spec.predictor.model.modelFormat huggingface, which KServe's "
                "huggingface runtime serves with vLLM by default"
            )
    return None


def object_runs_vllm(obj: Mapping[str, Any]) -> str | None:
    """Why an object is taken to run vLLM when the rules found no vLLM container in it
    (recognition at the object's level): a pod spec in it runs vLLM, or, for a kind whose
    controller builds the pods, its spec names vLLM or its controller's default runtime is
    vLLM. None when nothing says so. lint lists such objects; the engine names those of
    the kinds it reads as not judged (issue 35)."""
    paths = [path for path, spec in embedded_pod_specs(obj) if runs_vllm(spec)]
    if paths:
        return f"embeds a pod spec running vLLM at {', '.join(paths)}"
    if not _is_builtin(obj) and (mentions := vllm_mentions(obj)):
        return f"names vLLM at {', '.join(mentions)}; its controller builds the pods"
    return default_runtime(obj)
