"""The next control plane (KUBERNETES_NEXT_VERSION in hack/k8s/versions.env) with the
Kubernetes Workload API for gang scheduling switched on (docs/CONTROL_PLANE.md "The next
control plane").

The Workload API is alpha: off unless the API server serves its group version
(``--runtime-config``) and the feature gate ``GenericWorkload`` is on in every component
that reads it; the scheduler's gang plugin also needs ``GangScheduling``. Sources, in
kubernetes/kubernetes at the tags named: pkg/features/kube_features.go (both gates alpha
since 1.35, off by default; GangScheduling depends on GenericWorkload) and
pkg/registry/scheduling/rest/storage_scheduling.go (the storage is served only with the
gate on and the version enabled). The version differs by release (v1.35.4: v1alpha1
Workload; v1.36.3: v1alpha2 Workload and PodGroup; v1.37.2: v1alpha3), so it is chosen by
the binaries' own version, not assumed.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from preflight_dev.testing.binaries import BinariesNotFound, find_next_bin_dir
from preflight_dev.testing.local import LocalCluster

GATES = "GenericWorkload=true,GangScheduling=true"
#: Kubernetes minor -> the scheduling.k8s.io version that serves the Workload API there.
WORKLOAD_API_VERSIONS = {35: "v1alpha1", 36: "v1alpha2", 37: "v1alpha3"}


def kubernetes_minor(bin_dir: Path) -> int:
    """The minor version kube-apiserver in `bin_dir` says it is (`--version`)."""
    out = subprocess.run(
        [str(bin_dir / "kube-apiserver"), "--version"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        stdin=subprocess.DEVNULL,
    ).stdout
    found = re.search(r"\bv1\.(\d+)\.", out)
    if not found:
        raise BinariesNotFound(f"{bin_dir}/kube-apiserver --version said {out.strip()!r}")
    return int(found.group(1))


def workload_api_version(minor: int) -> str:
    """scheduling.k8s.io/<version> of the Workload API on Kubernetes 1.<minor>."""
    version = WORKLOAD_API_VERSIONS.get(minor)
    if version is None:
        raise BinariesNotFound(
            f"Kubernetes 1.{minor} has no Workload API version known here "
            f"(known: {', '.join(f'1.{m}' for m in sorted(WORKLOAD_API_VERSIONS))})"
        )
    return f"scheduling.k8s.io/{version}"


def workload_api_flags(minor: int) -> Mapping[str, list[str]]:
    """The flags, per component, that switch the Workload API on for Kubernetes 1.<minor>."""
    gates = f"--feature-gates={GATES}"
    return {
        "kube-apiserver": [gates, f"--runtime-config={workload_api_version(minor)}=true"],
        "kube-controller-manager": [gates],
        "kube-scheduler": [gates],
    }


def workload_api_cluster(
    environ: Mapping[str, str] | None = None, *, start_timeout: float = 60.0
) -> tuple[LocalCluster, str]:
    """An unstarted LocalCluster of the next control plane with the Workload API on, and
    the API's group version there. Raises BinariesNotFound (its message is the reason to
    skip) when the next control plane is not built."""
    bin_dir = find_next_bin_dir(environ)
    minor = kubernetes_minor(bin_dir)
    flags = workload_api_flags(minor)
    cluster = LocalCluster(bin_dir, extra_flags=flags, start_timeout=start_timeout)
    return cluster, workload_api_version(minor)
