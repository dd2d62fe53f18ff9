"""Issue 36 item 2 on the local control plane: a Deployment whose HF_ENDPOINT carries a
password in its userinfo and whose model name comes from a Secret (secretKeyRef). The
injector names the Secret-derived variable to the check (PREFLIGHT_SECRET_ENV); the checker
runs as the kubelet would run it (the Secret's value filled in); its termination message,
the GPUValidation, the Events, the admission answer and the operator's log hold neither
secret, and the GPUValidation shows the redaction mark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_model_runtime import check_container, injected_pod
from test_will_it_load import deployment

from preflight_contract import envnames
from preflight_contract.redact import MARK
from preflight_dev import fakekubelet, localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_operator.core import constants

USERINFO = "UserinfoSecret42"
SECRET_REF = "SecretRefValue99"
# nothing listens on port 9: the Hub check warns, quoting the endpoint (the issue's leak)
ENDPOINT = f"http://mirroruser:{USERINFO}@127.0.0.1:9"


@pytest.fixture(scope="module")
def operator(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    if not k8s.is_local:
        pytest.skip("needs the local control plane: the API server calls webhooks on 127.0.0.1")
    localsetup.install_crds(k8s)
    op = localoperator.start_with_webhooks(k8s, tmp_path_factory.mktemp("secrets"))
    yield op
    localoperator.remove_webhooks(k8s)
    op.stop()


@pytest.fixture(scope="module")
def namespace(k8s: Cluster, operator: OperatorProcess) -> Iterator[str]:
    name = k8s.create_namespace("secrets", labels={constants.LABEL_INJECT: "enabled"})
    yield name
    k8s.delete_namespace(name)


def _run_checker(pod: dict[str, Any], workdir: Path) -> tuple[int, str, str]:
    """The check with the env the kubelet gives it, the Secret's value included."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir)}
    if os.environ.get("PYTHONPATH"):  # a worktree's checker, not the installed one's
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env.update(
        fakekubelet.container_env(check_container(pod), secrets={"model": {"name": SECRET_REF}})
    )
    env.pop("TMPDIR", None)
    log = workdir / "termination-log"
    result = subprocess.run(
        [sys.executable, "-m", "preflight_dev.demo.fakecheck",
         "--gpus", str(fakekubelet.check_gpus(pod)),
         "--shm-bytes", str(fakekubelet.check_shm_bytes(pod)),
         "--", "--termination-log", str(log), "--json", str(workdir / "report.json")],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert log.exists(), result.stderr[-3000:]
    written = result.stdout + result.stderr + log.read_text()
    return result.returncode, log.read_text(), written + (workdir / "report.json").read_text()


def test_no_secret_reaches_the_status_events_or_logs(
    k8s: Cluster, namespace: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    env = [
        {"name": "HF_ENDPOINT", "value": ENDPOINT},
        {"name": "HF_HOME", "value": "/data/hf"},
        {"name": "MODEL", "valueFrom": {"secretKeyRef": {"name": "model", "key": "name"}}},
    ]
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"},
              {"name": "hf-cache", "mountPath": "/data/hf"}]  # fmt: skip
    doc = deployment("leaky", namespace, command=["vllm", "serve", "acme/$(MODEL)"], env=env,
                     volumeMounts=mounts)  # fmt: skip
    applied = k8s.kubectl("apply", "-f", "-", input=json.dumps(doc), check=False)
    assert applied.returncode == 0, applied.stderr
    pod = injected_pod(k8s, namespace, "leaky")
    check_env = {e["name"]: e.get("value") for e in check_container(pod)["env"]}
    assert check_env[envnames.SECRET_ENV] == "MODEL"

    code, message, written = _run_checker(pod, tmp_path)
    assert USERINFO not in written
    assert SECRET_REF not in written
    assert f"http://{MARK}@127.0.0.1:9" in written
    assert f"acme/{MARK}" in written  # the Secret's value, by exact match

    status = fakekubelet.pod_status(pod, exit_code=code, message=message)
    k8s.kubectl(
        "patch", "pod", pod["metadata"]["name"], "-n", namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip

    def runtime() -> dict[str, Any] | None:
        got = k8s.kubectl("get", "gpuval", "deployment-leaky", "-n", namespace, "-o", "json",
                          check=False)  # fmt: skip
        if got.returncode != 0:
            return None
        found: dict[str, Any] = json.loads(got.stdout).get("status") or {}
        return found if found.get("runtimeVerdict") not in (None, "pending") else None

    gpuval = wait_for(runtime, what="the runtime result in the GPUValidation")
    (entry,) = gpuval["runtime"]["pods"]

    def announced() -> str | None:
        out = k8s.kubectl("get", "events", "-n", namespace, "-o", "json").stdout
        reasons = {e.get("reason") for e in json.loads(out)["items"]}
        return out if reasons & {"PreflightCheckWarning", "PreflightCheckPassed",
                                 "PreflightCheckFailed"} else None  # fmt: skip

    events = wait_for(announced, what="the pod's check Event")
    everything = "\n".join(
        [applied.stdout, applied.stderr, json.dumps(gpuval), events, operator.log_tail(2000)]
    )
    assert USERINFO not in everything
    assert SECRET_REF not in everything
    assert MARK in json.dumps(entry)
