"""OME's runtimes (ome.io, issue 35) on a control plane of their own, with OME's CRDs
verbatim (tests/data/crds/ome): the upstream examples are accepted by them; under Enforce
a broken OME ServingRuntime is admitted, because a runtime makes no pods and is a
lint-only kind (OME's InferenceService builds the pods, admitted as what OME makes), while
`lint` (the same rules) fails it at the runner's argument.

Own plane: the two CRDs are 1.7 MB each; on the shared plane, beside the 20 others, the
API server's OpenAPI v2 document grew past what kubectl's client-side validation fetched
within its 32 s on this 2-core machine (every later `kubectl apply` of the module failed).
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev import localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster
from preflight_operator.core import constants
from preflight_operator.core.rules import check_objects

DATA = Path(__file__).resolve().parents[1] / "data"
OME_CRDS = sorted((DATA / "crds" / "ome").glob("*.yaml"))
EXAMPLES = sorted((DATA / "realworld" / "ome").glob("*.yaml"))


@pytest.fixture(scope="module")
def operator(
    own_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    files = [arg for path in OME_CRDS for arg in ("-f", str(path))]
    applied = own_cluster.kubectl(
        "apply", "--server-side", "--field-manager=vllm-preflight-tests", "-o", "name", *files,
        timeout=300,
    )  # fmt: skip
    localsetup.wait_established(own_cluster, applied.stdout.split())
    op = localoperator.start_with_webhooks(own_cluster, tmp_path_factory.mktemp("ome"))
    yield op
    localoperator.remove_webhooks(own_cluster)
    op.stop()


@pytest.fixture
def namespace(own_cluster: Cluster, operator: OperatorProcess) -> Iterator[str]:
    name = own_cluster.create_namespace("ome-runtimes", labels={constants.LABEL_INJECT: "enabled"})
    yield name
    own_cluster.delete_namespace(name)


def example(path: Path) -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(path.read_text())
    return copy.deepcopy(found)


def apply(
    cluster: Cluster, obj: dict[str, Any], namespace: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    body = copy.deepcopy(obj)
    if body["kind"] != "ClusterServingRuntime":
        body["metadata"]["namespace"] = namespace
    return cluster.kubectl(
        "apply", "--server-side", *extra, "-f", "-", input=json.dumps(body), check=False
    )


def test_the_ome_crds_accept_the_upstream_runtimes(own_cluster: Cluster, namespace: str) -> None:
    assert len(OME_CRDS) == 2
    assert EXAMPLES
    for path in EXAMPLES:
        result = apply(own_cluster, example(path), namespace, "--dry-run=server", "-o", "json")
        assert result.returncode == 0, (path.name, result.stderr)
        stored = json.loads(result.stdout)
        # nothing pruned: the runner, where the engine's command is, is kept
        assert stored["spec"]["engineConfig"]["runner"]["command"], path.name


def test_a_broken_ome_runtime_is_admitted_under_enforce_and_failed_by_lint(
    own_cluster: Cluster, namespace: str
) -> None:
    runtime = example(EXAMPLES[-1])
    runtime["kind"] = "ServingRuntime"  # namespaced, in the Enforce namespace
    runtime["metadata"]["name"] = "broken"
    command = runtime["spec"]["engineConfig"]["runner"]["command"]
    at = command.index("--tensor-parallel-size") + 1
    command[at] = "4"  # on nvidia.com/gpu: 1
    (linted,) = check_objects([runtime])
    failed = [f for f in linted.findings if f.id == "gpu-count-too-low"]
    assert failed, linted.findings
    assert failed[0].severity == "fail"
    admitted = apply(own_cluster, runtime, namespace)
    assert admitted.returncode == 0, admitted.stderr
    assert "vllm-preflight" not in admitted.stderr  # not a kind the webhook judges
    # not because nothing is judged here: the same engine in a Deployment is denied
    pod = {
        "containers": [
            {
                "name": "vllm",
                "image": "vllm/vllm-openai:v0.9.0.1",
                "command": ["vllm", "serve", "m", "--tensor-parallel-size", "4"],
                "resources": {"limits": {"nvidia.com/gpu": 1}},
            }
        ]
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "broken"},
        "spec": {
            "selector": {"matchLabels": {"app": "broken"}},
            "template": {"metadata": {"labels": {"app": "broken"}}, "spec": pod},
        },
    }
    denied = apply(own_cluster, deployment, namespace)
    assert denied.returncode != 0, "a broken Deployment admitted: the webhook is not in force"
    assert "gpu-count-too-low" in denied.stderr, denied.stderr
