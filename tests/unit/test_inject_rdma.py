"""The check container gets vLLM's RDMA devices (issue 26): without them its rdma check would
call every RDMA pod's devices "not in the container" and its group all-reduce would see NCCL
on sockets where vLLM gets InfiniBand or EFA."""

from __future__ import annotations

import jsonpatch
from test_inject import mutate, service, vllm_pod

from preflight_operator.core.injection import device_resources, is_rdma_resource


def test_the_check_asks_for_the_same_rdma_devices_as_vllm() -> None:
    pod = vllm_pod()
    resources = pod["spec"]["containers"][0]["resources"]
    resources["limits"].update({"rdma/hca_shared_devices_a": 1, "vpc.amazonaws.com/efa": 4})
    resources["requests"]["vpc.amazonaws.com/efa"] = 4
    injected = jsonpatch.apply_patch(pod, mutate(pod, service()))
    check = injected["spec"]["initContainers"][1]
    assert check["name"] == "preflight-check"
    limits = check["resources"]["limits"]
    assert limits["rdma/hca_shared_devices_a"] == 1
    assert limits["vpc.amazonaws.com/efa"] == 4
    assert check["resources"]["requests"]["vpc.amazonaws.com/efa"] == 4


def test_only_rdma_and_gpus_are_copied() -> None:
    container = {
        "resources": {
            "limits": {"nvidia.com/gpu": 2, "cpu": "8", "example.com/fpga": 1, "rdma/x": 2},
            "requests": "garbage",
        }
    }
    assert device_resources(container) == {"limits": {"nvidia.com/gpu": 2, "rdma/x": 2}}
    assert not is_rdma_resource("nvidia.com/gpu")
    # an EFA-only container is not a GPU container: whether to inject is decided on GPUs
    assert device_resources({"resources": {"limits": {"vpc.amazonaws.com/efa": 1}}}) == {
        "limits": {"vpc.amazonaws.com/efa": 1}
    }


def test_ipc_lock_follows_vllm_only_beside_rdma_devices() -> None:
    pod = vllm_pod()
    vllm = pod["spec"]["containers"][0]
    vllm["securityContext"] = {"capabilities": {"add": ["IPC_LOCK", "SYS_ADMIN"]}}
    plain = jsonpatch.apply_patch(pod, mutate(pod, service()))["spec"]["initContainers"][1]
    assert plain["securityContext"]["capabilities"] == {"drop": ["ALL"]}  # no RDMA: none
    vllm["resources"]["limits"]["rdma/ib"] = 1
    check = jsonpatch.apply_patch(pod, mutate(pod, service()))["spec"]["initContainers"][1]
    assert check["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    assert check["securityContext"]["allowPrivilegeEscalation"] is False
