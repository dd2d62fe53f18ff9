"""The project's helm behaves like a released helm without a cluster.

helm's release build (its Makefile) stamps the Kubernetes version that `helm template` and
`helm lint` assume when neither a cluster nor `--kube-version` is given: 1.<minor of the
client-go in helm's go.mod>. A plain `go build` leaves helm's fallback v1.20.0, which
refuses this chart (`kubeVersion: >=1.27.0-0`). hack/k8s/build.sh sets the same link
flags; these tests fail when it stops doing so.
"""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

import pytest

from preflight_dev.testing import BinariesNotFound, find_bin_dir

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "vllm-preflight"
HELM_GOMOD = REPO / "hack" / "k8s" / "helm" / "go.mod"


@functools.cache
def helm_binary() -> str:
    try:
        return str(find_bin_dir() / "helm")
    except BinariesNotFound as err:  # pragma: no cover - depends on the machine
        pytest.skip(f"no helm binary: {err}")


def helm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # An empty KUBECONFIG-less environment: helm must not find any cluster to ask.
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "KUBECONFIG": "/nonexistent"}
    return subprocess.run(
        [helm_binary(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=cwd,
    )


def expected_default_kube_version() -> str:
    """What helm's Makefile computes: client-go v0.X.Y in helm's module -> v1.X.0."""
    match = re.search(r"^\s*k8s\.io/client-go v0\.(\d+)\.\d+", HELM_GOMOD.read_text(), re.M)
    assert match, f"{HELM_GOMOD} has no k8s.io/client-go requirement"
    return f"v1.{match.group(1)}.0"


def test_default_kube_version_is_helms_own_client_go(tmp_path: Path) -> None:
    chart = tmp_path / "probe"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: probe\nversion: 0.1.0\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\n"
        "data:\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n"
    )
    result = helm("template", "p", str(chart))
    assert result.returncode == 0, result.stderr
    assert f'kube: "{expected_default_kube_version()}"' in result.stdout, (
        "helm's default Kubernetes version is not stamped as its release build does "
        "(hack/k8s/build.sh: -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=...):\n"
        + result.stdout
    )


def test_template_without_cluster_or_kube_version() -> None:
    result = helm("template", "t", str(CHART))
    assert result.returncode == 0, result.stderr
    assert "kind: Deployment" in result.stdout


def test_lint_without_cluster_or_kube_version() -> None:
    result = helm("lint", str(CHART))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout
