#!/usr/bin/env python3
"""Builds the Krew archive of `kubectl vllm-preflight` and checks or writes its manifest.

    python3 hack/krew/build.py --output dist/kubectl-vllm_preflight.tar.gz
    python3 hack/krew/build.py --update-manifest   # after changing the launcher or LICENSE

The archive holds the launcher (hack/krew/kubectl-vllm_preflight, which runs the plugin of
the installed Python package) and is reproducible: fixed owner, mode and mtime, no gzip
timestamp, so its sha256 in hack/krew/vllm-preflight.yaml is the one a release upload
has. tests/unit/test_krew_manifest.py rebuilds it and compares.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import re
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAUNCHER = HERE / "kubectl-vllm_preflight"
MANIFEST = HERE / "vllm-preflight.yaml"


def archive_bytes() -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        data = LAUNCHER.read_bytes()
        info = tarfile.TarInfo("kubectl-vllm_preflight")
        info.size, info.mode, info.mtime = len(data), 0o755, 0
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, help="write the archive here")
    parser.add_argument(
        "--update-manifest", action="store_true", help="write its sha256 into the manifest"
    )
    args = parser.parse_args(argv)
    data = archive_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_bytes(data)
    if args.update_manifest:
        text = MANIFEST.read_text()
        MANIFEST.write_text(re.sub(r"sha256: [0-9a-f]{64}", f"sha256: {digest}", text))
    print(digest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
