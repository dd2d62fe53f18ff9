"""The static rules engine: is this vLLM workload able to start on the GPUs it asks for?

Pure functions over manifest dicts; no I/O, no Kubernetes client. This module is the
package's one face (issue 37 item 3): every module of the operator outside ``core/rules``,
and the development harness, imports from ``preflight_operator.core.rules`` only, never
from one of its modules (an import-linter contract in pyproject.toml holds it; the tests
may reach the internals they test). What another part needs is re-exported here and listed
in ``__all__``; a name too generic to stand alone here is re-exported under a qualified
one (``inline`` of boundedyaml is ``inline_yaml``). Callers:

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

What the rest of the operator reads of the rules' own knowledge (each from its module)::

    kinds: KINDS, KindSpec, kind_spec(obj), the roles VALIDATED, TEMPLATE, OWNER
    registry: action_for(rule_id, policy_action, per_rule) (a rule's action under a policy)
    vocabulary: RULE_ALIASES
    quantity: parse_quantity(value) -> Fraction | None (as the API server reads it)
    resources: nvidia_gpus(container, path="") -> int
    accelerators: CUDA
    embedded: object_runs_vllm(obj) -> why an object runs vLLM, or None
    kubeenv: has_unknown(text), unknown_names(text) ($(VAR) left unresolved)
    vllmversion: image_version(image) -> ImageVersion
    spread: ray_start(container) -> RAY_HEAD | RAY_MEMBER | None (spread.HEAD, spread.MEMBER)
    groups: the gang labels COMPLETION_INDEX, JOBSET_COORDINATOR, JOBSET_JOB_INDEX,
        JOBSET_NAME, JOBSET_RJOB; pod_group(pod) -> DeclaredGroup | None, its systems JOBSET
        and VOLCANO, declared_warning(group)
    crdgroups: KTHENA_ENTRY_ENV, KTHENA_INDEX_ENV, KTHENA_SIZE_ENV; podgroup_path(namespace,
        name), podgroup_min_member(obj, name, namespace)
    namedgangs: gang_named(obj) (the Volcano PodGroup or Workload API gang a workload's
        pods name), GANG_MEMBERS (the ClusterLookup.object kind that lists its members);
        crdgroups.GANG_OBJECTS (the most members such a gang groups)
    workloadapi (a pod's Workload API gang): WORKLOAD_API_GROUP (GROUP),
        workload_reference(pod) (reference), workload_version_to_read(ref, served)
        (version_to_read), workload_object_path(ref, version, namespace) (object_path),
        workload_group(pod, obj, missing=...), engine_nodes(argv),
        workload_admission_note(group, nodes, has_group=...) (admission_note)
    boundedyaml (the one bounded YAML reader): check_yaml(text, ...) (check), YamlRefused
        (Refused) with its reasons YAML_TOO_DEEP and YAML_TOO_MANY_NODES, inline_yaml()
        (inline: YAML over boundedyaml.INLINE_BYTES refused in the event loop)
    redaction: redact_status(status) (status), redact_text(value) (text)

Every rule id, the vLLM symptom it prevents and the fix are in docs/RULES.md.
"""

from preflight_contract.verdicts import FAIL, INFO, PASS, WARN
from preflight_operator.core.rules.accelerators import CUDA
from preflight_operator.core.rules.boundedyaml import TOO_DEEP as YAML_TOO_DEEP
from preflight_operator.core.rules.boundedyaml import TOO_MANY_NODES as YAML_TOO_MANY_NODES
from preflight_operator.core.rules.boundedyaml import Refused as YamlRefused
from preflight_operator.core.rules.boundedyaml import check as check_yaml
from preflight_operator.core.rules.boundedyaml import inline as inline_yaml
from preflight_operator.core.rules.crdgroups import (
    GANG_OBJECTS,
    KTHENA_ENTRY_ENV,
    KTHENA_INDEX_ENV,
    KTHENA_SIZE_ENV,
    podgroup_min_member,
    podgroup_path,
)
from preflight_operator.core.rules.embedded import object_runs_vllm
from preflight_operator.core.rules.engine import check_object, check_objects
from preflight_operator.core.rules.groups import (
    COMPLETION_INDEX,
    JOBSET,
    JOBSET_COORDINATOR,
    JOBSET_JOB_INDEX,
    JOBSET_NAME,
    JOBSET_RJOB,
    VOLCANO,
    declared_warning,
    pod_group,
)
from preflight_operator.core.rules.kinds import (
    KINDS,
    OWNER,
    TEMPLATE,
    VALIDATED,
    KindSpec,
    kind_spec,
)
from preflight_operator.core.rules.kubeenv import has_unknown, unknown_names
from preflight_operator.core.rules.namedgangs import GANG_MEMBERS, gang_named
from preflight_operator.core.rules.quantity import parse_quantity
from preflight_operator.core.rules.recognition import recognise
from preflight_operator.core.rules.redaction import status as redact_status
from preflight_operator.core.rules.redaction import text as redact_text
from preflight_operator.core.rules.registry import RULE_INFO, action_for
from preflight_operator.core.rules.resources import nvidia_gpus
from preflight_operator.core.rules.spread import HEAD as RAY_HEAD
from preflight_operator.core.rules.spread import MEMBER as RAY_MEMBER
from preflight_operator.core.rules.spread import ray_start
from preflight_operator.core.rules.vllmversion import image_version
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
from preflight_operator.core.rules.workloadapi import GROUP as WORKLOAD_API_GROUP
from preflight_operator.core.rules.workloadapi import admission_note as workload_admission_note
from preflight_operator.core.rules.workloadapi import engine_nodes, workload_group
from preflight_operator.core.rules.workloadapi import object_path as workload_object_path
from preflight_operator.core.rules.workloadapi import reference as workload_reference
from preflight_operator.core.rules.workloadapi import version_to_read as workload_version_to_read

__all__ = [
    "COMPLETION_INDEX",
    "CUDA",
    "DEFAULT_POLICY",
    "DEFAULT_SHM_MIN_BYTES",
    "FAIL",
    "GANG_MEMBERS",
    "GANG_OBJECTS",
    "INFO",
    "JOBSET",
    "JOBSET_COORDINATOR",
    "JOBSET_JOB_INDEX",
    "JOBSET_NAME",
    "JOBSET_RJOB",
    "KINDS",
    "KTHENA_ENTRY_ENV",
    "KTHENA_INDEX_ENV",
    "KTHENA_SIZE_ENV",
    "NO_LOOKUP",
    "OWNER",
    "PASS",
    "RAY_HEAD",
    "RAY_MEMBER",
    "RESULT_SCHEMA",
    "RULE_ALIASES",
    "RULE_INFO",
    "TEMPLATE",
    "UNJUDGED",
    "VALIDATED",
    "VOLCANO",
    "WARN",
    "WORKLOAD_API_GROUP",
    "YAML_TOO_DEEP",
    "YAML_TOO_MANY_NODES",
    "ClusterLookup",
    "ContainerResult",
    "Finding",
    "KindSpec",
    "Policy",
    "RuleInfo",
    "YamlRefused",
    "action_for",
    "check_object",
    "check_objects",
    "check_yaml",
    "declared_warning",
    "engine_nodes",
    "gang_named",
    "has_unknown",
    "image_version",
    "inline_yaml",
    "kind_spec",
    "nvidia_gpus",
    "object_runs_vllm",
    "parse_quantity",
    "pod_group",
    "podgroup_min_member",
    "podgroup_path",
    "ray_start",
    "recognise",
    "redact_status",
    "redact_text",
    "results_document",
    "unknown_names",
    "workload_admission_note",
    "workload_group",
    "workload_object_path",
    "workload_reference",
    "workload_version_to_read",
]
