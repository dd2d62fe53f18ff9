"""GET /healthz (liveness and readiness), answered from a thread, about the event loop.

Why not kopf's liveness endpoint: it is served on the event loop, so it answers after
whatever the loop has queued; under a burst of admission reviews its answer came late and
the kubelet counted a healthy, busy operator as dead (issue 23), while the question a
probe asks is whether the loop is wedged. Here a task on the loop stamps a heartbeat every
``HEARTBEAT_SECONDS``; a small HTTP server in its own thread answers at once:

- 200 while the webhook server is up and the last heartbeat is younger than
  ``stall_after`` seconds (a loop that is busy still stamps it: one tick between
  requests is enough);
- 503 before the webhook server is up (readiness: no webhook traffic to a replica that
  cannot answer it), and 503 when the loop has not ticked for ``stall_after`` seconds:
  wedged (a blocking call, an endless CPU loop), so the kubelet restarts it.

The body says why, with the heartbeat's age and the counts the old kopf probes gave.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 0.5
DEFAULT_STALL_SECONDS = 10.0  # the webhooks' own timeout: a loop stalled longer misses them


class Health:
    def __init__(
        self,
        stall_after: float = DEFAULT_STALL_SECONDS,
        facts: Mapping[str, Callable[[], int]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stall_after = stall_after
        self.facts = dict(facts or {})
        self._clock = clock
        self._beat: float | None = None
        self._serving = False
        self._server: http.server.ThreadingHTTPServer | None = None

    # -- the loop's side ---------------------------------------------------------------

    def serving(self) -> None:
        """The webhook server is up: ready once the loop ticks."""
        self._serving = True

    async def heartbeat(self) -> None:
        """Runs until cancelled, on the loop whose health /healthz reports."""
        while True:
            self._beat = self._clock()
            await asyncio.sleep(HEARTBEAT_SECONDS)

    # -- the probe's side (any thread) ------------------------------------------------

    def verdict(self) -> tuple[int, dict[str, object]]:
        beat = self._beat
        age = None if beat is None else round(self._clock() - beat, 3)
        body: dict[str, object] = {"loop_heartbeat_age_s": age}
        for name, fact in self.facts.items():
            try:
                body[name] = fact()
            except Exception:  # a fact is information, never the verdict
                body[name] = None
        if not self._serving or age is None:
            body["status"] = "starting: the webhook server is not up yet"
            return 503, body
        if age > self.stall_after:
            body["status"] = f"wedged: the event loop has not run for {age:.1f} s"
            return 503, body
        body["status"] = "ok"
        return 200, body

    def serve(self, addr: str, port: int) -> None:
        """Starts the HTTP server in a daemon thread."""
        health = self

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = 5  # a peer that never finishes its request holds a thread no longer

            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/healthz":
                    self.send_error(404)
                    return
                code, body = health.verdict()
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                logger.debug("healthz: " + format, *args)

        server = http.server.ThreadingHTTPServer((addr, port), Handler)
        server.daemon_threads = True
        server.timeout = 5
        self._server = server
        threading.Thread(target=server.serve_forever, name="healthz", daemon=True).start()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
