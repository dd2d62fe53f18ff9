"""The hostile input corpus, generated (nothing MB-sized is committed).

Each case is what an adversarial run against ``lint``, the webhook's rules engine and
``check`` tried (issue 19, issue 11). tests/unit/test_hostile_inputs.py runs the fast ones in
CI; hack/reliability/inputs.py runs all of them with wall time and peak RSS.

``lint_cases()``: (name, file name, text, expected lint exit codes).
``object_cases()``: (name, Kubernetes object) for check_object (the webhook's entry point).
``check_cases()``: (name, argv, env, expected exit code) for ``vllm-preflight check``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

LintCase = tuple[str, str, str, tuple[int, ...]]
ObjectCase = tuple[str, dict[str, Any]]
CheckCase = tuple[str, list[str], dict[str, str], int]


def _deployment(container: dict[str, Any], name: str = "hostile") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


def doubling_env(count: int = 24) -> dict[str, Any]:
    """The 1.7 KB Deployment: each env var is $(PREV)$(PREV), 2^24 copies for the kubelet."""
    env = [{"name": "V0", "value": "x"}]
    env += [{"name": f"V{i}", "value": f"$(V{i - 1})$(V{i - 1})"} for i in range(1, count + 1)]
    return _deployment(
        {
            "name": "vllm",
            "image": "vllm/vllm-openai:v0.11.0",
            "command": ["vllm", "serve"],
            "args": ["m", "-tp", "2", f"--served-model-name=$(V{count})"],
            "env": env,
            "resources": {"limits": {"nvidia.com/gpu": 2}},
        }
    )


def doubling_shell(count: int = 40) -> dict[str, Any]:
    """The shell form: A=$A$A in a `sh -c` script."""
    script = "A=x; " + " ".join("A=$A$A;" for _ in range(count)) + " vllm serve m -tp 2 --x $A"
    return _deployment(
        {
            "name": "vllm",
            "image": "vllm/vllm-openai:v0.11.0",
            "command": ["sh", "-c", script],
            "resources": {"limits": {"nvidia.com/gpu": 2}},
        }
    )


def many_refs() -> dict[str, Any]:
    """A 256 KiB value referenced 600 times in args: the container budget (4 MiB) stops it."""
    return _deployment(
        {
            "name": "vllm",
            "image": "vllm/vllm-openai:v0.11.0",
            "command": ["vllm", "serve"],
            "args": ["m", *(["--x=$(BIG)$(BIG)"] * 600)],
            "env": [{"name": "BIG", "value": "y" * 128 * 1024}],
        }
    )


def arithmetic_lws() -> dict[str, Any]:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "command": ["sh", "-c"],
        "args": ["vllm serve m -tp 8 --data-parallel-size $((LWS_GROUP_SIZE * 8 + (1-1)))"],
        "resources": {"limits": {"nvidia.com/gpu": 8}},
    }
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "lws", "namespace": "ns"},
        "spec": {
            "leaderWorkerTemplate": {
                "size": 2,
                "workerTemplate": {"spec": {"containers": [container]}},
            }
        },
    }


def alias_bomb(levels: int = 12, width: int = 10) -> str:
    """A billion-laughs YAML whose last alias is a vLLM container's args."""
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, levels):
        refs = ", ".join([f"*a{i - 1}"] * width)
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines += [
        "apiVersion: apps/v1",
        "kind: Deployment",
        "metadata: {name: bomb}",
        "spec:",
        "  template:",
        "    spec:",
        "      containers:",
        "      - name: vllm",
        "        image: vllm/vllm-openai:v0.11.0",
        f"        args: *a{levels - 1}",
    ]
    return "\n".join(lines) + "\n"


def deep_json(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth


def deep_yaml(depth: int = 100_000) -> str:
    return "[" * depth + "]" * depth + "\n"


def big_int_json() -> str:
    return (
        '{"kind": "Deployment", "metadata": {"name": "n"}, "spec": {"replicas": '
        + ("1" * 5000)
        + "}}"
    )


def big_int_yaml() -> str:
    return "kind: Deployment\nmetadata: {name: n}\nspec:\n  replicas: " + "1" * 5000 + "\n"


def surrogate_json() -> str:
    """A lone surrogate in a name: valid JSON text, not encodable as UTF-8 on output."""
    doc = _deployment(
        {
            "name": "vllm\\ud800",
            "image": "vllm/vllm-openai:v0.11.0",
            "args": ["m", "-tp", "2"],
            "resources": {"limits": {"nvidia.com/gpu": 1}},
        },
        name="bad\\ud800name",
    )
    return json.dumps(doc).replace("\\\\ud800", "\\ud800")


def big_manifest(target_bytes: int = 1_000_000) -> str:
    """A 1 MB-class Deployment (a long args list of distinct flags)."""
    count = target_bytes // 40
    args = ["m", "-tp", "2", *(f"--unknown-flag-number-{i:07d}=v" for i in range(count))]
    return json.dumps(
        _deployment(
            {
                "name": "vllm",
                "image": "vllm/vllm-openai:v0.11.0",
                "args": args,
                "resources": {"limits": {"nvidia.com/gpu": 2}},
            }
        )
    )


def lint_cases(full: bool = True) -> Iterator[LintCase]:
    """(name, file name, text, accepted exit codes). 2: unreadable, 0/1: judged."""
    yield "doubling-env", "doubling.yaml", json.dumps(doubling_env()), (0, 1)
    yield "doubling-shell", "doubling-sh.yaml", json.dumps(doubling_shell()), (0, 1)
    yield "many-refs", "refs.json", json.dumps(many_refs()), (0, 1)
    yield "alias-bomb", "bomb.yaml", alias_bomb(), (2,)
    yield "deep-json", "deep.json", deep_json(), (2,)
    yield "deep-yaml", "deep.yaml", deep_yaml(), (2,)
    yield "big-int-json", "bigint.json", big_int_json(), (2,)
    yield "big-int-yaml", "bigint.yaml", big_int_yaml(), (0, 1, 2)
    yield "lone-surrogate", "surrogate.json", surrogate_json(), (0, 1, 2)
    yield (
        "helm-template",
        "tpl.yaml",
        "kind: Deployment\nmetadata:\n  name: {{ .Values.name }}\n",
        (2,),
    )
    yield "not-utf8", "latin1.yaml", "kind: Deployment\nmetadata: {name: caf\xe9}\n", (2,)
    yield "trailing-tab", "tab.yaml", "kind: ConfigMap\t\nmetadata:\n  name: a\t\n", (0,)
    yield (
        "quantity-1E",
        "gpu-1e.yaml",
        json.dumps(
            _deployment(
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.0",
                    "args": ["m"],
                    "resources": {"limits": {"nvidia.com/gpu": "1E"}},
                }
            )
        ),
        (0, 1),
    )
    yield (
        "quantity-1Ei",
        "gpu-1ei.yaml",
        json.dumps(
            _deployment(
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.0",
                    "args": ["m"],
                    "resources": {"limits": {"nvidia.com/gpu": "1Ei"}},
                }
            )
        ),
        (0, 1),
    )
    yield "metadata-not-mapping", "meta.yaml", "kind: Deployment\nmetadata: [1, 2]\nspec: 3\n", (0,)
    if full:
        yield "big-manifest", "big.json", big_manifest(), (0, 1)


def object_cases(full: bool = True) -> Iterator[ObjectCase]:
    yield "doubling-env", doubling_env()
    yield "doubling-shell", doubling_shell()
    yield "many-refs", many_refs()
    yield "arithmetic-lws", arithmetic_lws()
    yield "metadata-not-mapping", {"kind": "Deployment", "metadata": [1], "spec": 3}
    yield "gpu-1E", json.loads(next(c for c in lint_cases(False) if c[0] == "quantity-1E")[2])
    for name, _, objs in embedded_cases(1):
        if len(objs) == 1:  # the RayServices (the --config ones need their ConfigMap)
            yield f"embedded-{name}", objs[0]
    if full:
        yield "big-manifest", json.loads(big_manifest())


def check_cases() -> Iterator[CheckCase]:
    """(name, argv, env, expected exit code) for `check` with no GPU driver."""
    yield "tp-5000-digits", ["--tp", "1" * 5000], {}, 2
    yield "shm-min-400-zeros", ["--shm-min", "1" + "0" * 400], {}, 2
    yield "shm-min-1Ei", ["--tp", "2", "--shm-min", "1Ei"], {}, 1
    yield "bad-env-shm-warn", [], {"PREFLIGHT_SHM_MIN": "abc", "PREFLIGHT_ACTION": "Warn"}, 0
    yield "bad-env-shm-audit", [], {"PREFLIGHT_SHM_MIN": "1Pi", "PREFLIGHT_ACTION": "Audit"}, 0
    yield (
        "bad-env-gmu-warn",
        [],
        {
            "PREFLIGHT_GPU_MEMORY_UTILIZATION": "0",
            "PREFLIGHT_ACTION": "Warn",
        },
        0,
    )
    yield "bad-env-shm-enforce", [], {"PREFLIGHT_SHM_MIN": "abc"}, 2
    yield "tp-1024-no-driver", ["--tp", "1024"], {}, 1
    yield "vllm-args-5000-digits", ["--vllm-args", "serve m -tp " + "1" * 5000], {}, 2
    yield "vllm-args-20000-flags", ["--vllm-args", "serve m " + "--x=1 " * 20000], {}, 0
    yield (
        "bad-env-vllm-args-warn",
        [],
        {
            "PREFLIGHT_VLLM_ARGS": "serve m -tp " + "9" * 5000,
            "PREFLIGHT_ACTION": "Warn",
        },
        0,
    )


# -- YAML embedded in objects (issue 23: the event loop never blocks) --------------------
#
# Each case: (name, the reason rules.boundedyaml refuses it with, or "" when it is read,
# objects valid for the API server in namespace "ns"). The first is the tester's shape: a
# 2.7 KB RayService whose serveConfigV2 is 1,200 nested `[`; about 20 of them, judged in
# the event loop at 1.4 s apiece, stalled /healthz for 12.5 s.
EmbeddedCase = tuple[str, str, list[dict[str, Any]]]

_LLM_APP = (
    "applications:\n- name: llm\n  import_path: ray.serve.llm:build_openai_app\n  args:\n"
    "    llm_configs:\n    - model_loading_config: {model_id: m}\n"
)


def ray_service(name: str, serve_config: str) -> dict[str, Any]:
    """A RayService with one GPU worker group and ``serve_config`` as its serveConfigV2."""
    image = "rayproject/ray:2.52.0"
    worker = {"name": "w", "image": image, "resources": {"limits": {"nvidia.com/gpu": 1}}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "serveConfigV2": serve_config,
            "rayClusterConfig": {
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "h", "image": image}]}},
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "gpu",
                        "replicas": 1,
                        "minReplicas": 1,
                        "maxReplicas": 1,
                        "rayStartParams": {},
                        "template": {"spec": {"containers": [worker]}},
                    }
                ],
            },
        },
    }


def config_deployment(name: str, config_text: str) -> list[dict[str, Any]]:
    """A ConfigMap holding ``config_text`` as config.yaml and a Deployment running
    `vllm serve m --config` on it (TP=2 on 2 GPUs: good, whatever the file says)."""
    labels = {"app": name}
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.1",  # its ENTRYPOINT is `vllm serve`
        "args": ["m", "--config", "/etc/vllm/config.yaml", "--tensor-parallel-size", "2"],
        "resources": {"limits": {"nvidia.com/gpu": 2}},
        "volumeMounts": [
            {"name": "cfg", "mountPath": "/etc/vllm"},
            {"name": "dshm", "mountPath": "/dev/shm"},
        ],
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns"},
            "data": {"config.yaml": config_text},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "ns", "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [container],
                        "volumes": [
                            {"name": "cfg", "configMap": {"name": name}},
                            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}},
                        ],
                    },
                },
            },
        },
    ]


def deep_flow(depth: int = 1200) -> str:
    return "[" * depth + "]" * depth


def deep_block(depth: int = 150) -> str:
    """Nested by indentation alone: no bracket to count."""
    return "".join(f"{' ' * i}k{i}:\n" for i in range(depth)) + " " * depth + "v\n"


def deep_dashes(depth: int = 1500) -> str:
    """Nested block sequences on one line: `- - - - x`."""
    return "x:\n" + "- " * depth + "v\n"


def yaml_alias_bomb(levels: int = 9, width: int = 9) -> str:
    """Billion laughs: 9^9 values once expanded, 400 bytes."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def wide_flow(target_bytes: int = 30_000) -> str:
    """A valid Ray Serve LLM config whose engine_kwargs hold a flow sequence of one-digit
    numbers (the costliest shape to load, per byte) filling an object the rules judge in
    the event loop (rulesworker.PLAIN_BYTES)."""
    items = ",".join(["1"] * (target_bytes // 2))
    return _LLM_APP + f"      engine_kwargs: {{tensor_parallel_size: 1, bomb: [{items}]}}\n"


def embedded_cases(rayservices: int = 20) -> Iterator[EmbeddedCase]:
    for i in range(rayservices):
        yield f"deep-flow-{i}", "too-deep", [ray_service(f"deep-flow-{i}", deep_flow())]
    yield "deep-flow-open", "too-deep", [ray_service("deep-flow-open", "[" * 1200)]
    yield "deep-block", "too-deep", [ray_service("deep-block", deep_block())]
    yield "deep-dashes", "too-deep", [ray_service("deep-dashes", deep_dashes())]
    yield "alias-bomb", "alias", [ray_service("alias-bomb", yaml_alias_bomb() + _LLM_APP)]
    yield "wide-flow", "", [ray_service("wide-flow", wide_flow())]
    yield "config-deep-flow", "too-deep", config_deployment("config-deep-flow", deep_flow())
    yield "config-deep-block", "too-deep", config_deployment("config-deep-block", deep_block())
    yield "config-alias-bomb", "alias", config_deployment("config-alias-bomb", yaml_alias_bomb())
    yield "config-wide-flow", "", config_deployment("config-wide-flow", wide_flow())
