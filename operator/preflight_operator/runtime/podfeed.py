"""What a trusted pod result feeds besides its workload's GPUValidation: the node (node
feedback at the levels of the workload's policy; a deep pass recorded for verdict reuse
under a policy whose TTL is above 0), and what the store answers the rules and the policy
audit. Apart from the Controller (issue 28): the controller calls it, it decides nothing
the core does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preflight_operator.core.loadtime import LoadSummary, summary_of_status
from preflight_operator.core.nodefeedback import Levels, finding, parse_levels
from preflight_operator.core.podresults import PodResult
from preflight_operator.core.policy import parse_reuse_ttl
from preflight_operator.core.policyaudit import PolicyAudit, audit_policies
from preflight_operator.core.store import Key, Store
from preflight_operator.core.verdictreuse import deep_pass
from preflight_operator.runtime.nodehealth import NodeFeedback
from preflight_operator.runtime.policywatch import PolicyWatch


class PodFeed:
    def __init__(self, store: Store, policies: PolicyWatch, nodes: NodeFeedback) -> None:
        self._store = store
        self._policies = policies
        self._nodes = nodes

    def trusted_result(
        self, key: Key, namespace: str, body: Mapping[str, Any], result: PodResult
    ) -> None:
        """A result of a pod the workload's controller made (provenance.py)."""
        workload = self._store.workloads.get(key)
        policy = self._policies.body(namespace, workload.policy.name) if workload else None
        found = finding(result, namespace)
        if found is not None:
            levels = parse_levels((policy or {}).get("spec"))[0] if policy else Levels()
            self._nodes.observe(found, levels)
        if policy and parse_reuse_ttl(policy.get("spec"), []) > 0:
            passed = deep_pass(body, result, namespace)
            if passed is not None:
                self._nodes.record_deep_pass(result.node, passed)


def audit(store: Store, namespace: str) -> dict[str, PolicyAudit]:
    """What Enforce would answer for the namespace's workloads, per policy."""
    return audit_policies(
        (w.ref, w.static if w.static.has_vllm else None, w.policy)
        for w in store.workloads.values()
        if w.ref.namespace == namespace
    )


def load_time(store: Store, namespace: str, kind: str, name: str) -> LoadSummary | None:
    """The measured start of a workload's pods, from its GPUValidation (loadtime.py): the
    probe rule's ClusterLookup.load_time."""
    stored = store.validations.get((namespace, kind, name))
    return summary_of_status(stored.status) if stored is not None else None
