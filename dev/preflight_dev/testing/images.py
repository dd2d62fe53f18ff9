"""Container images for the real node, built on this machine: nothing is pulled.

The real node's containerd reaches no registry, so every image it runs is written here as
an OCI image archive and imported (`ctr images import`):

- the **workload image**, a Debian bookworm root filesystem with python3, made by
  debootstrap from the distribution's package mirror (the one apt uses; CI reaches it too).
  It stands in for a vLLM image: the injected `preflight-check` runs the checker zipapp with
  this image's own python3, as it does with vLLM's; its `vllm` is a shell stub that prints
  its arguments and sleeps (the main container's proof of having started).
- the **installer image**: the same root filesystem plus the checker zipapp at the
  operator image's path and `vllm-preflight-install` (the operator's own
  `preflight_operator/cli/install.py`, standard library only), run as uid 65532 as the
  Dockerfile's operator stage does. The Dockerfile itself needs a base image from a registry;
  this is the part of it the injected `preflight-install` container uses.
- the **sandbox ("pause") image**: one static binary, `pause` from hack/k8s/pause (ours,
  built by `hack/k8s/build.sh node`), as containerd's sandbox_image.

The root filesystem layer takes debootstrap about two minutes and is cached in
``$VLLM_PREFLIGHT_CACHE/images-<key>/`` (the key hashes the suite, the mirror and the package
list); the small layers (zipapp, pause) are written per run. Layers are uncompressed tars
(media type ...layer.v1.tar), which containerd imports as they are.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from preflight_dev.testing.binaries import REPO_ROOT
from preflight_dev.testing.process import unmount_under

SUITE = "bookworm"
MIRROR_ENV = "VLLM_PREFLIGHT_DEBIAN_MIRROR"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("python3",)
WORKLOAD_IMAGE = "localhost/vllm-preflight/workload-python3:bookworm"
INSTALLER_IMAGE = "localhost/vllm-preflight/installer:dev"
PAUSE_IMAGE = "localhost/vllm-preflight/pause:dev"
ZIPAPP_IN_IMAGE = "/opt/vllm-preflight/vllm-preflight.pyz"  # the Dockerfile's path
INSTALL_PY = REPO_ROOT / "operator" / "preflight_operator" / "cli" / "install.py"
NONROOT = 65532  # the Dockerfile's operator user
LAYER_MEDIA = "application/vnd.oci.image.layer.v1.tar"


class ImageBuildError(RuntimeError):
    """An image could not be built; says which step and how to fix it."""


def cache_dir() -> Path:
    return Path(os.environ.get("VLLM_PREFLIGHT_CACHE") or Path.home() / ".cache/vllm-preflight")


def mirror() -> str:
    return os.environ.get(MIRROR_ENV, "").strip() or DEFAULT_MIRROR


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _cached_sha256(path: Path) -> str:
    """The digest of a cached layer, kept beside it (hashing 167 MiB twice per node start
    cost seconds on a loaded machine); recomputed when the layer is newer."""
    sidecar = path.with_name(path.name + ".sha256")
    with contextlib.suppress(OSError):
        if sidecar.stat().st_mtime >= path.stat().st_mtime:
            return sidecar.read_text(encoding="ascii").strip()
    digest = _sha256_file(path)
    with contextlib.suppress(OSError):
        sidecar.write_text(digest + "\n", encoding="ascii")
    return digest


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _say(line: str) -> None:
    print(f">>> {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _unmounted_at_exit(path: Path) -> Iterator[None]:
    """debootstrap mounts /proc (and /sys) in the new root; a failed run may leave them
    mounted, and removing the directory must never descend into them."""
    try:
        yield
    finally:
        unmount_under(path)


def rootfs_layer_path() -> Path:
    """Where the root filesystem layer is cached (it may not exist yet)."""
    key = hashlib.sha256(json.dumps([SUITE, mirror(), PACKAGES, 1]).encode()).hexdigest()[:12]
    return cache_dir() / f"images-{key}" / "rootfs.tar"


def rootfs_layer() -> Path:
    """The cached root filesystem layer (an uncompressed tar); built once by debootstrap."""
    layer = rootfs_layer_path()
    dest = layer.parent
    if layer.is_file():
        return layer
    if shutil.which("debootstrap") is None:
        raise ImageBuildError("debootstrap is missing: apt-get install debootstrap")
    with _locked(dest / ".lock"):
        if layer.is_file():
            return layer
        _say(f"building the workload root filesystem (debootstrap {SUITE} + python3) in {dest}")
        with tempfile.TemporaryDirectory(dir=dest) as tmp, _unmounted_at_exit(Path(tmp)):
            rootfs = Path(tmp) / "rootfs"
            run = subprocess.run(
                ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}",
                 SUITE, str(rootfs), mirror()],
                capture_output=True, text=True, check=False, timeout=1200,
            )  # fmt: skip
            if run.returncode != 0:
                raise ImageBuildError(
                    f"debootstrap {SUITE} from {mirror()} failed (exit {run.returncode}); "
                    f"set {MIRROR_ENV} to a reachable mirror:\n{run.stdout[-2000:]}"
                    f"{run.stderr[-2000:]}"
                )
            unmount_under(rootfs)  # nothing mounted may end up in the layer
            # apt's package lists and downloaded .debs are not part of an image.
            for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for entry in (rootfs / junk).glob("*"):
                    if entry.is_file():
                        entry.unlink()
            partial = dest / "rootfs.tar.partial"
            with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
                for entry in sorted(rootfs.iterdir()):
                    tar.add(entry, arcname=entry.name)
            os.replace(partial, layer)
        _say(f"root filesystem layer ready: {layer} ({layer.stat().st_size >> 20} MiB)")
    return layer


@dataclass(frozen=True)
class File:
    path: str  # inside the image, absolute
    data: bytes
    mode: int = 0o644
    uid: int = 0


def small_layer(files: Sequence[File]) -> bytes:
    """A layer holding ``files`` and their parent directories (0755, root)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs: set[str] = set()
        for f in files:
            parts = f.path.strip("/").split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in dirs:
                    dirs.add(d)
                    info = tarfile.TarInfo(d)
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
            info = tarfile.TarInfo(f.path.strip("/"))
            info.size, info.mode, info.uid, info.gid = len(f.data), f.mode, f.uid, f.uid
            tar.addfile(info, io.BytesIO(f.data))
    return buf.getvalue()


def write_oci_archive(
    out: Path, name: str, layers: Sequence[Path | bytes], image_config: dict[str, Any]
) -> Path:
    """An OCI image layout tar holding one image, named ``name`` for `ctr images import`
    (annotation io.containerd.image.name)."""
    blobs: list[tuple[str, int, Path | bytes]] = []
    descriptors = []
    diff_ids = []
    for layer in layers:
        if isinstance(layer, Path):
            digest, size = _cached_sha256(layer), layer.stat().st_size
        else:
            digest, size = hashlib.sha256(layer).hexdigest(), len(layer)
        blobs.append((digest, size, layer))
        descriptors.append({"mediaType": LAYER_MEDIA, "digest": f"sha256:{digest}", "size": size})
        diff_ids.append(f"sha256:{digest}")  # uncompressed: the layer is its own diff
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": image_config,
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
        },
        sort_keys=True,
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": f"sha256:{hashlib.sha256(config).hexdigest()}",
                "size": len(config),
            },
            "layers": descriptors,
        },
        sort_keys=True,
    ).encode()
    index = json.dumps(
        {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": f"sha256:{hashlib.sha256(manifest).hexdigest()}",
                    "size": len(manifest),
                    "annotations": {
                        "io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": name.rpartition(":")[2],
                    },
                }
            ],
        }
    ).encode()
    for data in (config, manifest):
        blobs.append((hashlib.sha256(data).hexdigest(), len(data), data))

    def add_bytes(tar: tarfile.TarFile, arcname: str, data: bytes) -> None:
        info = tarfile.TarInfo(arcname)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(out, "w") as tar:
        add_bytes(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add_bytes(tar, "index.json", index)
        seen: set[str] = set()
        for digest, _, blob in blobs:
            if digest in seen:
                continue
            seen.add(digest)
            if isinstance(blob, Path):
                tar.add(blob, arcname=f"blobs/sha256/{digest}")
            else:
                add_bytes(tar, f"blobs/sha256/{digest}", blob)
    return out


def build_zipapp(out: Path) -> Path:
    """The checker zipapp, by the project's own builder (hack/build_zipapp.py)."""
    run = subprocess.run(
        [sys.executable, str(REPO_ROOT / "hack" / "build_zipapp.py"), "--output", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if run.returncode != 0:
        raise ImageBuildError(f"hack/build_zipapp.py failed:\n{run.stdout}{run.stderr}")
    return out


ENV_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def image_archives(dest: Path, pause_bin: Path) -> list[Path]:
    """The three images as OCI archives in ``dest`` (workload, installer, sandbox)."""
    dest.mkdir(parents=True, exist_ok=True)
    base = rootfs_layer()
    # A stand-in for vLLM's entry point: the planner reads `vllm serve ...`, and the main
    # container must run (and stay up) once the check lets it start.
    stub = b'#!/bin/sh\necho "vllm stand-in started: $*"\nexec sleep infinity\n'
    workload = write_oci_archive(
        dest / "workload.tar", WORKLOAD_IMAGE,
        [base, small_layer([File("/usr/local/bin/vllm", stub, 0o755)])],
        {"Env": [ENV_PATH], "Cmd": ["python3"], "WorkingDir": "/"},
    )  # fmt: skip
    zipapp = build_zipapp(dest / "vllm-preflight.pyz")
    launcher = b'#!/bin/sh\nexec python3 /usr/local/lib/vllm-preflight/install.py "$@"\n'
    installer_layer = small_layer(
        [
            File(ZIPAPP_IN_IMAGE, zipapp.read_bytes(), 0o644),
            File("/usr/local/lib/vllm-preflight/install.py", INSTALL_PY.read_bytes()),
            File("/usr/local/bin/vllm-preflight-install", launcher, 0o755),
        ]
    )
    installer = write_oci_archive(
        dest / "installer.tar", INSTALLER_IMAGE, [base, installer_layer],
        {"Env": [ENV_PATH, f"VLLM_PREFLIGHT_ZIPAPP={ZIPAPP_IN_IMAGE}",
                 "PYTHONDONTWRITEBYTECODE=1"],
         "User": f"{NONROOT}:{NONROOT}", "WorkingDir": "/tmp"},
    )  # fmt: skip
    pause = write_oci_archive(
        dest / "pause.tar", PAUSE_IMAGE,
        [small_layer([File("/pause", pause_bin.read_bytes(), 0o755)])],
        {"Entrypoint": ["/pause"], "User": "65535:65535"},
    )  # fmt: skip
    return [workload, installer, pause]
