"""`vllm-preflight-install DEST`: the injected ``preflight-install`` init container.

Copies the checker zipapp held by the operator image (``$VLLM_PREFLIGHT_ZIPAPP``, by
default /opt/vllm-preflight/vllm-preflight.pyz) to DEST in the pod's shared emptyDir, where
``preflight-check`` runs it with the vLLM image's own python3. The copy is written under a
temporary name and renamed, so the check never sees half a file. Standard library only:
this runs in every injected pod and must start in milliseconds.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

DEFAULT_SOURCE = "/opt/vllm-preflight/vllm-preflight.pyz"
SOURCE_ENV = "VLLM_PREFLIGHT_ZIPAPP"
USAGE = "usage: vllm-preflight-install DEST   (copies $VLLM_PREFLIGHT_ZIPAPP to DEST)"


def install(source: Path, dest: Path) -> int:
    """Copies ``source`` to ``dest`` atomically; returns the bytes copied."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f".{dest.name}.partial")
    shutil.copyfile(source, partial)
    partial.chmod(0o755)
    os.replace(partial, dest)
    return dest.stat().st_size


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        from preflight_operator import __version__  # noqa: PLC0415 - this path only

        print(f"vllm-preflight-install {__version__}")
        return 0
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if args[:1] != ["--help"] else sys.stdout)
        return 0 if args[:1] in (["-h"], ["--help"]) else 2
    source = Path(os.environ.get(SOURCE_ENV) or DEFAULT_SOURCE)
    dest = Path(args[0])
    try:
        size = install(source, dest)
    except OSError as exc:
        # The termination message (FallbackToLogsOnError) carries this line to the pod's
        # status, where `kubectl describe pod` shows it.
        print(f"vllm-preflight-install: cannot copy {source} to {dest}: {exc}", file=sys.stderr)
        return 2
    print(f"vllm-preflight-install: {dest} ({size} bytes) from {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
