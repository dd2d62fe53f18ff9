"""The parallel plan the checker validates against: how many GPUs one pod needs.

It is the contract's ``ParallelPlan`` (preflight_contract.vllm_args), the one place where
the GPUs a pod needs are computed, with where the numbers came from beside it: the rules,
the operator and the checker count the same way because they share the class (issue 37).
The checker's ``nnodes`` is the pods one replica spans (the contract's
``nodes_per_replica`` as the command line gives it), so DP here is the pod's own.

vLLM starts one worker per GPU and numbers them with tensor parallelism innermost, so
the tensor-parallel groups of a pod are consecutive CUDA ordinals: with TP 2 x PP 2 the
groups are [0, 1] and [2, 3]. Data-parallel ranks local to the pod each get their own
slice of TP x PP GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, List

from preflight_contract.vllm_args import ParallelPlan


@dataclass(frozen=True)
class Plan(ParallelPlan):
    """TP, PP, DP-local, DCP (reuses the TP GPUs; reported only), PCP (multiplies the world
    size) and ``nnodes`` (pods one replica spans, each holding its share) as the contract
    defines them, and where they came from."""

    # Where the numbers came from, in the user's terms ("--tp", "--vllm-args", "env", ...).
    source: str = "default"
    # The plan is not known (PREFLIGHT_PLAN_UNKNOWN: the rules recognised vLLM but could
    # not read its command line, and the pod's own env did not give it either): why. The
    # check then validates every GPU it sees (``seen``) and compares no count with a plan.
    unknown: str = ""
    # The rules could not read the plan, but PREFLIGHT_VLLM_ARGS as the kubelet filled it
    # in gave it at runtime: why the rules could not (the plan itself is exact).
    recovered: str = ""

    def seen(self, gpus: int) -> Plan:
        """An unknown plan stretched over the ``gpus`` the check sees (one rank each, no
        tensor-parallel group assumed); a known plan as it is."""
        return replace(self, dp_local=max(1, gpus)) if self.unknown else self

    @property
    def nodes(self) -> int:
        """Pods (nodes) one replica spans."""
        return self.nodes_per_replica

    @property
    def uses_collectives(self) -> bool:
        """True when vLLM will start NCCL between workers of this pod."""
        return self.tp * self.pp > 1

    def tp_groups(self) -> List[List[int]]:
        size = max(1, min(self.tp, self.gpus_needed))
        return [
            list(range(start, min(start + size, self.gpus_needed)))
            for start in range(0, self.gpus_needed, size)
        ]

    def describe(self) -> str:
        if self.unknown:
            return f"plan unknown ({self.unknown}); GPU count not compared"
        extra = f" x PCP {self.pcp}" if self.pcp != 1 else ""
        nodes = f" / {self.nodes} nodes" if self.nodes != 1 else ""
        return (
            f"TP {self.tp} x PP {self.pp}{extra} x DP-local {self.dp_local}{nodes} = "
            f"{self.gpus_needed} GPU{'s' if self.gpus_needed != 1 else ''}"
        )

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "tp": self.tp,
            "pp": self.pp,
            "dp_local": self.dp_local,
            "gpus_needed": self.gpus_needed,
            "source": self.source,
        }
        for name in ("dcp", "pcp", "nodes"):
            if getattr(self, name) != 1:
                out[name] = getattr(self, name)
        if self.unknown:  # no sizes were read: none is reported as if it had been
            out = {"unknown": self.unknown, "gpus_seen": self.dp_local, "source": self.source}
        elif self.recovered:
            out["recovered"] = self.recovered
        return out
