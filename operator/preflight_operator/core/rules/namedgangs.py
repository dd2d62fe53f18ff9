"""Workloads of a manifest set whose pods name one gang (issue 39): a Volcano PodGroup (the
``scheduling.k8s.io/group-name`` or ``scheduling.volcano.sh/group-name`` annotation), a
Kueue plain pod group (bare Pods labelled ``kueue.x-k8s.io/pod-group-name``) or a
Kubernetes Workload API group (``spec.workloadRef``, 1.35; ``spec.schedulingGroup``, 1.36
on: rules/workloadapi.py). Neither is an object of the workloads' own, so `lint` groups
them by the name their pods carry (discovery.ManifestSet.podgroups), one engine when their
vLLM says so (crdgroups.leader_worker_gang). Apart from crdgroups.py, which reads the
objects that declare a group themselves.

In a cluster the other members are not in the object under review: admission and the
operator ask ``ClusterLookup.object(namespace, GANG_MEMBERS, gang)`` for the workloads the
operator has seen naming that gang (core/gangindex.py keeps them), and the same grouping
follows (``cluster_gang_members``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from preflight_operator.core.rules.crdgroups import leader_worker_gang, replica_count
from preflight_operator.core.rules.groups import (
    KUEUE_GROUP,
    VOLCANO_GROUP,
    VOLCANO_GROUP_OWN,
    _text,
)
from preflight_operator.core.rules.template import GroupMember, PodTemplate, dig
from preflight_operator.core.rules.workloadapi import reference as workload_reference

# objects whose pod template may name a PodGroup, and where their pod count is written
_PODGROUP_HOLDERS = {
    "Pod": ((), "", None),
    "Deployment": (("spec", "template"), "spec.template", "spec.replicas"),
    "StatefulSet": (("spec", "template"), "spec.template", "spec.replicas"),
    "ReplicaSet": (("spec", "template"), "spec.template", "spec.replicas"),
    "Job": (("spec", "template"), "spec.template", "spec.parallelism"),
}


def _gang_named(pod: Mapping[str, Any]) -> str:
    """The gang a pod names, as a message says it: a Volcano PodGroup (its annotation), a
    Kueue plain pod group (a bare Pod's label), or a Kubernetes Workload API group
    (``spec.workloadRef``, 1.35; ``spec.schedulingGroup``, 1.36 on: rules/workloadapi.py);
    "" when it names none, or a reference not usable."""
    notes = dig(pod, ("metadata", "annotations"))
    if isinstance(notes, Mapping):
        name = _text(notes.get(VOLCANO_GROUP)) or _text(notes.get(VOLCANO_GROUP_OWN))
        if name:
            return f"Volcano PodGroup {name!r}"
    labels = dig(pod, ("metadata", "labels"))
    if isinstance(labels, Mapping) and pod.get("kind") == "Pod":
        # Kueue's plain pod groups: pods the user labels with one group name (kueue
        # pkg/controller/jobs/pod; groups.pod_group reads the same label), no object of
        # their own until Kueue makes the Workload
        name = _text(labels.get(KUEUE_GROUP))
        if name:
            return f"Kueue pod group {name!r}"
    ref = workload_reference(pod)
    if ref is None or ref.problem or not ref.name:
        return ""
    if ref.kind == "PodGroup":
        return f"Workload API PodGroup {ref.name!r}"
    replica = f" replica {ref.replica_key!r}" if ref.replica_key else ""
    return f"Workload API Workload {ref.name!r} pod group {ref.pod_group!r}{replica}"


# the pseudo kind of ClusterLookup.object that answers {"items": [...]}: the workloads of a
# namespace whose pods name the gang given as the name (its gang_named text)
GANG_MEMBERS = "gang-members"
# the rules that judge the gangs formed here (crdgroups.leader_worker_gang makes them
# LeaderWorkerSet-shaped): the lws-* rules (ruleset/group.py, ruleset/consistency.py)
GANG_RULE_PREFIX = "lws-"
# why a group finding on members read from the cluster warns (template.Group.observed)
OBSERVED = (
    "are as the operator last saw them: a gang's objects arrive one at a time, and a change "
    "applied to all of them is judged half old, half new"
)
# members read from the cluster for one gang: more is not read (a gang of vLLM workloads is
# a leader and its workers, a handful of objects; the Workload API allows 8 pod groups)
MAX_CLUSTER_MEMBERS = 32


def gang_named(obj: Mapping[str, Any]) -> str | None:
    """The gang the pods of a Pod, Deployment, StatefulSet, ReplicaSet or Job name (as a
    message says it), or None (core/gangindex.py keys its members by it)."""
    found = podgroup_member(obj)
    return None if found is None else found[0]


def _controlled(obj: Mapping[str, Any]) -> bool:
    """A pod its controller made: the controller's object is the gang's member, not it."""
    refs = dig(obj, ("metadata", "ownerReferences"))
    return isinstance(refs, list) and any(
        isinstance(r, Mapping) and r.get("controller") is True for r in refs[:64]
    )


def cluster_gang_members(
    obj: Mapping[str, Any],
    namespace: str | None,
    members: list[tuple[str, GroupMember]],
    lookup: Callable[[str, str, str], Mapping[str, Any] | None] | None,
) -> list[tuple[str, GroupMember]] | None:
    """``members`` (those of the checked manifests) with ``obj`` and the workloads the
    cluster lookup has seen naming the same gang; None when there is no lookup, ``obj``
    names no gang or is a pod its controller made. The object under
    review wins over the lookup's copy of it (an UPDATE); what the manifests hold wins over
    the cluster's (lint with a cluster). Hostile: at most MAX_CLUSTER_MEMBERS items, each
    read by ``podgroup_member`` as any manifest is."""
    found = podgroup_member(obj)
    if lookup is None or found is None or not namespace or _controlled(obj):
        return None
    gang, label, member = found
    out = list(members)
    seen = {who for who, _ in out}
    if label not in seen:
        out.append((label, member))
        seen.add(label)
    answer = lookup(namespace, GANG_MEMBERS, gang)
    items = answer.get("items") if isinstance(answer, Mapping) else None
    for item in items[:MAX_CLUSTER_MEMBERS] if isinstance(items, list) else []:
        other = podgroup_member(item) if isinstance(item, Mapping) else None
        if other is None or other[0] != gang or other[1] in seen:
            continue
        if _text(dig(item, ("metadata", "namespace"))) not in ("", namespace):
            continue
        seen.add(other[1])
        out.append(other[1:])
    return out


# how a member without a name is named (``_name``): told apart in a manifest set by its place
# (discovery.ManifestSet.of)
UNNAMED = ("<generated>", "<unnamed>")


def _name(obj: Mapping[str, Any]) -> str:
    """How a member is named: its name, else its generateName marked as such (Kueue's own
    pod group example creates its pods with ``generateName``: the API server names them
    after admission, so the webhook meets them unnamed)."""
    name = _text(dig(obj, ("metadata", "name")))
    if name:
        return name
    generated = _text(dig(obj, ("metadata", "generateName")))
    return f"{generated}{UNNAMED[0]}" if generated else UNNAMED[1]


def podgroup_member(obj: Mapping[str, Any]) -> tuple[str, str, GroupMember] | None:
    """(the gang its pods name, ``Kind/name``, its pods as a member) of a Pod,
    Deployment, StatefulSet, ReplicaSet or Job whose pods name a Volcano PodGroup
    (``scheduling.k8s.io/group-name`` or ``scheduling.volcano.sh/group-name``), a Kueue plain
    pod group or a Kubernetes Workload API group (``_gang_named``); None else."""
    holder = _PODGROUP_HOLDERS.get(str(obj.get("kind")))
    if holder is None or str(obj.get("apiVersion", "")) not in ("v1", "apps/v1", "batch/v1"):
        return None
    keys, base, count_path = holder
    pod = dig(obj, keys) if keys else obj
    if not isinstance(pod, Mapping):
        return None
    name = _gang_named(pod)
    spec = dig(pod, ("spec",))
    if not name or not isinstance(spec, Mapping):
        return None
    count = 1 if count_path is None else replica_count(dig(obj, count_path.split(".")))
    path = f"{base}.spec" if base else "spec"
    label = f"{obj.get('kind')}/{_name(obj)}"
    return name, label, GroupMember(spec, path, count, count_path or "metadata.name")


def with_podgroup_gang(
    template: PodTemplate,
    podgroup: str,
    members: list[tuple[str, GroupMember]],
    label: str,
    *,
    cluster: bool = False,
) -> PodTemplate:
    """A workload's template (its member ``label``) grouped with the other workloads whose
    pods name the same gang (a Volcano PodGroup, a Kueue plain pod group, a Workload API
    group): those of the checked manifests, or with ``cluster`` those the operator has seen
    (``cluster_gang_members``), when their vLLM makes them one engine
    (``leader_worker_gang``). Estimated: other pods may name it too, so a failure resting on
    the pod count is a warning. No index variable (none numbers a pod). The template as it
    is otherwise."""
    if template.group is not None or template.generic:
        return template
    mine = [i for i, (who, m) in enumerate(members) if who == label and m.path == template.path]
    if len(mine) != 1:
        return template
    where = (
        f"the workloads naming {podgroup} that the operator has seen"
        if cluster
        else f"the pods naming {podgroup} in the checked manifests"
    )
    gang = leader_worker_gang(members, where, {})
    if gang is None:
        return template
    group = replace(
        gang.group,
        estimated=f"counts only {where} ({', '.join(who for who, _ in members)}): "
        "pods elsewhere may name it too",
        observed=OBSERVED if cluster else "",
    )
    grouped = replace(template, group=group, group_leader=mine[0] == gang.leader, index_offsets=())
    if not cluster or mine[0] == gang.leader:
        return grouped
    # one object at a time (admission, the operator): the leader's view judges this worker
    who, lead = members[gang.leader]
    kind, _, name = who.partition("/")
    leader = replace(grouped, kind=kind, name=name, spec=lead.spec, path=lead.path,
                     group_leader=True)  # fmt: skip
    return replace(grouped, gang_leader=leader)
