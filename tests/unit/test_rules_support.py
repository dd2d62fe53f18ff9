"""Builders shared by the rules tests (no tests here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from preflight_operator.core.rules import ContainerResult, Policy, check_objects

SHM_MOUNT = {"name": "dshm", "mountPath": "/dev/shm"}
SHM_VOLUME = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}


def vllm(
    *args: str,
    gpus: int | str | None = None,
    command: Sequence[str] | None = ("vllm", "serve"),
    env: Sequence[Mapping[str, Any]] = (),
    mounts: Sequence[Mapping[str, Any]] = (SHM_MOUNT,),
    name: str = "vllm",
    image: str = "vllm/vllm-openai:v0.11.0",
    **extra: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": image, "args": list(args)}
    if command is not None:
        container["command"] = list(command)
    if gpus is not None:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    if env:
        container["env"] = list(env)
    if mounts:
        container["volumeMounts"] = list(mounts)
    container.update(extra)
    return container


def pod_spec(
    *containers: Mapping[str, Any],
    volumes: Sequence[Mapping[str, Any]] = (SHM_VOLUME,),
    **extra: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if volumes:
        spec["volumes"] = list(volumes)
    spec.update(extra)
    return spec


def deployment(
    spec: Mapping[str, Any], name: str = "llm", namespace: str | None = "ns"
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {"template": {"spec": spec}},
    }


def config_map(name: str, data: Mapping[str, str], namespace: str = "ns") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": dict(data),
    }


def service(name: str, namespace: str = "ns", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"ports": [{"port": 8000}], **spec},
    }


def check(*objects: Mapping[str, Any], policy: Policy | None = None) -> list[ContainerResult]:
    return check_objects(objects, policy or Policy())


def one(*objects: Mapping[str, Any], policy: Policy | None = None) -> ContainerResult:
    results = check(*objects, policy=policy)
    assert len(results) == 1, results
    return results[0]


def ids(result: ContainerResult) -> list[str]:
    return [f.id for f in result.findings]


def finding(result: ContainerResult, rule_id: str) -> Any:
    matches = [f for f in result.findings if f.id == rule_id]
    assert matches, f"{rule_id} not in {ids(result)}"
    return matches[0]
