"""A small stand-in for the Hugging Face Hub's file API, serving tests/data/models.

The two URL shapes vllm-preflight (and huggingface_hub) use to read a model's config:

* ``GET /<org>/<name>/resolve/<revision>/<file>``: the file's bytes (404 when absent);
* ``GET /api/models/<org>/<name>``: ``{"id", "modelId", "sha", "siblings": [{"rfilename"}]}``.

It listens on 127.0.0.1 only. ``token`` makes it answer 401 without ``Authorization:
Bearer <token>`` (a gated model); ``delay_s`` makes every answer late (timeouts).

    python -m preflight_dev.hubserver --port 8765   # then HF_ENDPOINT=http://127.0.0.1:8765
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# dev/preflight_dev/hubserver.py -> the repository root's tests/data/models.
CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "models"


HOLD_LIMIT_S = 60.0  # a held answer is sent anyway after this (a test that forgot to release)


class HubServer:
    """Run in a thread: ``with HubServer() as hub: hub.url``."""

    def __init__(
        self, root: Path = CORPUS, token: str | None = None, delay_s: float = 0.0, port: int = 0
    ) -> None:
        self.root = root.resolve()
        self.token = token
        self.delay_s = delay_s
        # Cleared: every answer waits until it is set (at most HOLD_LIMIT_S), so a test can
        # prove a caller never waited for an answer without measuring time.
        self.release = threading.Event()
        self.release.set()
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                hub.requests.append(self.path)
                if hub.delay_s:
                    time.sleep(hub.delay_s)
                hub.release.wait(HOLD_LIMIT_S)
                if hub.token and self.headers.get("Authorization") != f"Bearer {hub.token}":
                    self._send(401, b'{"error": "Invalid credentials"}')
                    return
                status, body = hub.answer(urllib.parse.unquote(self.path.split("?", 1)[0]))
                self._send(status, body)

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def _model_dir(self, org: str, name: str) -> Path | None:
        path = (self.root / org / name).resolve()
        if self.root not in path.parents or not path.is_dir():
            return None
        return path

    def answer(self, path: str) -> tuple[int, bytes]:
        parts = [p for p in path.split("/") if p]
        if len(parts) == 4 and parts[:2] == ["api", "models"]:
            folder = self._model_dir(parts[2], parts[3])
            if folder is None:
                return 404, b'{"error": "Repository not found"}'
            siblings = [{"rfilename": f.name} for f in sorted(folder.iterdir()) if f.is_file()]
            model_id = f"{parts[2]}/{parts[3]}"
            doc = {"id": model_id, "modelId": model_id, "sha": "main", "siblings": siblings}
            return 200, json.dumps(doc).encode()
        if len(parts) == 5 and parts[2] == "resolve":
            folder = self._model_dir(parts[0], parts[1])
            file = folder / parts[4] if folder is not None else None
            if file is None or not file.is_file() or file.parent != folder:
                return 404, b'{"error": "Entry not found"}'
            return 200, file.read_bytes()
        return 404, b'{"error": "not a Hub URL"}'

    def __enter__(self) -> HubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--root", type=Path, default=CORPUS)
    args = parser.parse_args()
    with HubServer(args.root, port=args.port) as hub:
        print(f"serving {args.root} at {hub.url} (HF_ENDPOINT={hub.url})", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            hub.thread.join()


if __name__ == "__main__":
    main()
