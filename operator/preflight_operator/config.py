"""The operator's configuration file (the chart renders it from values into a ConfigMap).

Shape and defaults: docs/dev/OPERATOR_CONTRACT.md, "Configuration file". Parsing is strict
about types and enums (a typo in a ConfigMap must stop the operator at start, loudly, not
turn Enforce into something else) and lenient about unknown keys (a newer chart may add
some).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from preflight_operator import constants

ACTIONS = ("Enforce", "Warn", "Audit")
TIERS = ("fast", "deep")
ON_RUNTIME_FAILURE = ("None", "PauseRollout", "ScaleToZero")
INJECTION_MODES = ("WorkloadImage", "DedicatedImage")
DEFAULT_CONFIG_PATH = Path("/etc/vllm-preflight/config.yaml")
# status.runtime.pods in the GPUValidation CRD has maxItems: 20.
MAX_HISTORY = 20


class ConfigError(ValueError):
    """The configuration file is not valid."""


@dataclasses.dataclass(frozen=True)
class Thresholds:
    shm_min: str = "1Gi"
    extra_gpus_allowed: int = 0
    gpu_memory_utilization: float | None = None


@dataclasses.dataclass(frozen=True)
class PolicySpec:
    """What a PreflightPolicy (or the chart default) says; see the PreflightPolicy CRD."""

    action: str = "Enforce"
    tier: str = "fast"
    thresholds: Thresholds = Thresholds()
    disabled_checks: tuple[str, ...] = ()
    on_runtime_failure: str = "None"
    injection_enabled: bool = True
    injection_mode: str | None = None  # None: the operator's injection.mode


@dataclasses.dataclass(frozen=True)
class InjectionConfig:
    mode: str = "WorkloadImage"
    installer_image: str = "ghcr.io/vllm-preflight/operator:0.1.0"
    check_image: str = "ghcr.io/vllm-preflight/check:0.1.0"
    image_pull_policy: str = "IfNotPresent"
    resources: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "512Mi"},
        }
    )
    timeout_seconds: int = 120


@dataclasses.dataclass(frozen=True)
class OperatorConfig:
    default_policy: PolicySpec = PolicySpec()
    injection: InjectionConfig = InjectionConfig()
    namespace_label: str = constants.LABEL_INJECT
    excluded_namespaces: frozenset[str] = constants.SYSTEM_NAMESPACES
    history_pods_per_workload: int = 10

    def with_release_namespace(self, namespace: str | None) -> OperatorConfig:
        """The release namespace is never touched either (the operator's own pods live there)."""
        if not namespace:
            return self
        return dataclasses.replace(self, excluded_namespaces=self.excluded_namespaces | {namespace})


def _enum(value: Any, allowed: tuple[str, ...], where: str) -> str:
    if value not in allowed:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return str(value)


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _int(value: Any, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where}: expected an integer >= {minimum}, got {value!r}")
    return value


def parse_thresholds(data: Any, where: str, base: Thresholds = Thresholds()) -> Thresholds:
    raw = _mapping(data, where)
    shm_min = raw.get("shmMin", base.shm_min)
    extra = raw.get("extraGPUsAllowed", base.extra_gpus_allowed)
    util = raw.get("gpuMemoryUtilization", base.gpu_memory_utilization)
    if util is not None and (
        isinstance(util, bool) or not isinstance(util, (int, float)) or not 0 <= util <= 1
    ):
        raise ConfigError(f"{where}.gpuMemoryUtilization: expected 0..1, got {util!r}")
    return Thresholds(
        shm_min=str(shm_min),
        extra_gpus_allowed=_int(extra, f"{where}.extraGPUsAllowed"),
        gpu_memory_utilization=float(util) if util is not None else None,
    )


def parse_policy_spec(data: Any, where: str, base: PolicySpec = PolicySpec()) -> PolicySpec:
    """A PolicySpec from the camelCase form shared by the config file and the CRD's spec."""
    raw = _mapping(data, where)
    checks = _mapping(raw.get("checks"), f"{where}.checks")
    disabled = checks.get("disabled", list(base.disabled_checks))
    if not isinstance(disabled, list) or not all(isinstance(d, str) for d in disabled):
        raise ConfigError(f"{where}.checks.disabled: expected a list of check ids")
    injection = _mapping(raw.get("injection"), f"{where}.injection")
    enabled = injection.get("enabled", base.injection_enabled)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}.injection.enabled: expected true or false")
    mode = injection.get("mode", base.injection_mode)
    return PolicySpec(
        action=_enum(raw.get("action", base.action), ACTIONS, f"{where}.action"),
        tier=_enum(raw.get("tier", base.tier), TIERS, f"{where}.tier"),
        thresholds=parse_thresholds(raw.get("thresholds"), f"{where}.thresholds", base.thresholds),
        disabled_checks=tuple(disabled),
        on_runtime_failure=_enum(
            raw.get("onRuntimeFailure", base.on_runtime_failure),
            ON_RUNTIME_FAILURE,
            f"{where}.onRuntimeFailure",
        ),
        injection_enabled=enabled,
        injection_mode=None if mode is None else _enum(mode, INJECTION_MODES, f"{where}.mode"),
    )


def parse_config(data: Any) -> OperatorConfig:
    raw = _mapping(data, "config")
    inj = _mapping(raw.get("injection"), "injection")
    defaults = InjectionConfig()
    resources = _mapping(inj.get("resources", defaults.resources), "injection.resources")
    injection = InjectionConfig(
        mode=_enum(inj.get("mode", defaults.mode), INJECTION_MODES, "injection.mode"),
        installer_image=str(inj.get("installerImage", defaults.installer_image)),
        check_image=str(inj.get("checkImage", defaults.check_image)),
        image_pull_policy=_enum(
            inj.get("imagePullPolicy", defaults.image_pull_policy),
            ("Always", "IfNotPresent", "Never"),
            "injection.imagePullPolicy",
        ),
        resources=dict(resources),
        timeout_seconds=_int(
            inj.get("timeoutSeconds", defaults.timeout_seconds), "injection.timeoutSeconds", 1
        ),
    )
    excluded = raw.get("excludedNamespaces", sorted(constants.SYSTEM_NAMESPACES))
    if not isinstance(excluded, list) or not all(isinstance(n, str) for n in excluded):
        raise ConfigError("excludedNamespaces: expected a list of namespace names")
    history = _mapping(raw.get("history"), "history")
    return OperatorConfig(
        default_policy=parse_policy_spec(raw.get("defaultPolicy"), "defaultPolicy"),
        injection=injection,
        namespace_label=str(raw.get("namespaceLabel", constants.LABEL_INJECT)),
        # System namespaces stay excluded even if a values file forgets to list them.
        excluded_namespaces=frozenset(excluded) | constants.SYSTEM_NAMESPACES,
        history_pods_per_workload=_history_size(history.get("podsPerWorkload", 10)),
    )


def _history_size(value: Any) -> int:
    size = _int(value, "history.podsPerWorkload", 1)
    if size > MAX_HISTORY:
        raise ConfigError(
            f"history.podsPerWorkload: {size} is over {MAX_HISTORY}, the most the"
            " GPUValidation schema keeps (status.runtime.pods maxItems)"
        )
    return size


def load_config(path: Path | None) -> OperatorConfig:
    """Reads the YAML file; no path (and no file at the default path) gives the defaults."""
    if path is None:
        if not DEFAULT_CONFIG_PATH.exists():
            return OperatorConfig()
        path = DEFAULT_CONFIG_PATH
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    return parse_config(data)
