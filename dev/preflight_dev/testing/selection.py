"""Which cluster tests get.

The rule: tests use an existing cluster only when VLLM_PREFLIGHT_KUBECONFIG names its
kubeconfig. KUBECONFIG is never read, so a developer's everyday kubeconfig (maybe prod)
can never be picked up by accident; without VLLM_PREFLIGHT_KUBECONFIG a LocalCluster starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from preflight_dev.testing.base import Cluster
from preflight_dev.testing.external import ExternalCluster
from preflight_dev.testing.local import LocalCluster

KUBECONFIG_ENV = "VLLM_PREFLIGHT_KUBECONFIG"


def external_kubeconfig(environ: Mapping[str, str]) -> Path | None:
    """The kubeconfig of an existing cluster to test against, or None for a local one."""
    value = environ.get(KUBECONFIG_ENV, "").strip()
    return Path(value).expanduser() if value else None


def open_cluster(environ: Mapping[str, str] | None = None) -> Cluster:
    """An unstarted cluster chosen by the rule above; use it as a context manager."""
    kubeconfig = external_kubeconfig(os.environ if environ is None else environ)
    return ExternalCluster(kubeconfig) if kubeconfig else LocalCluster()
