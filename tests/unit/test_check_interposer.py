"""Which CUDA library answers (issue 8): NVIDIA's driver, or a layer in front of it."""

from __future__ import annotations

from typing import Dict, Optional

import pytest

from preflight_check.driver.api import LoadedLibrary, SymbolProvider
from preflight_check.facts import PreloadFacts
from preflight_check.interposer import identify, known_layer, version_from_name

NVIDIA = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
NVIDIA_REAL = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"


def fake_realpath(links: Optional[Dict[str, str]] = None):  # type: ignore[no-untyped-def]
    table = {NVIDIA: NVIDIA_REAL, **(links or {})}
    return lambda path: table.get(path, path)


def library(path: str = NVIDIA, **providers: str) -> LoadedLibrary:
    symbols = ["cuInit", "cuCtxGetDevice"]
    return LoadedLibrary(
        "libcuda.so.1", path, [SymbolProvider(s, providers.get(s, path)) for s in symbols]
    )


def test_nvidia_driver_directly() -> None:
    identity = identify(library(), PreloadFacts(), "580.159.04", realpath=fake_realpath())
    assert identity.direct_nvidia
    assert identity.nvidia_version == "580.159.04"


def test_hami_core_preloaded_without_a_readable_version_is_defective() -> None:
    identity = identify(
        library(cuCtxGetDevice="/usr/local/vgpu/libvgpu.so"),
        PreloadFacts(ld_preload=["/usr/local/vgpu/libvgpu.so"]),
        "580.159.04",
        realpath=fake_realpath(),
    )
    assert not identity.direct_nvidia
    [finding] = identity.findings
    assert finding.layer is not None
    assert finding.layer.name == "HAMi-core"
    assert finding.symbols == ["cuCtxGetDevice"]
    assert "LD_PRELOAD" in finding.via
    assert finding.defective


def test_hami_core_at_a_fixed_version_is_not_defective() -> None:
    link = {"/usr/local/vgpu/libvgpu.so": "/usr/local/vgpu/libvgpu.so.2.8.1"}
    identity = identify(
        library(),
        PreloadFacts(etc_preload=["/usr/local/vgpu/libvgpu.so"]),
        realpath=fake_realpath(link),
    )
    [finding] = identity.findings
    assert finding.version == (2, 8, 1)
    assert not finding.defective


def test_api_remoting_frontend_replacing_libcuda() -> None:
    frontend = "/usr/local/harp/lib/libvirtdev-frontend.so.0"
    identity = identify(
        library(NVIDIA),
        PreloadFacts(),
        realpath=fake_realpath({NVIDIA: frontend}),
    )
    assert identity.nvidia_version is None
    [finding] = identity.findings
    assert finding.layer is not None
    assert "API-remoting" in finding.layer.name
    assert finding.defective


def test_unrelated_preloads_are_listed_but_not_held_against_the_driver() -> None:
    identity = identify(
        library(),
        PreloadFacts(ld_preload=["/usr/lib/libtcmalloc_minimal.so.4"]),
        realpath=fake_realpath(),
    )
    assert identity.direct_nvidia
    assert identity.other_preloads == ["/usr/lib/libtcmalloc_minimal.so.4"]


def test_unknown_shim_answering_a_symbol_is_a_finding() -> None:
    identity = identify(
        library(cuCtxGetDevice="/tmp/libctxshim.so"),
        PreloadFacts(ld_preload=["/tmp/libctxshim.so"]),
        realpath=fake_realpath(),
    )
    [finding] = identity.findings
    assert finding.layer is None
    assert not finding.defective
    assert finding.symbols == ["cuCtxGetDevice"]


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/usr/local/vgpu/libvgpu.so", "HAMi-core"),
        ("/opt/x/libcuda-control.so", "vcuda-controller (GaiaGPU)"),
        ("/usr/lib/libnvshare.so", "nvshare"),
        ("/usr/lib/libcuda.so.1", None),
    ],
)
def test_known_layers_by_file_name(path: str, name: Optional[str]) -> None:
    layer = known_layer(path)
    assert (layer.name if layer else None) == name


def test_version_from_name() -> None:
    assert version_from_name("/x/libvgpu.so.2.7.0") == (2, 7, 0)
    assert version_from_name("/x/libvgpu.so") is None
