"""Plans spread over pods: which pods hold one vLLM engine's ranks, and how sure that is.

One engine's TP x PP (x DP) ranks may live in several pods. How they are laid out depends
on who places them:

* **vLLM's Ray executor** (``--distributed-executor-backend ray``, or older vLLM choosing
  Ray when the node has fewer GPUs than the world size) asks the Ray cluster for a
  placement group of world-size bundles of one GPU each, packed (strategy ``PACK``), the
  first bundle on the driver's node (vllm-project/vllm ``vllm/executor/ray_utils.py``
  ``initialize_ray_cluster``, commit 01eec549). So the Ray cluster's GPUs together must
  cover the engine; a pod holds as many ranks as Ray puts on its GPUs, at most its GPUs.
  Which pods form the cluster is not in vLLM's argv: the pods that run ``ray start
  --head`` / ``ray start --address=...`` (vLLM's ``examples/online_serving/
  multi-node-serving.sh``: ``leader`` starts the head and waits for
  ``--ray_cluster_size`` nodes, ``worker`` joins, commit 7a3bde4c), or the pods of a
  KubeRay cluster (head + every worker group's replicas x numOfHosts) or of a
  LeaderWorkerSet group (``size`` pods: the leader and size - 1 workers).
* **vLLM's multiprocessing over nodes** (``--nnodes N --node-rank R``) and **multi-node
  data parallelism** (``--data-parallel-size-local M``, ``--headless``): every pod runs its
  own share, written in its own argv (contract.vllm_args: ``gpus_needed``), so each pod
  is judged exactly against that share.
* **A controller that splits the engine** (Dynamo ``multinode.nodeCount``): the share is
  the plan over the node count (rules.kinds, rules.servingstacks).

What this module adds: whether a container is a node of a Ray cluster (``ray_node``), and
the group of a CRD judged generically whose head template runs vLLM and whose sibling
templates join its Ray cluster (``generic_group``). A generic CRD's worker count is read
from a sibling field (``workerReplicas`` next to ``workerTemplate``): a guess about a
controller vllm-preflight does not know, so the group is *estimated* (a failure resting on
it is a warning). Without such a field the topology is unknown: the head is judged on its
own devices and the totals are not checked, with a warning that says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from preflight_operator.core.rules.template import Group, GroupMember, PodTemplate, dig, num

RAY = "ray"  # the Group family of a Ray cluster (rules.kinds)
HEAD = "head"
MEMBER = "member"  # joins a Ray cluster some other pod heads

# vLLM's script, and LeaderWorkerSet's ray_init.sh of the same interface (kubernetes-sigs/lws
# docs/examples/vllm/build/ray_init.sh at 0102370e: `leader` runs `ray start --head`,
# `worker` `ray start --address=...`), which RoleBasedGroup's vLLM examples call
_SCRIPTS = ("multi-node-serving.sh", "ray_init.sh")
# What makes the driver's ray.init() join an existing cluster (Ray's documented variable)
RAY_ADDRESS = "RAY_ADDRESS"


def _words(container: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("command", "args"):
        values = container.get(key)
        if isinstance(values, list):
            out.extend(str(v) for v in values if isinstance(v, (str, int, float)))
    return " ".join(out).split()


def ray_start(container: Mapping[str, Any]) -> str | None:
    """``HEAD`` when the container's command starts a Ray head other pods may join (``ray
    start --head``, ``multi-node-serving.sh leader``), ``MEMBER`` when it starts a Ray
    node that joins one (``ray start --address``, ``multi-node-serving.sh worker``), else
    None. The one reader of "this pod runs a Ray node", for the rules (``ray_node``) and
    the injector (``injection.ray_role``: which pods of a group get the check). Read from
    the words as written: a false match only makes the rules less strict (the pod is judged
    as part of a group it may not have), never more."""
    words = _words(container)
    for i, word in enumerate(words[:-1]):
        if word.rsplit("/", 1)[-1] in _SCRIPTS:
            role = words[i + 1]
            if role == "leader":
                return HEAD
            if role == "worker":
                return MEMBER
    for i, word in enumerate(words[:-1]):
        if word.rsplit("/", 1)[-1] == "ray" and words[i + 1] == "start":
            rest = words[i + 2 :]
            if "--head" in rest:
                return HEAD
            if any(w == "--address" or w.startswith("--address=") for w in rest):
                return MEMBER
    return None


def ray_node(container: Mapping[str, Any]) -> str | None:
    """``ray_start``, or ``MEMBER`` for a container whose driver joins a cluster through a
    ``RAY_ADDRESS`` env (vLLM's ``ray.init()`` then uses that cluster's GPUs: the rules
    judge it as part of the group). The injector does not count this one: such a pod
    starts no Ray node, so no group member waits for its check."""
    role = ray_start(container)
    if role is not None:
        return role
    env = container.get("env")
    for item in env if isinstance(env, list) else []:
        if isinstance(item, Mapping) and item.get("name") == RAY_ADDRESS:
            return MEMBER
    return None


# -- a CRD judged generically ----------------------------------------------------------------

_INDEX = re.compile(r"^(.*)\[(\d+)\]$")
_TEMPLATE_KEYS = ("template", "podTemplate")


def _at(root: object, path: str) -> object:
    """The value at a path of embedded.embedded_pod_specs (``a.b[0].c``); None if absent."""
    value = root
    for part in path.split(".") if path else []:
        found = _INDEX.match(part)
        key, index = (found.group(1), int(found.group(2))) if found else (part, None)
        value = value.get(key) if isinstance(value, Mapping) else None
        if index is not None:
            value = value[index] if isinstance(value, list) and index < len(value) else None
    return value


def _slot(path: str) -> tuple[str, str] | None:
    """(parent path, key) of the pod template a pod spec at ``path`` belongs to:
    ``x.workerTemplate.spec`` -> ("x", "workerTemplate"), ``x.head`` -> ("x", "head")."""
    parts = path.split(".")
    if len(parts) >= 2 and parts[-1] == "spec":
        parts = parts[:-1]
    if len(parts) < 2 or _INDEX.match(parts[-1]):
        return None
    return ".".join(parts[:-1]), parts[-1]


def _stem(key: str) -> str:
    for suffix in ("Template", "template", "Spec", "spec"):
        if key.endswith(suffix) and key != suffix:
            return key[: -len(suffix)]
    return "" if key in _TEMPLATE_KEYS else key


def _replicas(obj: Mapping[str, Any], path: str) -> tuple[int, str] | None:
    """Pods of the template at ``path``, from a sibling field named after it
    (``workerReplicas``/``workerCount`` beside ``workerTemplate``; ``replicas`` beside a
    bare ``template``): (count, field path), or None when no such field says."""
    slot = _slot(path)
    if slot is None:
        return None
    parent_path, key = slot
    parent = _at(obj, parent_path)
    if not isinstance(parent, Mapping):
        return None
    stem = _stem(key)
    names = (f"{stem}Replicas", f"{stem}_replicas", f"{stem}Count") if stem else ("replicas",)
    for name in names:
        if name in parent:
            count = num(parent.get(name), -1)
            return (count, f"{parent_path}.{name}") if count >= 0 else None
    return None


def generic_group(
    obj: Mapping[str, Any], path: str, spec: Mapping[str, Any],
    found: Sequence[tuple[str, Mapping[str, Any]]],
) -> Group | None:  # fmt: skip
    """The Ray group of the vLLM pod spec at ``path`` in a CRD judged generically: this
    spec (one pod, the head) and the pod specs beside it (same parent object) whose
    containers join a Ray cluster, each counted by its sibling replicas field. None when
    the spec starts no Ray head, no sibling joins it, or a sibling's count is not written
    (the topology is then unknown: plan-unresolved says so)."""
    containers = spec.get("containers")
    if not isinstance(containers, list) or not any(
        isinstance(c, Mapping) and ray_node(c) == HEAD for c in containers
    ):
        return None
    slot = _slot(path)
    if slot is None:
        return None
    members = [GroupMember(spec, path, 1, path)]
    for other_path, other in found:
        other_slot = _slot(other_path)
        if other_path == path or other_slot is None or other_slot[0] != slot[0]:
            continue
        others = other.get("containers")
        if not isinstance(others, list) or not any(
            isinstance(c, Mapping) and ray_node(c) == MEMBER for c in others
        ):
            continue
        counted = _replicas(obj, other_path)
        if counted is None:
            return None
        members.append(GroupMember(other, other_path, counted[0], counted[1]))
    if len(members) == 1:
        return None
    where = ", ".join(m.replicas_path for m in members[1:])
    return Group(
        where,
        RAY,
        tuple(members),
        estimated=f"was read from {where}, a field of a kind vllm-preflight does not know "
        "(assumed to count the pods that join the head's Ray cluster)",
    )


# -- Ray workers that are objects of their own (lint over a manifest set) ---------------------

# Core kinds whose pods a manifest set may hold as Ray workers, and where their pod count is:
# a Deployment/StatefulSet/ReplicaSet `spec.replicas` (default 1), a Job `spec.parallelism`
# (default 1), a Pod 1. A DaemonSet's count is the nodes it runs on: unknown here.
_WORKER_KINDS: dict[str, tuple[tuple[str, ...], str]] = {
    "Deployment": (("spec", "template", "spec"), "spec.replicas"),
    "StatefulSet": (("spec", "template", "spec"), "spec.replicas"),
    "ReplicaSet": (("spec", "template", "spec"), "spec.replicas"),
    "Job": (("spec", "template", "spec"), "spec.parallelism"),
    "Pod": (("spec",), ""),
}


def joins_ray(spec: Mapping[str, Any]) -> bool:
    """A container of the pod spec joins a Ray cluster (and none starts a head)."""
    containers = spec.get("containers")
    roles = [ray_node(c) for c in containers if isinstance(c, Mapping)] if isinstance(
        containers, list
    ) else []  # fmt: skip
    return MEMBER in roles and HEAD not in roles


def ray_worker_member(obj: Mapping[str, Any]) -> GroupMember | None:
    """A plain workload whose pods join a Ray cluster (``ray start --address``), as a group
    member: its pod spec and pod count; None for anything else or an unknown count."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in _WORKER_KINDS:
        return None
    keys, field = _WORKER_KINDS[kind]
    spec = dig(obj, keys)
    if not isinstance(spec, Mapping) or not joins_ray(spec):
        return None
    name = dig(obj, ("metadata", "name"))
    where = f"{kind}/{name}"
    if not field:
        return GroupMember(spec, f"{where} spec", 1, where)
    raw = dig(obj, tuple(field.split(".")))
    count = 1 if raw is None else num(raw, -1)
    if count < 0:
        return None
    return GroupMember(spec, f"{where} {'.'.join(keys)}", count, f"{where} {field}")


def with_ray_workers(template: PodTemplate, workers: Sequence[GroupMember]) -> PodTemplate:
    """A plain workload's template that starts a Ray head, grouped with the Ray workers of
    its namespace in the same manifest set (assumed to join it: an estimated group). The
    template as it is when it starts no head, already has a group, or none are found."""
    if template.group is not None or not workers or template.generic:
        return template
    containers = template.spec.get("containers")
    if not isinstance(containers, list) or not any(
        isinstance(c, Mapping) and ray_node(c) == HEAD for c in containers
    ):
        return template
    head = GroupMember(template.spec, template.path, 1, template.path)
    where = ", ".join(w.replicas_path for w in workers)
    group = Group(
        where,
        RAY,
        (head, *workers),
        estimated=f"was taken from the Ray workers of this namespace in the checked manifests "
        f"({where}), assumed to join this pod's Ray head",
    )
    return replace(template, group=group)
