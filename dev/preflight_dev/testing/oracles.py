"""The apimachinery oracles' binaries (hack/expansion, hack/selector): small Go programs
built from their pinned modules, cached by a hash of their sources and the Go version in
the same cache as the control plane. Tests compare our readers with them."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def oracle_binary(name: str) -> tuple[Path | None, str]:
    """(the built ``hack/<name>`` program, "") or (None, why it cannot be had here)."""
    source = REPO / "hack" / name
    go = shutil.which("go")
    if go is None:
        return None, f"no Go toolchain: the apimachinery {name} oracle cannot be built"
    key = hashlib.sha256()
    for part in ("main.go", "go.mod", "go.sum"):
        key.update((source / part).read_bytes())
    key.update(subprocess.run([go, "version"], capture_output=True, check=True).stdout)
    cache = Path(os.environ.get("VLLM_PREFLIGHT_CACHE", Path.home() / ".cache" / "vllm-preflight"))
    binary = cache / f"{name}-{key.hexdigest()[:12]}" / name
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        built = subprocess.run(
            [go, "build", "-o", f"{binary}.partial", "."],
            cwd=source,
            env={**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if built.returncode != 0:
            return None, f"cannot build the apimachinery {name} oracle: {built.stderr[-500:]}"
        os.replace(f"{binary}.partial", binary)
    return binary, ""
