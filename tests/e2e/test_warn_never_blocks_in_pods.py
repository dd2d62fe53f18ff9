"""Warn and Audit never block (issue 34 item 7), through the real API server and webhooks:
9 shell-special values x 4 placements of ``$(MODEL_NAME)`` (preflight_dev.testing.
shellvalues) x Warn and Audit. Each pod is admitted and injected by the operator; the real
checker then runs on the environment the kubelet would give its injected container (the
Secret's or the ConfigMap's value filled in, fakekubelet.container_env) over a fake GPU
view: 0 exit non-zero, and each reads the command line (no `settings` warning about it).

Before (8d0223c): the 8 apostrophe cases (4 placements x 2 actions) exited 2, so their pods
never started, under Warn and Audit alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from preflight_contract import actions
from preflight_dev.fakedriver.fake import h200_machine
from preflight_dev.fakedriver.harness import fake_host, run_check
from preflight_dev.fakekubelet import container_env
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.shellvalues import PLACEMENTS, VALUES, pod_with
from preflight_dev.testing.workloads import apply_policy, get_json
from preflight_operator.core import constants


def _check_container(pod: dict[str, Any]) -> dict[str, Any] | None:
    for container in pod["spec"].get("initContainers") or []:
        if container["name"] == constants.CHECK_CONTAINER:
            return dict(container)
    return None


@pytest.mark.parametrize("action", [actions.WARN, actions.AUDIT])
def test_no_shell_special_value_blocks_a_pod(
    cluster: Cluster, operator: OperatorProcess, action: str, tmp_path: Path
) -> None:
    namespace = cluster.create_namespace(
        f"never-{action.lower()}", labels={constants.LABEL_INJECT: constants.INJECT_ENABLED}
    )
    try:
        apply_policy(cluster, namespace, "trial", {"action": action})
        secrets: dict[str, dict[str, str]] = {}
        config_maps: dict[str, dict[str, str]] = {}
        pods = []
        for index, key in enumerate(sorted(VALUES)):
            value = VALUES[key]
            secret, config_map = f"model-{index}", f"model-{index}"
            secrets[secret] = {"name": value}
            config_maps[config_map] = {"MODEL_NAME": value}
            cluster.apply(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": secret, "namespace": namespace},
                    "stringData": {"name": value},
                },
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": config_map, "namespace": namespace},
                    "data": {"MODEL_NAME": value},
                },
            )
            for placement in PLACEMENTS:
                name = f"v{index}-{placement}"
                pods.append((name, key))
                created = cluster.kubectl(
                    "create", "-f", "-", check=False,
                    input=json.dumps(pod_with(
                        placement, name=name, namespace=namespace,
                        secret_name=secret, config_map_name=config_map,
                    )),
                )  # fmt: skip
                assert created.returncode == 0, f"{name} ({key}) denied: {created.stderr}"

        blocked = []
        for name, key in pods:
            pod = wait_for(
                lambda name=name: get_json(cluster, "pod", name, "-n", namespace),
                what=f"pod {name}",
            )
            check = _check_container(pod)
            assert check is not None, f"{name} ({key}) was not injected"
            environ = container_env(
                check, secrets=secrets, config_maps=config_maps,
                fields={"spec.nodeName": "gpu-node-1"},
            )  # fmt: skip
            assert environ["PREFLIGHT_ACTION"] == action
            work = tmp_path / name
            work.mkdir()
            run = run_check(fake_host(h200_machine(2), environ), [], work)
            if run.code != 0 or any(c.id == "usage" for c in run.report.checks):
                blocked.append(f"{name} ({key}): exit {run.code} {run.stderr[-300:]}")
            unread = [
                c.message for c in run.report.checks
                if c.id == "settings" and "PREFLIGHT_VLLM_ARGS" in c.message
            ]  # fmt: skip
            assert not unread, f"{name} ({key}): the command line was not read: {unread}"
        assert not blocked, f"{len(blocked)} of {len(pods)} blocked:\n" + "\n".join(blocked)
    finally:
        cluster.delete_namespace(namespace)
