"""Which CUDA driver library the workload really gets (issue 8).

The error this project was born from ("[AMP ERROR] [CudaFrontend.cpp:94] failed to call
cuCtxGetDevice(device), error code: CUDA_ERROR_INVALID_CONTEXT") is printed by an
API-remoting vGPU frontend that replaces libcuda.so.1, not by NVIDIA's driver.
GPU-sharing layers (HAMi-core's libvgpu.so and others) are preloaded in front of it.
This module names what is there; the thread-discipline probe then tests how it behaves.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from preflight_check.driver.api import LoadedLibrary
from preflight_check.facts import PreloadFacts


@dataclass(frozen=True)
class KnownLayer:
    name: str
    pattern: str
    kind: str
    defects: str = ""
    fixed_in: Optional[Tuple[int, ...]] = None


# Recognised by file name. `defects` are public reports of TP > 1 breakage.
KNOWN_LAYERS: Tuple[KnownLayer, ...] = (
    KnownLayer(
        name="HAMi-core",
        pattern=r"libvgpu\.so",
        kind="GPU-sharing layer (LD_PRELOAD or /etc/ld.so.preload)",
        defects=(
            "before 2.8.1 a failed cuCtxGetDevice in an NCCL thread left a device id "
            "uninitialised and vLLM TP > 1 crashed with 'Illegal device id' in cuMemCreate "
            "(Project-HAMi/HAMi-core#169, #187); more TP > 1 reports in HAMi #1461, #1479, "
            "#1191, #1230, #1853"
        ),
        fixed_in=(2, 8, 1),
    ),
    KnownLayer(
        name="API-remoting vGPU frontend (libvirtdev-frontend)",
        pattern=r"libvirtdev-frontend\.so",
        kind="replacement libcuda (API remoting)",
        defects=(
            "aborts with '[AMP ERROR] failed to call cuCtxGetDevice(device), error code: "
            "CUDA_ERROR_INVALID_CONTEXT' when a thread without a context asks for its device, "
            "which vLLM/NCCL worker threads do with TP > 1 (vllm-project/vllm#38228, "
            "InternLM/lmdeploy#1169)"
        ),
    ),
    KnownLayer(
        name="vcuda-controller (GaiaGPU)",
        pattern=r"libcuda-control\.so",
        kind="GPU-sharing layer (replacement libcuda)",
    ),
    KnownLayer(name="nvshare", pattern=r"libnvshare\.so", kind="GPU-sharing layer (LD_PRELOAD)"),
    KnownLayer(name="KubeShare", pattern=r"libgemhook\.so", kind="GPU-sharing layer (LD_PRELOAD)"),
    KnownLayer(name="Cricket", pattern=r"cricket-client\.so", kind="API-remoting client"),
    KnownLayer(name="GVirtuS", pattern=r"gvirtus", kind="API-remoting frontend"),
)

_NVIDIA_LIBCUDA = re.compile(r"^libcuda\.so\.([0-9]+\.[0-9]+(?:\.[0-9]+)?)$")
_VERSION_SUFFIX = re.compile(r"\.so\.([0-9]+(?:\.[0-9]+)+)$")


@dataclass
class LayerFinding:
    path: str
    layer: Optional[KnownLayer]
    via: str
    version: Optional[Tuple[int, ...]] = None
    symbols: List[str] = field(default_factory=list)

    @property
    def defective(self) -> bool:
        if self.layer is None or not self.layer.defects:
            return False
        if self.layer.fixed_in is None or self.version is None:
            return True
        return self.version < self.layer.fixed_in

    def describe(self) -> str:
        name = self.layer.name if self.layer else "unrecognised library"
        version = ".".join(map(str, self.version)) if self.version else "version unknown"
        return f"{name} ({version}) at {self.path} via {self.via}"

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"path": self.path, "via": self.via}
        if self.layer:
            out["layer"] = self.layer.name
        if self.version:
            out["version"] = ".".join(map(str, self.version))
        if self.symbols:
            out["symbols"] = self.symbols
        return out


@dataclass
class LibraryIdentity:
    """The verdict on the loaded CUDA driver library."""

    libcuda_path: str
    libcuda_realpath: str
    nvidia_version: Optional[str]
    findings: List[LayerFinding]
    nvml_driver_version: str = ""
    # Preloaded libraries that are no known layer and answer no CUDA entry point
    # (tcmalloc, jemalloc, ...): listed, not held against the driver.
    other_preloads: List[str] = field(default_factory=list)

    @property
    def direct_nvidia(self) -> bool:
        return self.nvidia_version is not None and not self.findings

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"libcuda": self.libcuda_path, "realpath": self.libcuda_realpath}
        if self.nvidia_version:
            out["nvidia_libcuda_version"] = self.nvidia_version
        if self.nvml_driver_version:
            out["nvml_driver_version"] = self.nvml_driver_version
        if self.findings:
            out["layers"] = [f.to_dict() for f in self.findings]
        if self.other_preloads:
            out["other_preloads"] = self.other_preloads
        return out


def known_layer(path: str) -> Optional[KnownLayer]:
    base = os.path.basename(path)
    for layer in KNOWN_LAYERS:
        if re.search(layer.pattern, base, re.IGNORECASE):
            return layer
    return None


def version_from_name(path: str, realpath: Any = os.path.realpath) -> Optional[Tuple[int, ...]]:
    """A version readable from the file name (libvgpu.so.2.8.1), following symlinks."""
    for candidate in (path, realpath(path)):
        match = _VERSION_SUFFIX.search(os.path.basename(candidate))
        if match:
            return tuple(int(x) for x in match.group(1).split("."))
    return None


def identify(
    library: LoadedLibrary,
    preload: PreloadFacts,
    nvml_driver_version: str = "",
    realpath: Any = os.path.realpath,
) -> LibraryIdentity:
    """Name the library behind every CUDA entry point, and every preloaded layer."""
    real = realpath(library.path) if library.path else ""
    match = _NVIDIA_LIBCUDA.match(os.path.basename(real))
    nvidia_version = match.group(1) if match else None
    findings: List[LayerFinding] = []
    by_path: Dict[str, LayerFinding] = {}

    def note(path: str, via: str) -> LayerFinding:
        key = realpath(path) if os.path.isabs(path) else path
        if key not in by_path:
            finding = LayerFinding(
                path=path,
                layer=known_layer(path) or known_layer(key),
                via=via,
                version=version_from_name(path, realpath),
            )
            by_path[key] = finding
            findings.append(finding)
        return by_path[key]

    if nvidia_version is None and library.path:
        # libcuda.so.1 itself is not NVIDIA's libcuda.so.<driver version>.
        note(library.path, "libcuda.so.1")
    for provider in library.providers:
        if provider.path and realpath(provider.path) != real:
            note(provider.path, "symbol interposition").symbols.append(provider.symbol)
    others: List[str] = []
    for via, entries in (
        ("LD_PRELOAD", preload.ld_preload),
        ("/etc/ld.so.preload", preload.etc_preload),
    ):
        for entry in entries:
            key = realpath(entry) if os.path.isabs(entry) else entry
            if key in by_path:
                by_path[key].via += f" + {via}"
            elif known_layer(entry) or known_layer(key):
                note(entry, via)
            else:
                others.append(entry)
    return LibraryIdentity(
        libcuda_path=library.path,
        libcuda_realpath=real,
        nvidia_version=nvidia_version,
        findings=findings,
        nvml_driver_version=nvml_driver_version,
        other_preloads=others,
    )


def interposed_symbols(findings: Sequence[LayerFinding]) -> List[str]:
    return sorted({s for f in findings for s in f.symbols})
