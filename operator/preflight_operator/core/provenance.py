"""Who created an injected pod: recorded at CREATE, protected after, checked when its
result is read (pure; issue 23).

Why: the operator reads a check's result from the pod's status, and acts on it: it may
pause or scale the workload (``onRuntimeFailure``) and taint or clear a node (node
feedback). A user allowed to create pods, and nothing else, made a pod with the injected
label, an ownerReference to a victim's ReplicaSet and an init container named
``preflight-check`` printing a made-up report: the operator scaled the victim's Deployment
to zero, tainted a shared node, and a forged pass from another namespace cleared the taint.

Only admission sees who sends a request, so:

* the mutating webhook writes :data:`ANNOTATION` on every pod it injects: ``controller``
  when the requester is a controller's identity and the pod has a controller
  ownerReference, ``other`` otherwise, whatever the client wrote; a pod that comes with
  a check already is ``other`` (its check is not the one the webhook injected: issue 34);
* the validating webhook (``/validate-provenance``, every namespace but the excluded ones,
  every pod labelled injected before or after the request, ``pods`` and ``pods/status``)
  refuses a CREATE that claims ``controller`` for a requester that is not one (the
  mutating webhook did not run there, e.g. a namespace not opted in) and any UPDATE, by
  anyone, that adds, changes or removes a mark the webhook owns (:data:`OWNED_MARKS`: the
  injected and workload labels, the annotation). Issue 34: a pod created with
  ``inject: disabled`` (no webhook ran) and ``created-by: controller``, labelled
  ``injected=true`` later, was trusted; so was a ``pods/status`` write, which no entry
  for ``pods`` matches;
* the operator trusts a result only when the annotation says ``controller`` (and the pod
  does not opt out of injection: :func:`trusted`, a cheap pre-filter) *and* the chain of
  controller references from the pod to its workload is confirmed uid by uid by the API
  server (core/ownerchain.py, runtime/ownership.py). Names (a ReplicaSet named
  ``<deployment>-<pod-template-hash>``) prove nothing: a tenant's own ReplicaSet named
  after the victim scaled the victim to zero (issue 34).

A result that is not trusted is shown on the GPUValidation (marked ``createdBy: other``),
but it never drives remediation or node feedback and never outranks a trusted result.

Controllers' identities: the kube-controller-manager's own user and every service account
of ``kube-system`` (with ``--use-service-account-credentials``, each controller runs as
``system:serviceaccount:kube-system:<name>-controller``; only cluster administrators can
create identities there), plus the exact usernames the chart lists in
``podTrust.creators`` (a serving stack's operator that creates pods itself, e.g. KubeRay's
``system:serviceaccount:<its namespace>:kuberay-operator``). Never a pattern over
namespaces: any tenant can name a service account ``kuberay-operator`` in their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from preflight_operator.core import constants

ANNOTATION = constants.ANNOTATION_CREATED_BY
CONTROLLER = "controller"
OTHER = "other"
CONTROLLER_MANAGER = "system:kube-controller-manager"
KUBE_SYSTEM_ACCOUNTS = "system:serviceaccount:kube-system:"

# The workload kind -> the kind of the pod's controller ownerReference, and how its name
# relates to the workload's ("same": equal; "hash": <name>-<pod-template-hash label>;
# "prefix": <name>-<anything>). Sources: the controllers' code in kubernetes/kubernetes
# (pkg/controller/deployment: ReplicaSet names; statefulset, job, daemon: the object owns
# its pods) and kubernetes-sigs/lws (leader StatefulSet <name>, workers <name>-<index>).
OWNERS: dict[str, tuple[str, str]] = {
    "Deployment": ("ReplicaSet", "hash"),
    "ReplicaSet": ("ReplicaSet", "same"),
    "StatefulSet": ("StatefulSet", "same"),
    "DaemonSet": ("DaemonSet", "same"),
    "Job": ("Job", "same"),
    "CronJob": ("Job", "prefix"),
    "LeaderWorkerSet": ("StatefulSet", "prefix-or-same"),
}


def controller_owner(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod's controller ownerReference (the API server allows at most one)."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def is_controller_identity(username: str, trusted: Iterable[str] = ()) -> bool:
    return (
        username == CONTROLLER_MANAGER
        or username.startswith(KUBE_SYSTEM_ACCOUNTS)
        or username in set(trusted)
    )


def created_by(
    pod: Mapping[str, Any], user_info: Mapping[str, Any], trusted: Iterable[str] = ()
) -> str:
    """What the annotation must say for this CREATE request."""
    username = str((user_info or {}).get("username") or "")
    if controller_owner(pod) is not None and is_controller_identity(username, trusted):
        return CONTROLLER
    return OTHER


def recorded(pod: Mapping[str, Any]) -> str | None:
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    return value if isinstance(value, str) else None


def annotation_patch(pod: Mapping[str, Any], value: str) -> list[dict[str, Any]]:
    """JSON patch operations that set the annotation (none when it already says so)."""
    if recorded(pod) == value:
        return []
    key = ANNOTATION.replace("~", "~0").replace("/", "~1")
    if not isinstance((pod.get("metadata") or {}).get("annotations"), Mapping):
        return [{"op": "add", "path": "/metadata/annotations", "value": {ANNOTATION: value}}]
    return [{"op": "add", "path": f"/metadata/annotations/{key}", "value": value}]


def refusal(
    operation: str,
    pod: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    user_info: Mapping[str, Any],
    trusted: Iterable[str] = (),
) -> str | None:
    """Why /validate-provenance refuses this request, or None to admit it."""
    claimed = recorded(pod)
    if operation == "CREATE":
        if claimed == CONTROLLER and created_by(pod, user_info, trusted) != CONTROLLER:
            return (
                f"metadata.annotations[{ANNOTATION!r}]: only a workload's controller may"
                f" create a pod marked {CONTROLLER!r}; remove the annotation (vllm-preflight"
                " sets it)"
            )
        return None
    if operation == "UPDATE" and old is not None:
        changed = next((m for m in OWNED_MARKS if _mark(old, m) != _mark(pod, m)), None)
        if changed is not None:
            field = f"metadata.{changed[0]}[{changed[1]!r}]"
            return (
                f"{field} is vllm-preflight's: set by its webhook when the pod is created,"
                " never added, changed or removed after (by an update or through"
                " pods/status); restore it or leave it out of the update"
            )
    return None


# The marks the mutating webhook writes at CREATE and nobody may write after (issue 34:
# a pod created with ``inject: disabled``, so that no webhook ran, then labelled
# ``injected=true`` with ``created-by: controller`` already in place, was trusted).
OWNED_MARKS: tuple[tuple[str, str], ...] = (
    ("labels", constants.LABEL_INJECTED),
    ("labels", constants.LABEL_WORKLOAD),
    ("annotations", ANNOTATION),
)


def _mark(pod: Mapping[str, Any], mark: tuple[str, str]) -> Any:
    values = (pod.get("metadata") or {}).get(mark[0])
    return values.get(mark[1]) if isinstance(values, Mapping) else None


def _name_matches(how: str, owner_name: str, workload: str, pod: Mapping[str, Any]) -> bool:
    if how == "same":
        return owner_name == workload
    if how == "hash":
        labels = (pod.get("metadata") or {}).get("labels") or {}
        pod_hash = labels.get("pod-template-hash") if isinstance(labels, Mapping) else None
        return bool(pod_hash) and owner_name == f"{workload}-{pod_hash}"
    if how == "prefix-or-same" and owner_name == workload:
        return True
    return owner_name.startswith(workload + "-")


def trusted(pod: Mapping[str, Any], workload_kind: str, workload_name: str) -> bool:
    """Whether the marks let the operator act on this pod's result for that workload: a
    cheap pre-filter, never proof (the chain of uids is: core/ownerchain.py). A pod that
    opts out of injection was never injected by the webhook: its check is not ours."""
    if recorded(pod) != CONTROLLER:
        return False
    labels = (pod.get("metadata") or {}).get("labels")
    if (
        isinstance(labels, Mapping)
        and labels.get(constants.LABEL_INJECT) == constants.INJECT_DISABLED
    ):
        return False
    owner = controller_owner(pod)
    if owner is None:
        return False
    expected = OWNERS.get(workload_kind)
    if expected is None:
        # a serving stack's own kind: its operator created the pod (the annotation says a
        # controller identity did) and owns it
        return True
    kind, how = expected
    return owner.get("kind") == kind and _name_matches(
        how, str(owner.get("name", "")), workload_name, pod
    )
