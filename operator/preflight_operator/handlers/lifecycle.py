"""Start-up, clean-up and probes: kopf settings, then the controller primed and started.

Settings that matter (and why):
- admission server on the configured port with the chart's certificate (kopf's server,
  with /validate answered directly: webhookserver.py says why), and
  ``admission.managed = None``: the chart ships the webhook configurations (kopf's own
  have no namespaceSelector and could deny pods cluster-wide);
- server-side label selectors for pods (``vllm-preflight.io/injected=true``), namespaces
  (the opt-in label) and GPUValidations (ours): kopf never lists what we do not handle;
- kopf's own Events off: its handler-failure Events would land on users' pods.
"""

from __future__ import annotations

import functools
import gc
import logging
from typing import Any

import kopf

from preflight_operator import constants
from preflight_operator.api import ApiError
from preflight_operator.controller import Controller
from preflight_operator.handlers import admission as handlers_admission
from preflight_operator.options import RunOptions
from preflight_operator.rulesworker import RulesPool, isolate
from preflight_operator.webhooks import AdmissionService
from preflight_operator.webhookserver import PreflightWebhookServer

logger = logging.getLogger(__name__)


def configure(
    settings: kopf.OperatorSettings,
    options: RunOptions,
    namespace_label: str,
    admission: AdmissionService,
) -> None:
    settings.admission.server = PreflightWebhookServer(
        direct={
            constants.VALIDATE_WEBHOOK_ID: functools.partial(
                handlers_admission.review_validation_async, admission
            )
        },
        addr=options.webhook_addr,
        port=options.webhook_port,
        host=options.webhook_host,
        certfile=str(options.cert_file),
        pkeyfile=str(options.key_file),
    )
    settings.admission.managed = None
    selectors = settings.watching.label_selectors
    selectors["v1", "pods"] = constants.INJECTED_POD_SELECTOR
    selectors["v1", "namespaces"] = f"{namespace_label}={constants.INJECT_ENABLED}"
    settings.posting.enabled = False
    settings.peering.lifetime = options.peering_lifetime
    settings.peering.stealth = True
    # kopf re-lists after a watch error; keep its back-off short so a restart of the
    # API server (or a resumed peer) catches up quickly.
    settings.watching.reconnect_backoff = 0.5


def register(registry: kopf.OperatorRegistry, options: RunOptions) -> None:
    @kopf.on.login(registry=registry)
    async def login(memo: Any, **_: Any) -> kopf.ConnectionInfo:
        # kopf's watches use the credentials our own client uses: one source of truth,
        # and the same token re-reading in a pod.
        controller: Controller = memo.controller
        creds = controller.api.credentials
        token = creds.current_token()
        return kopf.ConnectionInfo(
            server=creds.server,
            ca_data=creds.ca_pem,
            insecure=creds.insecure,
            scheme="Bearer" if token else None,
            token=token,
            certificate_data=creds.cert_pem,
            private_key_data=creds.key_pem,
        )

    @kopf.on.startup(registry=registry)
    async def start(settings: kopf.OperatorSettings, memo: Any, **_: Any) -> None:
        controller: Controller = memo.controller
        configure(settings, options, controller.config.namespace_label, memo.admission)
        if not options.standalone:
            try:
                present = await controller.api.ensure_cluster_peering(options.peering_name)
            except ApiError as exc:  # e.g. no RBAC to create it: it may exist all the same
                logger.warning("could not create ClusterKopfPeering %s: %s",
                               options.peering_name, exc)  # fmt: skip
            else:
                if not present:
                    logger.warning("the ClusterKopfPeering CRD is missing: peering cannot work")
        # The rules run in a child process with a time and memory budget (rulesworker.py),
        # for the webhooks and the reconciles alike; started now, before any request.
        worker = isolate(controller.analyser, controller.config)
        if worker is not None:
            worker.start()
            controller.analyser = worker
            memo.admission.use_analyser(worker)
        await controller.prime()
        await controller.start(workers=options.workers)
        # Everything loaded so far (kopf, the rules, the primed state) lives as long as the
        # process: move it out of the collector's reach, so a full collection walks only
        # what requests allocate (measured: it halves the webhook's p99, docs/PERFORMANCE.md).
        gc.freeze()
        logger.info(
            "vllm-preflight operator %s started: %d opted-in namespace(s), %d policies,"
            " %d GPUValidation(s) known",
            controller.identity,
            len(controller.opted_in),
            len(controller.policy_reflector.items),
            len(controller.store.validations),
        )

    @kopf.on.cleanup(registry=registry)
    async def stop(memo: Any, **_: Any) -> None:
        controller: Controller = memo.controller
        await controller.stop()
        if isinstance(controller.analyser, RulesPool):
            controller.analyser.close()
        await controller.api.close()

    @kopf.on.probe(id="workloads", registry=registry)
    async def workloads(memo: Any, **_: Any) -> int:
        controller: Controller = memo.controller
        return len(controller.store.workloads)

    @kopf.on.probe(id="queue", registry=registry)
    async def queue(memo: Any, **_: Any) -> int:
        controller: Controller = memo.controller
        return len(controller.queue)
