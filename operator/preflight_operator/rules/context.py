"""Everything the rules know about one vLLM container, gathered once."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from preflight_check.vllm_args import ParsedArgs
from preflight_operator.rules.command import Invocation
from preflight_operator.rules.discovery import PodTemplate
from preflight_operator.rules.kubeenv import ContainerEnv
from preflight_operator.rules.model import NO_LOOKUP, ClusterLookup
from preflight_operator.rules.resources import GpuResources


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
    def spread(self) -> bool:
        """A LeaderWorkerSet group whose engine is spread over its pods by Ray (no
        --nnodes): the group's GPUs count, not one pod's."""
        group = self.template.group
        return group is not None and group.size > 1 and self.parsed.plan.nnodes == 1

    @property
    def group_gpus_needed(self) -> int:
        plan = self.parsed.plan
        return plan.world_size * plan.dp_local

    @property
    def gpus_needed(self) -> int | None:
        """GPUs this pod needs; None when the command line does not tell."""
        if not self.parsed.plan_valid:
            return None
        if self.parsed.config_path is not None and not self.parsed.config_loaded:
            return None  # the config file may set any of the sizes
        if self.spread and self.template.group is not None:
            return math.ceil(self.group_gpus_needed / self.template.group.size)
        return self.parsed.plan.gpus_needed

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
