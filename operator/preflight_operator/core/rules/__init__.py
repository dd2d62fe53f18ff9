"""The static rules engine: is this vLLM workload able to start on the GPUs it asks for?

Pure functions over manifest dicts; no I/O, no Kubernetes client. Callers:

* ``vllm-preflight lint`` (preflight_operator.cli.lint): ``check_objects(docs, policy)``;
* the validating webhook: ``check_object(obj, policy, lookup)`` for the object under
  admission, with a ClusterLookup backed by an informer cache for ConfigMaps/Services.

Public API::

    check_objects(objects, policy=DEFAULT_POLICY, lookup=NO_LOOKUP, default_namespace=None)
        -> list[ContainerResult]
    check_object(obj, policy=DEFAULT_POLICY, lookup=NO_LOOKUP, related=())
        -> list[ContainerResult]
    Policy(shm_min_bytes=1 GiB, extra_gpus_allowed=0, disabled=frozenset())
    ClusterLookup(config_map=(ns, name) -> ConfigMap | None, services=ns -> [Service])
    ContainerResult: kind, name, namespace, container, plan, gpus_needed, gpus_requested,
        findings, .verdict ("pass" | "warn" | "fail" | "unjudged"), .unjudged (why not
        judged: a recognised vLLM whose command line could not be read), .failures, .to_dict()
    recognise(container, path, env) -> signals that the container launches vLLM (rules.recognition)
    Finding: id, severity ("fail" | "warn" | "info"), message, field, fix, .to_dict()
    RULE_INFO: dict[rule id, RuleInfo(id, severity, summary)]
    results_document(results) -> {"schema": 1, "results": [...]}

Every rule id, the vLLM symptom it prevents and the fix are in docs/RULES.md.
"""

from preflight_contract.verdicts import FAIL, INFO, PASS, WARN
from preflight_operator.core.rules.engine import check_object, check_objects
from preflight_operator.core.rules.recognition import recognise
from preflight_operator.core.rules.registry import RULE_INFO
from preflight_operator.core.rules.vocabulary import (
    DEFAULT_POLICY,
    DEFAULT_SHM_MIN_BYTES,
    NO_LOOKUP,
    RESULT_SCHEMA,
    RULE_ALIASES,
    UNJUDGED,
    ClusterLookup,
    ContainerResult,
    Finding,
    Policy,
    RuleInfo,
    results_document,
)

__all__ = [
    "DEFAULT_POLICY",
    "DEFAULT_SHM_MIN_BYTES",
    "FAIL",
    "INFO",
    "NO_LOOKUP",
    "PASS",
    "RESULT_SCHEMA",
    "RULE_ALIASES",
    "RULE_INFO",
    "UNJUDGED",
    "WARN",
    "ClusterLookup",
    "ContainerResult",
    "Finding",
    "Policy",
    "RuleInfo",
    "check_object",
    "check_objects",
    "recognise",
    "results_document",
]
