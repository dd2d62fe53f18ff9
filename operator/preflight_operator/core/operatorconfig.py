"""The operator's configuration file (the chart renders it from values into a ConfigMap).

Shape and defaults: docs/dev/OPERATOR_CONTRACT.md, "Configuration file". Parsing is strict
about types and enums (a typo in a ConfigMap must stop the operator at start, loudly, not
turn Enforce into something else) and lenient about unknown keys (a newer chart may add
some).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

import yaml

from preflight_contract.actions import ACTIONS, ENFORCE
from preflight_operator.core import constants
from preflight_operator.core.rules import RULE_ALIASES, RULE_INFO

TIERS = ("fast", "deep")
ON_RUNTIME_FAILURE = ("None", "PauseRollout", "ScaleToZero")
INJECTION_MODES = ("WorkloadImage", "DedicatedImage")
DEFAULT_CONFIG_PATH = Path("/etc/vllm-preflight/config.yaml")
# status.runtime.pods in the GPUValidation CRD has maxItems: 20.
MAX_HISTORY = 20


_T = TypeVar("_T")
_EMPTY: Mapping[str, Any] = {}


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

    action: str = ENFORCE
    tier: str = "fast"
    thresholds: Thresholds = Thresholds()
    disabled_checks: tuple[str, ...] = ()
    on_runtime_failure: str = "None"
    injection_enabled: bool = True
    injection_mode: str | None = None  # None: the operator's injection.mode
    # spec.rules: (rule id, action) pairs, sorted; a rule not named takes the policy's
    # action, except heuristic rules, which default to Warn (rules.certainty)
    rule_actions: tuple[tuple[str, str], ...] = ()
    # spec.groups.socketFallback (core/policy.py parse_socket_fallback): what a multi-node
    # group's fall-back to TCP sockets is worth in the check (PREFLIGHT_SOCKET_FALLBACK)
    socket_fallback: str = "Warn"


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
    # where the checks of a multi-node group meet (PREFLIGHT_GROUP_PORT; chart groupPort)
    group_port: int = 29600


FAILURE_POLICIES = ("Ignore", "Fail")


@dataclasses.dataclass(frozen=True)
class NodeAccess:
    """What the operator's RBAC lets it do to Nodes: the chart's ``nodeFeedback.enabled``
    and ``nodeFeedback.condition`` (clusterrole.yaml), told to the operator so that a
    policy asking for more is named in its Valid condition once, instead of a 403 logged
    at every finding. Outside the chart (no ``nodeFeedback`` section) both are assumed
    granted, as before."""

    write: bool = True  # get and patch nodes: Events, label, annotation, taint, deep passes
    status: bool = True  # patch nodes/status: the GPUPreflightReady condition


NODES_GRANTED = NodeAccess()  # outside the chart: assumed granted


@dataclasses.dataclass(frozen=True)
class ProbeSettings:
    """``nodeFeedback.probe`` of the operator's configuration (the chart's values of the
    same names). A probe is a pod on a GPU node: it is rate-limited per node and bounded in
    number, so that no flood of reports becomes a flood of pods."""

    interval_seconds: int = 300  # at most one probe of a node per interval
    max_running: int = 4  # probes running at once, all nodes
    max_pending: int = 1000  # nodes waiting for a probe; a request past it is dropped, counted
    # from the create to a verdict: image pull and start, then the check's own deadline
    start_seconds: int = 300


DEFAULT_PROBE_SETTINGS = ProbeSettings()


def parse_probe_settings(value: Any) -> ProbeSettings:
    """``nodeFeedback.probe: {intervalSeconds, maxRunning, startSeconds}``."""
    if value is None:
        return ProbeSettings()
    if not isinstance(value, Mapping):
        raise ConfigError("nodeFeedback.probe: expected a mapping")
    defaults = ProbeSettings()
    out: dict[str, int] = {}
    for field, key, low, high in (
        ("interval_seconds", "intervalSeconds", 1, 86400),
        ("max_running", "maxRunning", 1, 64),
        ("start_seconds", "startSeconds", 10, 3600),
    ):
        raw = value.get(key, getattr(defaults, field))
        if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw <= high:
            raise ConfigError(f"nodeFeedback.probe.{key}: expected a whole number {low}..{high}")
        out[field] = raw
    return dataclasses.replace(defaults, **out)


WORKLOAD_PATCH_SCOPES = ("cluster", "namespaces", "none")


@dataclasses.dataclass(frozen=True)
class WorkloadPatch:
    """Where the operator's RBAC lets it patch vLLM workloads (annotations, remediation):
    the chart's ``rbac.workloadPatch`` and ``rbac.workloadNamespaces``, told to the operator
    so that it never sends a patch the API server would refuse with a 403 (the status is
    on the GPUValidation either way). Outside the chart: everywhere, as before."""

    scope: str = "cluster"  # WORKLOAD_PATCH_SCOPES
    namespaces: frozenset[str] = frozenset()

    def allows(self, namespace: str) -> bool:
        return self.scope == "cluster" or (
            self.scope == "namespaces" and namespace in self.namespaces
        )


def parse_workload_patch(value: Any) -> WorkloadPatch:
    """``workloadPatch: {scope, namespaces}``."""
    if value is None:
        return WorkloadPatch()
    raw = _mapping(value, "workloadPatch")
    scope = _enum(raw.get("scope", "cluster"), WORKLOAD_PATCH_SCOPES, "workloadPatch.scope")
    names = raw.get("namespaces") or []
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise ConfigError("workloadPatch.namespaces: expected a list of namespace names")
    return WorkloadPatch(scope=scope, namespaces=frozenset(names))


@dataclasses.dataclass(frozen=True)
class WebhookConfig:
    """The webhook port (webhookserver.py) and what the webhooks answer when they cannot.

    The failure policies and timeouts are the chart's webhook configurations' own
    (``webhook.validating``/``mutating``): when a review cannot be answered in time, the
    operator answers what the API server would have done on a timeout, but in time,
    saying why, and counted. The connection limits bound what one peer, or all of them,
    can hold: each TLS connection costs about 0.3 MiB (asyncio's 256 KiB TLS buffer) until
    it closes, so the defaults stay under 200 MiB with the chart's 512Mi limit."""

    validating_failure_policy: str = "Ignore"
    validating_timeout_seconds: int = 10
    mutating_failure_policy: str = "Ignore"
    mutating_timeout_seconds: int = 10
    # AdmissionDenied Events: off (the denial is in the API server's answer; an Event
    # written from an unauthenticated request is a side effect anyone reaching the port
    # could cause). On: only in opted-in namespaces, at most events_per_minute in all and a
    # quarter of that per namespace.
    admission_events: bool = False
    events_per_minute: int = 60
    max_connections: int = 512
    # A quarter of the total (issue 34): two peers never fill the port, and at a cap an idle
    # connection goes, not the new one (webhookserver.py).
    max_connections_per_peer: int = 128
    # The webhooks' own 10 s: a request not in by then is of no use to the API server, which
    # has given up on it; shorter, and the operator's own slowness under load (TLS
    # handshakes wait for the event loop) would count against the API server's connections
    # and cut them (at 5 s, a run of hack/reliability/webhook_port.py with the loop blocked
    # 1.5 s of every 2 s saw 228 of 400 reviews fail on the client's side).
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 10.0
    idle_timeout_seconds: float = 60.0


@dataclasses.dataclass(frozen=True)
class OperatorConfig:
    default_policy: PolicySpec = PolicySpec()
    injection: InjectionConfig = InjectionConfig()
    namespace_label: str = constants.LABEL_INJECT
    excluded_namespaces: frozenset[str] = constants.SYSTEM_NAMESPACES
    history_pods_per_workload: int = 10
    # The rules engine's budget per workload or pod (rulesworker.py): seconds, well under
    # the webhooks' 10 s timeout, and each child process's address space in MiB: the
    # operator (about 100 MiB) and 2 workers at 160 MiB stay under the chart's 512Mi.
    rules_budget_seconds: float = 3.0
    rules_memory_mib: int = 160
    rules_workers: int = 2
    # Identities, besides kube-system's, whose pods' results the operator acts on
    # (provenance.py): exact usernames, e.g. a serving stack's operator that creates pods.
    pod_creators: tuple[str, ...] = ()
    webhook: WebhookConfig = WebhookConfig()
    node_access: NodeAccess = NODES_GRANTED
    workload_patch: WorkloadPatch = WorkloadPatch()
    node_probe: ProbeSettings = DEFAULT_PROBE_SETTINGS
    # the release namespace: the operator's own probe pods run there (nodeprobepod.py)
    release_namespace: str = ""

    def with_release_namespace(self, namespace: str | None) -> OperatorConfig:
        """The release namespace is never touched either (the operator's own pods live there)."""
        if not namespace:
            return self
        return dataclasses.replace(
            self,
            excluded_namespaces=self.excluded_namespaces | {namespace},
            release_namespace=namespace,
        )


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


# shmMin: a Kubernetes quantity that both the rules and the injected check read the same
# way: a plain number, or one of these suffixes (no exponents, no Pi/Ei: the check rejects
# them, and no node has that much memory), at most SHM_MIN_MAX. The PreflightPolicy CRD's
# pattern is the same expression.
SHM_MIN_PATTERN = re.compile(r"^[0-9]{1,16}(\.[0-9]{1,9})?(Ki|Mi|Gi|Ti|k|M|G|T)?$")
_SHM_UNITS = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 1 << 10,
    "Mi": 1 << 20,
    "Gi": 1 << 30,
    "Ti": 1 << 40,
}
SHM_MIN_MAX = 1 << 40  # 1Ti
EXTRA_GPUS_MAX = 1024


@dataclasses.dataclass(frozen=True)
class FieldProblem:
    """A field of a PreflightPolicy the operator did not take, and what it used instead."""

    field: str  # e.g. spec.thresholds.shmMin
    message: str  # what is wrong, the fix, and the value used instead


def parse_shm_min(value: Any, where: str) -> str:
    """``value`` as the text PREFLIGHT_SHM_MIN gets; ConfigError names the field and the fix."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"{where}: expected a quantity such as 1Gi or 512Mi, got {value!r:.40}")
    text = str(value) if isinstance(value, int) else value.strip()
    match = SHM_MIN_PATTERN.match(text) if len(text) <= 32 else None
    if match is None:
        raise ConfigError(
            f"{where}: {text[:40]!r} is not a size the check reads; write a quantity such as"
            " 1Gi, 512Mi or 1073741824 (suffixes k M G T Ki Mi Gi Ti)"
        )
    number = text[: len(text) - len(match.group(2) or "")]
    size = Fraction(number) * _SHM_UNITS[match.group(2) or ""]
    if size > SHM_MIN_MAX:
        raise ConfigError(
            f"{where}: {text!r} is over 1Ti; write the /dev/shm size vLLM needs, e.g. 1Gi"
        )
    return text


def _fraction(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 < value <= 1
    ):
        raise ConfigError(
            f"{where}: expected a number above 0 and at most 1 (e.g. 0.9), got {value!r:.40}"
        )
    return float(value)


def _extra_gpus(value: Any, where: str) -> int:
    number = _int(value, where)
    if number > EXTRA_GPUS_MAX:
        raise ConfigError(f"{where}: expected at most {EXTRA_GPUS_MAX}, got {number}")
    return number


def _take(
    problems: list[FieldProblem] | None,
    where: str,
    parse: Callable[[], _T],
    fallback: _T,
    shown: str,
) -> _T:
    """``parse()``; on a ConfigError, strict (no ``problems`` list) raises it, lenient
    records the problem and uses ``fallback`` (shown as ``shown``)."""
    try:
        return parse()
    except ConfigError as exc:
        if problems is None:
            raise
        problems.append(FieldProblem(where, f"{exc}; using {shown} instead"))
        return fallback


def parse_thresholds(
    data: Any,
    where: str,
    base: Thresholds = Thresholds(),
    problems: list[FieldProblem] | None = None,
) -> Thresholds:
    raw = _take(problems, where, lambda: _mapping(data, where), _EMPTY, "the defaults")
    shm_where = f"{where}.shmMin"
    extra_where = f"{where}.extraGPUsAllowed"
    util_where = f"{where}.gpuMemoryUtilization"
    shm_min = raw.get("shmMin", base.shm_min)
    extra = raw.get("extraGPUsAllowed", base.extra_gpus_allowed)
    util = raw.get("gpuMemoryUtilization", base.gpu_memory_utilization)
    return Thresholds(
        shm_min=_take(
            problems, shm_where, lambda: parse_shm_min(shm_min, shm_where), base.shm_min,
            repr(base.shm_min),
        ),
        extra_gpus_allowed=_take(
            problems, extra_where, lambda: _extra_gpus(extra, extra_where),
            base.extra_gpus_allowed, str(base.extra_gpus_allowed),
        ),
        gpu_memory_utilization=_take(
            problems, util_where, lambda: _fraction(util, util_where),
            base.gpu_memory_utilization,
            "vLLM's own" if base.gpu_memory_utilization is None
            else str(base.gpu_memory_utilization),
        ),
    )  # fmt: skip


def _disabled(value: Any, where: str) -> tuple[str, ...]:
    if (
        not isinstance(value, list)
        or len(value) > 200
        or not all(isinstance(d, str) and 0 < len(d) <= 63 for d in value)
    ):
        raise ConfigError(f"{where}: expected a list of check ids such as [shm, gpu-count]")
    return tuple(value)


MAX_RULE_ACTIONS = 200


def parse_rule_actions(
    value: Any, where: str, problems: list[FieldProblem] | None
) -> tuple[tuple[str, str], ...] | None:
    """``rules: {<rule id>: Enforce|Warn|Audit}`` as sorted pairs. A former rule id
    (RULE_ALIASES) names its successor. Strict (``problems`` None) raises on any bad
    entry; lenient records each bad entry as a problem and drops it, keeping the good ones
    (a typo in one never changes another rule). None when the field is absent."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or len(value) > MAX_RULE_ACTIONS:
        problem = f"{where}: expected a map of rule id to Enforce, Warn or Audit"
        if problems is None:
            raise ConfigError(problem)
        problems.append(FieldProblem(where, f"{problem}; using the default actions instead"))
        return ()
    taken: dict[str, str] = {}
    for key, action in value.items():
        spot = f"{where}[{key!r:.70}]"
        rule_id = RULE_ALIASES.get(key, key) if isinstance(key, str) else key
        if not isinstance(rule_id, str) or rule_id not in RULE_INFO:
            problem = f"{spot}: not a rule id (`vllm-preflight lint --list-rules` lists them)"
        elif action not in ACTIONS:
            problem = f"{spot}: {action!r:.40} is not one of {', '.join(ACTIONS)}"
        else:
            taken[rule_id] = str(action)
            continue
        if problems is None:
            raise ConfigError(problem)
        problems.append(FieldProblem(spot, f"{problem}; the rule keeps its default action"))
    return tuple(sorted(taken.items()))


def parse_policy_spec(
    data: Any,
    where: str,
    base: PolicySpec = PolicySpec(),
    problems: list[FieldProblem] | None = None,
) -> PolicySpec:
    """A PolicySpec from the camelCase form shared by the config file and the CRD's spec.

    Strict (the configuration file: a mistake stops the operator, loudly) unless
    ``problems`` is given (a PreflightPolicy: each bad field is recorded there and takes
    ``base``'s value, so a typo in one field never blocks the pods it selects)."""
    raw = _take(problems, where, lambda: _mapping(data, where), _EMPTY, "the defaults")
    checks_where = f"{where}.checks"
    checks = _take(
        problems, checks_where, lambda: _mapping(raw.get("checks"), checks_where), _EMPTY,
        "no disabled checks",
    )  # fmt: skip
    disabled_where = f"{where}.checks.disabled"
    disabled = checks.get("disabled", list(base.disabled_checks))
    inj_where = f"{where}.injection"
    injection = _take(
        problems, inj_where, lambda: _mapping(raw.get("injection"), inj_where), _EMPTY,
        "the defaults",
    )  # fmt: skip
    enabled = injection.get("enabled", base.injection_enabled)
    mode = injection.get("mode", base.injection_mode)

    def enabled_flag() -> bool:
        if not isinstance(enabled, bool):
            raise ConfigError(f"{where}.injection.enabled: expected true or false")
        return enabled

    def field(name: str, allowed: tuple[str, ...], fallback: str) -> str:
        spot = f"{where}.{name}"
        return _take(problems, spot, lambda: _enum(raw.get(name, fallback), allowed, spot),
                     fallback, fallback)  # fmt: skip

    mode_where = f"{where}.injection.mode"
    rule_actions = parse_rule_actions(raw.get("rules"), f"{where}.rules", problems)
    return PolicySpec(
        action=field("action", ACTIONS, base.action),
        tier=field("tier", TIERS, base.tier),
        thresholds=parse_thresholds(
            raw.get("thresholds"), f"{where}.thresholds", base.thresholds, problems
        ),
        disabled_checks=_take(
            problems, disabled_where, lambda: _disabled(disabled, disabled_where),
            base.disabled_checks, "no disabled checks" if not base.disabled_checks
            else ", ".join(base.disabled_checks),
        ),
        on_runtime_failure=field("onRuntimeFailure", ON_RUNTIME_FAILURE, base.on_runtime_failure),
        injection_enabled=_take(
            problems, f"{where}.injection.enabled", enabled_flag, base.injection_enabled,
            str(base.injection_enabled).lower(),
        ),
        injection_mode=_take(
            problems, mode_where,
            lambda: None if mode is None else _enum(mode, INJECTION_MODES, mode_where),
            base.injection_mode, base.injection_mode or "the operator's injection.mode",
        ),
        rule_actions=base.rule_actions if rule_actions is None else rule_actions,
    )  # fmt: skip


def _group_port(value: Any) -> int:
    port = _int(value, "injection.groupPort", 1)
    if port > 65534:  # the deep tier uses port + 1
        raise ConfigError(f"injection.groupPort: {port} is above 65534")
    return port


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
        group_port=_group_port(inj.get("groupPort", defaults.group_port)),
    )
    excluded = raw.get("excludedNamespaces", sorted(constants.SYSTEM_NAMESPACES))
    if not isinstance(excluded, list) or not all(isinstance(n, str) for n in excluded):
        raise ConfigError("excludedNamespaces: expected a list of namespace names")
    history = _mapping(raw.get("history"), "history")
    budget = _mapping(raw.get("rules"), "rules")
    seconds = budget.get("budgetSeconds", 3.0)
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not 0.1 <= seconds <= 25
    ):
        raise ConfigError(
            f"rules.budgetSeconds: expected 0.1..25 (under the webhook timeout), got {seconds!r}"
        )
    memory = _int(budget.get("memoryMiB", 160), "rules.memoryMiB", 64)
    workers = _int(budget.get("workers", 2), "rules.workers", 1)
    return OperatorConfig(
        default_policy=parse_policy_spec(raw.get("defaultPolicy"), "defaultPolicy"),
        injection=injection,
        namespace_label=str(raw.get("namespaceLabel", constants.LABEL_INJECT)),
        # System namespaces stay excluded even if a values file forgets to list them.
        excluded_namespaces=frozenset(excluded) | constants.SYSTEM_NAMESPACES,
        history_pods_per_workload=_history_size(history.get("podsPerWorkload", 10)),
        rules_budget_seconds=float(seconds),
        rules_memory_mib=memory,
        rules_workers=workers,
        pod_creators=_pod_creators(_mapping(raw.get("podTrust"), "podTrust").get("creators")),
        webhook=parse_webhook(raw.get("webhook")),
        node_access=parse_node_access(raw.get("nodeFeedback")),
        node_probe=parse_probe_settings(
            _mapping(raw.get("nodeFeedback"), "nodeFeedback").get("probe")
        ),
        workload_patch=parse_workload_patch(raw.get("workloadPatch")),
    )


def parse_node_access(value: Any) -> NodeAccess:
    """``nodeFeedback: {enabled, condition}``, rendered by the chart from its values of the
    same names; ``condition`` counts only with ``enabled`` (the chart grants nodes/status
    only then)."""
    if value is None:
        return NODES_GRANTED
    raw = _mapping(value, "nodeFeedback")
    flags: dict[str, bool] = {}
    for name in ("enabled", "condition"):
        flag = raw.get(name, False)
        if not isinstance(flag, bool):
            raise ConfigError(f"nodeFeedback.{name}: expected true or false, got {flag!r:.40}")
        flags[name] = flag
    return NodeAccess(write=flags["enabled"], status=flags["enabled"] and flags["condition"])


def _pod_creators(value: Any) -> tuple[str, ...]:
    """podTrust.creators: exact Kubernetes usernames; a pattern would let a tenant name a
    service account after a controller's in their own namespace."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError("podTrust.creators: expected a list of usernames")
    for name in value:
        if "*" in name or name.endswith(":"):
            raise ConfigError(
                f"podTrust.creators: {name!r} is a pattern; give exact usernames such as"
                " system:serviceaccount:ray-system:kuberay-operator"
            )
    return tuple(value)


def _seconds(value: Any, where: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ConfigError(f"{where}: expected a number of seconds {low:g}..{high:g}, got {value!r}")
    return float(value)


def _bounded(value: Any, where: str, low: int, high: int) -> int:
    number = _int(value, where, low)
    if number > high:
        raise ConfigError(f"{where}: expected at most {high}, got {number}")
    return number


def parse_webhook(data: Any) -> WebhookConfig:
    """The ``webhook`` section (the chart renders it from its webhook.* values)."""
    raw = _mapping(data, "webhook")
    base = WebhookConfig()
    validating = _mapping(raw.get("validating"), "webhook.validating")
    mutating = _mapping(raw.get("mutating"), "webhook.mutating")
    events = _mapping(raw.get("admissionEvents"), "webhook.admissionEvents")
    server = _mapping(raw.get("server"), "webhook.server")
    enabled = events.get("enabled", base.admission_events)
    if not isinstance(enabled, bool):
        raise ConfigError("webhook.admissionEvents.enabled: expected true or false")
    total = _bounded(server.get("maxConnections", base.max_connections),
                     "webhook.server.maxConnections", 1, 65536)  # fmt: skip
    return WebhookConfig(
        validating_failure_policy=_enum(
            validating.get("failurePolicy", base.validating_failure_policy), FAILURE_POLICIES,
            "webhook.validating.failurePolicy",
        ),
        validating_timeout_seconds=_bounded(
            validating.get("timeoutSeconds", base.validating_timeout_seconds),
            "webhook.validating.timeoutSeconds", 1, 30,
        ),
        mutating_failure_policy=_enum(
            mutating.get("failurePolicy", base.mutating_failure_policy), FAILURE_POLICIES,
            "webhook.mutating.failurePolicy",
        ),
        mutating_timeout_seconds=_bounded(
            mutating.get("timeoutSeconds", base.mutating_timeout_seconds),
            "webhook.mutating.timeoutSeconds", 1, 30,
        ),
        admission_events=enabled,
        events_per_minute=_bounded(events.get("perMinute", base.events_per_minute),
                                   "webhook.admissionEvents.perMinute", 1, 6000),
        max_connections=total,
        max_connections_per_peer=_bounded(
            server.get("maxConnectionsPerPeer", base.max_connections_per_peer),
            "webhook.server.maxConnectionsPerPeer", 1, total,
        ),
        header_timeout_seconds=_seconds(
            server.get("headerTimeoutSeconds", base.header_timeout_seconds),
            "webhook.server.headerTimeoutSeconds", 0.1, 60,
        ),
        body_timeout_seconds=_seconds(
            server.get("bodyTimeoutSeconds", base.body_timeout_seconds),
            "webhook.server.bodyTimeoutSeconds", 0.1, 60,
        ),
        idle_timeout_seconds=_seconds(
            server.get("idleTimeoutSeconds", base.idle_timeout_seconds),
            "webhook.server.idleTimeoutSeconds", 1, 3600,
        ),
    )  # fmt: skip


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
