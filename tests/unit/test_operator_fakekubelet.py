"""The demo's kubelet gives the check the /dev/shm a real kubelet would: the runtime's
64 MiB default unless a memory-backed emptyDir is mounted there."""

from __future__ import annotations

from typing import Any

import pytest

from preflight_dev.fakekubelet import DEFAULT_SHM_BYTES, NODE_MEMORY, check_shm_bytes
from preflight_operator.core import constants


def pod(volume: dict[str, Any] | None, mounted: bool = True) -> dict[str, Any]:
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"}] if mounted else []
    return {
        "spec": {
            "volumes": [{"name": "dshm", **volume}] if volume is not None else [],
            "initContainers": [{"name": constants.CHECK_CONTAINER, "volumeMounts": mounts}],
        }
    }


@pytest.mark.parametrize(
    ("volume", "mounted", "expected"),
    [
        (None, False, DEFAULT_SHM_BYTES),
        ({"emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}, True, 2 * 1024**3),
        ({"emptyDir": {"medium": "Memory"}}, True, NODE_MEMORY),
        ({"emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}}, True, 16 * 1024**2),
        ({"emptyDir": {}}, True, NODE_MEMORY),
        ({"hostPath": {"path": "/dev/shm"}}, True, DEFAULT_SHM_BYTES),
        ({"emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}, False, DEFAULT_SHM_BYTES),
    ],
)
def test_shm_size_follows_the_mount(
    volume: dict[str, Any] | None, mounted: bool, expected: int
) -> None:
    assert check_shm_bytes(pod(volume, mounted)) == expected
