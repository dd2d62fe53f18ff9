"""Workloads of a manifest set whose pods name one gang (issue 39): a Volcano PodGroup (the
``scheduling.k8s.io/group-name`` or ``scheduling.volcano.sh/group-name`` annotation) or a
Kubernetes Workload API group (``spec.workloadRef``, 1.35; ``spec.schedulingGroup``, 1.36
on: rules/workloadapi.py). Neither is an object of the workloads' own, so `lint` groups
them by the name their pods carry (discovery.ManifestSet.podgroups), one engine when their
vLLM says so (crdgroups.leader_worker_gang). Apart from crdgroups.py, which reads the
objects that declare a group themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from preflight_operator.core.rules.crdgroups import leader_worker_gang, replica_count
from preflight_operator.core.rules.groups import VOLCANO_GROUP, VOLCANO_GROUP_OWN, _text
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
    """The gang a pod names, as a message says it: a Volcano PodGroup (its annotation), or
    a Kubernetes Workload API group (``spec.workloadRef``, 1.35; ``spec.schedulingGroup``,
    1.36 on: rules/workloadapi.py); "" when it names none, or a reference not usable."""
    notes = dig(pod, ("metadata", "annotations"))
    if isinstance(notes, Mapping):
        name = _text(notes.get(VOLCANO_GROUP)) or _text(notes.get(VOLCANO_GROUP_OWN))
        if name:
            return f"Volcano PodGroup {name!r}"
    ref = workload_reference(pod)
    if ref is None or ref.problem or not ref.name:
        return ""
    if ref.kind == "PodGroup":
        return f"Workload API PodGroup {ref.name!r}"
    replica = f" replica {ref.replica_key!r}" if ref.replica_key else ""
    return f"Workload API Workload {ref.name!r} pod group {ref.pod_group!r}{replica}"


def podgroup_member(obj: Mapping[str, Any]) -> tuple[str, str, GroupMember] | None:
    """(the gang its pods name, ``Kind/name``, its pods as a member) of a Pod,
    Deployment, StatefulSet, ReplicaSet or Job whose pods name a Volcano PodGroup
    (``scheduling.k8s.io/group-name`` or ``scheduling.volcano.sh/group-name``) or a
    Kubernetes Workload API group (``_gang_named``); None else."""
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
    label = f"{obj.get('kind')}/{_text(dig(obj, ('metadata', 'name')))}"
    return name, label, GroupMember(spec, path, count, count_path or "metadata.name")


def with_podgroup_gang(
    template: PodTemplate, podgroup: str, members: list[tuple[str, GroupMember]]
) -> PodTemplate:
    """A workload's template grouped with the other workloads of the checked manifests
    whose pods name the same gang (a Volcano PodGroup, a Workload API group), when their
    vLLM makes them one engine (``leader_worker_gang``). Estimated: other pods outside the
    checked files may name it too, so a failure resting on the pod count is a warning. No
    index variable (neither numbers a pod). The template as it is otherwise."""
    if template.group is not None or template.generic:
        return template
    label = f"{template.kind}/{template.name}"
    mine = [i for i, (who, m) in enumerate(members) if who == label and m.path == template.path]
    if len(mine) != 1:
        return template
    where = f"the pods naming {podgroup} in the checked manifests"
    gang = leader_worker_gang(members, where, {})
    if gang is None:
        return template
    group = replace(
        gang.group,
        estimated=f"counts only {where} ({', '.join(who for who, _ in members)}): "
        "pods elsewhere may name it too",
    )
    return replace(template, group=group, group_leader=mine[0] == gang.leader, index_offsets=())
