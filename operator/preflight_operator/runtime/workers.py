"""The reconcile workers: keys out of the work queue, one reconcile each, while this replica
may write.

Apart from the Controller (issue 28). A follower does not reconcile: it keeps the keys it
met in ``deferred`` and queues them again when it starts to lead (``catch_up``), in case no
watch brings them again. A reconcile's failure is counted by stage and retried by the
queue's backoff; nothing a reconcile raises stops a worker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from preflight_operator.core.store import Key, Store
from preflight_operator.runtime import metrics
from preflight_operator.runtime.api import API_ERRORS, NotFound
from preflight_operator.runtime.reconciler import Reconciler
from preflight_operator.runtime.workqueue import WorkQueue
from preflight_operator.runtime.writegate import WriteGate

logger = logging.getLogger(__name__)


class ReconcileWorkers:
    def __init__(
        self,
        store: Store,
        reconciler: Reconciler,
        gate: WriteGate,
        *,
        clock: Callable[[], float],
    ) -> None:
        self.queue: WorkQueue[Key] = WorkQueue()
        self._store = store
        self._reconciler = reconciler
        self._gate = gate
        self._clock = clock
        self.deferred: set[Key] = set()

    def enqueue(self, key: Key) -> None:
        self.queue.add(key)
        metrics.QUEUE_DEPTH.set(len(self.queue))

    def catch_up(self) -> None:
        """This replica now leads: every key met while following is reconciled."""
        deferred, self.deferred = self.deferred, set()
        for key in sorted(deferred):
            self.enqueue(key)

    def close(self) -> None:
        self.queue.close()

    async def run(self) -> None:
        """One worker (start several)."""
        while True:
            key = await self.queue.get()
            if not self._gate.allows():
                # A follower: the leader writes. Remember the key, in case this replica
                # takes over before a watch brings the key again.
                self.deferred.add(key)
                self.queue.done(key, failed=False)
                continue
            started = self._clock()
            failed = False
            try:
                await self._reconciler.reconcile(key)
            except NotFound as exc:
                # The GPUValidation (or the workload) vanished under us: start over.
                self._store.forget_validation(key)
                failed = True
                logger.info("%s: %s; retrying", "/".join(key), exc)
            except API_ERRORS as exc:
                failed = True
                metrics.RECONCILE_ERRORS.labels(stage="api").inc()
                logger.warning("reconcile of %s failed: %s", "/".join(key), exc)
            except Exception:
                failed = True
                metrics.RECONCILE_ERRORS.labels(stage="bug").inc()
                logger.exception("reconcile of %s failed", "/".join(key))
            finally:
                metrics.RECONCILE_LATENCY.observe(self._clock() - started)
                self.queue.done(key, failed=failed)
                metrics.QUEUE_DEPTH.set(len(self.queue))
