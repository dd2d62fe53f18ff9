"""Session-wide fixtures.

Kubernetes (API in preflight_dev.testing's docstring; docs/CONTROL_PLANE.md):
- `k8s`: one cluster for the whole session, started on first use: a LocalCluster, or the
  cluster named by VLLM_PREFLIGHT_KUBECONFIG (KUBECONFIG itself is never used).
- `local_k8s`: the same object; skips the test when it is not local (webhooks on 127.0.0.1).
- `k8s_namespace`: a fresh namespace, ready for Pods, deleted after the test.
A test that uses any of them is marked `e2e`, so `-m "not e2e"` never starts a cluster.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import pytest
from hypothesis import settings as hypothesis_settings

from preflight_dev.testing import (
    BinariesNotFound,
    Cluster,
    KubectlError,
    LocalCluster,
    find_bin_dir,
    open_cluster,
)
from preflight_dev.testing.process import signals_as_keyboard_interrupt

# CI (CI=true, as .ci/run is started) runs the property tests derandomized: the same
# examples every run, so a landing never depends on the draw. Locally they explore.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    hypothesis_settings.load_profile("ci")

K8S_FIXTURES = frozenset({"k8s", "local_k8s", "k8s_namespace"})
_timings: list[str] = []


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if K8S_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)


def _visible(config: pytest.Config) -> contextlib.AbstractContextManager[None]:
    """Output capture off: a first build prints minutes of progress that must be seen."""
    capman = config.pluginmanager.getplugin("capturemanager")
    return capman.global_and_fixture_disabled() if capman else contextlib.nullcontext()


def _say(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(line)


def pytest_collection_finish(session: pytest.Session) -> None:
    # Build (or find) the binaries here, outside every test's timeout: a first build takes
    # minutes. A failure is left for the fixture to report on the e2e tests alone.
    if any(item.get_closest_marker("e2e") for item in session.items):
        with _visible(session.config), contextlib.suppress(BinariesNotFound):
            find_bin_dir()


@pytest.fixture(scope="session")
def k8s(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    config = request.config
    cluster = open_cluster()
    with signals_as_keyboard_interrupt(), _visible(config):
        cluster.start()
        kind = "local control plane" if cluster.is_local else f"cluster of {cluster.kubeconfig}"
        if isinstance(cluster, LocalCluster):
            took = f"started in {cluster.startup_seconds:.1f} s"
            _timings.append(f"{kind} {cluster.version} {took}")
            _say(config, f"[k8s] {_timings[-1]}; logs in {cluster.logs_dir}")
        else:
            _say(config, f"[k8s] using the {kind} ({cluster.version})")
    try:
        with signals_as_keyboard_interrupt():
            yield cluster
    finally:
        t0 = time.monotonic()
        if isinstance(cluster, LocalCluster):
            # Keep the logs of a session with failures; say where they are.
            keep = request.session.testsfailed > 0 or None
            workdir = cluster.workdir
            cluster.stop(keep_workdir=keep)
            kept = f"; logs kept in {workdir / 'logs'}" if workdir.exists() else ""
            _timings.append(f"{kind} stopped in {time.monotonic() - t0:.1f} s{kept}")
        else:
            cluster.stop()


@pytest.fixture
def local_k8s(k8s: Cluster) -> Cluster:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server must reach 127.0.0.1 here")
    return k8s


@pytest.fixture
def k8s_namespace(k8s: Cluster) -> Iterator[str]:
    namespace = k8s.create_namespace()
    yield namespace
    with contextlib.suppress(KubectlError):
        k8s.delete_namespace(namespace)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _timings:
        terminalreporter.write_line(f"[k8s] {line}")
