"""A real node for the local control plane: containerd, runc and a kubelet.

`RealNode(cluster).start()` runs, under the cluster's work directory (``<workdir>/node``):

- **containerd** (Debian's package, 1.6.20 in bookworm; CRI v1, which kubelet 1.34 speaks)
  with its own root, state and socket, so it never touches a containerd of the machine's
  and two clusters can each have one. Its CRI plugin runs containers with runc (Debian's
  1.1.5) through the runc v2 shim, cgroupfs driver, overlayfs snapshots, and the local
  sandbox image (images.PAUSE_IMAGE); it never pulls.
- **a minimal CNI network**: Debian's containernetworking-plugins `bridge` + `host-local`
  on a bridge and a /24 of its own (10.2xx.y.0/24, one not routed on this machine yet);
  no masquerading, no port maps. containerd adds the loopback itself.
- **kubelet** v1.34.4 (``hack/k8s/build.sh node``, the control plane's module and stamps),
  registered as ``preflight-node-0`` with a client certificate from the cluster's test CA,
  its pods under a cgroup root of its own (``/<workdir name>`` in every cgroup v1 hierarchy
  it uses), serving its API on a free loopback port with a certificate from the same CA.
- the images of images.py imported into containerd's ``k8s.io`` namespace.

With ``services=True`` (what ``helm test`` needs: its pod reaches the operator by the
Service's DNS name) the node also runs what a cluster's Services take:

- **kube-proxy** v1.34.4 (same module and stamps as the kubelet), iptables mode, on this
  machine's nat table, which it owns while it runs (one node with services at a time; its
  chains are removed at stop with ``kube-proxy --cleanup``). ``masqueradeAll``: a pod that
  reaches another pod of the same bridge through a Service gets the answer back through the
  host's connection tracking, not straight over the bridge (which the client would drop).
  It leaves the machine's sysctls alone (conntrack limits 0, ``localhostNodePorts`` off).
- **CoreDNS** (``hack/k8s/coredns``: its ``kubernetes`` plugin and the few it serves with),
  as a process of the node on the bridge's gateway address, which the kubelet gives pods
  as their nameserver (``clusterDNS``, domain ``cluster.local``): where a cluster runs it as
  a Deployment behind the ``kube-dns`` Service, here the node's own address stands for that
  Service, so DNS does not depend on the proxy it is meant to sit beside.
- The API server must be reachable from pods (the in-cluster ``kubernetes`` Service): the
  cluster is started with :func:`services_flags` of the node's :func:`choose_subnet`
  (listening on every address, advertising the bridge's gateway; the EndpointSlice
  controller), and the bridge is made with that address before anything starts.

Once the Node is Ready, the node-lifecycle controller's part is played as for the fake GPU
Nodes (nodes.py): the ``node.kubernetes.io/not-ready`` taint that admission put on the new
Node is lifted. The Node then advertises ``nvidia.com/gpu`` as an extended resource, its
status capacity patched as the Kubernetes documentation's "Advertise Extended Resources for
a Node" does: the scheduler and the kubelet's admission count it, and no device is handed
to any container, so the checker finds no GPU, truthfully.

cgroups: this machine mounts cgroup v1 hierarchies (cgroup2 only at
/sys/fs/cgroup/unified). kubelet 1.34's ``failCgroupV1`` defaults to false
(pkg/kubelet/apis/config/v1beta1/defaults.go of k8s.io/kubernetes v1.34.4); it is set to
false explicitly so that the next Kubernetes minor, whose default is true, fails loudly
here only if this line is removed.

oom_score_adj: this machine (root, all capabilities) refuses to lower any process's
``/proc/self/oom_score_adj`` below 0 ("Permission denied", measured with `echo -5 >
/proc/self/oom_score_adj`), and runc then fails every pod sandbox, whose score containerd
sets to -998 ("can't get final child's PID from pipe: EOF"; runc's own message:
"failed to update /proc/self/oom_score_adj: Permission denied"). containerd's
``restrict_oom_score_adj`` (made for rootless containerd) clamps the scores it sets to no
lower than its own (0); kubelet's own score stays 0 too. The only cost: under memory pressure
the kernel does not prefer other processes over the node's; nothing here tests that.

`unsupported()` says what the machine lacks (root, the packages, cgroup controllers,
overlayfs); callers skip with that reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from preflight_dev.testing import images
from preflight_dev.testing.binaries import BUILD_SCRIPT, BinariesNotFound, _run_build
from preflight_dev.testing.kubeconfig import (
    build_kubeconfig,
    client_cert_user,
    cluster_entry,
    write_kubeconfig,
)
from preflight_dev.testing.local import LocalCluster
from preflight_dev.testing.process import (
    OWNER_FILE,
    WORKDIR_PREFIX,
    Component,
    free_ports,
    pid_alive,
    unmount_under,
)

NODE_NAME = "preflight-node-0"
NODE_LABEL = "vllm-preflight.io/real-node"  # tests select the real node by it
GPU_RESOURCE = "nvidia.com/gpu"
NODE_BIN_ENV = "VLLM_PREFLIGHT_NODE_BIN"
NODE_BINARIES = ("kubelet", "pause")
SERVICES_BINARIES = ("kube-proxy", "coredns")  # a node with services needs these too
CNI_BIN_DIR = Path(os.environ.get("VLLM_PREFLIGHT_CNI_BIN", "/usr/lib/cni"))
CGROUP_ROOT = Path("/sys/fs/cgroup")
# cgroup v1 controllers kubelet's cgroupfs manager needs (cpu, cpuacct, cpuset, memory by
# its system validation, pids by its pod cgroups).
CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "pids")
HOST_TOOLS = ("containerd", "containerd-shim-runc-v2", "runc", "ctr")
INSTALL_HINT = "apt-get install containerd runc containernetworking-plugins"
CLUSTER_DOMAIN = "cluster.local"


def hierarchies() -> list[str]:
    """Every cgroup hierarchy mounted under /sys/fs/cgroup (kubelet wants its cgroup root
    in each, name=systemd and the cgroup2 one included)."""
    return sorted(p.parent.name for p in CGROUP_ROOT.glob("*/cgroup.procs"))


def unsupported() -> str | None:
    """Why a real node cannot run on this machine, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "the real node needs root (containerd, runc, mounts and cgroups)"
    missing = [t for t in HOST_TOOLS if shutil.which(t) is None]
    missing += [p for p in ("bridge", "host-local", "loopback") if not (CNI_BIN_DIR / p).exists()]
    if missing:
        return f"the real node needs {', '.join(missing)} ({INSTALL_HINT})"
    if shutil.which("debootstrap") is None and not images.rootfs_layer_path().is_file():
        return "the real node's workload image needs debootstrap (apt-get install debootstrap)"
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return "the real node is written for cgroup v1 hierarchies; this machine has cgroup v2"
    absent = [c for c in CONTROLLERS if not (CGROUP_ROOT / c / "cgroup.procs").exists()]
    if absent:
        return f"the real node needs the cgroup v1 controllers {', '.join(absent)} mounted"
    with contextlib.suppress(OSError):
        if "overlay" not in Path("/proc/filesystems").read_text():
            return "the real node needs overlayfs (containerd's snapshotter)"
    return None


def find_node_bin_dir(*, services: bool = False) -> Path:
    """kubelet and pause (and, with ``services``, kube-proxy and CoreDNS): from
    $VLLM_PREFLIGHT_NODE_BIN, or built once by build.sh node (which builds all four)."""
    value = os.environ.get(NODE_BIN_ENV, "").strip()
    if value:
        bin_dir = Path(value).expanduser()
    else:
        bin_dir = _run_build(
            [str(BUILD_SCRIPT), "node"], f"`{BUILD_SCRIPT} node`", NODE_BIN_ENV, NODE_BINARIES
        )
    wanted = NODE_BINARIES + (SERVICES_BINARIES if services else ())
    missing = [b for b in wanted if not os.access(bin_dir / b, os.X_OK)]
    if missing:
        raise BinariesNotFound(f"{bin_dir} lacks {', '.join(missing)}")
    return bin_dir


def bridge_name(workdir_name: str) -> str:
    """The node's bridge: named after its work directory, within Linux's 15 characters."""
    return "vpf" + workdir_name[-8:].replace("_", "0")


def choose_subnet() -> str:
    """A 10.2xx.y.0/24 that no route of this machine covers yet."""
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True, check=False)
    taken = routes.stdout
    for _ in range(100):
        net = f"10.{random.randint(200, 250)}.{random.randint(0, 255)}"
        if f"{net}." not in taken:
            return f"{net}.0/24"
    raise RuntimeError("no free 10.2xx.y.0/24 for the real node's pod network")


def gateway(subnet: str) -> str:
    """The bridge's own address in ``subnet`` (10.2xx.y.1): the pods' gateway."""
    return subnet.rsplit(".", 1)[0] + ".1"


def services_flags(subnet: str) -> dict[str, list[str]]:
    """The LocalCluster extra flags for a node on ``subnet`` with services: the API server
    listens on every address (the admin kubeconfig keeps 127.0.0.1) and advertises the
    bridge's gateway, so pods reach it through the ``kubernetes`` Service; the
    controller-manager also runs the EndpointSlice controller (added to flags.CONTROLLERS:
    a repeated ``--controllers`` appends), without which a Service has no endpoints for
    kube-proxy to route to."""
    return {
        "kube-apiserver": ["--bind-address=0.0.0.0", f"--advertise-address={gateway(subnet)}"],
        "kube-controller-manager": ["--controllers=endpointslice-controller"],
    }


class RealNode:
    """containerd + kubelet registered with a LocalCluster; see the module docstring."""

    def __init__(
        self,
        cluster: LocalCluster,
        *,
        name: str = NODE_NAME,
        gpus: int = 8,
        start_timeout: float = 120.0,
        services: bool = False,
        subnet: str | None = None,
    ) -> None:
        """``services``: kube-proxy and CoreDNS too (see the module docstring); the cluster
        must then have been started with :func:`services_flags` of ``subnet``."""
        self.cluster = cluster
        self.services = services
        self.subnet = subnet or choose_subnet()
        self.name = name
        self.gpus = gpus
        self.start_timeout = start_timeout
        self.dir = cluster.workdir / "node"
        self.cgroup = "/" + cluster.workdir.name  # e.g. /vllm-preflight-k8s-abcd1234
        self.bridge = bridge_name(cluster.workdir.name)
        self.containerd_socket = self.dir / "containerd" / "containerd.sock"
        self._components: list[Component] = []
        self.ready_after: dict[str, float] = {}
        self.startup_seconds = 0.0
        self._kube_proxy: Path | None = None

    # -- paths ----------------------------------------------------------------------------
    @property
    def logs_dir(self) -> Path:
        return self.cluster.logs_dir

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ctr", "--address", str(self.containerd_socket), "--namespace", "k8s.io", *args],
            capture_output=True, text=True, check=check, timeout=300,
        )  # fmt: skip

    def diagnostics(self) -> str:
        return "".join(
            f"\n--- {c.name} (last lines of {c.log_path}):\n{c.log_tail(25)}"
            for c in self._components
        )

    # -- start ----------------------------------------------------------------------------
    def start(self) -> RealNode:
        reason = unsupported()
        if reason:
            raise RuntimeError(reason)
        t0 = time.monotonic()
        reap_stale_nodes(self.cluster.workdir.parent)
        bin_dir = find_node_bin_dir(services=self.services)
        try:
            self.dir.mkdir()
            self._make_cgroups()
            archives = images.image_archives(self.dir / "images", bin_dir / "pause")
            self.ready_after["images built"] = time.monotonic() - t0
            if self.services:
                self._make_bridge()
            self._start_containerd()
            self.ready_after["containerd"] = time.monotonic() - t0
            for archive in archives:
                self.ctr("images", "import", str(archive))
                archive.unlink()  # unpacked into containerd; the tar is no longer needed
            self.ready_after["images imported"] = time.monotonic() - t0
            self._start_kubelet(bin_dir / "kubelet")
            self._wait_ready()
            self.ready_after["kubelet Ready"] = time.monotonic() - t0
            if self.services:  # kube-proxy waits for its Node; both before the first pod
                self._start_coredns(bin_dir / "coredns")
                self._start_kube_proxy(bin_dir / "kube-proxy")
                self.ready_after["coredns, kube-proxy"] = time.monotonic() - t0
            self._advertise()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _make_cgroups(self) -> None:
        for controller in hierarchies():
            path = CGROUP_ROOT / controller / self.cgroup.lstrip("/")
            path.mkdir(exist_ok=True)
            if controller == "cpuset":  # a new cpuset is empty: no process may join it
                for f in ("cpuset.cpus", "cpuset.mems"):
                    (path / f).write_text((CGROUP_ROOT / controller / f).read_text())

    def _start_containerd(self) -> None:
        base = self.dir / "containerd"
        cni_conf = self.dir / "cni" / "net.d"
        cni_conf.mkdir(parents=True)
        (cni_conf / "10-vllm-preflight.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "0.4.0",
                    "name": "vllm-preflight",
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": self.bridge,
                            "isGateway": True,
                            # with services, pods route Service addresses (and the API
                            # server's) through the host, where kube-proxy rewrites them
                            "isDefaultGateway": self.services,
                            "ipMasq": False,
                            "hairpinMode": True,
                            "ipam": {
                                "type": "host-local",
                                "ranges": [[{"subnet": self.subnet}]],
                                "dataDir": str(self.dir / "cni" / "ipam"),
                            },
                        }
                    ],
                },
                indent=1,
            )
        )
        cri = '[plugins."io.containerd.grpc.v1.cri"]'
        config = f"""version = 2
root = "{base / "root"}"
state = "{base / "state"}"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{self.containerd_socket}"
[ttrpc]
  address = "{self.containerd_socket}.ttrpc"
[metrics]
  address = ""
{cri}
  sandbox_image = "{images.PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  restrict_oom_score_adj = true
  max_container_log_line_size = 16384
  # pods' network namespaces under the state directory, not /var/run/netns: stop()
  # unmounts them with the rest of the node's directory
  netns_mounts_under_state_dir = true
{cri[:-1]}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
{cri[:-1]}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
{cri[:-1]}.containerd.runtimes.runc.options]
  SystemdCgroup = false
{cri[:-1]}.cni]
  bin_dir = "{CNI_BIN_DIR}"
  conf_dir = "{cni_conf}"
  max_conf_num = 1
"""
        base.mkdir(parents=True, exist_ok=True)
        (base / "config.toml").write_text(config)
        containerd = self._launch(
            "containerd", ["containerd", "--config", str(base / "config.toml")]
        )
        self._wait(containerd, lambda: self.ctr("version", check=False).returncode == 0)

    def _make_bridge(self) -> None:
        """The pods' bridge with its gateway address, before the first pod: CoreDNS listens
        there and the API server advertises it (the bridge plugin keeps an address it
        finds)."""
        address = f"{gateway(self.subnet)}/{self.subnet.rsplit('/', 1)[1]}"
        for argv in (
            ["ip", "link", "add", "name", self.bridge, "type", "bridge"],
            ["ip", "addr", "add", address, "dev", self.bridge],
            ["ip", "link", "set", self.bridge, "up"],
        ):
            subprocess.run(argv, capture_output=True, text=True, check=True)

    def _admin_kubeconfig(self, name: str) -> Path:
        ca = self.cluster.certificate_authority
        client = ca.client(f"vllm-preflight-node:{name}", groups=["system:masters"])
        return write_kubeconfig(
            self.dir / f"{name}.kubeconfig",
            build_kubeconfig(
                name="vllm-preflight-node",
                cluster=cluster_entry(self.cluster.server, ca.cert_pem),
                user=client_cert_user(client.cert_pem, client.key_pem),
            ),
        )

    def _start_coredns(self, coredns: Path) -> None:
        (ready_port,) = free_ports(1)
        kubeconfig = self._admin_kubeconfig("coredns")
        # One server block for the cluster's zone (answered from the API server) and one
        # for everything else, which has no upstream here and answers nothing.
        corefile = self.dir / "Corefile"
        corefile.write_text(
            f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 {{
    bind {gateway(self.subnet)}
    ready 127.0.0.1:{ready_port}
    errors
    log
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
    }}
}}
.:53 {{
    bind {gateway(self.subnet)}
    errors
}}
"""
        )
        component = self._launch("coredns", [str(coredns), "-conf", str(corefile)])
        url = f"http://127.0.0.1:{ready_port}/ready"
        self._wait(component, lambda: _http_ok(url))

    def _start_kube_proxy(self, kube_proxy: Path) -> None:
        healthz, metrics = free_ports(2)
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self._admin_kubeconfig("kube-proxy"))},
            "hostnameOverride": self.name,
            "mode": "iptables",
            "clusterCIDR": self.subnet,
            "bindAddress": "127.0.0.1",
            "healthzBindAddress": f"127.0.0.1:{healthz}",
            "metricsBindAddress": f"127.0.0.1:{metrics}",
            "iptables": {"masqueradeAll": True, "localhostNodePorts": False},
            # 0: leave this machine's conntrack settings as they are
            "conntrack": {
                "maxPerCore": 0, "min": 0,
                "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s",
            },
        }  # fmt: skip
        path = self.dir / "kube-proxy.yaml"
        path.write_text(json.dumps(config, indent=1))
        self._kube_proxy = kube_proxy
        # the chains of a run killed before its stop(), which would route stale addresses
        self._cleanup_kube_proxy()
        component = self._launch("kube-proxy", [str(kube_proxy), f"--config={path}", "--v=2"])
        self._wait(component, lambda: _http_ok(f"http://127.0.0.1:{healthz}/healthz"))

    def _cleanup_kube_proxy(self) -> None:
        if self._kube_proxy is not None:
            subprocess.run(
                [str(self._kube_proxy), "--cleanup"], capture_output=True, check=False, timeout=60
            )

    def _start_kubelet(self, kubelet: Path) -> None:
        ca = self.cluster.certificate_authority
        pki = self.dir / "pki"
        pki.mkdir()
        client = ca.client(f"system:node:{self.name}", groups=["system:masters"])
        kubeconfig = write_kubeconfig(
            self.dir / "kubelet.kubeconfig",
            build_kubeconfig(
                name="vllm-preflight-node",
                cluster=cluster_entry(self.cluster.server, ca.cert_pem),
                user=client_cert_user(client.cert_pem, client.key_pem),
            ),
        )
        serving = ca.serving(["127.0.0.1", "localhost", self.name], common_name=self.name)
        (pki / "kubelet.crt").write_bytes(serving.cert_pem)
        key = pki / "kubelet.key"
        key.touch(0o600)
        key.write_bytes(serving.key_pem)
        (pki / "ca.crt").write_bytes(ca.cert_pem)
        port, healthz = free_ports(2)
        self.healthz_port = healthz
        socket = f"unix://{self.containerd_socket}"
        config: dict[str, Any] = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": "127.0.0.1",
            "port": port,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": healthz,
            "tlsCertFile": str(pki / "kubelet.crt"),
            "tlsPrivateKeyFile": str(key),
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": False},
                "x509": {"clientCAFile": str(pki / "ca.crt")},
            },
            "authorization": {"mode": "AlwaysAllow"},
            "containerRuntimeEndpoint": socket,
            "imageServiceEndpoint": socket,
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": self.cgroup,
            "cgroupsPerQOS": True,
            "failCgroupV1": False,  # see the module docstring
            "failSwapOn": False,
            "oomScoreAdj": 0,  # see the module docstring: this machine forbids lowering it
            # Nothing may be evicted or garbage-collected for the shared machine's disk.
            "evictionHard": {
                "memory.available": "1Mi",
                "nodefs.available": "1%",
                "nodefs.inodesFree": "1%",
                "imagefs.available": "1%",
            },
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "resolvConf": "/etc/resolv.conf",
            **(
                {"clusterDNS": [gateway(self.subnet)], "clusterDomain": CLUSTER_DOMAIN}
                if self.services
                else {}
            ),
            "serializeImagePulls": False,
            "registerNode": True,
            "volumePluginDir": str(self.dir / "volume-plugins"),
            "containerLogMaxSize": "10Mi",
            "podLogsDir": str(self.dir / "pod-logs"),
            # the GPU capacity patched after registration reaches allocatable sooner
            "nodeStatusUpdateFrequency": "4s",
        }
        (self.dir / "kubelet.yaml").write_text(json.dumps(config, indent=1))
        argv = [
            str(kubelet),
            f"--config={self.dir / 'kubelet.yaml'}",
            f"--kubeconfig={kubeconfig}",
            f"--root-dir={self.dir / 'kubelet'}",
            f"--cert-dir={pki}",
            f"--hostname-override={self.name}",
            f"--node-labels={NODE_LABEL}=true",
            "--v=2",
        ]
        self._launch("kubelet", argv)

    def _node(self) -> dict[str, Any]:
        got = self.cluster.kubectl("get", "node", self.name, "-o", "json", check=False)
        return json.loads(got.stdout) if got.returncode == 0 else {}

    def _wait_ready(self) -> None:
        kubelet = self._components[-1]

        def ready() -> bool:
            conditions = (self._node().get("status") or {}).get("conditions") or []
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        self._wait(kubelet, ready)

    def _advertise(self) -> None:
        """Lifts the not-ready taint and patches the GPU capacity (the docs' way); waits
        until the kubelet's next status update carries it into allocatable."""
        self.cluster.kubectl(
            "taint", "node", self.name, "node.kubernetes.io/not-ready:NoSchedule-", check=False
        )
        patch = [{"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": str(self.gpus)}]
        self.cluster.kubectl(
            "patch", "node", self.name, "--subresource=status", "--type=json",
            "-p", json.dumps(patch),
        )  # fmt: skip

        def advertised() -> bool:
            status = self._node().get("status") or {}
            return (status.get("allocatable") or {}).get(GPU_RESOURCE) == str(self.gpus)

        self._wait(self._components[-1], advertised)

    def _launch(self, name: str, argv: list[str]) -> Component:
        component = Component(name, argv, self.logs_dir / f"{name}.log")
        component.start()
        self._components.append(component)
        return component

    def _wait(self, component: Component, ready: Any) -> None:
        deadline = time.monotonic() + self.start_timeout
        while True:
            code = component.returncode()
            if code is not None:
                raise RuntimeError(
                    f"{component.name} exited with code {code} while starting; last lines of "
                    f"{component.log_path}:\n{component.log_tail()}"
                )
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                if ready():
                    return
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"{component.name} was not ready after {self.start_timeout:.0f} s; last "
                    f"lines of {component.log_path}:\n{component.log_tail()}"
                )
            time.sleep(0.5)

    def check_alive(self) -> None:
        for component in self._components:
            code = component.returncode()
            if code is not None:
                raise RuntimeError(f"{component.name} exited unexpectedly with code {code}")

    # -- stop -----------------------------------------------------------------------------
    def stop(self) -> None:
        """Kills every container of the node (its cgroups), the shims, the kubelet and
        containerd; unmounts what they mounted under the node's directory; removes the
        cgroups and the bridge. Leaves the directory to the cluster's stop()."""
        for component in reversed(self._components):
            component.terminate()
        kill_node_leftovers(self.dir, self.cgroup, self.bridge)
        for component in reversed(self._components):
            component.stop(grace=10.0)
        self._components = []
        kill_node_leftovers(self.dir, self.cgroup, self.bridge)
        if self._kube_proxy is not None:  # its iptables chains, which outlive it
            self._cleanup_kube_proxy()
            self._kube_proxy = None
        # The unpacked images and the kubelet's volumes are big and tell nothing; the
        # logs (the cluster's logs/ and pod-logs/) stay with the work directory.
        for bulky in ("containerd", "kubelet", "images"):
            shutil.rmtree(self.dir / bulky, ignore_errors=True)


def _http_ok(url: str) -> bool:
    """Whether ``url`` (on loopback, never through a proxy) answers 200."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def _cgroup_pids(cgroup: str) -> set[int]:
    pids: set[int] = set()
    top = CGROUP_ROOT / "pids" / cgroup.lstrip("/")
    if top.is_dir():
        for procs in top.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(p) for p in procs.read_text().split())
    return pids


def reap_stale_nodes(parent: Path) -> list[str]:
    """What a killed run's node left behind (its containers, cgroups, bridge): the cgroup
    roots and bridges named after work directories in ``parent`` that are gone or whose
    owner process is dead. (Its mounts and shims go with the work directory, which
    process.reap_stale_workdirs unmounts and whose paths the shims' command lines name.)"""
    names = {p.name for p in CGROUP_ROOT.glob(f"*/{WORKDIR_PREFIX}*")}
    reaped = []
    for name in sorted(names):
        workdir = parent / name
        owners = [int(x) for x in _read(workdir / OWNER_FILE).split() if x.isdigit()]
        if workdir.is_dir() and (not owners or pid_alive(owners[0])):
            continue  # alive, or kept by a developer (kept ones have no owner file)
        kill_node_leftovers(workdir / "node", "/" + name, bridge_name(name))
        reaped.append(name)
    return reaped


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""


def kill_node_leftovers(node_dir: Path, cgroup: str, bridge: str) -> None:
    """Idempotent clean-up of what outlives containerd and kubelet: containers (found by
    their cgroups), runc shims (found by the socket path in their command line), mounts
    under ``node_dir``, the cgroups, the bridge."""
    marker = str(node_dir).encode()
    for _ in range(50):
        pids = _cgroup_pids(cgroup)
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    cmd = (entry / "cmdline").read_bytes()
                    if b"containerd-shim" in cmd and marker in cmd:
                        pids.add(int(entry.name))
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    unmount_under(node_dir)
    for controller in hierarchies():
        top = CGROUP_ROOT / controller / cgroup.lstrip("/")
        if top.is_dir():
            for path in sorted((p for p in top.rglob("*") if p.is_dir()), reverse=True):
                with contextlib.suppress(OSError):
                    path.rmdir()
            with contextlib.suppress(OSError):
                top.rmdir()
    subprocess.run(["ip", "link", "delete", bridge], capture_output=True, check=False)
