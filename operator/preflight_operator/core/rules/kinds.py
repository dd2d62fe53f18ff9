"""The one registry of workload kinds: where each kind keeps its pod templates, where its
parallel plan and accelerator counts are declared, and which pods its controller makes.

Every kind the rules judge is a row of ``KINDS``: its API group and kind, the family it
belongs to (a chart value turns a family's admission off), and an extractor that turns an
object into ``PodTemplate``s. Kinds whose controller writes the vLLM command line itself
(KubeAI's Model, Ray Serve LLM in a RayService) get a *synthesised* container: the command
that controller runs, with every token's manifest path pointing at the field it came from,
so findings name the field the user wrote. Objects of any other kind that embed a pod
spec running vLLM are found by shape (``rules.embedded``), judged, and marked generic.

Adding a kind: write its extractor here, add a row to ``KINDS``, a table to docs/RULES.md
("Workload kinds"), a webhook rule to the chart, and an upstream example to the corpus.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import yaml

from preflight_operator.core.rules import boundedyaml
from preflight_operator.core.rules.embedded import embedded_pod_specs, runs_vllm
from preflight_operator.core.rules.groups import JOBSET, jobset  # issue 26
from preflight_operator.core.rules.spread import generic_group
from preflight_operator.core.rules.template import (
    AIBRIX,
    CORE,
    DYNAMO,
    GENERIC,
    KSERVE,
    KUBEAI,
    KUBERAY,
    LWS,
    PRODUCTION_STACK,
    Group,
    GroupMember,
    PodTemplate,
    Resolve,
    dig,
    meta,
    num,
    resolve_nothing,
)
from preflight_operator.core.rules.wrappers import (
    dynamo_graph,
    inference_service,
    kubeai_model,
    llm_inference_service,
    serving_runtime,
    vllm_runtime,
)

Extractor = Callable[[Mapping[str, Any], str, "str | None"], list[PodTemplate]]


@dataclass(frozen=True)
class KindSpec:
    group: str  # API group; "" for the core group
    kind: str
    family: str
    extract: Any  # Extractor, or (obj, name, namespace, resolve) when needs_resolve
    where: str  # for docs: where the templates and the plan are read
    needs_resolve: bool = False  # the extractor reads referenced objects (ServingRuntimes)


# -- core kinds ----------------------------------------------------------------------------


def _at(*keys: str) -> Extractor:
    def extract(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
        spec = dig(obj, (*keys, "spec")) if keys else obj.get("spec")
        path = ".".join((*keys, "spec")) if keys else "spec"
        if not isinstance(spec, Mapping):
            return []
        return [PodTemplate(str(obj.get("kind")), name, namespace, spec, path)]

    return extract


# -- a Pod that LeaderWorkerSet made ---------------------------------------------------------
#
# The mutating webhook sees one pod of a group at a time. LWS labels it with its set's name
# and worker index and annotates the group size (leaderworkerset.sigs.k8s.io/size), so the
# pod is judged as a member of a group of that size, not as a lone pod: the leader of a
# Ray-pattern group (`ray start --head && vllm serve -tp 2 -pp 3` over 3 pods) needs its
# share, 2 GPUs, not the engine's 6. The other template is not in the pod: it is assumed
# like this one (the LeaderWorkerSet itself was judged whole at its admission).
_LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
_LWS_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
_LWS_SIZE = "leaderworkerset.sigs.k8s.io/size"


def _pod(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    found = obj.get("metadata")
    labels = found.get("labels") if isinstance(found, Mapping) else None
    annotations = found.get("annotations") if isinstance(found, Mapping) else None
    lws = labels.get(_LWS_NAME) if isinstance(labels, Mapping) else None
    size = num(annotations.get(_LWS_SIZE), 0) if isinstance(annotations, Mapping) else 0
    if not lws or size <= 1 or not isinstance(labels, Mapping):
        return [PodTemplate("Pod", name, namespace, spec, "spec")]
    index = str(labels.get(_LWS_INDEX, "0"))
    members = (
        GroupMember(spec, "spec", 1, f"metadata.annotations[{_LWS_SIZE!r}]"),
        GroupMember(spec, "spec", size - 1, f"metadata.annotations[{_LWS_SIZE!r}]"),
    )
    group = Group(f"metadata.annotations[{_LWS_SIZE!r}]", LWS, members)
    env = {"LWS_GROUP_SIZE": str(size), "LWS_NAME": str(lws), "LWS_WORKER_INDEX": index}
    # no role: the container keeps its own name, and the group-wide rules (which need the
    # other template) stay with the LeaderWorkerSet's own admission
    return [PodTemplate("Pod", name, namespace, spec, "spec", None, group, env)]


# -- LeaderWorkerSet -----------------------------------------------------------------------


def _lws(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    base = "spec.leaderWorkerTemplate"
    lwt = dig(obj, ("spec", "leaderWorkerTemplate"))
    if not isinstance(lwt, Mapping):
        return []
    size = lwt.get("size", 1)
    size = size if isinstance(size, int) and not isinstance(size, bool) and size >= 1 else 1
    worker = dig(lwt, ("workerTemplate", "spec"))
    leader = dig(lwt, ("leaderTemplate", "spec"))
    worker_path = f"{base}.workerTemplate.spec"
    if not isinstance(worker, Mapping):
        return []
    if not isinstance(leader, Mapping):
        # without a leaderTemplate the leader is made from the worker template
        leader, leader_path = worker, worker_path
    else:
        leader_path = f"{base}.leaderTemplate.spec"
    members = (
        GroupMember(leader, leader_path, 1, f"{base}.size"),
        GroupMember(worker, worker_path, size - 1, f"{base}.size"),
    )
    group = Group(f"{base}.size", LWS, members)
    # LWS (>= 0.6) injects these into every container of the group
    common = {"LWS_GROUP_SIZE": str(size), "LWS_NAME": name}
    kind = "LeaderWorkerSet"
    templates = [
        PodTemplate(
            kind, name, namespace, leader, leader_path, "leader", group,
            {**common, "LWS_WORKER_INDEX": "0"}, family=LWS,
        )
    ]  # fmt: skip
    if leader_path != worker_path and size > 1:
        # the node rank of a worker does not change what it needs; 1 stands for any
        templates.append(
            PodTemplate(
                kind, name, namespace, worker, worker_path, "worker", group,
                {**common, "LWS_WORKER_INDEX": "1"}, family=LWS,
            )
        )  # fmt: skip
    return templates


# -- KubeRay (RayCluster, RayService, RayJob) and AIBrix's RayClusterFleet -------------------
#
# A Ray cluster is one head pod and worker groups of `replicas` pods (x numOfHosts); with the
# in-tree autoscaler up to `maxReplicas`. vLLM's Ray executor places TP x PP workers over
# the whole cluster, so the cluster's GPUs count, not one pod's; Ray counts what
# `rayStartParams.num-gpus` says, else the container's GPU limit. KubeRay mounts a
# memory-backed /dev/shm into every Ray container itself (ray-operator, common/pod.go:
# the "shared-mem" emptyDir), so the shm rules do not apply.


def _ray_member(
    group_spec: Mapping[str, Any], path: str, *, head: bool, autoscaling: bool
) -> GroupMember | None:
    spec = dig(group_spec, ("template", "spec"))
    if not isinstance(spec, Mapping):
        return None
    if head:
        replicas, replicas_path = 1, f"{path}"
    else:
        counts = [num(group_spec.get("replicas"), 0), num(group_spec.get("minReplicas"), 0)]
        if autoscaling or "replicas" not in group_spec:
            counts.append(num(group_spec.get("maxReplicas"), 0))
        replicas = max(counts) * max(1, num(group_spec.get("numOfHosts"), 1))
        replicas_path = f"{path}.replicas"
    params = group_spec.get("rayStartParams")
    gpus = None
    if isinstance(params, Mapping) and "num-gpus" in params:
        gpus = num(params.get("num-gpus"), -1)
        gpus = None if gpus < 0 else gpus
    return GroupMember(
        spec, f"{path}.template.spec", replicas, replicas_path, gpus,
        f"{path}.rayStartParams.num-gpus",
    )  # fmt: skip


def _ray_cluster(
    cluster: Any, base: str, *, kind: str, name: str, namespace: str | None, family: str
) -> tuple[Group | None, list[PodTemplate]]:
    if not isinstance(cluster, Mapping):
        return None, []
    autoscaling = cluster.get("enableInTreeAutoscaling") is True
    members: list[GroupMember] = []
    head = cluster.get("headGroupSpec")
    if isinstance(head, Mapping):
        found = _ray_member(head, f"{base}.headGroupSpec", head=True, autoscaling=autoscaling)
        if found is not None:
            members.append(found)
    workers = cluster.get("workerGroupSpecs")
    for i, worker in enumerate(workers if isinstance(workers, list) else []):
        if isinstance(worker, Mapping):
            path = f"{base}.workerGroupSpecs[{i}]"
            found = _ray_member(worker, path, head=False, autoscaling=autoscaling)
            if found is not None:
                members.append(found)
    if not members:
        return None, []
    group = Group(f"{base}.workerGroupSpecs[*].replicas", "ray", tuple(members))
    templates = [
        PodTemplate(
            kind, name, namespace, m.spec, m.path, "head" if i == 0 else f"worker{i - 1}",
            group, family=family, shm_provided=True,
        )
        for i, m in enumerate(members)
    ]  # fmt: skip
    return group, templates


def _ray_cluster_kind(*keys: str, family: str = KUBERAY) -> Extractor:
    def extract(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
        base = ".".join(keys)
        _, templates = _ray_cluster(
            dig(obj, keys), base, kind=str(obj["kind"]), name=name, namespace=namespace,
            family=family,
        )  # fmt: skip
        return templates

    return extract


_SERVE_LLM = "ray.serve.llm"
# engine_kwargs keys that are not vLLM command-line options
_NOT_ARGS = frozenset(("model", "served_model_name"))


def _serve_llm_configs(config: object, base: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """(llm_config, its path) of every Ray Serve LLM application in serveConfigV2."""
    apps = config.get("applications") if isinstance(config, Mapping) else None
    for a, app in enumerate(apps if isinstance(apps, list) else []):
        if not isinstance(app, Mapping) or _SERVE_LLM not in str(app.get("import_path", "")):
            continue
        configs = dig(app, ("args", "llm_configs"))
        for i, llm in enumerate(configs if isinstance(configs, list) else []):
            if isinstance(llm, Mapping):
                yield llm, f"{base} applications[{a}].args.llm_configs[{i}]"


def _serve_container(llm: Mapping[str, Any], path: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The `vllm serve` command line Ray Serve LLM builds from an llm_config."""
    model = dig(llm, ("model_loading_config", "model_source")) or dig(
        llm, ("model_loading_config", "model_id")
    )
    argv = ["vllm", "serve", str(model or "model")]
    paths = [path, path, f"{path}.model_loading_config"]
    kwargs = llm.get("engine_kwargs")
    for key, value in kwargs.items() if isinstance(kwargs, Mapping) else []:
        if not isinstance(key, str) or key in _NOT_ARGS or value is None:
            continue
        flag = "--" + key.replace("_", "-")
        where = f"{path}.engine_kwargs.{key}"
        if value is True:
            argv.append(flag)
            paths.append(where)
        elif value is False:
            continue
        else:
            text = json.dumps(value) if isinstance(value, (Mapping, list)) else str(value)
            argv += [flag, text]
            paths += [where, where]
    container = {"name": "serve-llm", "command": argv}
    return container, tuple(paths)


def _serve_replicas(llm: Mapping[str, Any]) -> int:
    deployment = llm.get("deployment_config")
    if not isinstance(deployment, Mapping):
        return 1
    autoscaling = deployment.get("autoscaling_config")
    if isinstance(autoscaling, Mapping):
        return max(1, num(autoscaling.get("min_replicas"), 1))
    return max(1, num(deployment.get("num_replicas"), 1))


def _ray_service(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    group, templates = _ray_cluster(
        dig(obj, ("spec", "rayClusterConfig")), "spec.rayClusterConfig", kind="RayService",
        name=name, namespace=namespace, family=KUBERAY,
    )  # fmt: skip
    text = dig(obj, ("spec", "serveConfigV2"))
    if group is None or not isinstance(text, str):
        return templates
    head = group.members[0]
    try:
        config = boundedyaml.load(text)
    except boundedyaml.Refused as exc:
        # over a limit (an alias, too deep, too large): what it runs is unknown, a warning
        unread = ("spec.serveConfigV2", f"{exc} ({exc.reason})")
        serve = PodTemplate(
            "RayService", name, namespace, {"containers": []}, head.path, "serve", group,
            family=KUBERAY, shm_provided=True, unread=unread,
        )  # fmt: skip
        return [*templates, serve]
    except yaml.YAMLError:
        return templates  # not YAML: KubeRay refuses it; nothing here runs vLLM
    for llm, path in _serve_llm_configs(config, "spec.serveConfigV2"):
        container, paths = _serve_container(llm, path)
        spec = {"containers": [container]}
        templates.append(
            PodTemplate(
                "RayService", name, namespace, spec, head.path, "serve", group,
                family=KUBERAY, shm_provided=True, argv_paths=paths,
                engine_replicas=_serve_replicas(llm),
            )
        )  # fmt: skip
    return templates


# -- AIBrix StormService ----------------------------------------------------------------


def _storm_service(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    roles = dig(obj, ("spec", "template", "spec", "roles"))
    out: list[PodTemplate] = []
    for i, role in enumerate(roles if isinstance(roles, list) else []):
        spec = dig(role, ("template", "spec"))
        if isinstance(spec, Mapping):
            label = str(role.get("name") or f"roles[{i}]")
            path = f"spec.template.spec.roles[{i}].template.spec"
            out.append(
                PodTemplate("StormService", name, namespace, spec, path, label, family=AIBRIX)
            )
    return out


# -- the registry ---------------------------------------------------------------------------

KINDS: tuple[KindSpec, ...] = (
    KindSpec("", "Pod", CORE, _pod, "spec (a pod LeaderWorkerSet made: a member of its group)"),
    KindSpec("apps", "Deployment", CORE, _at("spec", "template"), "spec.template.spec"),
    KindSpec("apps", "StatefulSet", CORE, _at("spec", "template"), "spec.template.spec"),
    KindSpec("apps", "ReplicaSet", CORE, _at("spec", "template"), "spec.template.spec"),
    KindSpec("apps", "DaemonSet", CORE, _at("spec", "template"), "spec.template.spec"),
    KindSpec("batch", "Job", CORE, _at("spec", "template"), "spec.template.spec"),
    KindSpec(
        "batch",
        "CronJob",
        CORE,
        _at("spec", "jobTemplate", "spec", "template"),
        "spec.jobTemplate.spec.template.spec",
    ),
    KindSpec("", "ReplicationController", CORE, _at("spec", "template"), "spec.template.spec"),
    KindSpec(
        "leaderworkerset.x-k8s.io",
        "LeaderWorkerSet",
        LWS,
        _lws,
        "spec.leaderWorkerTemplate.{leaderTemplate,workerTemplate}.spec; size",
    ),
    KindSpec(
        "ray.io",
        "RayCluster",
        KUBERAY,
        _ray_cluster_kind("spec"),
        "spec.headGroupSpec / workerGroupSpecs[*] template.spec, replicas, rayStartParams",
    ),
    KindSpec(
        "ray.io",
        "RayJob",
        KUBERAY,
        _ray_cluster_kind("spec", "rayClusterSpec"),
        "spec.rayClusterSpec (a RayCluster spec)",
    ),
    KindSpec(
        "ray.io",
        "RayService",
        KUBERAY,
        _ray_service,
        "spec.rayClusterConfig (a RayCluster spec); spec.serveConfigV2 Ray Serve LLM "
        "llm_configs[*].engine_kwargs and deployment_config replicas",
    ),
    KindSpec(
        "orchestration.aibrix.ai",
        "RayClusterFleet",
        AIBRIX,
        _ray_cluster_kind("spec", "template", "spec", family=AIBRIX),
        "spec.template.spec (a RayCluster spec)",
    ),
    KindSpec(
        "orchestration.aibrix.ai",
        "StormService",
        AIBRIX,
        _storm_service,
        "spec.template.spec.roles[*].template.spec",
    ),
    KindSpec(
        "serving.kserve.io",
        "InferenceService",
        KSERVE,
        inference_service,
        "spec.predictor (a PodSpec); with spec.predictor.model the ServingRuntime's "
        "kserve-container merged with it (runtime args, then model.args)",
        needs_resolve=True,
    ),
    KindSpec(
        "serving.kserve.io", "ServingRuntime", KSERVE, serving_runtime, "spec, spec.workerSpec"
    ),
    KindSpec(
        "serving.kserve.io",
        "ClusterServingRuntime",
        KSERVE,
        serving_runtime,
        "spec, spec.workerSpec",
    ),
    KindSpec(
        "serving.kserve.io",
        "LLMInferenceService",
        KSERVE,
        llm_inference_service,
        "spec.template / spec.worker / spec.prefill.*; plan spec.parallelism",
    ),
    KindSpec(
        "kubeai.org",
        "Model",
        KUBEAI,
        kubeai_model,
        "no template: spec.args after the controller's vLLM command; spec.resourceProfile name:N",
    ),
    KindSpec(
        "production-stack.vllm.ai",
        "VLLMRuntime",
        PRODUCTION_STACK,
        vllm_runtime,
        "no template: spec.model, spec.vllmConfig (tensorParallelSize, extraArgs), "
        "spec.deploymentConfig.resources.gpu",
    ),
    KindSpec(
        "nvidia.com",
        "DynamoGraphDeployment",
        DYNAMO,
        dynamo_graph,
        "spec.services{}.extraPodSpec.mainContainer (v1alpha1), spec.components[].podTemplate "
        "(v1beta1); resources.limits.gpu; multinode.nodeCount",
    ),
    KindSpec(  # issue 26: rules/groups.py
        "jobset.x-k8s.io",
        "JobSet",
        JOBSET,
        jobset,
        "spec.replicatedJobs[*].template.spec.template.spec; replicas x parallelism pods",
    ),
)
_BY_KIND: dict[tuple[str, str], KindSpec] = {(k.group, k.kind): k for k in KINDS}
_CORE_KINDS = {k.kind: k for k in KINDS if k.family == CORE}
# core objects that never hold a pod spec: not searched
_PLAIN_CORE = frozenset(("ConfigMap", "Secret", "Service", "Namespace", "ServiceAccount"))


def api_group(obj: Mapping[str, Any]) -> str | None:
    """The API group of an object ("" for core); None without an apiVersion."""
    api = obj.get("apiVersion")
    if not isinstance(api, str):
        return None
    return api.rsplit("/", 1)[0] if "/" in api else ""


def kind_spec(obj: Mapping[str, Any]) -> KindSpec | None:
    kind = obj.get("kind")
    if not isinstance(kind, str):
        return None
    group = api_group(obj)
    if group is None:
        return _CORE_KINDS.get(kind)  # a manifest without apiVersion: the core kinds only
    return _BY_KIND.get((group, kind))


def _generic(obj: Mapping[str, Any], name: str, namespace: str | None) -> list[PodTemplate]:
    kind = str(obj.get("kind"))
    found = embedded_pod_specs(obj)
    return [
        PodTemplate(
            kind, name, namespace, spec, path, family=GENERIC, generic=True,
            group=generic_group(obj, path, spec, found),
        )
        for path, spec in found
        if path and runs_vllm(spec, path)
    ]  # fmt: skip


def pod_templates(
    obj: Mapping[str, Any], default_namespace: str | None, resolve: Resolve = resolve_nothing
) -> list[PodTemplate]:
    """The pod templates of any object: a registered kind's, else every embedded pod spec
    that runs vLLM (judged generically); [] for everything else. ``resolve`` reads the
    objects a kind refers to (an InferenceService's ServingRuntime)."""
    kind = obj.get("kind")
    if not isinstance(kind, str):
        return []
    name, namespace = meta(obj, default_namespace)
    spec = kind_spec(obj)
    if spec is not None:
        if spec.needs_resolve:
            found = spec.extract(obj, name, namespace, resolve)
        else:
            found = spec.extract(obj, name, namespace)
        return [replace(t, family=spec.family) if t.family == CORE else t for t in found]
    if kind.endswith("List") or (api_group(obj) in ("", None) and kind in _PLAIN_CORE):
        return []
    return _generic(obj, name, namespace)
