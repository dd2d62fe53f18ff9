"""Which namespaces, workloads and pods the operator keeps any state for (its scope).

The namespace watch (watches.py) tells which namespaces opted in or out; the Controller
asks, for each object it observes, whether it counts. A class of its own because scope is
asked by more than the Controller (the fail-closed sync, the admission's denial events,
the start-up log) and is a job of its own: what the webhooks' namespace and object
entries admit, kept the same here so the operator watches what the webhooks inject.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preflight_operator.core import constants
from preflight_operator.core.operatorconfig import OperatorConfig
from preflight_operator.core.workloads import WorkloadKind, template_labels


class NamespaceScope:
    def __init__(self, config: OperatorConfig) -> None:
        self._config = config
        self.opted_in: set[str] = set()
        # Namespaces labelled <namespaceLabel>=disabled: nothing in them is in scope, a
        # pod's or template's own opt-in included (the webhooks' "object" entries leave
        # them out too).
        self.opted_out: set[str] = set()

    def excluded(self, namespace: str) -> bool:
        """The system namespaces and the release's own: never in scope, whatever opts in."""
        return not namespace or namespace in self._config.excluded_namespaces

    def in_scope(
        self, kind: WorkloadKind, body: Mapping[str, Any], *, has_injected_pods: bool = False
    ) -> bool:
        """Opted in by its namespace, or by its own (or its pod template's) label in a
        namespace that did not opt out: the webhooks' scope (the chart's namespace and
        object entries). For a pod, its own labels. Nothing else gets any state.

        ``has_injected_pods``: a workload whose pods were injected is in scope whatever its
        namespace's labels say (a pod-level opt-in: the webhook injected them, so the
        operator must follow them), unless its namespace is excluded."""
        namespace = str((body.get("metadata") or {}).get("namespace", ""))
        if self.excluded(namespace):
            return False
        if has_injected_pods:
            return True
        if namespace in self.opted_out:
            return False
        label = template_labels(kind, body).get(self._config.namespace_label)
        if label == constants.INJECT_DISABLED:
            return False
        return namespace in self.opted_in or label == constants.INJECT_ENABLED

    def observe_namespace(self, name: str, opted_in: bool, opted_out: bool = False) -> bool:
        """Updates the opted-in (and opted-out) sets; True when the namespace just opted in
        (its existing workloads must then be read, as no workload event will bring them)."""
        if opted_out:
            self.opted_out.add(name)
        else:
            self.opted_out.discard(name)
        if opted_in and not self.excluded(name):
            if name in self.opted_in:
                return False
            self.opted_in.add(name)
            return True
        self.opted_in.discard(name)
        return False
