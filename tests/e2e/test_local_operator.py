"""The harness's operator process (preflight_dev.localoperator) on a busy machine.

A port chosen free can be taken by another process before the operator binds it: once, on
a loaded machine, the operator then retried for a minute, the start timed out, and the
process it left behind acted on the next tests' objects (four failures from one port).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from preflight_dev import localoperator, localsetup
from preflight_dev.testing import Cluster


@pytest.fixture(scope="module")
def k8s_with_crds(k8s: Cluster) -> Cluster:
    localsetup.install_crds(k8s)
    return k8s


def test_a_port_taken_before_the_bind_is_chosen_again(
    k8s_with_crds: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    k8s = k8s_with_crds
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        real = localoperator.free_ports
        first: Iterator[list[int]] = iter([[port, *real(2)]])
        monkeypatch.setattr(localoperator, "free_ports", lambda n: next(first, None) or real(n))
        operator = localoperator.start_with_webhooks(k8s, tmp_path, webhooks=False)
        try:
            assert operator.webhook_port != port
            assert operator.healthy()
            earlier = (tmp_path / "operator-0" / "operator.log.1").read_text()
            assert localoperator.PORT_TAKEN in earlier
        finally:
            operator.stop()
