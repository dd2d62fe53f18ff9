"""YAML bombs embedded in objects do not stall the operator (issue 23), on the local
control plane. Its own module, so that no other operator of this session answers the
webhooks meanwhile.

The tester's attack: about 20 RayServices of 2.7 KB whose serveConfigV2 is 1,200 nested
`[`, sent at once. Judged in the event loop at 1.4 s apiece they stalled /healthz for
12.5 s, and a broken Deployment sent meanwhile was let through by the webhook's timeout.
hack/reliability/loopstall.py runs the same with the stall measured.
"""

from __future__ import annotations

import concurrent.futures
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev import localoperator, localsetup
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

DATA = Path(__file__).resolve().parents[1] / "data"
sys.path.insert(0, str(DATA / "hostile"))
import corpus  # noqa: E402


def in_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["namespace"] = namespace
    return out


def broken(namespace: str) -> dict[str, Any]:
    text = (DATA / "manifests" / "bad-tp4-deployment.yaml").read_text()
    doc = next(d for d in yaml.safe_load_all(text) if d and d["kind"] == "Deployment")
    return in_namespace(doc, namespace)


def apply(
    cluster: Cluster, objs: list[dict[str, Any]], *extra: str
) -> subprocess.CompletedProcess[str]:
    doc = {"apiVersion": "v1", "kind": "List", "items": objs}
    return cluster.kubectl("apply", *extra, "-f", "-", input=json.dumps(doc), check=False)


def test_embedded_yaml_bombs_neither_stall_the_operator_nor_let_a_broken_deployment_in(
    k8s: Cluster, tmp_path: Path
) -> None:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s, wrappers=True)
    op = localoperator.start_with_webhooks(k8s, tmp_path / "op", identity="loop")
    namespace = k8s.create_namespace("loop", labels={constants.LABEL_INJECT: "enabled"})
    cases = list(corpus.embedded_cases(20))
    try:
        wait_for(
            lambda: (
                "cannot run on the GPUs"
                in apply(k8s, [broken(namespace)], "--dry-run=server").stderr
            ),
            what="the operator to judge",
        )
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(cases) + 1) as pool:
            bombs = {
                name: pool.submit(apply, k8s, [in_namespace(o, namespace) for o in objs])
                for name, _, objs in cases
            }
            denied = pool.submit(apply, k8s, [broken(namespace)]).result()
            answers = {name: future.result() for name, future in bombs.items()}
        # under Enforce the broken one is denied by the rules, not by a webhook timeout
        assert denied.returncode != 0
        assert "cannot run on the GPUs it requests" in denied.stderr, denied.stderr
        # every bomb was answered and admitted: what it holds is unknown, a warning
        for name, reason, _ in cases:
            result = answers[name]
            assert result.returncode == 0, (name, result.stderr)
            if reason:  # (the webhook shortens a warning: the reason is in the unit tests)
                warning = (
                    "vllm-config-unresolved: --config"
                    if name.startswith("config-")
                    else "vllm-command-unparsed: spec.serveConfigV2 was not read"
                )
                assert f"vllm-preflight warn: {warning}" in result.stderr, (name, result.stderr)
        assert op.running()
        assert op.healthy()
        # the controller has seen them all and is still answering
        wait_for(
            lambda: (
                "cannot run on the GPUs"
                in apply(k8s, [broken(namespace)], "--dry-run=server").stderr
            ),
            what="the operator to judge after the bombs",
        )
        assert op.metric("vllm_preflight_event_loop_lag_seconds_count") > 0
    finally:
        k8s.delete_namespace(namespace)
        localoperator.remove_webhooks(k8s)
        op.stop()
