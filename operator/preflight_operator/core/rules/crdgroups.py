"""Groups declared by objects of their own (issue 26): Kueue Workloads, Volcano Jobs with
their PodGroups, and RoleBasedGroups. Pure: objects in, pod templates and ``DeclaredGroup``s
out (``rules.groups`` reads the same systems from a pod's labels).

What each system really provides, read from its source:

* **Kueue Workload** (kubernetes-sigs/kueue at ff69552e79ad21652c36caa97038382e55625cf7,
  ``apis/kueue/v1beta2/workload_types.go`` ``PodSet``; v1beta2 is the storage version of
  ``config/components/crd/bases/kueue.x-k8s.io_workloads.yaml``): ``spec.podSets[*]`` has a
  ``name``, a ``template`` (a PodTemplateSpec) and a ``count`` (default 1; "the number of
  pods for the spec"); ``minCount`` is partial admission (alpha). Kueue makes a Workload
  for each Job, JobSet, LeaderWorkerSet or pod group it manages (docs
  ``site/content/en/docs/concepts/workload.md``) to account quota: the size is the sum of
  the counts, and nothing gives a pod a rank or a leader's address (the owning workload
  does, if it does).
* **Volcano Job** (volcano-sh/volcano at ed72c7c815a9fd547a787134676f73d42e9d049c;
  the types are ``staging/src/volcano.sh/apis/pkg/apis/batch/v1alpha1/job.go``):
  ``spec.tasks[*]`` each ``replicas`` pods of ``template``; ``spec.minAvailable`` is the
  gang (the admission webhook defaults it to the sum of each task's ``minAvailable``, else
  its ``replicas``: ``pkg/webhooks/admission/jobs/mutate/mutate_job.go``). A pod is named
  ``<job>-<task>-<i>`` with hostname/subdomain ``<job>`` under the ``svc`` plugin. The rank
  and the leader come only from the plugins in ``spec.plugins``
  (``pkg/controllers/job/plugins``): ``env`` sets ``VC_TASK_INDEX`` (and the older
  ``VK_TASK_INDEX``), the pod's index *within its task*; ``svc`` sets ``VC_<TASK>_HOSTS``
  and ``VC_<TASK>_NUM`` for every task but names no leader; ``pytorch`` sets
  ``MASTER_ADDR`` (``<job>-<master task>-0.<job>``), ``MASTER_PORT``, ``WORLD_SIZE`` (all
  tasks' replicas) and ``RANK`` (master 0, worker i+1). Without ``pytorch`` no leader is
  named.
* **Volcano PodGroup** (same commit, ``.../scheduling/v1beta1/types.go``): ``spec.minMember``
  pods are placed all or none; a pod names its PodGroup in the annotation
  ``scheduling.k8s.io/group-name`` or ``scheduling.volcano.sh/group-name``
  (``.../scheduling/v1beta1/labels.go``; ``rules.groups``). ``lint`` groups the checked
  workloads naming one PodGroup (``with_podgroup_gang``, an estimated count); the
  PodGroup object itself is not read (its ``minMember`` is a gang, not the size).

* **RoleBasedGroup** (sgl-project/rbg at 993491fba9bfdf377d3cd18c8833da20ce0ec87b,
  ``api/workloads/v1alpha2/rolebasedgroup_types.go``): ``spec.roles[*]`` each ``replicas``
  instances of a ``standalonePattern`` (one pod) or a ``leaderWorkerPattern`` (``size``
  pods, default 1: one leader and ``size - 1`` workers from one ``template`` with
  ``leaderTemplatePatch`` / ``workerTemplatePatch``), either pattern with an inline
  ``template`` or a ``templateRef`` (a ``spec.roleTemplates`` entry plus ``patch``). Its
  controller injects (``pkg/discovery/env_builder.go``): ``RBG_GROUP_NAME``,
  ``RBG_ROLE_NAME`` into every pod; for a leader-worker role ``RBG_LWP_LEADER_ADDRESS`` =
  ``$(RBG_ROLE_INSTANCE_NAME)-0.<service>.<namespace>``, ``RBG_LWP_WORKER_INDEX`` (label
  ``rbg.workloads.x-k8s.io/component-index``: leader 0) and ``RBG_LWP_GROUP_SIZE`` (label
  ``component-size``). The deprecated ``v1alpha1`` (still served) writes
  ``roles[*].template`` and, for a LeaderWorkerSet workload, ``leaderWorkerSet.size`` with
  ``patchLeaderTemplate`` / ``patchWorkerTemplate``; LeaderWorkerSet then injects its own
  ``LWS_*`` variables. Roles are separate engines (prefill, decode, router) unless their
  containers form one Ray cluster (``rules.spread.ray_node``).

* **Kthena ModelServing** (volcano-sh/kthena at 3cc057284c34469fcb0ed22a12dac84b1d120719,
  ``pkg/apis/workload/v1alpha1/servinggroup_types.go`` ``Role``): ``spec.replicas``
  serving groups, each of ``spec.template.roles[*]`` (at most 4: prefill, decode, ...), each
  role ``replicas`` times; one instance of a role is one entry pod (``entryTemplate``) and
  ``workerReplicas`` worker pods (``workerTemplate``), one engine. The controller
  (``pkg/model-serving-controller/utils/utils.go`` ``createCommonEnvVars``,
  ``addPodEnvVars``) sets in every container and init container ``GROUP_SIZE`` =
  workerReplicas + 1, ``ENTRY_ADDRESS`` = the entry pod's name and namespace, and
  ``WORKER_INDEX`` (entry 0, workers 1..), replacing any entry of those names the template
  has; without a ``workerTemplate`` it makes no worker pod (``GenerateWorkerPod``).

What a system does not provide is said (``DeclaredGroup.unknown``), never guessed: an
unknown or partial shape is a warning, never a group failure.

Issue 39: every declarer reaches the group rules through ``leader_worker_gang`` (pods whose
vLLM says ``--nnodes``: one engine, a leader and a worker template) or a Ray cluster
(``_ray_cluster``); docs/RULES.md, "Gangs: which declarers reach the group rules".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from preflight_operator.core.rules.command import Invocation, find_invocation
from preflight_operator.core.rules.embedded import embedded_pod_specs, runs_vllm
from preflight_operator.core.rules.groups import (
    KUEUE,
    RBG,
    RBG_INDEX_ENV,
    RBG_SIZE_ENV,
    VOLCANO,
    DeclaredGroup,
    _count,
    _text,
)
from preflight_operator.core.rules.kubeenv import build_env
from preflight_operator.core.rules.spread import HEAD, MEMBER, RAY, ray_node
from preflight_operator.core.rules.template import (
    KTHENA,
    LWS,
    Group,
    GroupMember,
    PodTemplate,
    dig,
    running_containers,
)
from preflight_operator.core.rules.workloadapi import engine_nodes

_MAX_ITEMS = 64  # podSets, tasks, roles, roleTemplates read (Kueue caps podSets at 8)


def _items(obj: Mapping[str, Any], *keys: str) -> list[tuple[int, Mapping[str, Any]]]:
    found = dig(obj, keys)
    if not isinstance(found, list):
        return []
    return [(i, item) for i, item in enumerate(found[:_MAX_ITEMS]) if isinstance(item, Mapping)]


def replica_count(value: Any, default: int = 1) -> int:
    """A declarer's pod count as written (``replicas``, ``parallelism``), ``default`` when
    absent, and when it is no count."""
    counted = _count(default if value is None else value)
    return default if counted is None else counted


def _ray_cluster(members: list[tuple[str, GroupMember]], where: str) -> Group | None:
    """One Ray cluster over sibling templates: the one whose container starts a Ray head
    (exactly one pod of it) and those whose containers join one. None otherwise."""

    def role_of(spec: Mapping[str, Any]) -> str | None:
        containers = spec.get("containers")
        roles = {
            ray_node(c) for c in containers[:_MAX_ITEMS] if isinstance(c, Mapping)
        } if isinstance(containers, list) else set()  # fmt: skip
        return HEAD if HEAD in roles else MEMBER if MEMBER in roles else None

    heads = [m for _, m in members if role_of(m.spec) == HEAD]
    joining = [m for _, m in members if role_of(m.spec) == MEMBER]
    if len(heads) != 1 or heads[0].replicas != 1 or not joining:
        return None
    return Group(where, RAY, (heads[0], *joining))


# -- one engine over a gang's pods (issue 39) ---------------------------------------------------


def _engine_words(spec: Mapping[str, Any], path: str, env: Mapping[str, str]) -> list[str] | None:
    """The vLLM command line of the pod's container that runs vLLM, as the rules read it
    (``find_invocation`` with the env the gang's controller injects); None when none runs
    vLLM or it cannot be read."""
    for key, i, container in running_containers(spec):
        cpath = f"{path}.{key}[{i}]"
        built = build_env(container, cpath, namespace=None, config_map=_no_config_map,
                          injected=env)  # fmt: skip
        found = find_invocation(container, cpath, built)
        if isinstance(found, Invocation):
            return list(found.argv)
    return None


def _no_config_map(name: str) -> None:
    return None


@dataclass(frozen=True)
class Gang:
    """One vLLM engine over a gang's pods: the group the rules judge, and which of the
    declarer's templates leads it (``leader``: its index in the members given)."""

    group: Group
    leader: int


def _node_rank(words: list[str]) -> str | None:
    """The literal ``--node-rank`` a command line gives (the last one, as argparse)."""
    found = None
    for i, word in enumerate(words[:4096]):
        name, eq, value = word.partition("=")
        if name in ("--node-rank", "--node_rank"):
            found = value if eq else (words[i + 1] if i + 1 < len(words) else None)
    return found


# the most objects (templates) a gang read from its members' own vLLM has: a leader and one
# worker template (leader_worker_gang); a gang of more forms no group
GANG_OBJECTS = 2


def leader_worker_gang(
    members: list[tuple[str, GroupMember]],
    where: str,
    env: Mapping[str, str],
    first: Mapping[str, Mapping[str, str]] | None = None,
) -> Gang | None:
    """The gang's pods as one engine, when their own vLLM command lines say so: a template
    states ``--nnodes N`` (N > 1, a literal: vLLM's multiprocessing across nodes) and the
    templates are a leader (one pod) and at most one worker template, or one template of
    several pods. The leader is the one template not ``--headless``, else the one whose
    first pod (its env in ``first``, by member name, over ``env``) runs ``--node-rank 0``.
    The group is then exact, as a LeaderWorkerSet's: the pods are the declarer's own
    counts, and every one of them runs the engine's share. Anything else (no ``--nnodes``,
    no single leader, a template that runs no vLLM) is None: the pods are judged one by
    one, as a Job's ``parallelism`` pods are (as often independent engines: batch
    inference)."""
    if not 1 <= len(members) <= GANG_OBJECTS:
        return None  # no single leader-worker shape: nothing read
    own = first or {}
    read = [(m, _engine_words(m.spec, m.path, {**env, **own.get(n, {})})) for n, m in members]
    if not read or any(words is None for _, words in read):
        return None
    nodes = [engine_nodes(words or []) for _, words in read]
    if not any(n is not None and n > 1 for n in nodes):
        return None
    if len(read) == 1:
        only = read[0][0]
        if only.replicas <= 1:
            return None
        first_pod = GroupMember(only.spec, only.path, 1, only.replicas_path)
        rest = GroupMember(only.spec, only.path, only.replicas - 1, only.replicas_path)
        return Gang(Group(where, LWS, (first_pod, rest)), 0)
    leads = [i for i, (_, words) in enumerate(read) if "--headless" not in (words or [])]
    if len(leads) != 1:
        leads = [i for i, (_, words) in enumerate(read) if _node_rank(words or []) == "0"]
    if len(leads) != 1 or read[leads[0]][0].replicas != 1:
        return None
    lead = leads[0]
    worker = read[1 - lead][0]
    return Gang(Group(where, LWS, (read[lead][0], worker)), lead)


def with_gang(
    templates: list[PodTemplate], gang: Gang | None, offsets: tuple[tuple[str, int], ...],
    env: Mapping[str, str],
) -> list[PodTemplate]:  # fmt: skip
    """The declarer's templates, each in the gang (the leader's marked so), with the env
    its controller injects: the leader at place 0, a worker template as its first pod
    (place 1, each variable less its offset)."""
    if gang is None:
        return templates
    places = {i: 0 if i == gang.leader else 1 for i in range(len(templates))}
    return [
        replace(
            t, group=gang.group, group_leader=i == gang.leader, index_offsets=offsets,
            injected_env={
                **t.injected_env, **env,
                **{name: str(max(0, places[i] - at)) for name, at in offsets},
            },
        )
        for i, t in enumerate(templates)
    ]  # fmt: skip


PODGROUP_VERSION = "scheduling.volcano.sh/v1beta1"  # the PodGroup version Volcano serves


def podgroup_path(namespace: str, name: str) -> str:
    """The API path of the Volcano PodGroup a pod names (both names already checked as
    Kubernetes names by the caller)."""
    return f"/apis/{PODGROUP_VERSION}/namespaces/{namespace}/podgroups/{name}"


def podgroup_min_member(
    obj: Any, name: str, namespace: str
) -> tuple[int | None, str]:  # fmt: skip
    """(``spec.minMember``, "") of the PodGroup read for a pod that names ``name`` in
    ``namespace``; (None, why) when the object read is not that PodGroup or holds no count
    (hostile: only a mapping of this kind, version, name and namespace is read)."""
    if not isinstance(obj, Mapping):
        return None, f"the PodGroup {name!r} (read a {type(obj).__name__}, not an object)"
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    if obj.get("kind") != "PodGroup" or obj.get("apiVersion") != PODGROUP_VERSION:
        return None, f"the PodGroup {name!r} (the object read is not a {PODGROUP_VERSION} PodGroup)"
    if meta.get("name") != name or meta.get("namespace") not in (None, namespace):
        return None, f"the PodGroup {name!r} (the object read is another one)"
    value = dig(obj, ("spec", "minMember"))  # int32 in the CRD: the API server sends an int
    count = _count(value) if isinstance(value, int) else None
    if count is None:
        return None, f"the PodGroup {name!r} (its spec.minMember is not a count)"
    return count, ""


# -- Kueue Workload ----------------------------------------------------------------------------


def _members(
    obj: Mapping[str, Any], field: str, count_field: str, unnamed: str, default_count: int
) -> list[tuple[str, GroupMember]]:
    """Each ``spec.<field>[i]`` with a pod template, by name (``unnamed.format(i)`` when it
    has none), counted by its ``count_field`` (``default_count`` when absent)."""
    out = []
    for i, item in _items(obj, "spec", field):
        spec = dig(item, ("template", "spec"))
        if isinstance(spec, Mapping):
            base = f"spec.{field}[{i}]"
            name = _text(item.get("name")) or unnamed.format(i)
            count = replica_count(item.get(count_field), default_count)
            member = GroupMember(spec, f"{base}.template.spec", count, f"{base}.{count_field}")
            out.append((name, member))
    return out


def _podsets(obj: Mapping[str, Any]) -> list[tuple[str, GroupMember]]:
    return _members(obj, "podSets", "count", "podSets[{}]", 1)


def kueue_workload(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    """A Workload's pod sets, one template each (role: the pod set's name). A Workload is
    Kueue's quota record of another object's pods (a Job's ``parallelism`` pods are as
    often independent engines), so its pods are judged one by one, unless their own vLLM
    command lines make them one engine (``leader_worker_gang``: ``--nnodes``): then the
    pod sets' counts are the group, and Kueue names no rank or leader (nothing injected:
    a worker's ``--node-rank`` from the owner's env is unknown here, never guessed)."""
    kind = str(obj.get("kind", "Workload"))
    podsets = _podsets(obj)
    templates = [
        PodTemplate(kind, name, namespace, m.spec, m.path, role, None, family=KUEUE)
        for role, m in podsets
    ]
    return with_gang(templates, leader_worker_gang(podsets, "spec.podSets[*].count", {}), (), {})


# -- Volcano Job and PodGroup ------------------------------------------------------------------


def _tasks(obj: Mapping[str, Any]) -> list[tuple[str, GroupMember]]:
    # Volcano's webhook names an unnamed task default<i> (mutate_job.go mutateSpec)
    return _members(obj, "tasks", "replicas", "default{}", 0)


def volcano_job(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    """A Volcano Job's tasks, one template each (role: the task's name), each with the env
    Volcano's job plugins give its first pod (``_volcano_env``). Tasks whose containers
    form one Ray cluster (a head task of one pod, tasks that join it) are one Ray group,
    counted by ``replicas`` (what Volcano creates); tasks whose vLLM says ``--nnodes`` are
    one engine (``leader_worker_gang``); otherwise each task's pods are judged one by one
    (a task of N replicas is as often N engines)."""
    kind = str(obj.get("kind", "Job"))
    tasks = _tasks(obj)
    group = _ray_cluster(tasks, "spec.tasks[*].replicas")
    in_group = {id(m) for m in group.members} if group else set()
    env, offsets, first = _volcano_env(obj, tasks)
    templates = [
        PodTemplate(
            kind, name, namespace, m.spec, m.path, role,
            group if id(m) in in_group else None, {**env, **first[role]}, family=VOLCANO,
        )
        for role, m in tasks
    ]  # fmt: skip
    if group is not None:
        return templates
    gang = leader_worker_gang(tasks, "spec.tasks[*].replicas", env, first)
    if gang is not None and gang.leader != 0 and any(n == "RANK" for n, _ in offsets):
        offsets = tuple(o for o in offsets if o[0] != "RANK")  # RANK 0 is the master task's
    return with_gang(templates, gang, offsets, env)


def _volcano_env(
    obj: Mapping[str, Any], tasks: list[tuple[str, GroupMember]]
) -> tuple[dict[str, str], tuple[tuple[str, int], ...], dict[str, dict[str, str]]]:
    """(the env Volcano's job plugins give every pod of the Job, the index variables with
    their offsets in a gang, each task's first pod's index variables). ``VC_TASK_INDEX``
    (and the older ``VK_TASK_INDEX``, env plugin) counts within the pod's task: 0 for
    every task's first pod, and a worker task after a one-pod leader task counts from 0
    (offset 1). The pytorch plugin (``volcano_job_group`` reads it) sets ``MASTER_ADDR``,
    ``WORLD_SIZE`` and ``RANK``: the master 0, worker i+1 (offset 0 when the master task
    leads)."""
    declared = volcano_job_group(obj)
    first: dict[str, dict[str, str]] = {role: {} for role, _ in tasks}
    if declared is None:
        return {}, (), first
    plugins = _plugins(obj)
    env: dict[str, str] = {}
    offsets: list[tuple[str, int]] = []
    if "env" in plugins:
        at = 1 if len(tasks) == 2 else 0
        offsets += [("VC_TASK_INDEX", at), ("VK_TASK_INDEX", at)]
        for values in first.values():
            values.update(VC_TASK_INDEX="0", VK_TASK_INDEX="0")
    if "pytorch" in plugins and declared.leader is not None:
        master = _flag(plugins["pytorch"], "master", "master")
        env["MASTER_ADDR"] = declared.leader
        env["WORLD_SIZE"] = str(declared.size)
        for role, values in first.items():
            values["RANK"] = "0" if role == master else "1"
        if len(tasks) == 2 and tasks[0][0] == master and tasks[0][1].replicas == 1:
            offsets.append(("RANK", 0))
    return env, tuple(offsets), first


def _plugins(obj: Mapping[str, Any]) -> dict[str, list[str]]:
    found = dig(obj, ("spec", "plugins"))
    if not isinstance(found, Mapping):
        return {}
    return {
        str(k): [str(a) for a in v[:32]] if isinstance(v, list) else []
        for k, v in list(found.items())[:32]
    }


def _flag(args: list[str], name: str, default: str) -> str:
    for arg in args:
        if arg.startswith(f"--{name}="):
            return _text(arg.split("=", 1)[1]) or default
    return default


def volcano_job_group(obj: Mapping[str, Any]) -> DeclaredGroup | None:
    """The group a Volcano Job declares: every task's replicas, the gang its
    ``minAvailable`` (or Volcano's default, the tasks' sum), the rank and the leader from
    the plugins it enables. None without a task."""
    tasks = _tasks(obj)
    if not tasks:
        return None
    job = _text(dig(obj, ("metadata", "name"))) or "<unnamed>"
    size = sum(m.replicas for _, m in tasks)
    minimum = _count(dig(obj, ("spec", "minAvailable")))
    if not minimum:  # 0 or absent: the webhook writes the sum of the tasks' minAvailable
        minimum = 0
        for _, task in _items(obj, "spec", "tasks"):
            own = _count(task.get("minAvailable"))
            minimum += own if own is not None else replica_count(task.get("replicas"), 0)
    plugins = _plugins(obj)
    unknown: list[str] = []
    rank = leader = ""
    leader_address: str | None = None
    if "pytorch" in plugins:
        master = _flag(plugins["pytorch"], "master", "master")
        rank = "RANK (pytorch plugin: master 0, worker i+1), WORLD_SIZE"
        leader = "MASTER_ADDR (pytorch plugin)"
        leader_address = f"{job}-{master}-0.{job}"
        if master not in {n for n, _ in tasks}:
            leader_address = None
            unknown.append(f"the leader's address (the pytorch plugin's master task {master!r} "
                           "is not a task: Volcano sets no MASTER_ADDR)")  # fmt: skip
    elif "env" in plugins:
        rank = "VC_TASK_INDEX (env plugin: the index within the pod's task)"
        if len(tasks) > 1:
            unknown.append("a rank across tasks (VC_TASK_INDEX counts within each task)")
    else:
        unknown.append("each pod's rank (no env or pytorch plugin in spec.plugins)")
    if not leader:
        svc = " (the svc plugin lists every task's hosts in VC_<TASK>_HOSTS, none as leader)"
        unknown.append("the leader's address" + (svc if "svc" in plugins else ""))
    return DeclaredGroup(
        VOLCANO,
        job,
        size,
        None,
        leader_address,
        "spec.tasks[*].replicas, spec.minAvailable, spec.plugins",
        tuple(unknown),
        rank_source=rank,
        leader_source=leader,
        gang=minimum,
    )


# -- RoleBasedGroup ----------------------------------------------------------------------------


def merge_patch(base: Any, patch: Any, depth: int = 0) -> Any:
    """``patch`` over ``base`` the way a strategic merge patch treats pod templates: maps
    merge key by key, lists of maps that all have a ``name`` (containers, env, volumes,
    volumeMounts, ports) merge item by item by name, anything else is replaced. The
    ``$patch``/``$retainKeys`` directives are not read (none in RBG's examples); a patch
    using them is read as plain values."""
    if depth > 16:
        return base
    if isinstance(base, Mapping) and isinstance(patch, Mapping):
        out = dict(base)
        for key, value in list(patch.items())[:256]:
            out[key] = merge_patch(base.get(key), value, depth + 1) if key in base else value
        return out
    if (
        isinstance(base, list)
        and isinstance(patch, list)
        and all(isinstance(x, Mapping) and "name" in x for x in [*base, *patch])
    ):
        merged = [dict(x) for x in base[:256]]
        index = {x["name"]: i for i, x in enumerate(merged)}
        for item in patch[:256]:
            if item["name"] in index:
                i = index[item["name"]]
                merged[i] = merge_patch(merged[i], item, depth + 1)
            else:
                index[item["name"]] = len(merged)
                merged.append(dict(item))
        return merged
    return patch


def _role_templates(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for _, entry in _items(obj, "spec", "roleTemplates"):
        template = entry.get("template")
        if isinstance(entry.get("name"), str) and isinstance(template, Mapping):
            out.setdefault(entry["name"], template)
    return out


def _source(
    holder: Mapping[str, Any], base: str, shared: Mapping[str, Mapping[str, Any]]
) -> tuple[Mapping[str, Any] | None, str, str]:
    """(pod template, its path, why unknown) of a pattern's ``template`` or ``templateRef``."""
    template = holder.get("template")
    if isinstance(template, Mapping):
        return template, f"{base}.template", ""
    ref = holder.get("templateRef")
    if isinstance(ref, Mapping):
        name = ref.get("name")
        found = shared.get(name) if isinstance(name, str) else None
        if found is None:
            return None, "", f"{base}.templateRef names no spec.roleTemplates entry"
        patch = ref.get("patch")
        merged = merge_patch(found, patch) if isinstance(patch, Mapping) else found
        return merged, f"{base}.templateRef", ""
    return None, "", ""


def _spec_of(template: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    spec = template.get("spec") if isinstance(template, Mapping) else None
    return spec if isinstance(spec, Mapping) else None


_LeaderWorker = tuple[Mapping[str, Any], Mapping[str, Any], str, int, str, dict[str, str], str]


def _leader_worker(
    role: Mapping[str, Any], base: str, env: dict[str, str], *, name: str, label: str,
    shared: Mapping[str, Mapping[str, Any]],
) -> _LeaderWorker | None:  # fmt: skip
    """(leader spec, worker spec, template path, size, size path, env, index variable) of a
    leader-worker role (v1alpha2 ``leaderWorkerPattern``, v1alpha1 ``leaderWorkerSet``);
    None for another role or one without a template."""
    lwp, lws = role.get("leaderWorkerPattern"), role.get("leaderWorkerSet")
    if isinstance(lwp, Mapping):
        holder: Mapping[str, Any] = lwp
        template, path, _ = _source(lwp, f"{base}.leaderWorkerPattern", shared)
        patches = ("leaderTemplatePatch", "workerTemplatePatch")
        size_path = f"{base}.leaderWorkerPattern.size"
        size = replica_count(lwp.get("size"))
        env = {**env, RBG_SIZE_ENV: str(size)}
        index_env = RBG_INDEX_ENV
    elif isinstance(lws, Mapping):
        holder = lws
        template, path, _ = _source(role, base, shared)
        patches = ("patchLeaderTemplate", "patchWorkerTemplate")
        size_path = f"{base}.leaderWorkerSet.size"
        size = replica_count(lws.get("size"))
        # LeaderWorkerSet injects its own variables (rules.kinds: LWS >= 0.6)
        env = {**env, "LWS_GROUP_SIZE": str(size), "LWS_NAME": f"{name}-{label}"}
        index_env = "LWS_WORKER_INDEX"
    else:
        return None
    if template is None:
        return None
    leader = _spec_of(merge_patch(template, holder.get(patches[0]) or {}))
    worker = _spec_of(merge_patch(template, holder.get(patches[1]) or {}))
    if leader is None or worker is None:
        return None
    return leader, worker, f"{path}.spec", size, size_path, env, index_env


def rolebasedgroup(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    """A RoleBasedGroup's pod templates, per role: a standalone role's template; a
    leader-worker role's leader (template + leader patch) and worker (template + worker
    patch), one group of ``size`` pods with the env RBG injects (leader index 0; 1 stands
    for any worker); roles that form one Ray cluster are one Ray group. Either
    apiVersion (v1alpha2, the deprecated v1alpha1) is read."""
    kind = str(obj.get("kind", "RoleBasedGroup"))
    shared = _role_templates(obj)
    templates: list[PodTemplate] = []
    plain: list[tuple[str, GroupMember]] = []
    for i, role in _items(obj, "spec", "roles"):
        base = f"spec.roles[{i}]"
        label = _text(role.get("name")) or f"roles[{i}]"
        common = {"RBG_GROUP_NAME": name, "RBG_ROLE_NAME": label}
        found = _leader_worker(role, base, common, name=name, label=label, shared=shared)
        if found is None:
            standalone = role.get("standalonePattern")
            holder = standalone if isinstance(standalone, Mapping) else role
            prefix = f"{base}.standalonePattern" if holder is standalone else base
            template, path, _ = _source(holder, prefix, shared)
            spec = _spec_of(template)
            if spec is not None:
                replicas = replica_count(role.get("replicas"))
                member = GroupMember(spec, f"{path}.spec", replicas, f"{base}.replicas")
                plain.append((label, member))
                templates.append(
                    PodTemplate(kind, name, namespace, spec, member.path, label, None,
                                common, family=RBG)
                )  # fmt: skip
            continue
        leader, worker, path, size, size_path, env, index_env = found
        group = Group(
            size_path,
            LWS,
            (
                GroupMember(leader, path, 1, size_path),
                GroupMember(worker, path, size - 1, size_path),
            ),
        )
        templates.append(
            PodTemplate(kind, name, namespace, leader, path, f"{label}-leader", group,
                        {**env, index_env: "0"}, family=RBG, group_leader=True,
                        index_env=index_env)
        )  # fmt: skip
        if size > 1:
            templates.append(
                PodTemplate(kind, name, namespace, worker, path, f"{label}-worker", group,
                            {**env, index_env: "1"}, family=RBG, index_env=index_env)
            )  # fmt: skip
    ray = _ray_cluster(plain, "spec.roles[*].replicas")
    if ray is not None:
        in_group = {id(m.spec) for m in ray.members}
        templates = [
            PodTemplate(t.kind, t.name, t.namespace, t.spec, t.path, t.role, ray,
                        t.injected_env, family=RBG)
            if t.group is None and id(t.spec) in in_group else t
            for t in templates
        ]  # fmt: skip
    return templates


# -- Kthena ModelServing -----------------------------------------------------------------------

KTHENA_SIZE_ENV = "GROUP_SIZE"  # v1alpha1.GroupSizeEnv
KTHENA_ENTRY_ENV = "ENTRY_ADDRESS"  # v1alpha1.EntryAddressEnv
KTHENA_INDEX_ENV = "WORKER_INDEX"  # v1alpha1.WorkerIndexEnv
_KTHENA_ENV = frozenset((KTHENA_SIZE_ENV, KTHENA_ENTRY_ENV, KTHENA_INDEX_ENV))


def _without_injected(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod spec less the env entries the Kthena controller replaces (addEnvVars keeps
    only the entries of other names, then appends its own)."""
    changed = dict(spec)
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        if not isinstance(containers, list):
            continue
        changed[key] = [
            {
                **c,
                "env": [
                    e for e in c["env"]
                    if not (isinstance(e, Mapping) and e.get("name") in _KTHENA_ENV)
                ],
            }
            if isinstance(c, Mapping) and isinstance(c.get("env"), list)
            else c
            for c in containers
        ]  # fmt: skip
    return changed


def _model_serving_invalid(obj: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(field, what, fix) when the ModelServing CRD (tests/data/crds/kthena) refuses the
    object: it requires spec.template with roles (1 to 4), and in each role name,
    entryTemplate and workerReplicas."""
    why = "is required by the Kthena ModelServing CRD: the API server rejects this object"
    if not isinstance(dig(obj, ("spec", "template")), Mapping):
        return "spec.template", why, "add spec.template.roles (each role's entryTemplate)"
    roles = dig(obj, ("spec", "template", "roles"))
    if not isinstance(roles, list) or not roles:
        return "spec.template.roles", why, "add at least one role with its entryTemplate"
    for i, role in _items(obj, "spec", "template", "roles"):
        for key in ("name", "entryTemplate", "workerReplicas"):
            if key not in role:
                field = f"spec.template.roles[{i}].{key}"
                fix = {
                    "name": "name the role (prefill, decode, ...)",
                    "entryTemplate": "add the entry pod's template (entryTemplate.spec)",
                    "workerReplicas": "add workerReplicas (0 for a role of one pod)",
                }[key]
                return field, why, fix
    return None


def model_serving(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    """A ModelServing's pod templates, per role: the entry pod, alone when the role has no
    workers, else the entry and a worker of one group of ``workerReplicas + 1`` pods (like
    a LeaderWorkerSet's), with the env the controller injects (entry index 0; 1 stands for
    any worker). Roles are separate engines: prefill and decode are judged each on its
    own. The entry pod's name is ``<name>-<group>-<role>-<i>-0``; index 0 stands for any."""
    kind = str(obj.get("kind", "ModelServing"))
    invalid = _model_serving_invalid(obj)
    if invalid is not None:
        if not any(runs_vllm(spec, path) for path, spec in embedded_pod_specs(obj)):
            return []
        return [PodTemplate(kind, name, namespace, {"containers": []}, "spec", invalid=invalid)]
    out: list[PodTemplate] = []
    for i, role in _items(obj, "spec", "template", "roles"):
        base = f"spec.template.roles[{i}]"
        label = _text(role.get("name")) or f"roles[{i}]"
        entry = _spec_of(role.get("entryTemplate"))
        if entry is None:
            continue
        workers = replica_count(role.get("workerReplicas"), 0)
        worker = _spec_of(role.get("workerTemplate"))
        size_path = f"{base}.workerReplicas"
        entry_path, worker_path = f"{base}.entryTemplate.spec", f"{base}.workerTemplate.spec"
        env = {
            KTHENA_SIZE_ENV: str(workers + 1),
            KTHENA_ENTRY_ENV: f"{name}-0-{label}-0-0.{namespace or 'default'}",
            KTHENA_INDEX_ENV: "0",
        }
        entry = _without_injected(entry)
        if workers == 0 or worker is None:
            # the entry pod is the whole group (GenerateWorkerPod makes no pod without a
            # workerTemplate; GROUP_SIZE still says workerReplicas + 1): a Ray head in it
            # has no other pod to wait for, as a LeaderWorkerSet of size 1
            alone = Group(
                size_path, LWS,
                (GroupMember(entry, entry_path, 1, size_path),
                 GroupMember(entry, entry_path, 0, size_path)),
            )  # fmt: skip
            out.append(
                PodTemplate(kind, name, namespace, entry, entry_path, label, alone, env,
                            family=KTHENA, group_leader=True, index_env=KTHENA_INDEX_ENV)
            )  # fmt: skip
            continue
        worker = _without_injected(worker)
        group = Group(
            size_path,
            LWS,
            (
                GroupMember(entry, entry_path, 1, size_path),
                GroupMember(worker, worker_path, workers, size_path),
            ),
        )
        out.append(
            PodTemplate(kind, name, namespace, entry, entry_path, f"{label}-entry", group,
                        env, family=KTHENA, group_leader=True, index_env=KTHENA_INDEX_ENV)
        )  # fmt: skip
        out.append(
            PodTemplate(kind, name, namespace, worker, worker_path, f"{label}-worker", group,
                        {**env, KTHENA_INDEX_ENV: "1"}, family=KTHENA,
                        index_env=KTHENA_INDEX_ENV)
        )  # fmt: skip
    return out
