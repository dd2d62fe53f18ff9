"""Every launcher keeps its check (issue 36, "Done when"): broken vLLM (TP 8 on 2 GPUs)
behind each launcher the adversarial round named, as a bare pod under the default policy
(Enforce) in an opted-in namespace, through the real API server and webhooks, is either
denied (the rules read the launcher and the failure is certain) or stored with the injected
check (the rules could not read it for certain: the check then runs at start-up, with the
plan recovered or unknown). None is admitted without one: before, 23 of these were admitted
with a warning and no check, and xargs, `python -c runpy` and `ray job submit` silently.

Which of the two each gets is what the rules can read (docs/RULES.md, "Shell scripts"); the
test asserts only that one of them happened, and that the forms read exactly are denied.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_operator_results import INJECT

from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster
from preflight_dev.testing.workloads import get_json
from preflight_operator.core import constants

VLLM = ["vllm", "serve", "m", "--tensor-parallel-size", "8"]
LINE = " ".join(VLLM)
RUNPY = "import runpy; runpy.run_module('vllm.entrypoints.cli.main', run_name='__main__')"

# name -> (command, args, image): each a launcher of the issue, written as users write it
LAUNCHERS: dict[str, tuple[list[str], list[str] | None, str]] = {
    "env-i": (["env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin", *VLLM], None, ""),
    "runuser": (["runuser", "-u", "vllm", "--", *VLLM], None, ""),
    "strace": (["strace", "-f", "-o", "/tmp/trace", *VLLM], None, ""),
    "flock": (["flock", "/tmp/gpu.lock", *VLLM], None, ""),
    "conda-run": (["conda", "run", "-n", "serving", "--no-capture-output", *VLLM], None, ""),
    "micromamba-run": (["micromamba", "run", "-n", "serving", *VLLM], None, ""),
    "pipenv-run": (["pipenv", "run", *VLLM], None, ""),
    "poetry-run": (["poetry", "run", *VLLM], None, ""),
    "pixi-run": (["pixi", "run", *VLLM], None, ""),
    "uvx": (["uvx", "--from", "vllm", *VLLM], None, ""),
    "torchrun": (["torchrun", "--nproc-per-node", "1", "--no-python", *VLLM], None, ""),
    "accelerate": (["accelerate", "launch", "-m", "vllm.entrypoints.cli.main", *VLLM[1:]],
                   None, ""),
    "catchsegv": (["catchsegv", *VLLM], None, ""),
    "builtin-exec": (["bash", "-c", f"builtin exec {LINE}"], None, ""),
    "s6-setuidgid": (["s6-setuidgid", "vllm", *VLLM], None, ""),
    "chpst": (["chpst", "-u", "vllm", *VLLM], None, ""),
    "setpriv": (["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", *VLLM], None, ""),
    "prlimit": (["prlimit", "--nofile=65536", *VLLM], None, ""),
    "systemd-run": (["systemd-run", "--scope", "--quiet", *VLLM], None, ""),
    "watchmedo": (["watchmedo", "auto-restart", "--patterns=*.py", "--recursive", "--", *VLLM],
                  None, ""),
    "entrypoint-script": (["/opt/start.sh"], VLLM[1:], "registry.example/team/server:1"),
    "cat-substitution": (["sh", "-c", f"{LINE} $(cat /etc/vllm/extra-args)"], None, ""),
    "xargs": (["sh", "-c", f"echo {' '.join(VLLM[1:])} | xargs vllm"], None, ""),
    "python-runpy": (["python3", "-c", RUNPY, *VLLM[1:]], None, ""),
    "ray-job-submit": (["ray", "job", "submit", "--", *VLLM], None, ""),
}  # fmt: skip
# Read exactly (the bash/dash oracle and stub launchers, tests/unit/test_shell_launchers.py):
# a certain failure, so Enforce denies them.
DENIED = {"env-i", "runuser", "strace", "flock", "conda-run", "micromamba-run", "catchsegv",
          "builtin-exec", "s6-setuidgid", "chpst", "setpriv", "prlimit", "xargs"}  # fmt: skip


def pod(name: str, namespace: str, launcher: tuple[list[str], list[str] | None, str]) -> Any:
    command, args, image = launcher
    container: dict[str, Any] = {
        "name": "vllm",
        "image": image or "vllm/vllm-openai:v0.11.0",
        "command": command,
        "resources": {"limits": {"nvidia.com/gpu": 2}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if args is not None:
        container["args"] = args
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [container],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
        },
    }


@pytest.fixture(scope="module")
def answers(cluster: Cluster, operator: OperatorProcess) -> Any:
    """name -> ("denied", message) or ("stored", the stored pod), one pod per launcher."""
    namespace = cluster.create_namespace("launchers", labels=INJECT)
    found: dict[str, tuple[str, Any]] = {}
    try:
        for name, launcher in LAUNCHERS.items():
            body = json.dumps(pod(name, namespace, launcher))
            created = cluster.kubectl("create", "-f", "-", input=body, check=False)
            if created.returncode != 0:
                found[name] = ("denied", created.stderr)
            else:
                found[name] = ("stored", get_json(cluster, "pod", name, "-n", namespace))
        yield found
    finally:
        cluster.delete_namespace(namespace)


def checked(stored: dict[str, Any]) -> bool:
    names = [c.get("name") for c in stored["spec"].get("initContainers") or []]
    return constants.CHECK_CONTAINER in names


@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_broken_vllm_behind_a_launcher_is_denied_or_checked(answers: Any, name: str) -> None:
    outcome, detail = answers[name]
    if outcome == "denied":
        assert "denied the request" in detail, detail
        assert "gpu-count-too-low" in detail, detail
    else:
        assert checked(detail), f"{name}: admitted without the check: {detail['spec']}"
    if name in DENIED:
        assert outcome == "denied", f"{name} is read exactly, yet was admitted"
