"""The rules engine's vocabulary: findings, the policy, results, cluster look-ups.

Everything here is a frozen value: the webhook shares one Policy between requests and
results are safe to cache or hand to another thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from preflight_contract.verdicts import FAIL, verdict_of_severities
from preflight_contract.vllm_args import ParallelPlan
from preflight_operator.core.loadtime import LoadSummary
from preflight_operator.core.rules.certainty import Basis, Input

# Former rule ids and their successors: still accepted wherever rules are switched off
# (lint --disable, a PreflightPolicy's checks list).
RULE_ALIASES: dict[str, str] = {"vllm-env-unresolved": "plan-unresolved"}

GiB = 1024**3
DEFAULT_SHM_MIN_BYTES = 1 * GiB

# The verdict of a vLLM container that was recognised and not judged (ContainerResult.unjudged)
UNJUDGED = "unjudged"

# The JSON result schema of `vllm-preflight lint --format json` (and of to_dict()).
RESULT_SCHEMA = 1


@dataclass(frozen=True)
class Policy:
    """Thresholds and switches; the PreflightPolicy CRD maps onto this.

    ``shm_min_bytes``: smallest acceptable /dev/shm (emptyDir medium: Memory sizeLimit)
    when a pod runs more than one GPU process. ``extra_gpus_allowed``: GPUs a pod may
    request beyond what vLLM uses before ``gpu-count-extra`` warns. ``disabled``: rule ids
    that are not reported.
    """

    shm_min_bytes: int = DEFAULT_SHM_MIN_BYTES
    extra_gpus_allowed: int = 0
    disabled: frozenset[str] = frozenset()

    def enabled(self, rule_id: str) -> bool:
        if rule_id in self.disabled:
            return False
        # a former id (RULE_ALIASES) switches its successor off too
        return not any(RULE_ALIASES.get(d) == rule_id for d in self.disabled)


DEFAULT_POLICY = Policy()


@dataclass(frozen=True)
class Finding:
    """One thing wrong (or worth knowing), in the user's terms: the rules' answer, and the
    same object on the operator's side (the StaticResult of a workload, the GPUValidation's
    findings, denials, warnings and Events), so nothing translates between two models.

    ``field`` is a JSONPath-like path into the manifest, e.g.
    ``spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]``.
    """

    id: str
    severity: str  # fail | warn | info
    message: str
    field: str = ""
    fix: str = ""
    # the values the finding rests on, with their certainty (rules.certainty): the engine
    # downgrades a fail that rests on one that is not exact. Not compared: two findings
    # that say the same are one.
    inputs: tuple[Input, ...] = dataclasses.field(default=(), compare=False)

    def to_dict(self) -> dict[str, str]:
        """Every field (lint's JSON output)."""
        return {
            "id": self.id,
            "severity": self.severity,
            "message": self.message,
            "field": self.field,
            "fix": self.fix,
        }

    def to_status(self) -> dict[str, str]:
        """The GPUValidation's form: empty fields left out."""
        out = {"id": self.id, "severity": self.severity, "message": self.message}
        if self.field:
            out["field"] = self.field
        if self.fix:
            out["fix"] = self.fix
        return out

    def one_line(self) -> str:
        """`id: message [field] Fix: fix` for denials, warnings and Events."""
        text = f"{self.id}: {self.message}"
        if self.field and self.field not in self.message:
            text += f" [{self.field}]"
        if self.fix:
            text += f" Fix: {self.fix}"
        return text


@dataclass(frozen=True)
class ContainerResult:
    """The verdict for one vLLM container of one workload."""

    kind: str
    name: str
    namespace: str | None
    container: str
    plan: ParallelPlan | None
    gpus_needed: int | None
    gpus_requested: int | None
    findings: tuple[Finding, ...] = ()
    # index of the object in the list given to check_objects (lint attributes results to
    # files with it); None from check_object
    object_index: int | None = None
    # the accelerator platform (rules.accelerators: "cuda", "tpu", ...); None when nothing
    # in the pod says (the rules then assume CUDA)
    platform: str | None = None
    # the vLLM command line as the rules read it (env and shell expanded; unknown values
    # marked, rules.kubeenv) and its model: the injected check is given them
    argv: tuple[str, ...] = ()
    model: str | None = None
    # why the container, recognised as vLLM (rules.recognition), was not judged: its vLLM
    # command line could not be read, the field it is built from was not read, a rule
    # crashed. "" when it was judged. Every output names it (issue 35: silence is a bypass).
    unjudged: str = ""

    @property
    def workload(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def verdict(self) -> str:
        """fail, warn or pass from the findings; ``unjudged`` for a container that was not
        judged (unless something of it fails all the same). The operator's StaticResult
        counts an unjudged container as a warning (analysis.to_static)."""
        verdict = verdict_of_severities(f.severity for f in self.findings)
        return UNJUDGED if self.unjudged and verdict != FAIL else verdict

    @property
    def failures(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == FAIL)

    def to_dict(self) -> dict[str, Any]:
        plan: dict[str, Any] | None = None
        if self.plan is not None:
            plan = dict(self.plan.to_dict())
            # per pod, after any LeaderWorkerSet split (the plan alone counts per node)
            plan["gpus_needed"] = self.gpus_needed
        return {
            "workload": self.workload,
            "namespace": self.namespace,
            "container": self.container,
            "plan": plan,
            "gpus_requested": self.gpus_requested,
            "verdict": self.verdict,
            "findings": [f.to_dict() for f in self.findings],
            **({"reason": self.unjudged} if self.unjudged else {}),
        }


def results_document(results: Iterable[ContainerResult]) -> dict[str, Any]:
    """The versioned JSON document of many results (lint --format json)."""
    return {"schema": RESULT_SCHEMA, "results": [r.to_dict() for r in results]}


ConfigMapLookup = Callable[[str, str], Mapping[str, Any] | None]
ServicesLookup = Callable[[str], Iterable[Mapping[str, Any]]]
# (namespace, kind, name) -> the object, for kinds the rules resolve by reference
# (ResourceClaim, ResourceClaimTemplate); None when absent or unknown
ObjectLookup = Callable[[str, str, str], Mapping[str, Any] | None]
# Hub repo id or model path -> the model's files (config.json, ...) as parsed JSON, keyed
# by file name; None when unknown. Never blocks on the network on the request path.
ModelLookup = Callable[[str], Mapping[str, Any] | None]
# (namespace, kind, name) of a workload -> its pods' measured start to Ready, from its
# GPUValidation (loadtime.py); None when none was measured. The operator's own record.
LoadTimeLookup = Callable[[str, str, str], LoadSummary | None]


@dataclass(frozen=True)
class ClusterLookup:
    """Read-only views of the cluster for what the manifest set lacks.

    ``config_map(namespace, name)`` returns the ConfigMap object (or None when absent);
    ``services(namespace)`` the Services of a namespace. Both are called on the request
    path of the webhook: back them with an informer cache, not an API call. Either may be
    None: the rules then report what they could not verify instead of guessing.
    """

    config_map: ConfigMapLookup | None = None
    services: ServicesLookup | None = None
    object: ObjectLookup | None = None
    model: ModelLookup | None = None
    load_time: LoadTimeLookup | None = None


NO_LOOKUP = ClusterLookup()


@dataclass(frozen=True)
class RuleInfo:
    """A rule's identity, for docs, the CRD's checks list and `--disable`."""

    id: str
    severity: str
    summary: str
    # where the rule's knowledge comes from (rules.certainty.Basis); a heuristic rule's
    # failures default to Warn
    basis: Basis | None = None
    # the fix in a few words (README's rule table; the section says more)
    fix: str = ""

    def finding(self, message: str, field: str, fix: str, inputs: Iterable[Input] = ()) -> Finding:
        return Finding(self.id, self.severity, message, field, fix, tuple(inputs))
