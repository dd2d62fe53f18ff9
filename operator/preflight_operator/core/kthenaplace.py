"""A Kthena ModelServing pod's place in its role's group, read from the pod itself.

Kthena's controller (volcano-sh/kthena at 3cc057284c34469fcb0ed22a12dac84b1d120719,
``pkg/model-serving-controller/utils/utils.go``) makes each role instance's entry pod and
``workerReplicas`` worker pods itself, with the ModelServing as controller
(``newModelServingOwnerRef``). Before it creates a pod it writes, as literal values, into
every container and init container (``createCommonEnvVars``, ``addPodEnvVars``):

* ``GROUP_SIZE`` = workerReplicas + 1;
* ``ENTRY_ADDRESS`` = ``<entry pod name>.<namespace>`` (the entry pod's headless Service has
  the pod's name);
* ``WORKER_INDEX``: 0 for the entry pod, 1.. for the workers;

and labels the pod ``modelserving.volcano.sh/group-name`` (``<ms>-<i>``) and
``modelserving.volcano.sh/role-id`` (``<role>-<j>``) (``createBasePod``). All of it is in
the pod the webhook sees at CREATE, so the place needs no read of the ModelServing; the
injected check (an init container added after the controller wrote the env) gets the same
values as PREFLIGHT_GROUP_*. Why not the downward API: these are env values, not labels.

Whatever the pod says is a claim: a malformed or missing value leaves the pod out of the
group phase (a reason, never a guess), and the operator proves membership itself when the
members meet (``core.groupproof``).

A role in the Ray pattern gets no group env, and that is right. Kthena's own multi-node
example (``examples/model-serving/multi-node.yaml``, same commit) runs vLLM's Ray executor
from the entry pod (``multi-node-serving.sh leader --ray_cluster_size=...``, then the API
server) and only a Ray node in each worker (``multi-node-serving.sh worker
--ray_address=$(ENTRY_ADDRESS)``). The controller says nothing of that: it writes the same
three values whatever the role runs (``createCommonEnvVars`` reads only ``workerReplicas``
and the entry pod) and creates the entry and its workers back to back (``CreatePodsByRole``
in ``controller/model_serving_controller.go``). What decides is here: a worker that runs no
vLLM gets no check (``analysis.ray_worker_target`` gives a Ray worker a check of its own
only in a LeaderWorkerSet, whose object ``injection.ray_group_ready`` reads to confirm every
worker gets one), so an entry told to wait for ``GROUP_SIZE`` members would wait for checks
that never come and fail a healthy role. ``injection.runs_own_share`` keeps it out: the
entry's vLLM states no ``--nnodes``. A group phase for such a role would need the
ModelServing read at the entry's admission, as the LeaderWorkerSet is read
(tests/unit/test_inject_kthena.py pins today's behaviour).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from preflight_operator.core.provenance import controller_owner
from preflight_operator.core.rules import KTHENA_ENTRY_ENV as ADDRESS_ENV
from preflight_operator.core.rules import KTHENA_INDEX_ENV as INDEX_ENV
from preflight_operator.core.rules import KTHENA_SIZE_ENV as SIZE_ENV

GROUP_LABEL = "modelserving.volcano.sh/group-name"  # v1alpha1.GroupNameLabelKey
ROLE_ID_LABEL = "modelserving.volcano.sh/role-id"  # v1alpha1.RoleIDKey
_API_GROUP = "workload.serving.volcano.sh/"
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a DNS subdomain


@dataclass(frozen=True)
class KthenaPlace:
    """This pod's place in its role instance's group."""

    group_id: str  # <namespace>/<group-name>/<role-id>
    address: str  # the entry pod's address: the member 0 listens there
    size: int  # workerReplicas + 1
    index: int  # WORKER_INDEX; the entry pod's is 0


def made_by_model_serving(pod: Mapping[str, Any]) -> bool:
    """The pod's controller is a ModelServing (it names itself so; a claim the group
    proof checks when the members meet)."""
    owner = controller_owner(pod)
    api = owner.get("apiVersion") if owner is not None else None
    return (
        owner is not None
        and owner.get("kind") == "ModelServing"
        and isinstance(api, str)
        and api.startswith(_API_GROUP)
    )


def kthena_place(
    pod: Mapping[str, Any], env: Mapping[str, str], max_members: int
) -> KthenaPlace | str:
    """The place of a ModelServing pod, or why it has none. ``env``: the vLLM container's
    literal env values (injection.literal_env), where the controller wrote its own."""
    if not made_by_model_serving(pod):
        return "the pod's controller is not a ModelServing"
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    labels = labels if isinstance(labels, Mapping) else {}
    group, role = labels.get(GROUP_LABEL), labels.get(ROLE_ID_LABEL)
    if not (isinstance(group, str) and _NAME.fullmatch(group)):
        return f"the pod has no valid label {GROUP_LABEL}"
    if not (isinstance(role, str) and _NAME.fullmatch(role)):
        return f"the pod has no valid label {ROLE_ID_LABEL}"
    size_text, index_text = env.get(SIZE_ENV), env.get(INDEX_ENV)
    address = env.get(ADDRESS_ENV)
    if not (size_text and size_text.isdigit() and index_text and index_text.isdigit()):
        return f"the vLLM container has no whole {SIZE_ENV} and {INDEX_ENV}"
    size, index = int(size_text), int(index_text)
    if not 2 <= size <= max_members:
        return f"{SIZE_ENV}={size}: a group is 2 to {max_members}"
    if index >= size:
        return f"{INDEX_ENV}={index} is outside a group of {size}"
    namespace = str(meta.get("namespace") or "")
    entry = f"{group}-{role}-0.{namespace}"  # GeneratePodName(group, roleID, 0)
    if address != entry:
        return f"{ADDRESS_ENV} is not this role instance's entry pod ({entry})"
    return KthenaPlace(f"{namespace}/{group}/{role}", address, size, index)
