"""The next control plane's harness (preflight_dev.testing.nextplane, binaries): the flags
that switch the Workload API on per Kubernetes version, and a missing build that is a reason
to skip, never a build inside a test."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from preflight_dev.testing import binaries, nextplane


def test_flags_follow_the_version() -> None:
    flags = nextplane.workload_api_flags(36)
    assert flags["kube-apiserver"] == [
        "--feature-gates=GenericWorkload=true,GangScheduling=true",
        "--runtime-config=scheduling.k8s.io/v1alpha2=true",
    ]
    assert flags["kube-scheduler"] == ["--feature-gates=GenericWorkload=true,GangScheduling=true"]
    assert (
        "scheduling.k8s.io/v1alpha1=true" in nextplane.workload_api_flags(35)["kube-apiserver"][1]
    )
    with pytest.raises(binaries.BinariesNotFound, match=r"1\.34 has no Workload API"):
        nextplane.workload_api_flags(34)


def test_a_directory_without_the_binaries_is_refused(tmp_path: Path) -> None:
    env = {binaries.NEXT_BIN_ENV: str(tmp_path)}
    with pytest.raises(binaries.BinariesNotFound, match="lacks etcd, kube-apiserver"):
        binaries.find_next_bin_dir(env)


def test_not_built_is_a_reason_and_nothing_is_built(tmp_path: Path) -> None:
    # A stand-in build.sh that fails the test if asked to build rather than to look.
    script = tmp_path / "build.sh"
    script.write_text(
        '#!/bin/sh\n[ "$2" = --cached ] || { echo BUILT > "$0.built"; exit 0; }\n'
        'echo "hack/k8s/build.sh: the next set is not built" >&2; exit 3\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(binaries.BinariesNotFound, match="next control plane is not built"):
        binaries.find_next_bin_dir({}, build_script=script)
    assert not (tmp_path / "build.sh.built").exists()


def test_the_version_is_read_from_the_binary(tmp_path: Path) -> None:
    fake = tmp_path / "kube-apiserver"
    fake.write_text("#!/bin/sh\necho 'Kubernetes v1.36.3'\n")
    fake.chmod(0o755)
    assert nextplane.kubernetes_minor(tmp_path) == 36
    fake.write_text("#!/bin/sh\necho 'Kubernetes v0.0.0-master'\n")
    with pytest.raises(binaries.BinariesNotFound, match="--version said"):
        nextplane.kubernetes_minor(tmp_path)
