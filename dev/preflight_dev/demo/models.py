"""The demo's model-rules step: a Deployment whose model cannot split over its TP.

Qwen2.5-0.5B-Instruct has 14 attention heads; with ``--tensor-parallel-size 4`` vLLM would
fail at start with "Total number of attention heads (14) must be divisible by tensor
parallel size (4)". The demo's operator fetches model configs from a local stand-in for
the Hub (dev/preflight_dev/hubserver.py serving tests/data/models on 127.0.0.1), so the webhook
denies the Deployment before any image is pulled. The first request starts the fetch in
the background (the webhook never waits on the network); the step dry-runs until the
webhook knows the model, then applies for real.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from preflight_dev.hubserver import HubServer
from preflight_dev.testing.base import Cluster

MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
NAME = "vllm-heads"

__all__ = ["MODEL", "HubServer", "deny_model_that_cannot_split", "operator_config"]


def operator_config(workdir: Path, hub_url: str) -> Path:
    """The operator's config file: model configs fetched from ``hub_url``."""
    path = workdir / "operator-config.yaml"
    path.write_text(json.dumps({"models": {"fetch": True, "endpoint": hub_url}}))
    return path


def deployment(namespace: str) -> dict[str, Any]:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "command": ["vllm", "serve", MODEL, "--tensor-parallel-size", "4"],
        "resources": {"limits": {"nvidia.com/gpu": 4}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    volume = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": NAME}},
            "template": {
                "metadata": {"labels": {"app": NAME}},
                "spec": {"containers": [container], "volumes": [volume]},
            },
        },
    }


def deny_model_that_cannot_split(
    cluster: Cluster,
    namespace: str,
    show: Callable[[subprocess.CompletedProcess[str]], None],
    timeout: float = 30.0,
) -> None:
    """Apply the Deployment; raise unless the webhook denies it for model-tp-heads."""
    body = json.dumps(deployment(namespace))
    deadline = time.monotonic() + timeout
    while (
        "model-tp-heads"
        not in cluster.kubectl(
            "apply", "--dry-run=server", "-f", "-", input=body, check=False
        ).stderr
    ):
        if time.monotonic() > deadline:
            raise TimeoutError("the webhook never judged the model (was its config fetched?)")
        time.sleep(0.3)
    denied = cluster.kubectl("apply", "-f", "-", input=body, check=False)
    show(denied)
    if denied.returncode == 0 or "model-tp-heads" not in denied.stderr:
        raise RuntimeError("the Deployment whose model cannot split over TP was admitted")
