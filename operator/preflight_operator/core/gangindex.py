"""The workloads whose pods name one gang (issue 39): a Volcano PodGroup, a Kueue plain pod
group or a Kubernetes Workload API group, which no object of the workloads' own declares.

``lint`` groups such workloads within a manifest set (rules.namedgangs). In a cluster the
other members arrive one by one: a leader's StatefulSet, then its workers'; two bare pods
naming one PodGroup. The operator notes each workload it observes here, and the rules ask
for the members through ``ClusterLookup.object(namespace, GANG_MEMBERS, gang)``
(``lookup``), at admission and in the operator's own analysis alike: one grouping, the
rules' (``with_podgroup_gang``), whichever path the object took.

What a change means: when a gang's membership or a member's rule inputs change (the
digest of its spec and annotations, store.rule_inputs_digest: a status update changes
nothing), its ``revision`` grows, and the other members are returned to be observed
again, so that their static results are recomputed against the new gang (their memo key
carries the revision).

Bounded by the operator's own scope (only workloads it observes: opted-in namespaces, or
injected pods) and per gang: at most ``MAX_MEMBERS`` members are held; a further one is
not held, and the gang is then judged on those held (the rules say the count is an
estimate either way). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from preflight_operator.core import rules
from preflight_operator.core.store import Key, rule_inputs_digest

#: members held per gang (rules.namedgangs reads at most MAX_CLUSTER_MEMBERS of them)
MAX_MEMBERS = 32

K = TypeVar("K")  # the workload's kind as the caller knows it (a WorkloadKind)

GangKey = tuple[str, str]  # (namespace, the gang as rules.gang_named names it)


@dataclass
class Member(Generic[K]):
    kind: K
    body: Mapping[str, Any]
    digest: bytes
    # observed as a workload of injected pods (the controller's pod-level opt-in): it is
    # observed again the same way
    has_injected_pods: bool = False


@dataclass
class _Gang(Generic[K]):
    members: dict[Key, Member[K]] = field(default_factory=dict)
    revision: int = 0


class GangIndex(Generic[K]):
    def __init__(self) -> None:
        self._gangs: dict[GangKey, _Gang[K]] = {}
        self._of: dict[Key, GangKey] = {}

    def note(
        self, key: Key, kind: K, body: Mapping[str, Any], *, has_injected_pods: bool = False
    ) -> list[Member[K]]:
        """``body`` (typed: apiVersion and kind) observed for workload ``key``; returns the
        other members of every gang that changed, to be observed again."""
        gang = rules.gang_named(body)
        wanted = (key[0], gang) if gang else None
        changed: list[tuple[GangKey, int]] = []  # (gang, its members before)
        old = self._of.get(key)
        if old is not None and old != wanted:
            changed.append((old, self._drop(key, old)))
        if wanted is not None:
            held = self._gangs.setdefault(wanted, _Gang())
            before = held.members.get(key)
            digest = rule_inputs_digest(body)
            if before is None and len(held.members) >= MAX_MEMBERS:
                return self._others(key, changed)
            if before is None or before.digest != digest:
                count = len(held.members)
                held.members[key] = Member(kind, body, digest, has_injected_pods)
                self._of[key] = wanted
                held.revision += 1  # joined or changed (a member leaving: _drop)
                changed.append((wanted, count))
            else:  # the newest copy, the same rule inputs
                before.body, before.has_injected_pods = body, has_injected_pods
        return self._others(key, changed)

    def forget(self, key: Key) -> list[Member[K]]:
        """Workload ``key`` is gone (deleted, out of scope): the other members of its gang,
        to be observed again."""
        old = self._of.get(key)
        if old is None:
            return []
        return self._others(key, [(old, self._drop(key, old))])

    def revision(self, key: Key) -> int:
        """The revision of ``key``'s gang (0 when it names none): part of its memo key."""
        found = self._of.get(key)
        held = self._gangs.get(found) if found is not None else None
        return held.revision if held is not None else 0

    def members(self, namespace: str, gang: str) -> list[Mapping[str, Any]]:
        held = self._gangs.get((namespace, gang))
        return [m.body for m in held.members.values()] if held is not None else []

    def lookup(self, namespace: str, kind: str, name: str) -> Mapping[str, Any] | None:
        """``ClusterLookup.object`` for the rules: the members of gang ``name`` for the kind
        ``rules.GANG_MEMBERS``; None for any other kind (another lookup's)."""
        if kind != rules.GANG_MEMBERS:
            return None
        return {"items": self.members(namespace, name)}

    def __len__(self) -> int:
        return len(self._of)

    def _drop(self, key: Key, gang: GangKey) -> int:
        """Drops ``key`` from ``gang``; how many members the gang had before."""
        held = self._gangs.get(gang)
        self._of.pop(key, None)
        if held is None:
            return 0
        count = len(held.members)
        held.members.pop(key, None)
        held.revision += 1
        if not held.members:
            del self._gangs[gang]
        return count

    def _others(self, key: Key, changed: list[tuple[GangKey, int]]) -> list[Member[K]]:
        """The members other than ``key`` of the gangs that changed, each with the count of
        members it had before the change, where their verdicts may change: the rules group
        at most ``rules.GANG_OBJECTS`` members, so a gang over that before and after had no
        group either time. Past that, observing the others again would only cost: n members
        arriving one by one would be n x n / 2 analyses (496 for 32), not n."""
        limit = rules.GANG_OBJECTS
        return [
            m
            for gang, before in changed
            if gang in self._gangs and min(before, len(self._gangs[gang].members)) <= limit
            for k, m in self._gangs[gang].members.items()
            if k != key
        ]
