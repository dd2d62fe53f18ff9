"""Everything the rules know about one vLLM container, gathered once."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from preflight_contract.vllm_args import ParsedArgs
from preflight_operator.rules.command import Invocation
from preflight_operator.rules.discovery import PodTemplate
from preflight_operator.rules.kubeenv import ConfigMapGetter, ContainerEnv, no_config_map
from preflight_operator.rules.model import NO_LOOKUP, ClusterLookup
from preflight_operator.rules.resources import GpuResources
from preflight_operator.rules.template import Resolve, resolve_nothing

# Options by which a pod runs its own share of data-parallel ranks (vLLM's multi-node
# data parallelism with the mp backend): with them the pod is not a Ray worker slot.
_OWN_DP_RANKS = ("data_parallel_size_local", "data_parallel_start_rank", "data_parallel_rank")


@dataclass(frozen=True)
class ContainerContext:
    template: PodTemplate
    container: Mapping[str, Any]
    name: str
    path: str  # of the container, e.g. spec.template.spec.containers[0]
    invocation: Invocation
    parsed: ParsedArgs
    env: ContainerEnv
    gpus: GpuResources
    services: tuple[Mapping[str, Any], ...]
    config_source: str | None  # 'ConfigMap/x data["k"]' when --config was read
    lookup: ClusterLookup = NO_LOOKUP  # the cluster (or lint's extra inputs), for rules
    resolve: Resolve = resolve_nothing  # (kind, name) -> ResourceClaim(Template) of the pod's ns
    # name -> ConfigMap of the pod's namespace: the manifest set's, else the cluster's
    config_map: ConfigMapGetter = no_config_map

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.template.spec

    @property
    def pod_path(self) -> str:
        return self.template.path

    @property
    def command_path(self) -> str:
        if self.invocation.shell_path:
            return self.invocation.shell_path
        return self.invocation.paths[0] if self.invocation.paths else self.path

    @property
    def own_dp_ranks(self) -> bool:
        """The pod runs its own data-parallel ranks (``-dpl``, a start rank, a DP rank,
        ``--headless``, external LB) with the mp backend: vLLM's multi-node DP shape."""
        plan = self.parsed.plan
        if plan.data_parallel_backend == "ray":
            return False
        given = any(dest in self.parsed.origins for dest in _OWN_DP_RANKS)
        return given or plan.headless or plan.external_lb

    @property
    def spread(self) -> bool:
        """A LeaderWorkerSet group whose engine is spread over its pods by Ray (no
        --nnodes, no per-pod DP ranks): the group's GPUs count, not one pod's."""
        group = self.template.group
        if self.template.ray_head:
            return True  # an unknown kind's Ray head: its workers are pods not read here
        if group is not None and group.family == "ray":
            return True  # Ray places every worker of the engine over the cluster
        return (
            group is not None
            and group.size > 1
            and self.parsed.plan.nnodes == 1
            and not self.own_dp_ranks
        )

    @property
    def group_gpus_needed(self) -> int:
        """GPUs of the whole group when Ray places the engine: every DP rank with the
        Ray DP backend, else this pod's engines."""
        plan = self.parsed.plan
        dp = plan.dp if plan.data_parallel_backend == "ray" else plan.dp_local
        return plan.world_size * dp * max(1, self.template.engine_replicas)

    @property
    def gpus_needed(self) -> int | None:
        """GPUs this pod needs; None when the command line does not tell."""
        if not self.parsed.plan_valid:
            return None
        if self.parsed.config_path is not None and not self.parsed.config_loaded:
            return None  # the config file may set any of the sizes
        if self.spread and self.template.group is not None:
            return math.ceil(self.group_gpus_needed / max(1, self.template.group.size))
        if self.template.nodes > 1 and self.parsed.plan.nnodes == 1:
            # the controller spreads the engine over `nodes` pods (Dynamo multinode)
            return math.ceil(self.parsed.plan.gpus_needed / self.template.nodes)
        return self.parsed.plan.gpus_needed

    @property
    def gpu_path(self) -> str:
        """Where the container's device count is (or would be) written: for a container a
        controller builds from its own fields, that field (KubeAI's resourceProfile)."""
        return self.template.gpus_path or self.gpus.primary_path(self.path)

    @property
    def gpus_have(self) -> int | None:
        """Devices the container gets, when that is known; None when it asks none or the
        count is unknown (see ``gpus.unknown``)."""
        return None if self.gpus.unknown else self.gpus.requested

    def process_env(self, name: str) -> tuple[str | None, str | None]:
        """(value, manifest path) of a variable vLLM's process gets from the spec or the
        script in front of it; (None, None) when the spec does not set it."""
        if name in self.invocation.exports:
            return self.invocation.exports[name], self.command_path
        if name in self.env.explicit:
            return self.env.values.get(name), self.env.paths.get(name, self.path)
        return None, None

    def arg_path(self, dest: str) -> str:
        """Where the value of a vLLM option was written."""
        origin = self.parsed.origins.get(dest)
        if origin is None:
            return self.command_path
        if origin.from_config:
            return self.config_source or self.command_path
        if origin.index is not None and origin.index < len(self.invocation.paths):
            return self.invocation.paths[origin.index]
        return self.command_path

    def flag(self, dest: str, default: str) -> str:
        origin = self.parsed.origins.get(dest)
        return origin.spelling if origin is not None else default
