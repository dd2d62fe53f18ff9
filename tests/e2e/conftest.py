"""Everything under tests/e2e is an e2e test (marker `e2e`), whether or not it asks for
the `k8s` fixture itself (some start their own throwaway control plane), so
`pytest -m "not e2e"` skips this whole directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from preflight_dev import localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, LocalCluster, realnode
from preflight_dev.testing.realnode import RealNode

E2E_DIR = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # This hook sees the whole session's items, not only this directory's.
    for item in items:
        if E2E_DIR in item.path.parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="module")
def cluster(k8s: Cluster) -> Cluster:
    """The local control plane with the project's CRDs; a file that needs other CRDs or an
    external cluster defines its own `cluster` (a module's fixture overrides this one)."""
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s)
    return k8s


@pytest.fixture(scope="module")
def own_cluster(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A control plane of the module's own, with the project's CRDs, for tests that count
    what the whole cluster holds (an operator's workload gauge, a histogram without a
    namespace label): on the session's plane, the namespaces earlier modules left were
    still being read while such a count was compared (37 workloads against 9 + 1 in one
    CI run). A plane starts in about 4 s."""
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    plane = LocalCluster(parent_dir=tmp_path_factory.mktemp("own-plane")).start()
    try:
        localsetup.install_crds(plane)
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="module")
def operator(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    """One operator with its webhooks per test file (module scope): a file's tests share it,
    and the next file starts from no webhook configuration."""
    op = localoperator.start_with_webhooks(cluster, tmp_path_factory.mktemp("operator"))
    yield op
    localoperator.remove_webhooks(cluster)
    op.stop()


@pytest.fixture(scope="module")
def real_node(cluster: Cluster) -> Iterator[RealNode]:
    """containerd + runc + a kubelet registered with the local control plane
    (preflight_dev.testing.realnode), for one test file: it is stopped and its Node deleted
    afterwards, so later files see the cluster as before. Skips, with the reason, where the
    machine cannot run it (not root, packages missing, no cgroup v1 controllers)."""
    if not isinstance(cluster, LocalCluster):
        pytest.skip("the real node joins the local control plane only")
    reason = realnode.unsupported()
    if reason:
        pytest.skip(reason)
    node = RealNode(cluster).start()
    yield node
    node.stop()
    cluster.kubectl("delete", "node", node.name, "--ignore-not-found", "--wait=false")
