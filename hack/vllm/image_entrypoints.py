#!/usr/bin/env python3
"""The ENTRYPOINT of vLLM's own server images, per release, read from each release's
Dockerfiles in its PyPI sdist (pinned by sha256 in sources.json):
tests/data/vllm_images/entrypoints.json.

Why: a container that sets only ``args`` on ``vllm/vllm-openai`` runs them after the image's
ENTRYPOINT, so the argv vLLM really receives depends on it, and it changed: ``python3 -m
vllm.entrypoints.openai.api_server`` up to 0.11.0, ``vllm serve`` from 0.11.1 (the api_server
module refuses a positional model before 0.12 and reads ``--config`` only from 0.10, where
``vllm serve`` takes both). The rules read this fact from
preflight_operator/core/rules/command.py (``SERVE_ENTRYPOINT_SINCE``);
tests/unit/test_image_entrypoints.py holds it to this file.

    python3 hack/vllm/image_entrypoints.py        # every pinned release; rewrites the file

Each record: the release, the sdist's URL and sha256, and for each Dockerfile of the sdist
the ENTRYPOINT of its final server stage (``vllm-openai``, or ``vllm-cpu`` in
Dockerfile.s390x), verbatim; releases whose sdist ships no Dockerfile (before 0.5.4) are
listed with none. Downloads every sdist once (1.08 GB; not cached).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources.json"
OUT = HERE.parents[1] / "tests" / "data" / "vllm_images" / "entrypoints.json"
SERVER_STAGES = ("vllm-openai", "vllm-cpu")
_DOCKERFILE = re.compile(r"^[^/]+/(docker/)?Dockerfile(\.[\w.-]+)?$")


def entrypoints(archive: Path) -> dict[str, str]:
    """Dockerfile path (in the sdist) -> the ENTRYPOINT line of its server stage."""
    found: dict[str, str] = {}
    with tarfile.open(archive) as sdist:
        for member in sdist.getmembers():
            if not member.isfile() or not _DOCKERFILE.match(member.name):
                continue
            handle = sdist.extractfile(member)
            if handle is None:
                continue
            stage = ""
            for line in handle.read().decode("utf-8", "replace").splitlines():
                if line.startswith("FROM "):
                    stage = line.split()[-1]
                elif line.startswith("ENTRYPOINT") and stage in SERVER_STAGES:
                    found[member.name.split("/", 1)[1]] = line.strip()
    return found


def record(version: str, pin: dict[str, str]) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "sdist.tar.gz"
        digest = hashlib.sha256()
        with urllib.request.urlopen(pin["url"], timeout=300) as answer, archive.open("wb") as out:
            while chunk := answer.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != pin["sha256"]:
            raise SystemExit(f"image_entrypoints: {pin['url']} has another sha256")
        return {
            "release": version,
            "sdist": pin["url"],
            "sha256": pin["sha256"],
            "entrypoints": entrypoints(archive),
        }


def main() -> int:
    pins = {k: v for k, v in json.loads(SOURCES.read_text()).items() if not k.startswith("_")}
    records = [record(version, pin) for version, pin in pins.items()]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "_comment": (
                    "The ENTRYPOINT of each Dockerfile's server stage in vLLM's sdists "
                    "(hack/vllm/image_entrypoints.py), verbatim. Read by "
                    "tests/unit/test_image_entrypoints.py."
                ),
                "records": records,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"{OUT}: {len(records)} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
