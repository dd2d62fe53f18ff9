"""Playing the kubelet on a control plane that has none (the demo, e2e tests, benchmarks).

A real kubelet runs the injected init containers and writes their outcome to the pod's
status; the operator reads only that. Here the caller runs the check however it likes
(the demo runs the real checker over a fake GPU view) and this module writes the status a
kubelet would: ``preflight-install`` completed, ``preflight-check`` terminated with its
exit code and its termination message, the vLLM container waiting or running.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from preflight_operator.core import constants
from preflight_operator.core.rules import parse_quantity
from preflight_operator.runtime.api import MERGE_PATCH, KubeApi

if TYPE_CHECKING:
    from preflight_dev.testing.base import Cluster


def rfc3339(moment: datetime.datetime | None = None) -> str:
    moment = moment or datetime.datetime.now(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _terminated(exit_code: int, message: str, started: str, finished: str) -> dict[str, Any]:
    state: dict[str, Any] = {
        "exitCode": exit_code,
        "reason": "Completed" if exit_code == 0 else "Error",
        "startedAt": started,
        "finishedAt": finished,
    }
    if message:
        state["message"] = message
    return state


def check_env(pod: Mapping[str, Any]) -> dict[str, str]:
    """The literal env of the injected check container (what the kubelet would give it;
    valueFrom entries are left out: there is no kubelet to resolve them)."""
    for container in (pod.get("spec") or {}).get("initContainers") or []:
        if container.get("name") == constants.CHECK_CONTAINER:
            return {
                str(e["name"]): str(e.get("value", ""))
                for e in container.get("env") or []
                if "name" in e and "valueFrom" not in e
            }
    return {}


_REFERENCE = re.compile(r"\$\$|\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


def container_env(
    container: Mapping[str, Any],
    *,
    secrets: Mapping[str, Mapping[str, str]] = {},
    config_maps: Mapping[str, Mapping[str, str]] = {},
    fields: Mapping[str, str] = {},
) -> dict[str, str]:
    """The environment the kubelet gives ``container``: its envFrom (ConfigMaps and
    Secrets, by name: ``config_maps``/``secrets`` hold their data), then its env in order,
    each ``value`` with ``$(NAME)`` expanded against the variables before it and ``$$``
    made ``$``, each ``valueFrom`` resolved (``fields``: downward-API fieldPath -> value;
    one not given is left out, as an optional reference would be)."""
    out: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        if "configMapRef" in source:
            data = config_maps.get(str(source["configMapRef"].get("name")), {})
        else:
            data = secrets.get(str((source.get("secretRef") or {}).get("name")), {})
        out.update({prefix + k: v for k, v in data.items()})

    def expand(text: str) -> str:
        return _REFERENCE.sub(
            lambda m: "$" if m.group(0) == "$$" else out.get(m.group(1), m.group(0)), text
        )

    for item in container.get("env") or []:
        name = str(item["name"])
        if "value" in item:
            out[name] = expand(str(item["value"]))
            continue
        ref = item.get("valueFrom") or {}
        value: str | None = None
        if "secretKeyRef" in ref:
            value = secrets.get(ref["secretKeyRef"]["name"], {}).get(ref["secretKeyRef"]["key"])
        elif "configMapKeyRef" in ref:
            key = ref["configMapKeyRef"]
            value = config_maps.get(key["name"], {}).get(key["key"])
        elif "fieldRef" in ref:
            value = fields.get(ref["fieldRef"]["fieldPath"])
        if value is not None:
            out[name] = value
    return out


def check_gpus(pod: Mapping[str, Any]) -> int:
    """GPUs the device plugin would hand the check (and then the vLLM container)."""
    for container in (pod.get("spec") or {}).get("initContainers") or []:
        if container.get("name") == constants.CHECK_CONTAINER:
            limits = (container.get("resources") or {}).get("limits") or {}
            try:
                return int(str(limits.get(constants.GPU_RESOURCE, 0)))
            except ValueError:
                return 0
    return 0


# What a container's /dev/shm is: the container runtime's default, or the emptyDir mounted
# there (memory-backed: its sizeLimit, else bounded by the node's memory, here taken as
# NODE_MEMORY).
DEFAULT_SHM_BYTES = 64 * 1024**2
NODE_MEMORY = 64 * 1024**3


def check_shm_bytes(pod: Mapping[str, Any]) -> int:
    """The size of /dev/shm the kubelet would give the injected check container."""
    spec = pod.get("spec") or {}
    volumes = {v.get("name"): v for v in spec.get("volumes") or [] if isinstance(v, Mapping)}
    for container in spec.get("initContainers") or []:
        if container.get("name") != constants.CHECK_CONTAINER:
            continue
        for mount in container.get("volumeMounts") or []:
            if mount.get("mountPath") != "/dev/shm":
                continue
            empty_dir = (volumes.get(mount.get("name")) or {}).get("emptyDir")
            if not isinstance(empty_dir, Mapping):
                return DEFAULT_SHM_BYTES
            if empty_dir.get("medium") != "Memory":
                return NODE_MEMORY  # a disk-backed directory: not tmpfs, but not small
            limit = parse_quantity(empty_dir.get("sizeLimit"))
            return NODE_MEMORY if limit is None or limit <= 0 else min(int(limit), NODE_MEMORY)
    return DEFAULT_SHM_BYTES


def pod_status(
    pod: Mapping[str, Any],
    *,
    exit_code: int,
    message: str,
    restarts: int = 0,
    started: str | None = None,
    finished: str | None = None,
) -> dict[str, Any]:
    """The status after the check ran: vLLM starts after a pass (or when not enforced),
    and under Enforce a failed check keeps the pod in Init:Error."""
    started = started or rfc3339()
    finished = finished or rfc3339()
    spec = pod.get("spec") or {}
    init_images = {c.get("name"): c.get("image", "") for c in spec.get("initContainers") or []}
    passed = exit_code == 0
    app_state: dict[str, Any] = (
        {"running": {"startedAt": finished}}
        if passed
        else {"waiting": {"reason": "PodInitializing"}}
    )
    return {
        "phase": "Running" if passed else "Pending",
        "initContainerStatuses": [
            {
                "name": constants.INSTALL_CONTAINER,
                "image": init_images.get(constants.INSTALL_CONTAINER, ""),
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "state": {"terminated": _terminated(0, "", started, started)},
            },
            {
                "name": constants.CHECK_CONTAINER,
                "image": init_images.get(constants.CHECK_CONTAINER, ""),
                "imageID": "",
                "ready": passed,
                "restartCount": restarts,
                "state": {"terminated": _terminated(exit_code, message, started, finished)},
            },
        ],
        "containerStatuses": [
            {
                "name": c.get("name"),
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": app_state,
            }
            for c in spec.get("containers") or []
        ],
    }


def bound_node(pod: Mapping[str, Any]) -> str | None:
    """The node kube-scheduler bound the pod to, or None while it is not bound. A kubelet
    runs only the pods bound to its node: this stand-in plays the kubelet for those only."""
    node = (pod.get("spec") or {}).get("nodeName")
    return str(node) if node else None


async def bind(api: KubeApi, namespace: str, name: str, node: str) -> None:
    """What the scheduler would do: put the pod on a node (none needs to exist)."""
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    await api.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body=body)


async def write_status(
    api: KubeApi, namespace: str, name: str, status: Mapping[str, Any]
) -> dict[str, Any]:
    return await api.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/{name}/status",
        body={"status": status},
        content_type=MERGE_PATCH,
    )


def play(
    cluster: Cluster,
    pod: Mapping[str, Any],
    exit_code: int,
    message: str,
    *,
    started: str | None = None,
    finished: str | None = None,
) -> None:
    """The e2e tests' kubelet: the status above written through ``kubectl patch
    --subresource=status``."""
    meta = pod["metadata"]
    status = pod_status(
        pod, exit_code=exit_code, message=message, started=started, finished=finished
    )
    cluster.kubectl(
        "patch", "pod", meta["name"], "-n", meta["namespace"], "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def play_ready(cluster: Cluster, pod: Mapping[str, Any], *, started: str, ready: str) -> None:
    """The kubelet's report once vLLM answers its probes: every container running since
    ``started`` and ready, the pod's Ready condition True since ``ready`` (the operator
    measures the start to Ready from these two; core/loadtime.py)."""
    meta = pod["metadata"]
    containers = (pod.get("spec") or {}).get("containers") or []
    status = {
        "containerStatuses": [
            {
                "name": c.get("name"), "image": c.get("image", ""), "imageID": "",
                "ready": True, "restartCount": 0, "started": True,
                "state": {"running": {"startedAt": started}},
            }
            for c in containers
        ],
        "conditions": [
            {"type": t, "status": "True", "lastTransitionTime": ready}
            for t in ("Initialized", "ContainersReady", "Ready", "PodScheduled")
        ],
    }  # fmt: skip
    cluster.kubectl(
        "patch", "pod", meta["name"], "-n", meta["namespace"], "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip
