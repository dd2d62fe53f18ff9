"""Start-up and clean-up: kopf settings, then the controller primed and started,
the webhook server and the leader election with it.

Settings that matter (and why):
- no kopf admission server: the webhooks are a plain aiohttp app of ours
  (webhookserver.py says why), started once the controller is primed, so the first
  review already sees the policies; ``admission.managed = None``: the chart ships the
  webhook configurations (kopf's own have no namespaceSelector and could deny pods
  cluster-wide);
- kopf in standalone mode on every replica (main.py): no kopf peering; every replica's
  watches (watches.py, our own since issue 23) run and its store stays warm; only the
  holder of the Lease writes (elector.py);
- kopf watches nothing and scans nothing (``scanning.disabled``): it runs the life cycle
  and login (/healthz is health.py's, from a thread);
- kopf's own Events off: its handler-failure Events would land on users' pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from typing import Any

import kopf

from preflight_operator.runtime.controller import Controller
from preflight_operator.runtime.elector import LeaderElector
from preflight_operator.runtime.failclosedsync import FailClosedSync
from preflight_operator.runtime.options import RunOptions
from preflight_operator.runtime.rulesworker import RulesPool, isolate
from preflight_operator.runtime.watches import Watches
from preflight_operator.webhook import admissionreview
from preflight_operator.webhook.webhookserver import WebhookServer

logger = logging.getLogger(__name__)
# How soon a start-up that could not reach the API server tries again: the readiness probe
# waits for it, so a short delay is a replica ready sooner; one log line each time.
START_RETRY_SECONDS = 5


def configure(settings: kopf.OperatorSettings) -> None:
    settings.admission.managed = None
    settings.scanning.disabled = True  # no kopf watch: no CRD or namespace observer either
    settings.posting.enabled = False


async def prime(watches: Watches, controller: Controller) -> None:
    """The first reads of the cluster. An API server not reachable yet (a pod whose network
    is still being set up, an API server restarting) is a TemporaryError: kopf runs the
    start-up again and logs one line (an exception kopf does not know is logged with its
    traceback and retried after 60 s). Nothing before this needs undoing on the retry: the
    rules worker is made once (isolate() takes only a plain analyser)."""
    try:
        await watches.prime()
        await controller.prime()
    except (OSError, asyncio.TimeoutError) as err:
        raise kopf.TemporaryError(
            f"the Kubernetes API is not reachable yet ({err or type(err).__name__}); "
            f"trying again in {START_RETRY_SECONDS} s",
            delay=START_RETRY_SECONDS,
        ) from None


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
        watches: Watches = memo.watches
        configure(settings)
        # The rules run in a child process with a time and memory budget (rulesworker.py),
        # for the webhooks and the reconciles alike; started now, before any request.
        worker = isolate(controller.analyser, controller.config)
        if worker is not None:
            worker.start()
            controller.analyser = worker
            memo.admission.use_analyser(worker)
        await prime(watches, controller)
        await controller.start(workers=options.workers)
        watches.start()
        server = WebhookServer.configured(
            admissionreview.routes(memo.admission),
            controller.config.webhook,
            fallbacks=admissionreview.fallbacks(memo.admission),
            addr=options.webhook_addr,
            port=options.webhook_port,
            certfile=options.cert_file,
            keyfile=options.key_file,
            client_ca=options.webhook_client_ca,
        )
        await server.start()
        memo.webhook_server = server
        health = getattr(memo, "health", None)
        if health is not None:
            health.serving()
        memo.tasks = [asyncio.get_running_loop().create_task(server.watch_certificates())]
        if options.webhook_configuration:
            # the Fail entry's namespaces under Enforce (runtime/failclosedsync.py)
            sync = FailClosedSync(
                controller.api,
                options.webhook_configuration,
                leading=controller.gate.allows,
                opted_in=lambda: sorted(controller.scope.opted_in),
                policies=controller.policy_watch.book.in_namespace,
                default=controller.config.default_policy,
                excluded=controller.scope.excluded,
            )
            memo.tasks.append(asyncio.get_running_loop().create_task(sync.run()))
        if not options.standalone:
            memo.elector = LeaderElector(
                controller.api,
                controller.gate,
                namespace=options.lease_where,
                name=options.lease_name,
                lease_duration=options.lease_duration,
                renew_deadline=options.renew_deadline,
                retry_period=options.retry_period,
                on_change=controller.leadership_changed,
            )
            memo.tasks.append(asyncio.get_running_loop().create_task(memo.elector.run()))
        # Everything loaded so far (kopf, the rules, the primed state) lives as long as the
        # process: move it out of the collector's reach, so a full collection walks only
        # what requests allocate (measured: it halves the webhook's p99, docs/PERFORMANCE.md).
        gc.freeze()
        logger.info(
            "vllm-preflight operator %s started: %d opted-in namespace(s), %d policies,"
            " %d GPUValidation(s) known",
            controller.identity,
            len(controller.scope.opted_in),
            len(controller.policy_watch.reflector.items),
            len(controller.store.validations),
        )

    @kopf.on.cleanup(registry=registry)
    async def stop(memo: Any, **_: Any) -> None:
        controller: Controller = memo.controller
        for task in getattr(memo, "tasks", []):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        elector: LeaderElector | None = getattr(memo, "elector", None)
        if elector is not None:
            await elector.release()  # a follower takes over at its next round
        server: WebhookServer | None = getattr(memo, "webhook_server", None)
        if server is not None:
            await server.stop()
        await memo.watches.stop()
        await controller.stop()
        if isinstance(controller.analyser, RulesPool):
            controller.analyser.close()
        await controller.api.close()
