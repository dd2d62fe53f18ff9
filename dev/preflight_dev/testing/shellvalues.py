"""Shell-special values of a variable the rules cannot read, in the places a vLLM pod refers
to it (issue 34: Warn and Audit never block). The unit test (tests/unit/
test_warn_never_blocks.py) and the e2e test (tests/e2e/test_warn_never_blocks_in_pods.py) take
their cases from here.

The variable is MODEL_NAME, from a Secret (``secret_name``, key ``name``) or, in the
``configmap`` placement, from a ConfigMap's envFrom (``config_map_name``): a value the
rules cannot know, so the injector hands ``$(MODEL_NAME)`` on to be filled in at run time.
"""

from __future__ import annotations

from typing import Any

VALUES = {
    "apostrophe": "org/it's-a-model",
    "double-quote": 'org/say-"hi"',
    "backslash": "org\\model",
    "dollar": "org/$HOME-model",
    "backtick": "org/`id`",
    "newline": "org/model\nnext",
    "semicolon": "org/model; rm -rf /",
    "glob": "org/*",
    "space": "org/my model",
}
PLACEMENTS = ("args", "command", "shell", "configmap")


def pod_with(
    placement: str,
    *,
    name: str = "vllm",
    namespace: str = "team",
    secret_name: str = "model",
    config_map_name: str = "model",
) -> dict[str, Any]:
    """A bare vLLM pod (TP 2 on 2 GPUs, /dev/shm mounted) whose model is MODEL_NAME,
    referred to as ``$(MODEL_NAME)`` in args, in command, as ``"$MODEL_NAME"`` in a
    ``bash -c`` script, or (``configmap``) from a ConfigMap's envFrom."""
    container: dict[str, Any] = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "env": [
            {
                "name": "MODEL_NAME",
                "valueFrom": {"secretKeyRef": {"name": secret_name, "key": "name"}},
            }
        ],
        "resources": {"limits": {"nvidia.com/gpu": "2"}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if placement == "args":
        container["command"] = ["vllm"]
        container["args"] = ["serve", "$(MODEL_NAME)", "-tp", "2"]
    elif placement == "command":
        container["command"] = ["vllm", "serve", "$(MODEL_NAME)", "-tp", "2"]
    elif placement == "shell":
        container["command"] = ["bash", "-c", 'exec vllm serve "$MODEL_NAME" -tp 2']
    elif placement == "configmap":
        del container["env"]
        container["envFrom"] = [{"configMapRef": {"name": config_map_name}}]
        container["command"] = ["vllm", "serve", "$(MODEL_NAME)", "-tp", "2"]
    else:
        raise ValueError(f"no placement {placement!r}: one of {', '.join(PLACEMENTS)}")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [container],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        },
    }
