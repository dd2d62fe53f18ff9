"""Who can call the webhook port (issue 34 item 6).

Anyone who reaches the port can POST a forged AdmissionReview naming any namespace and read
the JSON patch: that namespace's policy (PREFLIGHT_* env) and its verdict-reuse offers
(sealed: no node, pod or key in them). With
``--webhook-client-ca`` (chart: ``webhook.clientAuth``), only a caller with a client
certificate that CA signed gets past the TLS handshake; the API server presents one through
its AdmissionConfiguration (a kubeconfig whose user ``*`` holds the certificate).

On a control plane of its own, started with that AdmissionConfiguration:
- an operator *without* the CA answers an unauthenticated POST with the patch (the exposure
  that remains by default: the test that fails without the fix);
- an operator with the CA refuses the same POST, and one with a certificate of another CA,
  at the handshake, and still injects the pods the API server sends it;
- with the right client certificate the same POST is answered (the refusal is the
  certificate's, not the port's).
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev import localoperator, localsetup
from preflight_dev.localoperator import OperatorProcess
from preflight_dev.testing import LocalCluster
from preflight_dev.testing.certs import CertificateAuthority
from preflight_dev.testing.wait import wait_for
from preflight_operator.core import constants

MANIFESTS = Path(__file__).parents[1] / "data" / "manifests"


def _write_admission_config(directory: Path, ca: CertificateAuthority) -> Path:
    """The API server's AdmissionConfiguration: both webhook plugins present the client
    certificate to every webhook host (user ``*``, the default match)."""
    pair = ca.client("kube-apiserver")
    cert, key = directory / "apiserver-client.crt", directory / "apiserver-client.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    kubeconfig = directory / "webhook-clients.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "users": [
                    {"name": "*", "user": {"client-certificate": str(cert), "client-key": str(key)}}
                ],
            }
        )
    )
    webhook = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "WebhookAdmissionConfiguration",
        "kubeConfigFile": str(kubeconfig),
    }
    config = directory / "admission.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apiserver.config.k8s.io/v1",
                "kind": "AdmissionConfiguration",
                "plugins": [
                    {"name": "MutatingAdmissionWebhook", "configuration": webhook},
                    {"name": "ValidatingAdmissionWebhook", "configuration": webhook},
                ],
            }
        )
    )
    return config


@pytest.fixture(scope="module")
def client_ca() -> CertificateAuthority:
    return CertificateAuthority("the API server's webhook client CA")


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, client_ca: CertificateAuthority
) -> Iterator[LocalCluster]:
    directory = tmp_path_factory.mktemp("admission")
    config = _write_admission_config(directory, client_ca)
    flags = {"kube-apiserver": [f"--admission-control-config-file={config}"]}
    plane = LocalCluster(extra_flags=flags, parent_dir=directory).start()
    try:
        localsetup.install_crds(plane)
        yield plane
    finally:
        plane.stop()


def _pod(namespace: str) -> dict[str, Any]:
    deployment = next(
        d
        for d in yaml.safe_load_all((MANIFESTS / "good-tp2-deployment.yaml").read_text())
        if d["kind"] == "Deployment"
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "vllm", "namespace": namespace},
        "spec": deployment["spec"]["template"]["spec"],
    }


def _post(port: int, pod: dict[str, Any], client: tuple[Path, Path] | None) -> dict[str, Any]:
    """A forged review of ``pod`` to /mutate-pods, as a pod in the cluster could send it."""
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "forged", "operation": "CREATE", "object": pod},
    }
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # a caller does not check who answers
    if client is not None:
        context.load_cert_chain(*client)
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}/{constants.MUTATE_PODS_WEBHOOK_ID}",
        data=json.dumps(review).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, context=context, timeout=30) as rsp:
        answer: dict[str, Any] = json.loads(rsp.read())
    return answer


def _patch(answer: dict[str, Any]) -> str:
    return base64.b64decode(answer["response"].get("patch") or "").decode()


def _refused(port: int, pod: dict[str, Any], client: tuple[Path, Path] | None) -> bool:
    try:
        _post(port, pod, client)
    except (ssl.SSLError, ConnectionError, urllib.error.URLError, OSError):
        return True
    return False


def _client_files(directory: Path, ca: CertificateAuthority, name: str) -> tuple[Path, Path]:
    pair = ca.client(name)
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    return cert, key


@contextlib.contextmanager
def _operator(
    cluster: LocalCluster, workdir: Path, extra: list[str], *, webhooks: bool
) -> Iterator[OperatorProcess]:
    op = localoperator.start_with_webhooks(
        cluster, workdir, identity=workdir.name, extra_args=extra, webhooks=webhooks
    )
    try:
        yield op
    finally:
        if webhooks:
            localoperator.remove_webhooks(cluster)
        op.stop()


def test_only_the_api_server_reads_a_patch(
    cluster: LocalCluster, client_ca: CertificateAuthority, tmp_path: Path
) -> None:
    namespace = cluster.create_namespace(
        "caller", labels={constants.LABEL_INJECT: constants.INJECT_ENABLED}
    )
    pod = _pod(namespace)
    ca_file = tmp_path / "client-ca.crt"
    ca_file.write_bytes(client_ca.cert_pem)
    apiserver_like = _client_files(tmp_path, client_ca, "holder")
    stranger = _client_files(tmp_path, CertificateAuthority("another CA"), "stranger")

    # By default (no client CA) the port answers anyone: the namespace's policy is read.
    with _operator(cluster, tmp_path / "open", [], webhooks=False) as op:
        answer = _post(op.webhook_port, pod, None)
        assert answer["response"]["allowed"] is True
        assert "PREFLIGHT_ACTION" in _patch(answer)  # the namespace's policy, in the patch

    with _operator(
        cluster, tmp_path / "closed", ["--webhook-client-ca", str(ca_file)], webhooks=True
    ) as op:
        assert _refused(op.webhook_port, pod, None)  # no certificate
        assert _refused(op.webhook_port, pod, stranger)  # another CA's
        answer = _post(op.webhook_port, pod, apiserver_like)  # the CA's: answered
        assert "PREFLIGHT_ACTION" in _patch(answer)

        # The API server presents its certificate: the pod it creates is injected.
        cluster.apply(pod)

        def injected() -> bool:
            got = json.loads(
                cluster.kubectl("get", "pod", "vllm", "-n", namespace, "-o", "json").stdout
            )
            names = [c["name"] for c in got["spec"].get("initContainers") or []]
            return constants.CHECK_CONTAINER in names

        wait_for(injected, what="the pod injected through the authenticated API server")
    cluster.delete_namespace(namespace)
