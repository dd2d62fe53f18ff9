"""The injected pod on a real node: kubelet, containerd and runc run it (issue 27).

No fake kubelet here: the operator's webhook injects, kube-scheduler binds the pod to the
real node (preflight_dev.testing.realnode), the kubelet runs `preflight-install` and then
`preflight-check` with the workload image's own python3, and the operator reads what the
kubelet wrote. The node advertises one nvidia.com/gpu and hands no device to anyone, so the
checker's verdict is a real "no NVIDIA driver" failure, which is the proof the check ran.

What is observed inside the check container comes from the container itself: the workload
mounts a ConfigMap at its Hugging Face cache path and sets PYTHONPATH to it, so a
`sitecustomize.py` runs in the check's python3 before the checker (the injector copies the
cache mount read-only and the whole env, as it must for the model checks). That is also
what a hostile workload can do; the last tests show what it can and cannot reach.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_contract.report import Report
from preflight_dev import localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.images import INSTALLER_IMAGE, WORKLOAD_IMAGE
from preflight_dev.testing.realnode import NODE_LABEL, RealNode
from preflight_dev.testing.workloads import get_json
from preflight_operator.core import constants
from preflight_operator.core.injection import TOKEN_MOUNT_PATH

# The first run on a machine builds kubelet (2-6 min) and the workload root filesystem
# (debootstrap, ~2 min) in the first test's setup; afterwards the file takes ~3 min.
pytestmark = pytest.mark.timeout(1200)

INJECT = {constants.LABEL_INJECT: constants.INJECT_ENABLED}
HF_CACHE = "/root/.cache/huggingface"
PROBE_MARK = "REALNODE-PROBE "
# Runs first in every python3 of a container that has PYTHONPATH=HF_CACHE: it reports what
# the process itself sees, on stderr (the container's log), then lets the checker run.
PROBE = textwrap.dedent(
    f"""
    import json, os, sys
    status = dict(
        line.split(":", 1) for line in open("/proc/self/status").read().splitlines()
        if ":" in line
    )
    token_dir = {TOKEN_MOUNT_PATH!r}
    sys.stderr.write({PROBE_MARK!r} + json.dumps({{
        "argv": sys.argv,
        "seccomp": status["Seccomp"].strip(),
        "no_new_privs": status["NoNewPrivs"].strip(),
        "cap_eff": status["CapEff"].strip(),
        "cap_prm": status["CapPrm"].strip(),
        "uid": os.getuid(),
        "token_dir_exists": os.path.isdir(token_dir),
        "token_dir": sorted(os.listdir(token_dir)) if os.path.isdir(token_dir) else None,
        "token": os.path.exists(os.path.join(token_dir, "token")),
    }}) + "\\n")
    sys.stderr.flush()
    """
)


def hostile_probe(forged: str) -> str:
    """A check hijacked by its own workload: it writes a forged report and exits 0."""
    return textwrap.dedent(
        f"""
        import os, sys
        if "check" in sys.argv:
            with open("/dev/termination-log", "w") as f:
                f.write({forged!r})
            os._exit(0)
        """
    )


def policy(name: str, namespace: str, app: str, action: str) -> dict[str, Any]:
    return {
        "apiVersion": constants.API_VERSION,
        "kind": constants.POLICY_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": app}}, "action": action},
    }


# The distribution metadata pip writes for vLLM 0.11.2 (its first lines: what importlib.metadata
# reads), placed on the probe workload's PYTHONPATH, so its python3 finds vLLM installed as
# in vLLM's own image. The check reads it without importing vLLM (environment.py).
INSTALLED_VLLM = "0.11.2"
VLLM_METADATA = f"Metadata-Version: 2.4\nName: vllm\nVersion: {INSTALLED_VLLM}\n"


def deployment(
    name: str, namespace: str, *, probe: str | None = None, labels: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """A vLLM-shaped Deployment pinned to the real node: TP=1 on its one GPU. With a probe,
    its python3 path holds the probe and vLLM's distribution metadata (INSTALLED_VLLM)."""
    vllm: dict[str, Any] = {
        "name": "vllm",
        "image": WORKLOAD_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": ["vllm", "serve"],
        "args": ["Qwen/Qwen2.5-7B-Instruct", "--tensor-parallel-size=1", "--port=8000"],
        "resources": {"limits": {constants.GPU_RESOURCE: "1"}},
    }
    volumes = []
    docs: list[dict[str, Any]] = []
    if probe is not None:
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{name}-probe", "namespace": namespace},
                "data": {"sitecustomize.py": probe, "vllm-metadata": VLLM_METADATA},
            }
        )
        vllm["env"] = [{"name": "PYTHONPATH", "value": HF_CACHE}]
        vllm["volumeMounts"] = [{"name": "hf", "mountPath": HF_CACHE}]
        items = [
            {"key": "sitecustomize.py", "path": "sitecustomize.py"},
            {"key": "vllm-metadata", "path": f"vllm-{INSTALLED_VLLM}.dist-info/METADATA"},
        ]
        volumes.append({"name": "hf", "configMap": {"name": f"{name}-probe", "items": items}})
    docs.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name, **(labels or {})}},
                    "spec": {
                        "nodeSelector": {NODE_LABEL: "true"},
                        "terminationGracePeriodSeconds": 1,
                        "containers": [vllm],
                        "volumes": volumes,
                    },
                },
            },
        }
    )
    return docs


def start_operator(cluster: Cluster, workdir: Path, env: dict[str, str]) -> OperatorProcess:
    """The operator on the host, configured to inject the locally built installer image."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "config.yaml"
    config.write_text(
        yaml.safe_dump({"injection": {"installerImage": INSTALLER_IMAGE}}), encoding="utf-8"
    )
    cert = cluster.issue_serving_cert()
    operator = OperatorProcess(
        kubeconfig=cluster.kubeconfig,
        cert_path=cert.cert_path,
        key_path=cert.key_path,
        workdir=workdir,
        extra_args=["--config", str(config)],
        env=env,
    ).start()
    cluster.apply(*localsetup.webhook_configurations(operator.webhook_port, cert.ca_pem))
    return operator


@pytest.fixture(scope="module")
def operator(
    cluster: Cluster, real_node: RealNode, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    op = start_operator(cluster, tmp_path_factory.mktemp("operator"), cluster.env())
    yield op
    localoperator.remove_webhooks(cluster)
    op.stop()


def pod_of(cluster: Cluster, namespace: str, app: str) -> dict[str, Any] | None:
    items = get_json(cluster, "pods", "-n", namespace, "-l", f"app={app}")["items"]
    live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
    return live[0] if live else None


def init_status(pod: dict[str, Any], name: str) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("initContainerStatuses") or []
    return next((s for s in statuses if s["name"] == name), {})


def main_status(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "vllm"), {})


def check_terminated(status: dict[str, Any]) -> dict[str, Any] | None:
    """The check's last finished run: state.terminated, else lastState.terminated."""
    state = status.get("state") or {}
    return state.get("terminated") or (status.get("lastState") or {}).get("terminated")


def gpuval(cluster: Cluster, namespace: str, app: str) -> dict[str, Any] | None:
    got = cluster.kubectl(
        "get", "gpuval", f"deployment-{app}", "-n", namespace, "-o", "json", check=False
    )
    return json.loads(got.stdout) if got.returncode == 0 else None


def runtime_verdict(cluster: Cluster, namespace: str, app: str) -> str | None:
    verdict = ((gpuval(cluster, namespace, app) or {}).get("status") or {}).get("runtimeVerdict")
    return verdict if verdict not in (None, "pending") else None


def probe_lines(node: RealNode, pod: dict[str, Any], container: str) -> list[dict[str, Any]]:
    """What the probe wrote in ``container``'s runs, from the kubelet's log files."""
    meta = pod["metadata"]
    pod_dir = node.dir / "pod-logs" / f"{meta['namespace']}_{meta['name']}_{meta['uid']}"
    found = []
    for log in sorted((pod_dir / container).glob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            _, mark, rest = line.partition(PROBE_MARK)
            if mark:
                found.append(json.loads(rest))
    return found


def assert_isolated(seen: dict[str, Any]) -> None:
    """What the injection promises the check container (injection.SECURITY_CONTEXT and the
    token shadow), as the container's own process sees it."""
    assert seen["seccomp"] == "2", f"seccomp mode {seen['seccomp']}, not filtered"
    assert seen["no_new_privs"] == "1"
    assert int(seen["cap_eff"], 16) == 0, f"effective capabilities {seen['cap_eff']}"
    assert int(seen["cap_prm"], 16) == 0, f"permitted capabilities {seen['cap_prm']}"
    assert seen["token_dir_exists"], "the shadowing emptyDir is not at the token's path"
    assert not seen["token"], f"a service-account token is readable: {seen['token_dir']}"
    assert seen["token_dir"] == []


@pytest.fixture(scope="module")
def namespace(cluster: Cluster, operator: OperatorProcess) -> Iterator[str]:
    """One namespace, every workload of the file started at once (the node runs them in
    parallel; each test waits for its own)."""
    name = cluster.create_namespace("realnode", labels=INJECT)
    cluster.apply(
        policy("enforce", name, "enforce", "Enforce"),
        policy("warn", name, "warn", "Warn"),
        policy("audit", name, "audit", "Audit"),
        policy("hostile", name, "hostile", "Enforce"),
        policy("probe", name, "probe", "Enforce"),
    )
    wait_for_policies(cluster, name, {"warn": "Warn", "audit": "Audit"})
    forged = Report(checks=[], host="victim").to_termination_message()
    cluster.apply(
        *deployment("enforce", name),
        *deployment("warn", name),
        *deployment("audit", name),
        *deployment("probe", name, probe=PROBE),
        # claims to be the Enforce workload, and forges a passing report naming it
        *deployment(
            "hostile", name, probe=hostile_probe(forged),
            labels={constants.LABEL_WORKLOAD: "deployment.enforce"},
        ),
    )  # fmt: skip
    yield name
    cluster.delete_namespace(name)


def wait_for_policies(cluster: Cluster, namespace: str, actions: dict[str, str]) -> None:
    """Policies reach the webhook through a watch: a server-side dry run of a pod of each
    app shows the action the webhook now injects."""

    def injected_action(app: str) -> str | None:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"dry-{app}", "namespace": namespace, "labels": {"app": app}},
            "spec": deployment(app, namespace)[-1]["spec"]["template"]["spec"],
        }
        out = cluster.kubectl(
            "create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(pod)
        ).stdout
        for c in json.loads(out)["spec"].get("initContainers") or []:
            for e in c.get("env") or []:
                if e["name"] == "PREFLIGHT_ACTION":
                    return str(e.get("value"))
        return None

    for app, action in actions.items():
        wait_for(lambda app=app, action=action: injected_action(app) == action,
                 what=f"the {action} policy to reach the webhook")  # fmt: skip


def test_enforce_runs_both_containers_and_keeps_vllm_from_starting(
    cluster: Cluster, namespace: str
) -> None:
    def restarted() -> dict[str, Any] | None:
        pod = pod_of(cluster, namespace, "enforce")
        check = init_status(pod, constants.CHECK_CONTAINER) if pod else {}
        return pod if check.get("restartCount", 0) >= 1 else None

    pod = wait_for(restarted, timeout=300, what="the kubelet to restart the failed check")
    names = [c["name"] for c in pod["spec"]["initContainers"]]
    assert names[:2] == [constants.INSTALL_CONTAINER, constants.CHECK_CONTAINER]
    assert pod["spec"]["nodeName"] == "preflight-node-0"
    install = init_status(pod, constants.INSTALL_CONTAINER)["state"]["terminated"]
    assert (install["exitCode"], install["reason"]) == (0, "Completed")
    check_status = init_status(pod, constants.CHECK_CONTAINER)
    # the check ran in the workload's own image (the Warn test compares the digests)
    assert check_status["image"] == WORKLOAD_IMAGE
    first = check_terminated(check_status)
    assert first is not None
    assert install["finishedAt"] <= first["startedAt"], "the init containers ran out of order"
    # a real failure, under Enforce: exit 1, and its report in the termination message
    assert first["exitCode"] == 1
    message = first["message"]
    assert len(message.encode()) <= 4096
    report = Report.from_json(message)
    assert report.action == "Enforce"
    assert [c.id for c in report.checks if c.status == "fail"] == ["driver"]
    assert "no NVIDIA driver" in next(c.message for c in report.checks if c.id == "driver")
    # the vLLM container never started: the kubelet holds it behind the failing init
    vllm = main_status(pod)
    assert vllm.get("started") is False
    assert set(vllm["state"]) == {"waiting"}, vllm["state"]
    assert vllm["state"]["waiting"]["reason"] == "PodInitializing"
    assert vllm.get("restartCount", 0) == 0
    assert not vllm.get("lastState")
    # ... and the kubelet backs off restarting the check
    backoff = wait_for(
        lambda: (
            (p := pod_of(cluster, namespace, "enforce"))
            and (w := init_status(p, constants.CHECK_CONTAINER)["state"].get("waiting"))
            and w.get("reason") == "CrashLoopBackOff"
            and p
        ),
        timeout=300,
        what="CrashLoopBackOff of the check",
    )
    assert main_status(backoff).get("started") is False
    # the real termination message reached the GPUValidation
    assert wait_for(lambda: runtime_verdict(cluster, namespace, "enforce"), timeout=120) == "fail"
    status = (gpuval(cluster, namespace, "enforce") or {})["status"]
    assert status["reason"] == "driver"
    pods = status["runtime"]["pods"]
    assert [p["pod"] for p in pods] == [pod["metadata"]["name"]]


@pytest.mark.parametrize("action", ["Warn", "Audit"])
def test_warn_and_audit_report_the_failure_and_start_vllm(
    cluster: Cluster, namespace: str, action: str
) -> None:
    app = action.lower()

    def running() -> dict[str, Any] | None:
        pod = pod_of(cluster, namespace, app)
        return pod if pod and "running" in (main_status(pod).get("state") or {}) else None

    pod = wait_for(running, timeout=300, what=f"the vLLM container to run under {action}")
    check_status = init_status(pod, constants.CHECK_CONTAINER)
    # the check ran in the workload's own image: the same content digest as vLLM's
    assert check_status["imageID"] == main_status(pod)["imageID"]
    assert check_status["image"] == main_status(pod)["image"] == WORKLOAD_IMAGE
    check = check_status["state"]["terminated"]
    assert check["exitCode"] == 0
    assert check["reason"] == "Completed"
    report = Report.from_json(check["message"])
    assert report.action == action
    assert report.verdict == "fail"
    assert wait_for(lambda: runtime_verdict(cluster, namespace, app), timeout=120) == "fail"
    assert gpuval(cluster, namespace, app)["status"]["action"] == action  # type: ignore[index]


def test_the_check_reports_the_vllm_its_image_holds(cluster: Cluster, namespace: str) -> None:
    """Issue 38 item 1 on a real node: the check, in the workload's own python3, reads the
    installed vLLM's release from its distribution metadata, and the GPUValidation shows it
    per pod. The image is not vLLM's own tagged image: no assumption, so no note."""

    def pods() -> list[dict[str, Any]] | None:
        status = (gpuval(cluster, namespace, "probe") or {}).get("status") or {}
        found = (status.get("runtime") or {}).get("pods") or []
        return found if any(p.get("vllmVersion") for p in found) else None

    found = wait_for(pods, timeout=300, what="the GPUValidation to show the vLLM release")
    assert {p.get("vllmVersion") for p in found} == {INSTALLED_VLLM}
    assert not any("vllmVersionNote" in p for p in found)
    pod = pod_of(cluster, namespace, "probe")
    assert pod is not None
    finished = check_terminated(init_status(pod, constants.CHECK_CONTAINER))
    assert finished is not None
    assert Report.from_json(finished["message"]).plan["vllm_version"] == INSTALLED_VLLM


def test_inside_the_check_no_token_seccomp_and_no_capabilities(
    cluster: Cluster, namespace: str, real_node: RealNode
) -> None:
    def probed() -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        pod = pod_of(cluster, namespace, "probe")
        check = init_status(pod, constants.CHECK_CONTAINER) if pod else {}
        if not pod or not check_terminated(check):
            return None
        lines = probe_lines(real_node, pod, constants.CHECK_CONTAINER)
        return (pod, lines) if lines else None

    pod, lines = wait_for(probed, timeout=300, what="the probe's line in the check's log")
    seen = lines[0]
    assert "check" in seen["argv"]
    assert_isolated(seen)
    # the probe ran in the check itself: its verdict is still the real one
    check = check_terminated(init_status(pod, constants.CHECK_CONTAINER))
    assert check is not None
    assert check["exitCode"] == 1
    # the vLLM container of a pod that does mount the token (automount on) would have it;
    # the check's emptyDir is what hides it
    assert pod["spec"].get("automountServiceAccountToken") is not False
    assert any(
        m["mountPath"] == TOKEN_MOUNT_PATH and m["name"].startswith("kube-api-access")
        for m in pod["spec"]["containers"][0].get("volumeMounts") or []
    )


def test_a_hostile_workload_cannot_report_for_another(cluster: Cluster, namespace: str) -> None:
    """Its check writes a passing report naming another pod, from a pod labelled as the
    Enforce workload: the pass lands on its own pod and workload only."""

    def passed() -> dict[str, Any] | None:
        pod = pod_of(cluster, namespace, "hostile")
        check = init_status(pod, constants.CHECK_CONTAINER) if pod else {}
        done = check_terminated(check)
        return pod if done and done["exitCode"] == 0 else None

    pod = wait_for(passed, timeout=300, what="the hostile check to exit")
    # the injector labelled the pod with its own workload, whatever its template said
    assert pod["metadata"]["labels"][constants.LABEL_WORKLOAD] == "deployment.hostile"
    assert wait_for(lambda: runtime_verdict(cluster, namespace, "enforce"), timeout=120) == "fail"
    assert wait_for(lambda: runtime_verdict(cluster, namespace, "hostile"), timeout=120)
    victim = (gpuval(cluster, namespace, "enforce") or {})["status"]
    assert victim["runtimeVerdict"] == "fail"
    assert pod["metadata"]["name"] not in [p["pod"] for p in victim["runtime"]["pods"]]


def test_a_broken_injection_fails_the_isolation_checks(
    cluster: Cluster, real_node: RealNode, namespace: str, tmp_path: Path
) -> None:
    """The same probe under an operator whose injector lost its security context and token
    shadow (patched in its process): assert_isolated must fail, or it proves nothing."""
    patch = tmp_path / "patch"
    patch.mkdir()
    (patch / "sitecustomize.py").write_text(
        textwrap.dedent(
            """
            import preflight_operator.core.inject_containers as containers
            containers.SECURITY_CONTEXT = {}
            containers.NO_TOKEN_MOUNT = {
                "name": containers.NO_TOKEN_VOLUME, "mountPath": "/preflight-no-token"
            }
            """
        )
    )
    env = cluster.env()
    env["PYTHONPATH"] = str(patch)
    localoperator.remove_webhooks(cluster)
    broken = start_operator(cluster, tmp_path / "broken", env)
    try:
        ns = cluster.create_namespace("realnode-broken", labels=INJECT)
        cluster.apply(*deployment("probe", ns, probe=PROBE))

        def probed() -> list[dict[str, Any]] | None:
            pod = pod_of(cluster, ns, "probe")
            if not pod or not check_terminated(init_status(pod, constants.CHECK_CONTAINER)):
                return None
            return probe_lines(real_node, pod, constants.CHECK_CONTAINER) or None

        seen = wait_for(probed, timeout=300, what="the probe under the broken injector")[0]
        with pytest.raises(AssertionError):
            assert_isolated(seen)
        assert seen["seccomp"] != "2" or seen["token"]
        cluster.delete_namespace(ns)
    finally:
        localoperator.remove_webhooks(cluster)
        broken.stop()
    print(f"broken injection seen by the check: {seen}", file=sys.stderr)
