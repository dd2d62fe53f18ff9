"""One GPU count (issue 28): the injector reads a container's NVIDIA GPUs with the rules'
own reader, so both agree on every spelling a manifest may use."""

from __future__ import annotations

from typing import Any

import pytest

from preflight_operator.core.injection import ray_group_ready
from preflight_operator.core.rules.resources import gpu_resources, nvidia_gpus


def container(resources: dict[str, Any]) -> dict[str, Any]:
    return {"name": "c", "image": "x", "resources": resources}


@pytest.mark.parametrize(
    ("resources", "gpus"),
    [
        ({"limits": {"nvidia.com/gpu": 2}}, 2),
        ({"limits": {"nvidia.com/gpu": "2"}}, 2),
        ({"requests": {"nvidia.com/gpu": "1"}}, 1),  # the request alone is what is allocated
        ({"limits": {"nvidia.com/gpu": "1.5"}}, 0),  # not whole: the API server refuses it
        ({"limits": {"nvidia.com/mig-1g.10gb": 1}}, 0),  # a MIG slice is not a full GPU
        ({"limits": {"amd.com/gpu": 1}}, 0),
        ({}, 0),
    ],
)
def test_the_injector_counts_as_the_rules_do(resources: dict[str, Any], gpus: int) -> None:
    c = container(resources)
    assert nvidia_gpus(c) == gpus
    entries = [e for e in gpu_resources(c, "").entries if e.resource == "nvidia.com/gpu"]
    assert sum(e.count or 0 for e in entries) == gpus


def test_a_ray_worker_asking_gpus_by_request_alone_takes_part() -> None:
    worker = {
        "name": "ray",
        "image": "vllm/vllm-openai",
        "command": ["ray", "start", "--address=$(LWS_LEADER_ADDRESS):6379", "--block"],
        "resources": {"requests": {"nvidia.com/gpu": "1"}},
    }
    head = dict(worker, command=["sh", "-c", "ray start --head && vllm serve m -pp 2"])
    lws = {
        "spec": {
            "leaderWorkerTemplate": {
                "size": 2,
                "leaderTemplate": {"spec": {"containers": [head]}},
                "workerTemplate": {"spec": {"containers": [worker]}},
            }
        }
    }
    assert ray_group_ready(lws)
