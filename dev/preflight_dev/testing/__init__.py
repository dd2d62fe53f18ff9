"""A real Kubernetes control plane for tests and the demo (docs/CONTROL_PLANE.md).

In pytest, ask for the session fixture `k8s` (tests/conftest.py); tests that use it are
marked `e2e` automatically and the cluster starts once, on first use, for the whole session:

    def test_something(k8s, k8s_namespace):        # k8s_namespace: fresh, ready, deleted after
        k8s.apply({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "x", "namespace": k8s_namespace}})
        out = k8s.kubectl("get", "configmap", "x", "-n", k8s_namespace, "-o", "json").stdout

    def test_webhook(local_k8s): ...                # skips on a real cluster (127.0.0.1 URLs)

Outside pytest:

    from preflight_dev.testing import LocalCluster, open_cluster
    with LocalCluster() as cluster:                 # or open_cluster(), which honours
        ...                                         # VLLM_PREFLIGHT_KUBECONFIG

The API (class Cluster; LocalCluster and ExternalCluster implement it):
- `kubeconfig: Path` admin kubeconfig; `bin_dir: Path` kubectl, helm, etcd, kube-*;
  `is_local: bool` True when the API server can call webhooks on this host's 127.0.0.1;
  `version: str` the API server's version.
- `env(kubeconfig=None) -> dict` environment for a subprocess (operator, helm, a shell):
  KUBECONFIG set, our binaries first on PATH, loopback exempt from proxies.
- `kubectl(*args, kubeconfig=None, input=None, check=True, timeout=60) -> CompletedProcess[str]`
  and `helm(*args, kubeconfig=None, check=True, timeout=300)`; a failure raises KubectlError,
  whose str() includes stderr.
- `apply(*manifests: dict, kubeconfig=None) -> str` kubectl apply of dicts.
- `api_client(kubeconfig=None)` a new kubernetes.client.ApiClient (close it).
- `create_namespace(prefix="e2e", labels=None) -> str` unique name, waits until Pods can be
  created there; `wait_namespace_ready(ns, timeout=30)`; `delete_namespace(ns, wait=False)`.
- `service_account_kubeconfig(ns, name, duration="1h") -> Path` a kubeconfig that
  authenticates only as system:serviceaccount:<ns>:<name> (TokenRequest); for RBAC tests.
- `issue_serving_cert(hosts=("127.0.0.1", "localhost")) -> ServingCert(cert_path, key_path,
  ca_pem)` for a webhook server; put base64(ca_pem) in clientConfig.caBundle.
- `wait_for(condition, timeout=30, interval=0.2, what="")` polls until condition() is truthy
  and returns that value (controllers and webhook configurations act a little later).
- LocalCluster also has `server`, `workdir`, `logs_dir` (<component>.log), `pids`,
  `startup_seconds`, `check_alive()`, and `stop(keep_workdir=None)`
  (VLLM_PREFLIGHT_KEEP_WORKDIR=1 keeps logs and data after stopping).

Binaries come from VLLM_PREFLIGHT_K8S_BIN or hack/k8s/build.sh (see binaries.py).
kube-scheduler runs; Nodes exist only when a test or the demo makes them
(`testing.nodes.create_gpu_nodes`: fake GPU Nodes the scheduler binds GPU pods to). No
kubelet runs: a test that needs a Pod's status writes it through the status subresource,
as a kubelet would (fakekubelet, for pods the scheduler bound).
"""

from __future__ import annotations

from preflight_dev.testing.base import Cluster, KubectlError, ServingCert
from preflight_dev.testing.binaries import BinariesNotFound, find_bin_dir, find_tools_dir
from preflight_dev.testing.certs import CertificateAuthority, KeyPair
from preflight_dev.testing.external import ExternalCluster
from preflight_dev.testing.local import ClusterStartError, ComponentError, LocalCluster
from preflight_dev.testing.selection import KUBECONFIG_ENV, external_kubeconfig, open_cluster
from preflight_dev.testing.wait import wait_for

__all__ = [
    "KUBECONFIG_ENV",
    "BinariesNotFound",
    "CertificateAuthority",
    "Cluster",
    "ClusterStartError",
    "ComponentError",
    "ExternalCluster",
    "KeyPair",
    "KubectlError",
    "LocalCluster",
    "ServingCert",
    "external_kubeconfig",
    "find_bin_dir",
    "find_tools_dir",
    "open_cluster",
    "wait_for",
]
