"""The group phase's env of a LeaderWorkerSet pod, and who in a group runs the check
(the injection, core/injection.py; docs/CHECKS.md, "Group phase").

Which vLLM command lines run their own share of a multi-node engine (every member then
gets the check), the Ray pattern's roles and when a Ray group may meet, the env of an LWS
member (downward-API references), and the opt-out label. JobSet and Kthena ModelServing
groups are core/inject_jobset.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preflight_contract import envnames
from preflight_operator.core import constants
from preflight_operator.core.rules import RAY_HEAD, RAY_MEMBER, nvidia_gpus, ray_start

LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"
LWS_GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"


def in_lws_group(pod: Mapping[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return isinstance(labels, Mapping) and bool(labels.get(LWS_NAME_LABEL))


# vLLM options by which every pod of the group runs vLLM itself (multiprocessing over nodes,
# multi-node data parallelism), so every member gets the check and can meet the others.
_OWN_SHARE_OPTIONS = (
    "--nnodes",
    "--node-rank",
    "--headless",
    "--data-parallel-address",
    "--data-parallel-size-local",
    "--data-parallel-start-rank",
    "-dpl",
    "-dpr",
)


def runs_own_share(vllm: Mapping[str, Any]) -> bool:
    """The group phase needs every member to run the check. Ray workers (``ray start``)
    have no vLLM container and get no check, so a Ray group's leader would wait for
    members that never come: only the multiprocessing and multi-node DP shapes, whose
    workers run vLLM, meet."""
    words = " ".join(str(w) for key in ("command", "args") for w in (vllm.get(key) or []))
    tokens = {t.split("=", 1)[0].replace("_", "-") for t in words.split()}
    return any(option in tokens for option in _OWN_SHARE_OPTIONS)


def ray_role(container: Mapping[str, Any]) -> str | None:
    """ "head" or "worker" when the container starts a Ray node (the LeaderWorkerSet Ray
    pattern: the leader `ray start --head ... && vllm serve`, the workers `ray start
    --address=$(LWS_LEADER_ADDRESS):6379 --block`), else None. Read by the rules'
    ``spread.ray_start`` (one reader); these are its names in the injector's words."""
    role = ray_start(container)
    return "head" if role == RAY_HEAD else "worker" if role == RAY_MEMBER else None


def ray_group_ready(lws: Mapping[str, Any]) -> bool:
    """Every pod of a Ray-pattern LeaderWorkerSet gets the check: its leader starts the
    Ray head and vLLM, and each worker's Ray container requests NVIDIA GPUs (the injector
    gives those the check with their own GPUs). Only then may the group meet: a leader
    waiting for a worker that has no check would fail a healthy group."""
    lwt = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    if not isinstance(lwt, Mapping) or int(lwt.get("size") or 1) <= 1:
        return False
    worker = ((lwt.get("workerTemplate") or {}).get("spec") or {}).get("containers") or []
    leader_template = lwt.get("leaderTemplate") or lwt.get("workerTemplate") or {}
    leader = (leader_template.get("spec") or {}).get("containers") or []
    for template in (lwt.get("leaderTemplate"), lwt.get("workerTemplate")):
        labels = ((template or {}).get("metadata") or {}).get("labels") or {}
        if isinstance(labels, Mapping) and opted_out(labels):
            return False
    heads = [c for c in leader if isinstance(c, Mapping) and ray_role(c) == "head"]
    workers = [c for c in worker if isinstance(c, Mapping) and ray_role(c) == "worker"]
    return bool(heads) and bool(workers) and all(nvidia_gpus(c) > 0 for c in workers)


def field_ref(path: str) -> dict[str, Any]:
    """A downward-API reference to the pod's ``path`` (an env entry's valueFrom)."""
    return {"fieldRef": {"fieldPath": path}}


def member_env(vllm: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What every member adds for the others to compare: its image; the engine arguments
    are PREFLIGHT_VLLM_ARGS (the rules' reading, set by check_container), and a Ray worker,
    which has none, is named so that their absence is expected."""
    env: list[dict[str, Any]] = []
    if ray_role(vllm) == "worker":
        env.append({"name": envnames.GROUP_ROLE, "value": envnames.ROLE_RAY_WORKER})
    if isinstance(vllm.get("image"), str) and vllm["image"]:  # issue 26: members compare it
        env.append({"name": envnames.GROUP_IMAGE, "value": vllm["image"][:512]})
    return env


def group_env(pod: Mapping[str, Any], vllm: Mapping[str, Any], port: int) -> list[dict[str, Any]]:
    """What the check of a LeaderWorkerSet pod needs for the group phase (docs/CHECKS.md,
    "Group phase"). LeaderWorkerSet itself gives every container, init containers too,
    LWS_LEADER_ADDRESS and LWS_GROUP_SIZE; the worker and group index and the node come
    from the downward API (the labels exist by the time the kubelet starts the container).
    The arguments the group compares are PREFLIGHT_VLLM_ARGS (the rules' reading, set by
    check_container); a Ray worker, which has none, is named so that their absence is
    expected."""
    meta = pod.get("metadata") or {}
    lws = str((meta.get("labels") or {}).get(LWS_NAME_LABEL, ""))
    env: list[dict[str, Any]] = [
        {"name": envnames.GROUP_PORT, "value": str(port)},
        {
            "name": envnames.GROUP_INDEX,
            "valueFrom": field_ref(f"metadata.labels['{LWS_WORKER_INDEX_LABEL}']"),
        },
        {
            "name": envnames.GROUP_SIZE,
            "valueFrom": field_ref(f"metadata.annotations['{LWS_SIZE_ANNOTATION}']"),
        },
        {
            "name": envnames.GROUP_NUMBER,
            "valueFrom": field_ref(f"metadata.labels['{LWS_GROUP_INDEX_LABEL}']"),
        },
        # <namespace>/<name>-<group index>: names the group in messages and results
        {
            "name": envnames.GROUP_ID,
            "value": f"{meta.get('namespace', '')}/{lws}-$(PREFLIGHT_GROUP_NUMBER)",
        },
        {"name": envnames.NODE_NAME, "valueFrom": field_ref("spec.nodeName")},
        # who this member is, for the leader to list and the operator to match
        {"name": envnames.POD_NAME, "valueFrom": field_ref("metadata.name")},
        {"name": envnames.POD_UID, "valueFrom": field_ref("metadata.uid")},
    ]
    return env + member_env(vllm)


def opted_out(labels: Mapping[str, str], label: str = constants.LABEL_INJECT) -> bool:
    return labels.get(label) == constants.INJECT_DISABLED
