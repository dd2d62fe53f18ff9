"""The operator's own probe of a node (issue 34; pure: the pod, its name, reading its verdict,
the settings; ``runtime/nodeproberunner.py`` makes the calls).

Why: a tenant's report is what a tenant's image printed. Node feedback that followed it let
one tenant taint a shared node (others' pods became Unschedulable) and another tenant's pass
naming the GPU UUIDs clear a real ECC quarantine. So a report only *requests* a probe; the
node changes (the taint, the label, the annotation, ``GPUPreflightReady``, the Event, and a
quarantine cleared) only on the verdict of a pod the operator made itself:

* in the operator's own namespace (no tenant's webhook, env or image reaches it), bound to
  the node by ``spec.nodeName`` (the scheduler is not asked: the node may carry our own
  NoSchedule taint, which it tolerates), named after the node so that the API server keeps
  one per node (a second create is refused with AlreadyExists);
* running the checker of the chart's check image (``checkImage``, pinned by its digest
  where the chart has one), the fast tier: every node-level check (``NODE_CHECKS``: ECC, row
  remapping, XIDs, NVLink, PCIe, contexts) is a fast-tier fact;
* on every GPU of the node, without a device-plugin request: ``NVIDIA_VISIBLE_DEVICES=all``
  as node monitors (DCGM exporter) do, so that a probe runs beside the tenants' pods that hold
  the GPUs (a request would wait for them to end). This needs the NVIDIA container runtime
  to honour the variable for unprivileged pods (its default); docs/CHECKS.md says what else.
* its action is Warn: it always exits 0 with its report, and only its node-level findings
  are read (a manifest finding of a pod with no vLLM in it means nothing).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any

from preflight_contract import envnames
from preflight_contract.verdicts import ERROR, FAIL
from preflight_operator.core import apinames, constants
from preflight_operator.core.nodefeedback import KEY, NODE_CHECKS, Finding, finding
from preflight_operator.core.podresults import MAX_FAILURES, PodResult, pod_result

LABEL = constants.PREFIX + "probe"  # value "node": the operator's probe pods
LABEL_VALUE = "node"
NODE_ANNOTATION = constants.PREFIX + "probe-node"  # the node's full name (a label is 63)
NAME_PREFIX = "vllm-preflight-probe-"
SELECTOR = f"{LABEL}={LABEL_VALUE}"
TOLERATED = (KEY, constants.GPU_RESOURCE)  # our quarantine, and the usual GPU-node taint


def valid_node_name(name: str) -> bool:
    """A node name as the API server allows it (apinames: one rule for every path)."""
    return not apinames.problem(apinames.NAME, name)


def probe_name(node: str) -> str:
    """One name per node (the API server refuses a second probe of it while one exists)."""
    return NAME_PREFIX + hashlib.sha256(node.encode()).hexdigest()[:16]


def probe_pod(
    node: str,
    *,
    namespace: str,
    image: str,
    pull_policy: str,
    deadline_seconds: int,
    start_seconds: int,
) -> dict[str, Any]:
    """The probe pod of ``node`` (module docstring). The check runs as the init container
    ``preflight-check``, so that its status reads like any injected check's
    (podresults.py); the one container after it only ends the pod."""
    env = {
        # every GPU of the node: TP is only a plan, and no plan rule is read from a probe
        envnames.TP: "1",
        envnames.PP: "1",
        envnames.DP_LOCAL: "1",
        envnames.ACTION: "Warn",
        envnames.TIER: "fast",
        envnames.DEADLINE: str(deadline_seconds),
        envnames.GROUP: "off",
        envnames.DEEP_REUSE: "[]",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TMPDIR": "/tmp",
        "HOME": "/tmp",
    }
    security = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    resources = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}
    tmp = [{"name": "tmp", "mountPath": "/tmp"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": probe_name(node),
            "namespace": namespace,
            "labels": {
                LABEL: LABEL_VALUE,
                "app.kubernetes.io/managed-by": constants.COMPONENT,
            },
            "annotations": {NODE_ANNOTATION: node},
        },
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "activeDeadlineSeconds": start_seconds + deadline_seconds,
            "terminationGracePeriodSeconds": 5,
            "tolerations": [{"key": key, "operator": "Exists"} for key in TOLERATED],
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "initContainers": [
                {
                    "name": constants.CHECK_CONTAINER,
                    "image": image,
                    "imagePullPolicy": pull_policy,
                    # the check image's own entrypoint runs its zipapp: `check` is its argument
                    "args": ["check"],
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                    "resources": resources,
                    "volumeMounts": tmp,
                    "terminationMessagePolicy": "FallbackToLogsOnError",
                    "securityContext": security,
                }
            ],
            "containers": [
                {
                    "name": "done",
                    "image": image,
                    "imagePullPolicy": pull_policy,
                    "command": ["python3", "-c", ""],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                    "securityContext": security,
                }
            ],
            "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}],
        },
    }


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What a probe said: ``found`` (its node finding), or ``ended`` without one (the pod
    failed or was cut off before its check wrote a report: nothing changes)."""

    found: Finding | None = None
    ended: str = ""


def read_probe(pod: Mapping[str, Any], node: str, uid: str) -> Verdict | None:
    """The verdict of the probe ``uid`` on ``node``, or None while it runs. A pod that is
    not the one created (another uid, another node) is no verdict: ended."""
    meta = pod.get("metadata") or {}
    if str(meta.get("uid", "")) != uid or (pod.get("spec") or {}).get("nodeName") != node:
        return Verdict(ended="the probe pod was replaced")
    result = pod_result(pod)
    if result is not None:
        return _verdict(result, str(meta.get("namespace", "")))
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Failed", "Succeeded"):
        reason = (pod.get("status") or {}).get("reason") or phase
        return Verdict(ended=f"the probe pod ended ({str(reason)[:80]}) without a report")
    return None


def _verdict(result: PodResult, namespace: str) -> Verdict:
    """A fault when a node-level check failed; a pass when the report is whole and no
    node-level check failed or could not run (a manifest check failing in a pod with no
    vLLM in it, e.g. the plan's GPU count, says nothing of the node)."""
    found = finding(result, namespace)
    if found is None:
        return Verdict(ended="the probe's report names no node")
    if found.failing:
        return Verdict(found=found)
    if not result.gpus:  # no report (a crash, an OOM kill), or one that saw no GPU
        return Verdict(ended=f"the probe could not check the node: {result.message[:200]}")
    failed = [f for f in result.failures if f.status in (FAIL, ERROR)]
    if len(failed) >= MAX_FAILURES:  # the list is cut there: a node fault may be past it
        return Verdict(ended="the probe's report has more failures than are read")
    unsure = sorted({f.id for f in failed if f.id in NODE_CHECKS and f.status == ERROR})
    if unsure or not found.checked:
        what = ", ".join(unsure) or "no GPU seen"
        return Verdict(ended=f"the probe could not check the node ({what})")
    return Verdict(found=dataclasses.replace(found, passed=True))
