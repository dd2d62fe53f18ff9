"""Facts about the container that are not GPUs: /dev/shm, the CUDA runtime the image
ships, and the dynamic linker's preload lists.

All of it is read from files; nothing here imports torch (the fast tier must not).
"""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import os
import re
import sys
from typing import Dict, List, Mapping, Optional, Tuple

from preflight_check.facts import PreloadFacts, RuntimeRequirement, ShmFacts
from preflight_contract import vllm_release

_TORCH_CUDA = re.compile(r"^cuda\s*(?::[^=]*)?=\s*['\"]([0-9]+)\.([0-9]+)", re.MULTILINE)
_TORCH_CUDA_NONE = re.compile(r"^cuda\s*(?::[^=]*)?=\s*None", re.MULTILINE)
_TORCH_VERSION = re.compile(r"^__version__\s*(?::[^=]*)?=\s*['\"]([^'\"]+)", re.MULTILINE)
_CUDART = re.compile(r"libcudart\.so\.([0-9]+)(?:\.([0-9]+))?")


def read_shm(path: str = "/dev/shm") -> ShmFacts:
    try:
        stats = os.statvfs(path)
    except OSError:
        return ShmFacts(path=path, exists=False)
    return ShmFacts(
        path=path,
        exists=True,
        size=stats.f_blocks * stats.f_frsize,
        free=stats.f_bavail * stats.f_frsize,
    )


def _parse_version(text: str) -> Optional[Tuple[int, int]]:
    match = re.match(r"\s*([0-9]+)\.([0-9]+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def installed_vllm_version() -> str:
    """The vLLM release installed in this image ("" when none): its distribution metadata
    (``vllm-*.dist-info/METADATA``), read by importlib.metadata without importing vLLM
    (which would import torch). Only visible when the check runs with the vLLM image's
    own python3 (injection mode WorkloadImage); vendor builds report theirs verbatim
    (``0.6.3+rocm624``). Bounded and checked: the image is not trusted."""
    try:
        version = str(importlib.metadata.version("vllm"))
    except Exception:  # not installed, unreadable or malformed metadata: unknown here
        return ""
    return vllm_release.installed_version(version)


# Entry-point groups whose plugins vLLM loads at start and which may register models
# (``ModelRegistry.register_model`` in a general plugin: vLLM's docs, "Plugin System").
_MODEL_PLUGIN_GROUPS = ("vllm.general_plugins",)


def installed_vllm_release() -> Optional[str]:
    """The release whose model registry is exactly the one this image's vLLM loads: its
    installed version's release (``0.6.3`` of ``0.6.3+cu124``), and only where no
    distribution of the image declares a vLLM general plugin (which may register more
    architectures). None when either is not known: a dev build, no metadata, a plugin, an
    unreadable entry-point table. Read from metadata only, never by importing vLLM."""
    version = installed_vllm_version()
    if not version or vllm_release.installed_release(version) is None:
        return None
    try:
        for group in _MODEL_PLUGIN_GROUPS:
            if importlib.metadata.entry_points(group=group):
                return None
    except Exception:  # malformed metadata of any distribution: not known here
        return None
    return version.split("+", 1)[0]


def vllm_version_field() -> Dict[str, str]:
    """The report plan's ``vllm_version`` (kept by every compaction, as the plan is);
    absent when no vLLM is installed where the check runs (DedicatedImage, by hand)."""
    version = installed_vllm_version()
    return {"vllm_version": version} if version else {}


def torch_requirement() -> Optional[RuntimeRequirement]:
    """torch's CUDA version, read from torch/version.py without importing torch."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    version_file = os.path.join(os.path.dirname(spec.origin), "version.py")
    try:
        with open(version_file, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return None
    torch_version_match = _TORCH_VERSION.search(text)
    torch_version = torch_version_match.group(1) if torch_version_match else "unknown"
    match = _TORCH_CUDA.search(text)
    if match:
        return RuntimeRequirement(
            version=(int(match.group(1)), int(match.group(2))),
            source="torch",
            detail=f"torch {torch_version} ({version_file})",
            torch_version=torch_version,
        )
    if _TORCH_CUDA_NONE.search(text):
        return RuntimeRequirement(
            source="torch",
            detail=f"torch {torch_version} is a CPU-only build ({version_file})",
            torch_version=torch_version,
            torch_cpu_only=True,
        )
    return None


def _cudart_dirs(environ: Mapping[str, str]) -> List[str]:
    dirs = [d for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    dirs += ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"]
    for entry in sys.path:
        dirs += glob.glob(os.path.join(entry, "nvidia", "cuda_runtime", "lib"))
        dirs += glob.glob(os.path.join(entry, "nvidia", "cu*", "lib"))
    return dirs


def cudart_requirement(environ: Mapping[str, str]) -> Optional[RuntimeRequirement]:
    """The newest libcudart the image carries, by its file name (libcudart.so.12.4.127)."""
    best: Optional[Tuple[int, int]] = None
    where = ""
    for directory in _cudart_dirs(environ):
        for path in glob.glob(os.path.join(directory, "libcudart.so.*")):
            match = _CUDART.search(os.path.basename(path))
            if not match:
                continue
            version = (int(match.group(1)), int(match.group(2) or 0))
            if best is None or version > best:
                best, where = version, path
    if best is None:
        return None
    return RuntimeRequirement(version=best, source="libcudart", detail=where)


def runtime_requirement(environ: Mapping[str, str]) -> RuntimeRequirement:
    """What CUDA version the image's user space needs, best source first: torch (what
    vLLM actually runs on), the CUDA_VERSION of NVIDIA's base images, then libcudart."""
    found = torch_requirement()
    if found is not None:
        return found
    env_version = environ.get("CUDA_VERSION", "")
    parsed = _parse_version(env_version)
    if parsed is not None:
        return RuntimeRequirement(
            version=parsed, source="CUDA_VERSION", detail=f"CUDA_VERSION={env_version}"
        )
    return cudart_requirement(environ) or RuntimeRequirement(
        source="", detail="no torch, CUDA_VERSION or libcudart found in the image"
    )


def read_preload(
    environ: Mapping[str, str], preload_file: str = "/etc/ld.so.preload"
) -> PreloadFacts:
    """LD_PRELOAD (space or colon separated) and /etc/ld.so.preload entries."""
    ld_preload = [p for p in re.split(r"[\s:]+", environ.get("LD_PRELOAD", "")) if p]
    etc: List[str] = []
    try:
        with open(preload_file, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                etc += [p for p in line.split("#", 1)[0].split() if p]
    except OSError:
        pass
    return PreloadFacts(ld_preload=ld_preload, etc_preload=etc)


def gpu_device_nodes(dev: str = "/dev") -> Optional[int]:
    """How many /dev/nvidiaN nodes exist: an upper bound of the GPUs CUDA can see.

    None when there is no /dev/nvidiactl (no local NVIDIA devices at all, as on an
    API-remoting vGPU platform): then the count is unknown, not zero.
    """
    if not os.path.exists(os.path.join(dev, "nvidiactl")):
        return None
    return len([p for p in glob.glob(os.path.join(dev, "nvidia*")) if p[len(dev) + 7 :].isdigit()])


# The kernel ring buffer: NVIDIA's driver logs every XID there ("NVRM: Xid (PCI:0000:06:00):
# 79, pid=..., GPU has fallen off the bus."). A container usually cannot read it
# (/dev/kmsg needs CAP_SYSLOG or dmesg_restrict=0): then it is "not available", never an
# error. Bounded: at most MAX_KMSG_BYTES and MAX_KMSG_SECONDS, non-blocking.
MAX_KMSG_BYTES = 4 << 20
MAX_KMSG_SECONDS = 0.25


def read_kernel_log(path: str = "/dev/kmsg") -> Optional[str]:
    """The kernel log's records (one per line), or None when it cannot be read here."""
    import time  # noqa: PLC0415  (only the XID history needs it)

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    lines: List[str] = []
    size = 0
    started = time.monotonic()
    try:
        while size < MAX_KMSG_BYTES and time.monotonic() - started < MAX_KMSG_SECONDS:
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                break  # the end of the buffer
            except OSError as exc:
                if exc.errno == 32:  # EPIPE: a record was overwritten while reading
                    continue
                return None if not lines else "\n".join(lines)
            if not record:
                break
            size += len(record)
            lines.append(record.decode("utf-8", "replace").rstrip("\n"))
    finally:
        os.close(fd)
    return "\n".join(lines)
