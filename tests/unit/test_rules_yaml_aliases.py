"""YAML read out of objects takes no alias: a billion-laughs document in a --config
ConfigMap or a RayService's serveConfigV2 costs nothing and is unknown, never a failure
(vLLM itself would read aliases; we do not, because the rules may run in the operator)."""

from __future__ import annotations

from typing import Any

from test_rules_support import check, config_map, deployment, ids, pod_spec, vllm

from preflight_operator.core.rules import UNJUDGED, WARN

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi")
)


def test_a_config_file_with_aliases_is_unknown_and_cheap() -> None:
    text = BOMB + "tensor-parallel-size: *i\n"
    cm = config_map("cfg", {"config.yaml": text})
    container = vllm("m", "--config", "/etc/vllm/config.yaml", gpus=2)
    container["volumeMounts"] = [
        *container["volumeMounts"],
        {"name": "cfg", "mountPath": "/etc/vllm"},
    ]
    spec = pod_spec(container)
    spec["volumes"] = [*spec["volumes"], {"name": "cfg", "configMap": {"name": "cfg"}}]
    (result,) = check(deployment(spec), cm)
    assert result.verdict == WARN
    assert "vllm-config-unresolved" in ids(result)


def ray_service(serve_config: str) -> dict[str, Any]:
    worker = {
        "name": "w",
        "image": "rayproject/ray:2.52.0",
        "resources": {"limits": {"nvidia.com/gpu": 1}},
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {
            "serveConfigV2": serve_config,
            "rayClusterConfig": {
                "headGroupSpec": {
                    "template": {
                        "spec": {"containers": [{"name": "h", "image": "rayproject/ray:2.52.0"}]}
                    }
                },
                "workerGroupSpecs": [
                    {"replicas": 1, "template": {"spec": {"containers": [worker]}}}
                ],
            },
        },
    }


def test_a_serve_config_with_aliases_is_not_read() -> None:
    config = BOMB + (
        "applications:\n- import_path: ray.serve.llm:build_openai_app\n  args:\n"
        "    llm_configs:\n    - engine_kwargs: {tensor_parallel_size: 8, extra: *i}\n"
    )
    results = check(ray_service(config))
    assert not [r for r in results if r.container.startswith("serve/")]
    (unread,) = [r for r in results if r.container == "serve"]  # unknown: a warning
    assert unread.verdict == UNJUDGED  # named as not judged, never dropped (issue 35)
    assert unread.unjudged.startswith("spec.serveConfigV2 was not read")
    assert ids(unread) == ["vllm-command-unparsed"]
    assert unread.findings[0].field == "spec.serveConfigV2"
    assert "(alias)" in unread.findings[0].message
    plain = config.split("applications:", 1)[1].replace(", extra: *i", "")
    (serve,) = [
        r for r in check(ray_service("applications:" + plain)) if r.container.startswith("serve/")
    ]
    assert "ray-gpu-total" in ids(serve)  # without the alias the same app is judged
