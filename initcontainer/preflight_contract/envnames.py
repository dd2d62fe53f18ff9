"""The ``PREFLIGHT_*`` environment of the preflight-check container, named once.

The operator's injector (preflight_operator/core/injection.py and its inject_*.py parts)
writes these into the injected init container from the workload's plan and the
PreflightPolicy; the checker (preflight_check/options.py, group.py) reads them, with the
same meaning as its flags.
``ORIGIN`` says, for the fix of a bad value, where the injector took each one from.
"""

from __future__ import annotations

from typing import Dict, FrozenSet

PREFIX = "PREFLIGHT_"

# The plan: vLLM's command line as the rules read it, and the parallel sizes from it.
TP = "PREFLIGHT_TP"
PP = "PREFLIGHT_PP"
DP_LOCAL = "PREFLIGHT_DP_LOCAL"
VLLM_ARGS = "PREFLIGHT_VLLM_ARGS"
# The variables PREFLIGHT_VLLM_ARGS refers to as $(NAME) for the checker to fill in after it
# split the words (comma-separated; the injector's vllm_args_value says why).
VLLM_ARGS_DEFERRED = "PREFLIGHT_VLLM_ARGS_DEFERRED"
# The rules recognised vLLM in the container but could not read its parallel plan (a
# launcher they do not model, a script, a size from a Secret): why, in a line. With it the
# checker validates what it can without the plan (every GPU CUDA sees, the driver, /dev/shm,
# the hardware) and says the GPU count was not compared, unless PREFLIGHT_VLLM_ARGS, as the
# kubelet filled it in, gives the plan (recovered at runtime). Never a failure on its own.
PLAN_UNKNOWN = "PREFLIGHT_PLAN_UNKNOWN"

# The policy.
ACTION = "PREFLIGHT_ACTION"
TIER = "PREFLIGHT_TIER"
SHM_MIN = "PREFLIGHT_SHM_MIN"
GPU_MEMORY_UTILIZATION = "PREFLIGHT_GPU_MEMORY_UTILIZATION"
SKIP = "PREFLIGHT_SKIP"
DEADLINE = "PREFLIGHT_DEADLINE"

# A multi-node group (a LeaderWorkerSet replica, a Ray cluster): where the members meet.
GROUP = "PREFLIGHT_GROUP"  # "off" turns the group phase off, "on" turns it on
GROUP_PORT = "PREFLIGHT_GROUP_PORT"
GROUP_BIND = "PREFLIGHT_GROUP_BIND"
GROUP_ADDRESS = "PREFLIGHT_GROUP_ADDRESS"
GROUP_SIZE = "PREFLIGHT_GROUP_SIZE"
GROUP_INDEX = "PREFLIGHT_GROUP_INDEX"
# The LWS replica's number: the injector builds GROUP_ID from it ($(PREFLIGHT_GROUP_NUMBER));
# the checker never reads it.
GROUP_NUMBER = "PREFLIGHT_GROUP_NUMBER"
GROUP_ID = "PREFLIGHT_GROUP_ID"
GROUP_BACKEND = "PREFLIGHT_GROUP_BACKEND"
# "ray-worker": this member runs a Ray worker (no vLLM command line of its own), so the
# group has no engine arguments of it to compare and says nothing about them.
GROUP_ROLE = "PREFLIGHT_GROUP_ROLE"
ROLE_RAY_WORKER = "ray-worker"
# Deprecated, no longer injected: an older operator's raw copy of the vLLM container's
# command + args, which the checker read with a finder of its own. That second reading of
# a shell script disagreed with the rules' (a comment, word splitting, a here-doc, a
# function: docs/ARCHITECTURE.md "Finding vLLM in a script"). The group phase compares only
# PREFLIGHT_VLLM_ARGS; the checker reads this name only to say why a pod injected before
# the change had its arguments left uncompared.
GROUP_ARGS = "PREFLIGHT_GROUP_ARGS"
# The vLLM container's image as written (tag or @sha256 digest): members compare it (issue 26)
GROUP_IMAGE = "PREFLIGHT_GROUP_IMAGE"
NODE_NAME = "PREFLIGHT_NODE_NAME"
# The pod's own name and uid (downward API), which a group member presents to its leader:
# the leader lists every member it counted with them and the address it connected from,
# and the operator matches each against the API server (docs/CHECKS.md, "Who is a member").
POD_NAME = "PREFLIGHT_POD_NAME"
POD_UID = "PREFLIGHT_POD_UID"
# Verdict reuse (preflight_contract/reuse.py): the deep passes this pod may reuse.
DEEP_REUSE = "PREFLIGHT_DEEP_REUSE"
# "fail": a multi-node group whose NCCL fell back to TCP sockets while the node has RDMA
# devices fails its group-transport check (default: a warning)
SOCKET_FALLBACK = "PREFLIGHT_SOCKET_FALLBACK"
# The pod's init containers (native sidecars too) that can write the volume the model is
# read from: they run after the check, so its copy there is not final (comma-separated
# container names; preflight_contract/modelsource/writers.py parse_model_writers)
MODEL_WRITERS = "PREFLIGHT_MODEL_WRITERS"
# The vLLM container's env variables whose values come from a Secret (env valueFrom
# secretKeyRef; ``PREFIX*`` for an envFrom Secret, whose keys the injector cannot list):
# the checker hides their values in everything it writes (preflight_contract/redact.py).
SECRET_ENV = "PREFLIGHT_SECRET_ENV"

# The checker's own: the request its group all-reduce child reads (never injected).
GROUP_ALLREDUCE = "PREFLIGHT_GROUP_ALLREDUCE"

# Every name the injector may set (tests/unit/test_contract.py holds it to inject*.py).
INJECTED: FrozenSet[str] = frozenset(
    {
        TP,
        PP,
        DP_LOCAL,
        VLLM_ARGS,
        VLLM_ARGS_DEFERRED,
        PLAN_UNKNOWN,
        ACTION,
        TIER,
        SHM_MIN,
        GPU_MEMORY_UTILIZATION,
        SKIP,
        DEADLINE,
        GROUP_PORT,
        GROUP_INDEX,
        GROUP_SIZE,
        GROUP_NUMBER,
        GROUP_ID,
        NODE_NAME,
        GROUP_ROLE,
        DEEP_REUSE,
        GROUP_IMAGE,
        MODEL_WRITERS,
        SECRET_ENV,
        SOCKET_FALLBACK,
        GROUP_ADDRESS,
        POD_NAME,
        POD_UID,
    }
)

_FROM_THE_PLAN = "the vLLM container's command line (the injector copies the plan)"

# The policy field (or pod setting) each variable comes from, for the fix.
ORIGIN: Dict[str, str] = {
    ACTION: "the PreflightPolicy's spec.action",
    TIER: "the PreflightPolicy's spec.tier",
    SHM_MIN: "the PreflightPolicy's spec.thresholds.shmMin",
    GPU_MEMORY_UTILIZATION: (
        "the PreflightPolicy's spec.thresholds.gpuMemoryUtilization (or the pod's "
        "--gpu-memory-utilization)"
    ),
    SKIP: "the PreflightPolicy's skipped checks",
    DEADLINE: "the PreflightPolicy's spec.injection.timeoutSeconds",
    TP: _FROM_THE_PLAN,
    PP: _FROM_THE_PLAN,
    DP_LOCAL: _FROM_THE_PLAN,
    VLLM_ARGS: "the vLLM container's command line",
    VLLM_ARGS_DEFERRED: "the vLLM container's command line",
    PLAN_UNKNOWN: "the rules' reading of the vLLM container's command line (plan not read)",
    DEEP_REUSE: "the operator's records of deep passes (PreflightPolicy spec.verdictReuse)",
    MODEL_WRITERS: "the pod's init containers that mount the model's volume writable",
    SECRET_ENV: "the vLLM container's env entries that come from a Secret",
    SOCKET_FALLBACK: "the PreflightPolicy's spec.groups.socketFallback",
}
