"""Watch handlers: every one is ``@kopf.on.event`` (no finalizers, no progress annotations:
kopf writes nothing to the objects these handlers see) and only hands the object to the
controller. The pod and namespace watches are label-selected on the server (lifecycle.py
sets ``settings.watching.label_selectors``): the operator never lists unrelated pods."""

from __future__ import annotations

from typing import Any

import kopf

from preflight_operator.controller import Controller
from preflight_operator.workloads import LEADERWORKERSET, VALIDATED_KINDS, WorkloadKind

WATCHED_WORKLOADS = [k for k in VALIDATED_KINDS.values() if k.kind != "Pod"]


def watched(families: tuple[str, ...]) -> list[WorkloadKind]:
    """The workload kinds to watch: the core ones and the enabled serving stacks'."""
    return [k for k in WATCHED_WORKLOADS if k.family == "core" or k.family in families]


def _controller(memo: Any) -> Controller:
    controller: Controller = memo.controller
    return controller


async def workload_event(
    *, type: str, body: kopf.Body, memo: Any, param: Any = None, **_: Any
) -> None:
    kind: WorkloadKind = param
    _controller(memo).observe_workload(kind, dict(body), deleted=type == "DELETED")


async def pod_event(*, type: str, body: kopf.Body, memo: Any, **_: Any) -> None:
    _controller(memo).observe_pod(dict(body), deleted=type == "DELETED")


async def namespace_event(*, type: str, name: str, memo: Any, **_: Any) -> None:
    # The watch is label-selected: DELETED also means "no longer labelled inject=enabled".
    controller = _controller(memo)
    if controller.observe_namespace(name, opted_in=type != "DELETED"):
        await controller.reprocess_namespace(name)


def register(registry: kopf.OperatorRegistry, families: tuple[str, ...] = ()) -> None:
    for kind in watched(families):
        kopf.on.event(
            kind.group,
            kind.version,
            kind.plural,
            registry=registry,
            param=kind,
            id=f"workload-{kind.plural}",
        )(workload_event)
    kopf.on.event("v1", "pods", registry=registry, id="injected-pods")(pod_event)
    kopf.on.event("v1", "namespaces", registry=registry, id="opted-in-namespaces")(namespace_event)


__all__ = ["LEADERWORKERSET", "register"]
