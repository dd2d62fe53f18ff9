#!/usr/bin/env python3
"""Fetch a released vLLM's Python source (its PyPI sdist, pinned by sha256 in sources.json)
into the cache outside the repository, for the generators and drift tests that read vLLM
as text (hack/models/gen_vllm_registry.py, tests/unit/test_model_tables.py).

Why not ``pip download``: for an sdist pip prepares metadata, which builds vLLM's build
dependencies (torch, CUDA); we need only the ``.py`` files, read with ``ast``. Why not a
copy in the repository: it is vLLM's code, not ours; the generated tables are ours, and
the drift test regenerates them from this source on every ``make test``.

    python3 hack/vllm/fetch_source.py 0.33.0     # prints the source directory
    python3 hack/vllm/fetch_source.py --pin-upload-dates   # each pin's first upload day

Into ``${VLLM_PREFLIGHT_CACHE:-~/.cache/vllm-preflight}/vllm-src/<version>/`` (``vllm/``
under it: the layout an installed package has). Cached: a second run downloads nothing.
The 0.33.0 sdist is 47 MB; its Python files, extracted, about 30 MB.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources.json"


def cache_root() -> Path:
    base = os.environ.get("VLLM_PREFLIGHT_CACHE") or str(Path.home() / ".cache" / "vllm-preflight")
    return Path(base) / "vllm-src"


def source_dir(version: str) -> Path:
    """Where ``version``'s source is, once fetched (``vllm/`` under it)."""
    return cache_root() / version


def fetch(version: str) -> Path:
    pins = json.loads(SOURCES.read_text())
    if version not in pins:
        raise SystemExit(f"fetch_source: vLLM {version} is not pinned in {SOURCES}")
    target = source_dir(version)
    if (target / "vllm" / "__init__.py").is_file():
        return target
    pin = pins[version]
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        archive = Path(tmp) / "sdist.tar.gz"
        digest = hashlib.sha256()
        with urllib.request.urlopen(pin["url"], timeout=300) as answer, archive.open("wb") as out:
            while chunk := answer.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != pin["sha256"]:
            raise SystemExit(
                f"fetch_source: {pin['url']} has sha256 {digest.hexdigest()}, "
                f"pinned {pin['sha256']}: not used"
            )
        staged = Path(tmp) / "tree"
        with tarfile.open(archive) as sdist:
            for member in sdist.getmembers():
                parts = Path(member.name).parts
                # <name>-<version>/vllm/**.py only: no scripts, links or device files
                if len(parts) < 3 or parts[1] != "vllm" or not member.isfile():
                    continue
                if not member.name.endswith(".py") or ".." in parts:
                    continue
                dest = staged.joinpath(*parts[1:])
                dest.parent.mkdir(parents=True, exist_ok=True)
                with sdist.extractfile(member) as src, dest.open("wb") as out:  # type: ignore[union-attr]
                    shutil.copyfileobj(src, out)
        if not (staged / "vllm" / "__init__.py").is_file():
            raise SystemExit(f"fetch_source: no vllm/__init__.py in {pin['url']}")
        if target.exists():
            shutil.rmtree(target)
        staged.rename(target)
    return target


SIMPLE = "https://pypi.org/simple/vllm/"  # PEP 691 JSON: each file's upload-time


def first_uploads() -> dict[str, str]:
    """When PyPI received each release's first file (ISO 8601, UTC), from the PEP 691 simple
    index (PyPI's JSON API is not served on every mirror). The oracle's venvs take what was
    uploaded before the next day; the rules take an unknown image as a release of the year
    before the newest one's date (``uploaded`` in sources.json)."""
    request = urllib.request.Request(
        SIMPLE, headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        files = json.load(answer)["files"]
    first: dict[str, str] = {}
    for entry in files:
        name, when = entry.get("filename", ""), entry.get("upload-time")
        if not isinstance(when, str) or not name.startswith("vllm-"):
            continue
        release = name[5:-7] if name.endswith(".tar.gz") else name[5:].split("-", 1)[0]
        if release not in first or when < first[release]:
            first[release] = when
    return first


def pin_upload_dates() -> list[str]:
    """Write each pinned release's first upload day into sources.json (``uploaded``);
    returns the releases changed."""
    pins = json.loads(SOURCES.read_text())
    first = first_uploads()
    changed = []
    for version, pin in pins.items():
        if version.startswith("_"):
            continue
        if version not in first:
            raise SystemExit(f"fetch_source: PyPI lists no file of vllm {version}")
        if pin.get("uploaded") != first[version][:10]:
            pin["uploaded"] = first[version][:10]
            changed.append(version)
    SOURCES.write_text(json.dumps(pins, indent=2) + "\n")
    return changed


def main(argv: list[str]) -> int:
    if argv == ["--pin-upload-dates"]:
        print("dates pinned:", ", ".join(pin_upload_dates()) or "none changed")
        return 0
    if len(argv) != 1:
        print("usage: fetch_source.py VERSION | --pin-upload-dates", file=sys.stderr)
        return 2
    print(fetch(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
