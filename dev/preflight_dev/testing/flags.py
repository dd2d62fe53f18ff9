"""Command lines of the local control plane's components (pure; docs/CONTROL_PLANE.md
explains each choice)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Apart from the `default` ServiceAccount (which ServiceAccount admission requires before
# any Pod is admitted) and kube-root-ca.crt, these make Deployments/StatefulSets produce
# Pods and owners garbage-collect their children; job-controller runs the canary Jobs of
# `kubectl vllm-preflight check-node`. Nothing that needs nodes or a cloud.
CONTROLLERS = (
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "namespace-controller",
    "garbage-collector-controller",
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "job-controller",
)

SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"


@dataclass(frozen=True)
class Layout:
    """Every file of one local cluster, under its work directory."""

    workdir: Path

    @property
    def pki(self) -> Path:
        return self.workdir / "pki"

    @property
    def logs(self) -> Path:
        return self.workdir / "logs"

    @property
    def etcd_data(self) -> Path:
        return self.workdir / "etcd"

    @property
    def ca_cert(self) -> Path:
        return self.pki / "ca.crt"

    @property
    def apiserver_cert(self) -> Path:
        return self.pki / "apiserver.crt"

    @property
    def apiserver_key(self) -> Path:
        return self.pki / "apiserver.key"

    @property
    def sa_key(self) -> Path:
        return self.pki / "service-account.key"

    @property
    def admin_cert(self) -> Path:
        return self.pki / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.pki / "admin.key"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    @property
    def controller_manager_kubeconfig(self) -> Path:
        return self.workdir / "controller-manager.kubeconfig"

    @property
    def scheduler_kubeconfig(self) -> Path:
        return self.workdir / "scheduler.kubeconfig"

    @property
    def scheduler_certs(self) -> Path:
        return self.pki / "scheduler"


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    scheduler: int  # its /healthz, which start() waits for


def etcd_args(binary: Path, layout: Layout, ports: Ports) -> list[str]:
    client = f"http://127.0.0.1:{ports.etcd_client}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        str(binary),
        "--name=local",
        f"--data-dir={layout.etcd_data}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=local={peer}",
        # Throwaway data on a shared disk: fsync only costs time here.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


def apiserver_args(binary: Path, layout: Layout, ports: Ports) -> list[str]:
    return [
        str(binary),
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        # Otherwise it advertises the default route's interface address (and cannot start
        # on a machine without a default route); the `kubernetes` Service's endpoint must
        # be where the API server actually listens.
        "--advertise-address=127.0.0.1",
        f"--cert-dir={layout.pki}",
        f"--tls-cert-file={layout.apiserver_cert}",
        f"--tls-private-key-file={layout.apiserver_key}",
        f"--client-ca-file={layout.ca_cert}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={layout.sa_key}",
        f"--service-account-signing-key-file={layout.sa_key}",
        "--authorization-mode=RBAC",
        # Admission: the default plugin set, which includes ServiceAccount,
        # NamespaceLifecycle and both admission webhook plugins, plus
        # ExtendedResourceToleration (as GKE runs it): a pod requesting nvidia.com/gpu
        # tolerates the nvidia.com/gpu taint of the fake GPU Nodes (testing/nodes.py).
        "--enable-admission-plugins=ExtendedResourceToleration",
        "--allow-privileged=true",
        "--profiling=false",
    ]


def controller_manager_args(binary: Path, layout: Layout) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={layout.controller_manager_kubeconfig}",
        "--leader-elect=false",
        # No serving endpoint: nothing scrapes it, and it would need another free port.
        "--secure-port=0",
        f"--controllers={','.join(CONTROLLERS)}",
        f"--root-ca-file={layout.ca_cert}",
        f"--service-account-private-key-file={layout.sa_key}",
        "--use-service-account-credentials=false",
    ]


def scheduler_args(binary: Path, layout: Layout, ports: Ports) -> list[str]:
    """kube-scheduler with its default profile: it binds Pods to Nodes by their resources
    (nvidia.com/gpu included), taints and selectors, and marks the rest Unschedulable."""
    return [
        str(binary),
        f"--kubeconfig={layout.scheduler_kubeconfig}",
        # Delegated authentication/authorization of its own endpoint ask the API server;
        # /healthz is always allowed, and that is all start() reads.
        f"--authentication-kubeconfig={layout.scheduler_kubeconfig}",
        f"--authorization-kubeconfig={layout.scheduler_kubeconfig}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.scheduler}",
        f"--cert-dir={layout.scheduler_certs}",
        "--profiling=false",
    ]
