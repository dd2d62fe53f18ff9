"""Workload kinds, GPUValidation naming and pod -> workload attribution (pure).

Attribution walks no API: a Deployment's ReplicaSet is named ``<deployment>-<pod-template-
hash>`` and its pods carry that hash as a label, and LeaderWorkerSet pods carry the LWS name
as a label, so the owning workload is read from the pod alone. That keeps the operator at
zero extra API calls per pod result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from preflight_operator.core.rules import KINDS, OWNER, TEMPLATE, VALIDATED, KindSpec

LWS_GROUP = "leaderworkerset.x-k8s.io"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
MAX_NAME = 253
MAX_LABEL_VALUE = 63  # also the most a label key's name part may hold
MAX_LABEL_PREFIX = 253  # a label key's DNS-1123 subdomain prefix
# k8s.io/apimachinery/pkg/util/validation (IsQualifiedName, IsValidLabelValue,
# IsDNS1123Subdomain), matched whole (fullmatch: Go's `$` admits no trailing newline).
# Lengths count characters, Go's bytes: they differ only for non-ASCII text, which the
# patterns refuse anyway (and a lone surrogate from JSON cannot be encoded).
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


# The API group each bare kind name first has in the registry (batch/v1 Job before
# Volcano's batch.volcano.sh Job, KServe's ServingRuntime before OME's).
_FIRST_GROUP: dict[str, str] = {s.kind: s.group for s in reversed(KINDS)}


def kind_key(group: str | None, kind: str) -> str:
    """(API group, kind) as the operator's tables, keys and names spell it: the bare kind
    where the registry first has it in this group (or has no kind of that name, or the
    group is unknown: None), else ``Kind.group`` (kubectl's form), so that a Volcano Job
    (``Job.batch.volcano.sh``) is never read as batch/v1 Job: not in the kinds admission
    and the operator look up, nor in a denial, an Event, a GPUValidation's name or the
    key pod results are kept under."""
    if group is None or _FIRST_GROUP.get(kind, group) == group:
        return kind
    return f"{kind}.{group}"


@dataclasses.dataclass(frozen=True)
class WorkloadKind:
    kind: str
    group: str
    version: str
    plural: str
    # Where `replicas` lives, for ScaleToZero; None: the kind cannot be scaled.
    scalable: bool = False
    pausable: bool = False
    family: str = "core"  # rules.kinds families: a serving stack can be switched off

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        return kind_key(self.group, self.kind)

    @classmethod
    def of(cls, spec: KindSpec) -> WorkloadKind:
        """The kind as the operator watches it, from its row of the one registry
        (rules.kinds.KINDS). Only a serving stack's family can be switched off; the rest
        (core kinds, LeaderWorkerSet) is watched wherever it is served."""
        family = spec.family if spec.switchable else "core"
        return cls(
            spec.kind, spec.group, spec.version, spec.resource,
            scalable=spec.scalable, pausable=spec.pausable, family=family,
        )  # fmt: skip


_OPERATED = {
    kind.key: kind
    for kind in (WorkloadKind.of(s) for s in KINDS if s.role in (VALIDATED, TEMPLATE, OWNER))
}
DEPLOYMENT = _OPERATED["Deployment"]
STATEFULSET = _OPERATED["StatefulSet"]
JOB = _OPERATED["Job"]
LEADERWORKERSET = _OPERATED["LeaderWorkerSet"]
POD = _OPERATED["Pod"]
REPLICASET = _OPERATED["ReplicaSet"]
_CORE = (DEPLOYMENT, STATEFULSET, JOB, LEADERWORKERSET, POD)

# Serving stacks whose controller makes the pods (rules/kinds.py says where their plan is).
# Each keeps a GPUValidation of its own; what its controller creates (a Deployment, an LWS,
# a RayCluster, pods) reports to it through the controller ownerReference.
WRAPPER_KINDS: tuple[WorkloadKind, ...] = tuple(
    _OPERATED[kind_key(s.group, s.kind)] for s in KINDS if s.role == VALIDATED and s.switchable
)
# Templates judged at admission only: they make no pods and keep no GPUValidation.
TEMPLATE_KINDS: tuple[WorkloadKind, ...] = tuple(
    _OPERATED[kind_key(s.group, s.kind)] for s in KINDS if s.role == TEMPLATE
)

# The kinds the validating webhook judges and the operator keeps a GPUValidation for, by
# kind_key (an object's: ``object_kind_key``).
VALIDATED_KINDS: dict[str, WorkloadKind] = {k.key: k for k in (*_CORE, *WRAPPER_KINDS)}
# ... and what the webhook judges besides.
ADMITTED_KINDS: dict[str, WorkloadKind] = {
    **VALIDATED_KINDS,
    **{k.key: k for k in TEMPLATE_KINDS},
}
KNOWN_KINDS: dict[str, WorkloadKind] = {**VALIDATED_KINDS, REPLICASET.key: REPLICASET}


def group_of(api_version: str) -> str | None:
    """The API group of an apiVersion ("" for core "v1"); None when there is none ("")."""
    if not api_version:
        return None
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def object_kind_key(body: Mapping[str, Any]) -> str:
    """The kind_key of an object, from its apiVersion and kind."""
    api_version = body.get("apiVersion")
    group = group_of(api_version) if isinstance(api_version, str) else None
    return kind_key(group, str(body.get("kind", "")))


# The serving-stack families (chart value workloadKinds, operator flag --kind-families).
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(k.family for k in WRAPPER_KINDS))


@dataclasses.dataclass(frozen=True)
class WorkloadRef:
    namespace: str
    kind: str
    name: str
    api_version: str

    @property
    def kind_key(self) -> str:
        return kind_key(group_of(self.api_version), self.kind)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.namespace, self.kind_key, self.name)

    @property
    def display(self) -> str:
        return f"{self.kind_key}/{self.name}"

    @property
    def workload_kind(self) -> WorkloadKind | None:
        return KNOWN_KINDS.get(self.kind_key)


def ref_of(body: Mapping[str, Any], kind: WorkloadKind) -> WorkloadRef:
    meta = body.get("metadata") or {}
    return WorkloadRef(
        namespace=str(meta.get("namespace", "")),
        kind=kind.kind,
        name=str(meta.get("name", "")),
        api_version=kind.api_version,
    )


def gpuvalidation_name(kind: str, name: str) -> str:
    """``<kind lowercased>-<name>``; over 253 characters, cut and suffixed with a hash."""
    full = f"{kind.lower()}-{name}"
    if len(full) <= MAX_NAME:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:10]
    return f"{full[: MAX_NAME - len(digest) - 1].rstrip('-.')}-{digest}"


def label_value_problem(value: str) -> str | None:
    """Why the API server refuses this label value, or None when it takes it (empty is
    valid; at most 63 characters of [A-Za-z0-9_.-], alphanumeric at both ends)."""
    if len(value) > MAX_LABEL_VALUE:
        return f"longer than {MAX_LABEL_VALUE} characters"
    if value and not _LABEL_NAME.fullmatch(value):
        return "not [A-Za-z0-9_.-] starting and ending with a letter or digit"
    return None


def label_key_problem(key: str) -> str | None:
    """Why the API server refuses this label key (a qualified name: an optional DNS-1123
    subdomain prefix of at most 253 characters and '/', then a name of at most 63
    characters of [A-Za-z0-9_.-], alphanumeric at both ends), or None."""
    parts = key.split("/")
    if len(parts) > 2:
        return "more than one '/'"
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "empty prefix before '/'"
        if len(prefix) > MAX_LABEL_PREFIX or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return (
                f"prefix {prefix!r:.80} is not a DNS-1123 subdomain (lower case "
                f"[a-z0-9.-], at most {MAX_LABEL_PREFIX} characters)"
            )
    if not name:
        return "empty name"
    if len(name) > MAX_LABEL_VALUE:
        return f"name longer than {MAX_LABEL_VALUE} characters"
    if not _LABEL_NAME.fullmatch(name):
        return "name not [A-Za-z0-9_.-] starting and ending with a letter or digit"
    return None


def workload_label_value(ref: WorkloadRef) -> str | None:
    """``<kind>.<name>`` for the pod label, or None when it is no valid label value."""
    value = f"{ref.kind_key.lower()}.{ref.name}"
    return None if label_value_problem(value) is not None else value


def _controller_owner(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    owners = meta.get("ownerReferences") or []
    for owner in owners:
        if isinstance(owner, Mapping) and owner.get("controller"):
            return owner
    return owners[0] if owners and isinstance(owners[0], Mapping) else None


def workload_of_pod(pod: Mapping[str, Any]) -> WorkloadRef:
    """The workload a pod's result belongs to.

    LeaderWorkerSet (by its label, whatever StatefulSet or leader pod owns the pod), then
    Deployment (ReplicaSet owner whose name ends with the pod-template-hash), StatefulSet,
    Job, any other controller as itself, and a pod without owner as a bare Pod.
    """
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace", ""))
    labels = meta.get("labels") or {}
    lws = labels.get(LWS_NAME_LABEL)
    if lws:
        return WorkloadRef(namespace, LEADERWORKERSET.kind, str(lws), LEADERWORKERSET.api_version)
    owner = _controller_owner(meta)
    if owner is None:
        return WorkloadRef(namespace, POD.kind, str(meta.get("name", "")), POD.api_version)
    kind = str(owner.get("kind", ""))
    name = str(owner.get("name", ""))
    api_version = str(owner.get("apiVersion", ""))
    if kind == REPLICASET.kind:
        template_hash = labels.get(POD_TEMPLATE_HASH_LABEL)
        if template_hash and name.endswith(f"-{template_hash}"):
            return WorkloadRef(
                namespace,
                DEPLOYMENT.kind,
                name[: -len(template_hash) - 1],
                DEPLOYMENT.api_version,
            )
    return WorkloadRef(namespace, kind, name, api_version)


def is_bare_pod(pod: Mapping[str, Any]) -> bool:
    return not (pod.get("metadata") or {}).get("ownerReferences")


def template_labels(kind: WorkloadKind, body: Mapping[str, Any]) -> dict[str, str]:
    """Labels of the workload and of the pods it makes (an opt-in or opt-out label may be
    on either); for a LeaderWorkerSet, of both its leader and worker templates."""
    labels: dict[str, str] = {}
    spec = body.get("spec") or {}
    templates: list[Any] = []
    if kind.kind == LEADERWORKERSET.kind:
        lwt = spec.get("leaderWorkerTemplate") or {}
        templates = [lwt.get("leaderTemplate"), lwt.get("workerTemplate")]
    elif kind.kind != POD.kind:
        templates = [spec.get("template")]
    for template in templates:
        if isinstance(template, Mapping):
            labels.update((template.get("metadata") or {}).get("labels") or {})
    labels.update((body.get("metadata") or {}).get("labels") or {})
    return {str(k): str(v) for k, v in labels.items()}


# What each serving stack's controller creates, among the kinds the webhook judges
# (VALIDATED_KINDS), with its controller ownerReference pointing at the stack's object.
# Only such a child is "made by a serving stack" (wrapper_owner): an ownerReference any
# user may write on their own Deployment, pointing at their own RayService, buys nothing.
# Read from each controller's source (repository, path, commit):
STACK_CHILDREN: dict[str, frozenset[str]] = {
    # Standard (raw) mode: the predictor's Deployment, and the workers' Deployment when
    # multi-node (kserve/kserve pkg/controller/v1beta1/inferenceservice/reconcilers/raw/
    # raw_kube_reconciler.go, deployment/deployment_reconciler.go SetControllerReferences;
    # aaac4e294dae2c7b1aa1886447793f3aa1c30912). Serverless mode makes a Knative Service.
    "InferenceService": frozenset({"Deployment"}),
    # A Deployment single-node, a LeaderWorkerSet multi-node (kserve/kserve
    # pkg/controller/v1alpha2/llmisvc/workload_single_node.go, workload_multi_node.go;
    # aaac4e294dae2c7b1aa1886447793f3aa1c30912).
    "LLMInferenceService": frozenset({"Deployment", "LeaderWorkerSet"}),
    # KubeRay (ray-project/kuberay ray-operator/controllers/ray/, at
    # feeaf72facab4881ba2b179248bb67315634e229): a RayService makes RayClusters
    # (rayservice_controller.go); a RayCluster makes its head and worker Pods and a Redis
    # cleanup Job (raycluster_controller.go); a RayJob makes a RayCluster and the
    # submitter Job (rayjob_controller.go).
    "RayService": frozenset({"RayCluster"}),
    "RayCluster": frozenset({"Pod", "Job"}),
    "RayJob": frozenset({"RayCluster", "Job"}),
    # AIBrix (vllm-project/aibrix pkg/controller/, e3e10f9e4aebe9aac5e7d992fb87d2648e01628b):
    # a RayClusterFleet makes RayClusterReplicaSets (rayclusterfleet/sync.go), which make
    # the RayClusters; a StormService makes RoleSets (stormservice/rolesetoperations.go),
    # which make the Pods. Neither makes a judged kind itself.
    "RayClusterFleet": frozenset(),
    "StormService": frozenset(),
    # KubeAI (kubeai-project/kubeai internal/modelcontroller/, pod_plan.go and cache.go;
    # f442a2cd620cc0c903d0d0a5145bb70fb050503b): the model's Pods and its cache Jobs.
    "Model": frozenset({"Pod", "Job"}),
    # production-stack (vllm-project/production-stack operator/internal/controller/
    # vllmruntime_controller.go; a6c01db05f65f556235413ba8dbcfb0c01132fff).
    "VLLMRuntime": frozenset({"Deployment"}),
    # Dynamo makes DynamoComponentDeployments (which make the Deployments and
    # LeaderWorkerSets) or Grove PodCliqueSets (ai-dynamo/dynamo
    # deploy/operator/internal/controller/dgd_component_workloads_reconciler.go;
    # 003d1ee5de27986d5265b7a4bedb1e9241974034): no judged kind itself.
    "DynamoGraphDeployment": frozenset(),
    # JobSet makes one Job per replicated Job replica, with itself as controller
    # (kubernetes-sigs/jobset pkg/controllers/jobset_controller.go constructJob,
    # createJobs SetControllerReference; 08dfbdfd682714a9ab929633eca8dc95315187e7), and
    # the headless Service of its subdomain; the Job controller makes the pods.
    "JobSet": frozenset({"Job"}),
    # Kthena's ModelServing controller makes each role's entry and worker Pods itself,
    # with itself as controller (volcano-sh/kthena pkg/model-serving-controller/utils/
    # utils.go GenerateEntryPod, GenerateWorkerPod, newModelServingOwnerRef;
    # 3cc057284c34469fcb0ed22a12dac84b1d120719), and a headless Service per entry pod.
    "ModelServing": frozenset({"Pod"}),
    # Volcano's job controller makes each task's Pods itself, with the Job as controller
    # (volcano-sh/volcano pkg/controllers/job/job_controller_util.go createJobPod,
    # metav1.NewControllerRef; 00bac39e8659311f13f1130b14138bfde2dd540d), and a PodGroup.
    "Job.batch.volcano.sh": frozenset({"Pod"}),
    # RoleBasedGroup makes a RoleInstanceSet per role (its own kind, which makes
    # RoleInstances and they the Pods) and, with its deprecated workload types on,
    # StatefulSets, Deployments and LeaderWorkerSets, each with itself as controller
    # (sgl-project/rbg internal/controller/workloads/rolebasedgroup_controller.go
    # SetupWithManager Owns; 993491fba9bfdf377d3cd18c8833da20ce0ec87b).
    "RoleBasedGroup": frozenset({"Deployment", "StatefulSet", "LeaderWorkerSet"}),
}


def _controller_reference(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The one ownerReference with ``controller: true`` (the API server allows at most
    one), else None: a plain ownerReference controls nothing."""
    owners = meta.get("ownerReferences")
    if not isinstance(owners, list):
        return None
    return next((o for o in owners if isinstance(o, Mapping) and o.get("controller") is True), None)


def wrapper_owner(body: Mapping[str, Any], kind: str | None = None) -> WorkloadRef | None:
    """The serving-stack object (WRAPPER_KINDS) that controls this object, from its
    controller ownerReference: its results belong to that owner. None otherwise, and None
    when the owner's controller never makes an object of this ``kind`` (a kind_key;
    STACK_CHILDREN; default: the body's own): a user's Deployment pointing at their own RayService
    is their Deployment. Whether the owner exists is for the caller to confirm
    (webhooks.py reads it at admission; ``owner_uid`` is what it must match)."""
    meta = body.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    owner = _controller_reference(meta)
    if owner is None:
        return None
    owner_kind = str(owner.get("kind", ""))
    api_version = str(owner.get("apiVersion", ""))
    group = group_of(api_version)
    wrapper = next((k for k in WRAPPER_KINDS if (k.group, k.kind) == (group, owner_kind)), None)
    if wrapper is None:
        return None
    child = object_kind_key(body) if kind is None else kind
    if child not in STACK_CHILDREN.get(wrapper.key, frozenset()):
        return None
    return WorkloadRef(
        str(meta.get("namespace", "")), owner_kind, str(owner.get("name", "")), api_version
    )


def owner_uid(body: Mapping[str, Any]) -> str:
    """The uid the controller ownerReference names ("" when none)."""
    meta = body.get("metadata")
    owner = _controller_reference(meta) if isinstance(meta, Mapping) else None
    return str(owner.get("uid", "")) if owner is not None else ""
