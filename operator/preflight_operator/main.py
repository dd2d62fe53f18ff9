"""`vllm-preflight operator`: builds the operator from options and runs kopf.

kopf runs the life cycle in its standalone mode on every replica; every replica watches
(watches.py: workloads and injected pods in any opted-in namespace), keeps its store warm
and serves both webhooks; the holder of the ``coordination.k8s.io`` Lease named
``vllm-preflight`` in the release namespace is the one that writes (writegate.py,
elector.py). ``--standalone``: a single replica, no election.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import kopf

from preflight_contract import redact
from preflight_contract.terminal import clean
from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.loadtime import LoadSummary
from preflight_operator.core.modelcache import ModelCache, load_model_sources
from preflight_operator.core.operatorconfig import ConfigError, load_config
from preflight_operator.core.rules import ClusterLookup
from preflight_operator.handlers import register
from preflight_operator.runtime import metrics, podfeed
from preflight_operator.runtime.api import KubeApi
from preflight_operator.runtime.controller import Controller
from preflight_operator.runtime.credentials import load_credentials
from preflight_operator.runtime.health import Health
from preflight_operator.runtime.options import RunOptions, parse_options
from preflight_operator.runtime.reflector import Reflector
from preflight_operator.runtime.watches import Watches
from preflight_operator.runtime.writegate import WriteGate
from preflight_operator.webhook.webhooks import AdmissionService

logger = logging.getLogger("preflight_operator")


def _spec_only(body: dict[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    return {
        "kind": body.get("kind"),
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "spec": body.get("spec"),
    }


def build(options: RunOptions) -> tuple[kopf.OperatorRegistry, kopf.Memo, Controller]:
    config = load_config(options.config_path).with_release_namespace(options.namespace)
    api = KubeApi(load_credentials(options.kubeconfig))
    # The one Service the rules ask the cluster about (a Service named vllm injects
    # VLLM_PORT): a field-selected watch, never all Services. ConfigMaps are not looked
    # up (the rules say when a --config or env ConfigMap could not be read).
    vllm_services = Reflector(
        api, "/api/v1/services", name="vllm-services",
        params={"fieldSelector": "metadata.name=vllm"},
    )  # fmt: skip
    # DRA: the claims and claim templates pods name, so that devices are counted at
    # admission (resource.k8s.io/v1; absent on clusters without DRA). Only the spec is
    # kept: a few hundred bytes per object.
    claims = {
        kind: Reflector(
            api, f"/apis/resource.k8s.io/v1/{plural}", name=plural,
            transform=_spec_only, optional=True,
        )
        for kind, plural in (
            ("ResourceClaimTemplate", "resourceclaimtemplates"),
            ("ResourceClaim", "resourceclaims"),
        )
    }  # fmt: skip
    # KServe: the ServingRuntimes an InferenceService's model runs on (its command line is
    # the runtime's container merged with the model), when the kserve family is watched.
    if "kserve" in options.kind_families:
        for kind, plural in (
            ("ServingRuntime", "servingruntimes"),
            ("ClusterServingRuntime", "clusterservingruntimes"),
        ):
            claims[kind] = Reflector(
                api, f"/apis/serving.kserve.io/v1alpha1/{plural}", name=plural, optional=True
            )

    def referenced(namespace: str, kind: str, name: str) -> Mapping[str, Any] | None:
        gang = controller.gangs.lookup(namespace, kind, name)  # GANG_MEMBERS (issue 39)
        if gang is not None:
            return gang
        reflector = claims.get(kind)
        if reflector is None:
            return None
        if name == "*":  # every one of the namespace (or cluster-scoped: namespace "")
            return {"items": reflector.in_namespace(namespace)}
        return reflector.get(namespace, name)

    # Model configs for the model rules (opt-in): a modelConfigs ConfigMap and/or a
    # background fetch; the webhook only ever reads what is already cached.
    sources = load_model_sources(options.config_path)
    model_configs: list[Reflector] = []
    if sources.config_map:
        namespace = sources.config_map_namespace or options.namespace or "default"
        model_configs.append(
            Reflector(
                api, f"/api/v1/namespaces/{namespace}/configmaps", name="model-configs",
                params={"fieldSelector": f"metadata.name={sources.config_map}"},
            )
        )  # fmt: skip

    def model_config_maps() -> list[dict[str, Any]]:
        return [body for reflector in model_configs for body in reflector.items.values()]

    models = ModelCache(sources, model_config_maps if model_configs else None)

    def load_time(namespace: str, kind: str, name: str) -> LoadSummary | None:
        # the workload's measured starts, from its GPUValidation (probe-window)
        return podfeed.load_time(controller.store, namespace, kind, name)

    analyser = RulesAnalyser(
        ClusterLookup(
            services=vllm_services.in_namespace,
            object=referenced,
            # off unless configured: no model rule (and no "unknown" warning) by default
            model=models.lookup if sources.enabled else None,
            load_time=load_time,
        )
    )
    identity = options.identity or f"{socket.gethostname()}-{os.getpid()}"
    gate = WriteGate(identity, standalone=options.standalone)
    controller = Controller(
        config,
        api,
        analyser,
        identity=identity,
        context_reflectors=[vllm_services, *claims.values(), *model_configs],
        gate=gate,
    )

    admission = AdmissionService(
        config,
        analyser,
        controller.policy_watch.book,
        events=controller.events,
        owner_body=api.get_workload,
        api_get=api.get_or_none,
        opted_in=controller.scope.opted_in.__contains__,
        deep_passes=controller.node_feedback.deep_passes,
    )
    watches = Watches(api, controller, options.kind_families)
    registry = register(kopf.OperatorRegistry(), options)
    health = Health(
        options.health_stall_seconds,
        facts={"workloads": lambda: len(controller.store.workloads),
               "queue": lambda: len(controller.workers.queue)},
    )  # fmt: skip
    memo = kopf.Memo(controller=controller, admission=admission, health=health, watches=watches)
    return registry, memo, controller


async def run(options: RunOptions) -> None:
    registry, memo, controller = build(options)
    metrics.track(leader=controller.gate.allows, cert_file=options.cert_file)
    metrics.serve(options.metrics_port, options.metrics_addr)
    metrics.watch_loop_lag()  # how long the event loop stalls (issue 23)
    # /healthz from a thread about this loop (health.py says why not kopf's endpoint)
    health: Health = memo.health
    health.serve(options.health_addr, options.health_port)
    heartbeat = asyncio.get_running_loop().create_task(health.heartbeat())
    try:
        await kopf.operator(
            registry=registry,
            memo=memo,
            clusterwide=True,
            standalone=True,  # no kopf peering: the Lease decides who writes (writegate.py)
        )
    finally:
        heartbeat.cancel()
        health.close()


class _TerminalSafe(logging.Formatter):
    """A handler's own formatter, its output passed through the one sanitiser
    (preflight_contract.terminal): log lines quote API errors, peers' TLS errors and names
    from objects, and `kubectl logs` writes them to someone's terminal. Secrets are hidden
    first (preflight_contract.redact, issue 36): a log line is read by more people than a
    Secret."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()
        # the operator's own secrets too (its HF_TOKEN for the model cache, core/modelcache.py)
        self.hide = redact.for_process(os.environ)

    def format(self, record: logging.LogRecord) -> str:
        return clean(self.hide.text(self.inner.format(record)))


def configure_logging(verbose: bool) -> None:
    kopf.configure(debug=verbose, verbose=verbose)
    if not verbose:
        # kopf logs every handled event at INFO and aiohttp every webhook request: at
        # thousands of pods that is most of the operator's CPU. Failures still log.
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    for handler in logging.getLogger().handlers:
        if not isinstance(handler.formatter, _TerminalSafe):
            handler.setFormatter(_TerminalSafe(handler.formatter))


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(sys.argv[1:] if argv is None else argv)
    configure_logging(options.verbose)
    try:
        asyncio.run(run(options))
    except ConfigError as exc:
        print(f"vllm-preflight operator: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
