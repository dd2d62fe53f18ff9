"""The local control plane is a real one: controllers act, CRDs are served with their
subresources and columns, admission webhooks on 127.0.0.1 are called and can deny, RBAC
refuses a restricted token, the garbage collector follows owner references. And the
harness itself starts and stops without leaving anything behind.

Everything here is `e2e` (tests/e2e/conftest.py). The CRD and webhook are throwaway ones
of these tests, never the product's.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from cryptography import x509

from preflight_dev.testing import (
    KUBECONFIG_ENV,
    BinariesNotFound,
    CertificateAuthority,
    Cluster,
    ClusterStartError,
    ExternalCluster,
    KubectlError,
    LocalCluster,
    ServingCert,
    external_kubeconfig,
    wait_for,
)
from preflight_dev.testing.binaries import REQUIRED, bin_dir_from_env
from preflight_dev.testing.process import (
    OWNER_FILE,
    PIDS_FILE,
    pid_alive,
    port_is_listening,
    reap_stale_workdirs,
)
from preflight_dev.testing.workloads import get_json


def owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    refs = obj["metadata"].get("ownerReferences", [])
    return any(ref["uid"] == owner["metadata"]["uid"] for ref in refs)


# -- controllers ------------------------------------------------------------------------
def test_deployment_gets_a_replicaset_and_pods_that_stay_pending(
    k8s: Cluster, k8s_namespace: str
) -> None:
    ns = k8s_namespace
    labels = {"app": "harness-demo"}
    k8s.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    # Never pulled: no kubelet runs here.
                    "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]},
                },
            },
        }
    )
    deployment = get_json(k8s, "deployment", "web", "-n", ns)
    replicaset = wait_for(
        lambda: next(
            (
                rs
                for rs in get_json(k8s, "replicasets", "-n", ns)["items"]
                if owned_by(rs, deployment)
            ),
            None,
        ),
        what="a ReplicaSet owned by the Deployment",
    )

    def pods_of_replicaset() -> list[dict[str, Any]]:
        items = get_json(k8s, "pods", "-n", ns)["items"]
        return [p for p in items if owned_by(p, replicaset)]

    pods = wait_for(
        lambda: len(pods_of_replicaset()) == 2 and pods_of_replicaset(),
        what="two Pods owned by the ReplicaSet",
    )
    if k8s.is_local:  # no Node they may run on (fake GPU Nodes are tainted), no kubelet
        assert {p["status"].get("phase") for p in pods} == {"Pending"}
        assert all(not p["spec"].get("nodeName") for p in pods)


def test_a_test_can_play_the_kubelet_and_write_pod_status(
    local_k8s: Cluster, k8s_namespace: str
) -> None:
    k8s, ns = local_k8s, k8s_namespace
    k8s.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "registry.invalid/x:1"}]},
        }
    )
    message = '{"schema":1,"verdict":"fail"}'
    status = {
        "phase": "Running",
        "containerStatuses": [
            {
                "name": "c",
                "image": "registry.invalid/x:1",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 1, "message": message}},
            }
        ],
    }
    k8s.kubectl(
        "patch", "pod", "p", "-n", ns, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": status}),
    )  # fmt: skip
    pod = get_json(k8s, "pod", "p", "-n", ns)
    assert pod["status"]["phase"] == "Running"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["message"] == message


# -- CRDs -------------------------------------------------------------------------------
GROUP = "harness.vllm-preflight.test"
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                    # Custom columns replace the default AGE column; keep it, as kubectl does.
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {"size": {"type": "integer", "minimum": 1}},
                            },
                            "status": {
                                "type": "object",
                                "properties": {"phase": {"type": "string"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture
def widget_crd(k8s: Cluster) -> Iterator[str]:
    name = WIDGET_CRD["metadata"]["name"]
    k8s.apply(WIDGET_CRD)
    k8s.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=30s")
    yield name
    k8s.kubectl("delete", "crd", name, "--wait=false", "--ignore-not-found")


def test_crd_is_served_with_status_subresource_and_printer_columns(
    k8s: Cluster, k8s_namespace: str, widget_crd: str
) -> None:
    ns = k8s_namespace
    widget = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": ns},
        "spec": {"size": 3},
        "status": {"phase": "SetThroughMainResource"},
    }
    k8s.apply(widget)
    # With a status subresource, the main resource ignores status...
    assert get_json(k8s, "widget", "w1", "-n", ns).get("status", {}).get("phase") is None
    # ... and the status subresource sets it.
    k8s.kubectl(
        "patch", "widget", "w1", "-n", ns, "--subresource=status", "--type=merge",
        "-p", '{"status":{"phase":"Ready"}}',
    )  # fmt: skip
    table = k8s.kubectl("get", "widgets", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "SIZE", "PHASE", "AGE"]
    assert table[1].split()[:3] == ["w1", "3", "Ready"]
    # The schema is enforced: size must be >= 1.
    bad = dict(widget, metadata={"name": "w2", "namespace": ns}, spec={"size": 0})
    with pytest.raises(KubectlError, match=r"spec\.size"):
        k8s.apply(bad)


# -- admission webhooks -----------------------------------------------------------------
DENY_LABEL = "harness.vllm-preflight.test/deny"


class _AdmissionHandler(BaseHTTPRequestHandler):
    """Allows everything except objects labelled DENY_LABEL=yes; records every request."""

    seen: ClassVar[list[dict[str, Any]]]

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        self.seen.append(request)
        labels = request["object"]["metadata"].get("labels") or {}
        allowed = labels.get(DENY_LABEL) != "yes"
        response: dict[str, Any] = {"uid": request["uid"], "allowed": allowed}
        if not allowed:
            response["status"] = {"code": 403, "message": "denied by the harness test webhook"}
        body = json.dumps(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: pytest shows failures, not access logs


@pytest.fixture
def webhook_server(local_k8s: Cluster) -> Iterator[tuple[int, ServingCert, list[dict[str, Any]]]]:
    cert = local_k8s.issue_serving_cert()
    seen: list[dict[str, Any]] = []
    handler = type("Handler", (_AdmissionHandler,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert.cert_path, cert.key_path)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], cert, seen
    server.shutdown()
    server.server_close()


def test_validating_webhook_on_loopback_is_called_and_can_deny(
    local_k8s: Cluster,
    k8s_namespace: str,
    webhook_server: tuple[int, ServingCert, list[dict[str, Any]]],
) -> None:
    k8s, ns = local_k8s, k8s_namespace
    port, cert, seen = webhook_server
    config_name = f"harness-{ns}"
    k8s.apply(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": config_name},
            "webhooks": [
                {
                    "name": f"deny.{GROUP}",
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{port}/validate",
                        "caBundle": base64.b64encode(cert.ca_pem).decode(),
                    },
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["configmaps"],
                        }
                    ],
                    # Only this test's namespace: other tests share the cluster.
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                    "failurePolicy": "Fail",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "timeoutSeconds": 5,
                }
            ],
        }
    )
    try:
        # The API server picks up new webhook configurations a moment later.
        probes = iter(range(1000))

        def webhook_saw_a_probe() -> bool:
            name = f"probe-{next(probes)}"
            k8s.kubectl("create", "configmap", name, "-n", ns)
            return any(r["name"] == name for r in seen)

        wait_for(webhook_saw_a_probe, what="the webhook is called")
        request = seen[-1]
        assert request["operation"] == "CREATE"
        assert request["namespace"] == ns
        assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}

        manifest = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "denied", "namespace": ns, "labels": {DENY_LABEL: "yes"}},
        }
        with pytest.raises(KubectlError, match="denied by the harness test webhook"):
            k8s.apply(manifest)
        assert k8s.kubectl("get", "configmap", "denied", "-n", ns, check=False).returncode != 0
    finally:
        k8s.kubectl("delete", "validatingwebhookconfiguration", config_name, "--ignore-not-found")


# -- RBAC -------------------------------------------------------------------------------
def test_restricted_token_is_refused_where_rbac_says_so(k8s: Cluster, k8s_namespace: str) -> None:
    ns = k8s_namespace
    k8s.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "configmap-reader", "namespace": ns},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "reader", "namespace": ns},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "configmap-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
        },
    )
    kubeconfig = k8s.service_account_kubeconfig(ns, "reader")
    whoami = k8s.kubectl("auth", "whoami", "-o", "json", kubeconfig=kubeconfig).stdout
    assert json.loads(whoami)["status"]["userInfo"]["username"] == (
        f"system:serviceaccount:{ns}:reader"
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return k8s.kubectl(*args, kubeconfig=kubeconfig, check=False)

    # Allowed: the RBAC authorizer's caches see the new binding a moment later.
    wait_for(lambda: run("get", "configmaps", "-n", ns).returncode == 0, what="read allowed")
    refused = [
        run("get", "secrets", "-n", ns),  # another resource
        run("create", "configmap", "x", "-n", ns),  # another verb
        run("get", "configmaps", "-n", "default"),  # another namespace
    ]
    for result in refused:
        assert result.returncode != 0
        assert "forbidden" in result.stderr, result.stderr


# -- garbage collection -----------------------------------------------------------------
def test_deleting_an_owner_garbage_collects_its_child(k8s: Cluster, k8s_namespace: str) -> None:
    ns = k8s_namespace
    k8s.apply(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": ns}}
    )
    owner = get_json(k8s, "configmap", "owner", "-n", ns)
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    k8s.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "child", "namespace": ns, "ownerReferences": [ref]},
        },
        # Same namespace, no owner: must survive, so the namespace itself is not the cause.
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "bystander", "namespace": ns},
        },
    )
    k8s.kubectl("delete", "configmap", "owner", "-n", ns)

    def child_gone() -> bool:
        got = k8s.kubectl("get", "configmap", "child", "-n", ns, "--ignore-not-found", "-o", "name")
        return got.stdout.strip() == ""

    wait_for(child_gone, what="the garbage collector deletes the child")
    assert get_json(k8s, "configmap", "bystander", "-n", ns)["metadata"]["name"] == "bystander"


# -- clients ----------------------------------------------------------------------------
def test_python_client_helm_and_env_reach_the_cluster(k8s: Cluster, k8s_namespace: str) -> None:
    from kubernetes import client

    api = k8s.api_client()
    try:
        namespace = client.CoreV1Api(api).read_namespace(k8s_namespace)
        assert namespace.metadata.name == k8s_namespace
    finally:
        api.close()
    assert json.loads(k8s.helm("list", "-n", k8s_namespace, "-o", "json").stdout) == []
    # A subprocess given env() finds our kubectl first and the cluster without flags.
    out = subprocess.run(
        ["kubectl", "get", "namespace", k8s_namespace, "-o", "name"],
        env=k8s.env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == f"namespace/{k8s_namespace}"


# -- pointing the same API at an existing cluster -----------------------------------------
def test_external_cluster_api_works_against_an_existing_cluster(local_k8s: Cluster) -> None:
    # The local cluster stands in for "a real cluster": ExternalCluster only sees a kubeconfig.
    with ExternalCluster(local_k8s.kubeconfig) as external:
        assert not external.is_local
        assert external.version == local_k8s.version
        ns = external.create_namespace("ext")
        kubeconfig = external.service_account_kubeconfig(ns, "someone")
        who = external.kubectl("auth", "whoami", "-o", "json", kubeconfig=kubeconfig).stdout
        assert json.loads(who)["status"]["userInfo"]["username"].endswith(f":{ns}:someone")
    # stop() deletes the namespaces it created (deletion is asynchronous: Terminating).
    phase = local_k8s.kubectl(
        "get", "namespace", ns, "--ignore-not-found", "-o", "jsonpath={.status.phase}"
    ).stdout
    assert phase in ("", "Terminating")


# -- the harness itself -----------------------------------------------------------------
def _start_harness() -> tuple[subprocess.Popen[str], Path, list[str]]:
    """`make cluster` in a subprocess; returns it, its kubeconfig and its output so far."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "preflight_dev.testing.cluster"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    output: list[str] = []
    for line in proc.stdout:
        output.append(line)
        if line.startswith("kubeconfig: "):
            return proc, Path(line.split(" ", 1)[1].strip()), output
    proc.wait()
    pytest.fail(f"harness exited with {proc.returncode}:\n{''.join(output)}")


def _ports_of(pids: list[int]) -> set[int]:
    ports = set()
    for pid in pids:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        for arg in args:
            if arg.startswith("--secure-port=") and arg != "--secure-port=0":
                ports.add(int(arg.split("=", 1)[1]))
            elif arg.startswith(("--listen-client-urls=", "--listen-peer-urls=")):
                ports.add(int(arg.rsplit(":", 1)[1]))
    return ports


def _pids_of(workdir: Path) -> list[int]:
    return [int(p) for p in (workdir / PIDS_FILE).read_text().split()]


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="reads /proc")
def test_sigterm_stops_the_harness_leaving_no_process_port_or_directory() -> None:
    proc, kubeconfig, output = _start_harness()
    workdir = kubeconfig.parent
    try:
        output.append(proc.stdout.readline() if proc.stdout else "")  # the "ready in" line
        assert "ready at https://127.0.0.1:" in output[-1]
        pids = _pids_of(workdir)
        ports = _ports_of(pids)
        assert len(pids) == 4  # etcd, kube-apiserver, kube-controller-manager, kube-scheduler
        assert all(pid_alive(p) for p in pids)
        assert len(ports) == 4  # etcd client and peer, kube-apiserver, kube-scheduler
        assert all(port_is_listening(p) for p in ports)
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, "".join(output) + rest
    assert "stopped in" in rest
    assert not [p for p in pids if pid_alive(p)]
    assert not [p for p in ports if port_is_listening(p)]
    assert not workdir.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_harness_takes_its_components_along_and_is_reaped_later() -> None:
    proc, kubeconfig, _ = _start_harness()
    workdir = kubeconfig.parent
    pids = _pids_of(workdir)
    os.kill(proc.pid, signal.SIGKILL)  # no atexit, no finally: only the kernel can help
    proc.communicate(timeout=30)
    wait_for(lambda: not any(pid_alive(p) for p in pids), timeout=15, what="components die")
    assert workdir.exists()
    assert (workdir / OWNER_FILE).exists()
    # The next harness start reaps what the killed one left.
    assert workdir in reap_stale_workdirs(workdir.parent)
    assert not workdir.exists()


def _fake_bin_dir(root: Path, etcd_script: str) -> Path:
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for name in REQUIRED:
        script = bin_dir / name
        script.write_text(etcd_script if name == "etcd" else "#!/bin/sh\nexit 0\n")
        script.chmod(0o755)
    return bin_dir


def test_a_failed_start_shows_the_failing_components_log(tmp_path: Path) -> None:
    bin_dir = _fake_bin_dir(tmp_path, "#!/bin/sh\necho 'boom: cannot open data dir' >&2\nexit 3\n")
    cluster = LocalCluster(bin_dir, parent_dir=tmp_path)
    with pytest.raises(ClusterStartError) as failure:
        cluster.start()
    message = str(failure.value)
    assert "etcd exited with code 3 while starting" in message
    assert "boom: cannot open data dir" in message
    assert not cluster.pids  # nothing left running
    # The workdir stays for its logs, unowned so that reaping leaves it alone.
    (workdir,) = tmp_path.glob("vllm-preflight-k8s-*")
    assert (workdir / "logs" / "etcd.log").exists()
    assert not (workdir / OWNER_FILE).exists()
    assert reap_stale_workdirs(tmp_path) == []


# -- pure parts -------------------------------------------------------------------------
def test_only_the_dedicated_variable_points_tests_at_an_existing_cluster() -> None:
    assert external_kubeconfig({"KUBECONFIG": "/home/me/.kube/prod"}) is None
    assert external_kubeconfig({KUBECONFIG_ENV: "  "}) is None
    assert external_kubeconfig({KUBECONFIG_ENV: "/tmp/kc"}) == Path("/tmp/kc")


def test_a_bin_dir_from_the_environment_must_hold_every_binary(tmp_path: Path) -> None:
    (tmp_path / "kubectl").write_text("#!/bin/sh\n")
    (tmp_path / "kubectl").chmod(0o755)
    with pytest.raises(BinariesNotFound, match="lacks etcd, kube-apiserver"):
        bin_dir_from_env({"VLLM_PREFLIGHT_K8S_BIN": str(tmp_path)})
    assert bin_dir_from_env({}) is None


def test_serving_certificate_names_loopback_and_chains_to_the_ca() -> None:
    ca = CertificateAuthority()
    pair = ca.serving(["127.0.0.1", "localhost"])
    cert = x509.load_pem_x509_certificate(pair.cert_pem)
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca.cert_pem))
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    admin = x509.load_pem_x509_certificate(ca.client("me", groups=["system:masters"]).cert_pem)
    assert "O=system:masters" in admin.subject.rfc4514_string()


def test_a_crashing_program_still_stops_everything_at_exit(tmp_path: Path) -> None:
    # No `with`, no stop(): an uncaught exception ends the program; atexit must clean up.
    program = (
        "from preflight_dev.testing import LocalCluster\n"
        "c = LocalCluster().start()\n"
        "print(c.workdir, *c.pids.values(), flush=True)\n"
        "raise RuntimeError('a test crashed')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 1
    assert "a test crashed" in result.stderr
    workdir, *pids = result.stdout.split()
    assert len(pids) == 4
    assert not [p for p in pids if pid_alive(int(p))]
    # Only the atexit hook removes the directory (the kernel's PDEATHSIG kills processes,
    # nothing more), so this is what fails if the hook does not run.
    assert not Path(workdir).exists()
