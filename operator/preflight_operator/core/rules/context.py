"""Everything the rules know about one vLLM container, gathered once."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from preflight_contract.vllm_args import ParsedArgs
from preflight_operator.core.rules.command import Invocation
from preflight_operator.core.rules.discovery import PodTemplate
from preflight_operator.core.rules.kubeenv import ConfigMapGetter, ContainerEnv, no_config_map
from preflight_operator.core.rules.resources import GpuResources, pod_gpus
from preflight_operator.core.rules.spread import RAY, ray_node
from preflight_operator.core.rules.template import Group, Resolve, resolve_nothing
from preflight_operator.core.rules.vocabulary import NO_LOOKUP, ClusterLookup

# Options by which a pod runs its own share of data-parallel ranks (vLLM's multi-node
# data parallelism with the mp backend): with them the pod is not a Ray worker slot.
_OWN_DP_RANKS = ("data_parallel_size_local", "data_parallel_start_rank", "data_parallel_rank")


def group_devices(group: Group, resolve: Resolve) -> int | None:
    """Devices of every pod of a group: each member's count (Ray's ``num-gpus`` where
    given, else its containers') times its pods; None when a count is unknown here (a
    DRA claim that cannot be counted)."""
    total = 0
    for member in group.members:
        gpus = member.gpus
        if gpus is None:
            gpus = pod_gpus(member.spec, member.path, resolve)
            if gpus is None:
                return None
        total += gpus * member.replicas
    return total


@dataclass(frozen=True)
class ContainerContext:
    """Built once per container and never changed (frozen; dataclasses.replace makes a new
    one): the derived counts are cached on first use. The rules ask ``pod_gpus`` and
    ``spread`` about 8 and 12 times per container (cProfile of check_objects); caching took
    a call on bad-tp4-deployment.yaml from 0.244 to 0.219-0.225 ms (best of 7 x 1,000
    calls on the 2-core machine, 2026-12-07)."""

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

    @functools.cached_property
    def own_dp_ranks(self) -> bool:
        """The pod runs its own data-parallel ranks (``-dpl``, a start rank, a DP rank,
        ``--headless``, external LB) with the mp backend: vLLM's multi-node DP shape."""
        plan = self.parsed.plan
        if plan.data_parallel_backend == "ray":
            return False
        given = any(dest in self.parsed.origins for dest in _OWN_DP_RANKS)
        return given or plan.headless or plan.external_lb

    @functools.cached_property
    def ray_node(self) -> str | None:
        """rules.spread.HEAD / MEMBER when the container starts or joins a Ray cluster."""
        return ray_node(self.container)

    @functools.cached_property
    def _not_ray(self) -> bool:
        """The engine cannot run on Ray: an explicit non-Ray executor, vLLM's own
        multi-node (--nnodes), or per-pod DP ranks."""
        plan = self.parsed.plan
        backend = plan.distributed_executor_backend
        return (backend is not None and backend != "ray") or plan.nnodes > 1 or self.own_dp_ranks

    @functools.cached_property
    def ray_unplaced(self) -> bool:
        """The pod starts or joins a Ray cluster whose other pods are not in this object,
        and its own devices do not hold every rank: Ray places the rest on pods unknown
        here (rules.spread). The pod is then judged on its own devices and the totals are
        not checked (plan-unresolved says so, from the ray-gpu-total rule)."""
        if self.template.group is not None or self.template.nodes > 1 or self.ray_node is None:
            return False
        if self._not_ray or not self.parsed.plan_valid:
            return False
        have = self.gpus_have
        return have is None or have < self.group_gpus

    @functools.cached_property
    def spread(self) -> bool:
        """The engine's ranks are placed by Ray over several pods (a LeaderWorkerSet or
        Ray cluster group, or a Ray cluster whose other pods are unknown here): a pod's
        count is its share of the group's, not the engine's."""
        group = self.template.group
        if group is not None and group.family == RAY:
            return True  # Ray places every worker of the engine over the cluster
        if self.ray_unplaced:
            return True
        return (
            group is not None
            and group.size > 1
            and self.parsed.plan.nnodes == 1
            and not self.own_dp_ranks
        )

    @functools.cached_property
    def group_gpus(self) -> int:
        """GPUs of the whole group when Ray places the engine (the contract's plan counts
        them: ``ParallelPlan.group_gpus``)."""
        return self.parsed.plan.group_gpus(self.template.engine_replicas)

    @functools.cached_property
    def pod_gpus(self) -> int | None:
        """GPUs this pod needs: the plan's count (``ParallelPlan.gpus_needed``), or this
        pod's even share of a group's when the engine is spread over pods; None when the
        command line does not tell."""
        if not self.parsed.plan_valid:
            return None
        if self.parsed.config_path is not None and not self.parsed.config_loaded:
            return None  # the config file may set any of the sizes
        if self.spread and self.template.group is not None:
            return math.ceil(self.group_gpus / max(1, self.template.group.size))
        if self.ray_unplaced:
            # Ray fills this pod's devices first (PACK, the first bundle on the driver's
            # node); the rest of the engine is elsewhere
            return self.gpus_have or None
        if self.template.nodes > 1 and self.parsed.plan.nnodes == 1:
            # the controller spreads the engine over `nodes` pods (Dynamo multinode)
            return math.ceil(self.parsed.plan.gpus_needed / self.template.nodes)
        return self.parsed.plan.gpus_needed

    @functools.cached_property
    def pod_ranks(self) -> int:
        """GPU processes of the engine in this pod, for /dev/shm: its share; with Ray, the
        ranks Ray places on its devices (at most its devices, at most the engine's)."""
        if self.spread:
            return min(self.gpus_have or 0, self.group_gpus)
        return self.pod_gpus or 0

    @property
    def ray_fills_every_device(self) -> bool:
        """Every device of the Ray group holds a rank (the group has exactly the GPUs the
        engine needs, counted exactly): then how many ranks a pod holds is exact."""
        group = self.template.group
        if group is None or group.estimated or not self.spread:
            return False
        have = group_devices(group, self.resolve)
        return have is not None and have == self.group_gpus

    @property
    def gpu_path(self) -> str:
        """Where the container's device count is (or would be) written: for a container a
        controller builds from its own fields, that field (KubeAI's resourceProfile)."""
        return self.template.gpus_path or self.gpus.primary_path(self.path)

    @functools.cached_property
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
