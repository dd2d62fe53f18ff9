"""A local Hugging Face Hub that answers the calls of the ``model-source`` check as the
real Hub does: model info with file sizes, gated repos, missing repos and revisions.

The shapes are the Hub's, as huggingface_hub reads them (huggingface/huggingface_hub,
src/huggingface_hub/utils/_http.py ``hf_raise_for_status`` and hf_api.py ``model_info`` /
``ModelInfo``, commit 01dd37b82d5a00b2f44932e49e37ae7afdf2c1d6):

* ``GET /api/models/<repo>/revision/<rev>?blobs=true``: 200 with ``id``, ``sha``,
  ``gated`` (false, "auto" or "manual") and ``siblings`` [{``rfilename``, ``size``}].
  Model info is public for a gated repo; only its files need access.
* ``GET|HEAD /<repo>/resolve/<rev>/<file>``: the file; for a gated repo 401 without a
  token and 403 with a token that has no access, both with ``X-Error-Code: GatedRepo``.
* An unknown repo: 401 with ``X-Error-Code: RepoNotFound`` (the Hub answers 401 rather
  than 404 so that a private repo's existence does not leak; huggingface_hub reads a bare
  401 as RepositoryNotFoundError too). An unknown revision: 404 with ``X-Error-Code:
  RevisionNotFound``; an unknown file: 404 ``EntryNotFound``. A bad token: 401 with
  ``X-Error-Message: Invalid credentials in Authorization header``.

Repos are built in memory (``FakeRepo``), with file bodies or just sizes; ``delay_s``
makes every answer late (a slow Hub). It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class FakeRepo:
    """One model repo: files (name -> bytes, or an int: a size with no body), gating, the
    tokens that may read it, its revisions (name -> commit)."""

    files: Mapping[str, bytes | int]
    gated: bool | str = False
    tokens: frozenset[str] = frozenset()
    revisions: Mapping[str, str] = field(default_factory=lambda: {"main": COMMIT})


class FakeHub:
    """``with FakeHub({"org/name": FakeRepo(...)}) as hub: hub.url``."""

    def __init__(
        self,
        repos: Mapping[str, FakeRepo],
        delay_s: float = 0.0,
        valid_tokens: frozenset[str] = frozenset(),
    ) -> None:
        self.repos = dict(repos)
        self.delay_s = delay_s
        # tokens the Hub knows (any repo's tokens are known too); others are invalid
        self.valid_tokens = set(valid_tokens) | {t for r in repos.values() for t in r.tokens}
        self.requests: list[tuple[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._answer(send_body=True)

            def do_HEAD(self) -> None:
                self._answer(send_body=False)

            def _answer(self, send_body: bool) -> None:
                hub.requests.append((self.command, self.path))
                if hub.delay_s:
                    time.sleep(hub.delay_s)
                auth = self.headers.get("Authorization", "")
                token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
                status, headers, body = hub.answer(
                    urllib.parse.unquote(self.path.split("?", 1)[0]), token
                )
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if send_body:
                    self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @staticmethod
    def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
        headers = {"Content-Type": "application/json", "X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        return status, headers, json.dumps({"error": message}).encode()

    def answer(self, path: str, token: str | None) -> tuple[int, dict[str, str], bytes]:
        if token is not None and token not in self.valid_tokens:
            return self._error(401, "", "Invalid credentials in Authorization header")
        parts = [p for p in path.split("/") if p]
        if len(parts) == 6 and parts[:2] == ["api", "models"] and parts[4] == "revision":
            return self._info("/".join(parts[2:4]), parts[5])
        if len(parts) >= 5 and parts[2] == "resolve":
            return self._file("/".join(parts[:2]), parts[3], "/".join(parts[4:]), token)
        return self._error(404, "", "Sorry, we can't find the page you are looking for.")

    def _repo(self, repo_id: str) -> FakeRepo | None:
        return self.repos.get(repo_id)

    def _info(self, repo_id: str, revision: str) -> tuple[int, dict[str, str], bytes]:
        repo = self._repo(repo_id)
        if repo is None:
            return self._error(401, "RepoNotFound", "Repository not found")
        commit = repo.revisions.get(revision) or (
            revision if revision in repo.revisions.values() else None
        )
        if commit is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        siblings = [
            {"rfilename": name, "size": body if isinstance(body, int) else len(body)}
            for name, body in sorted(repo.files.items())
        ]
        doc = {"id": repo_id, "modelId": repo_id, "sha": commit, "gated": repo.gated,
               "private": False, "siblings": siblings}  # fmt: skip
        return 200, {"Content-Type": "application/json"}, json.dumps(doc).encode()

    def _file(
        self, repo_id: str, revision: str, name: str, token: str | None
    ) -> tuple[int, dict[str, str], bytes]:
        repo = self._repo(repo_id)
        if repo is None:
            return self._error(401, "RepoNotFound", "Repository not found")
        commit = repo.revisions.get(revision)
        if commit is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        if repo.gated and token not in repo.tokens:
            message = f"Access to model {repo_id} is restricted."
            if token is None:
                login = " You must have access to it and be authenticated to access it."
                return self._error(401, "GatedRepo", message + login)
            return self._error(403, "GatedRepo", message + " You are not in the authorized list.")
        body = repo.files.get(name)
        if body is None:
            return self._error(404, "EntryNotFound", f'{name} does not exist on "{revision}"')
        data = body if isinstance(body, bytes) else b""
        headers = {"X-Repo-Commit": commit, "ETag": f'"{len(data)}"'}
        return 200, headers, data

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
