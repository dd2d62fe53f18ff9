"""`helm install`, `helm upgrade` and `helm uninstall` of charts/vllm-preflight on the real
control plane (the session's `k8s` fixture).

What this proves: the CRDs are served (get, explain, category), the operator's RBAC is
exactly what it needs (kubectl auth can-i as its ServiceAccount), the webhook
configurations reference the Service with a CA bundle that signed the serving certificate
for the Service's DNS names, the API server applies their selectors as intended (seen
through failurePolicy: a webhook that cannot be reached fails open under Ignore and denies
under Fail -- so a denial proves the request was routed to our entry), an upgrade keeps the
CA and serving certificate, and uninstall leaves no webhook configuration behind.

What it cannot prove here: no kubelet or kube-proxy run, so the operator pods stay Pending
and nothing reaches them through the Service; `helm test` runs on a real node in
tests/e2e/test_helm_test_real_node.py.

The tests of the class run in order on one release (install -> checks -> upgrade ->
uninstall). Its webhooks only match namespaces carrying this module's scope label, so other
tests of the session never meet them.
"""

from __future__ import annotations

import base64
import json
import secrets
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from preflight_dev.testing import Cluster, KubectlError, wait_for
from preflight_dev.testing.workloads import example_deployment, get_json

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "vllm-preflight"
OPT_IN = "vllm-preflight.io/inject"
SCOPE_LABEL = "e2e.vllm-preflight.io/chart-scope"
CHART_CRDS = (
    "gpuvalidations.vllm-preflight.io",
    "preflightpolicies.vllm-preflight.io",
)


@dataclass
class Release:
    name: str
    namespace: str
    fullname: str
    scope: str
    values: Path

    @property
    def sa(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.fullname}"

    @property
    def service_dns(self) -> str:
        return f"{self.fullname}.{self.namespace}.svc"


def webhook_state(k8s: Cluster, release: Release) -> dict[str, Any]:
    """caBundles of both configurations and the webhook Secrets' certificates."""
    bundles = set()
    for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
        cfg = get_json(k8s, kind, release.fullname)
        bundles |= {h["clientConfig"]["caBundle"] for h in cfg["webhooks"]}
    tls = get_json(k8s, "secret", f"{release.fullname}-webhook-tls", "-n", release.namespace)
    ca = get_json(k8s, "secret", f"{release.fullname}-webhook-ca", "-n", release.namespace)
    return {"bundles": bundles, "tls": tls["data"], "ca": ca["data"]}


def create_pod(
    k8s: Cluster, namespace: str, name: str, labels: dict[str, str] | None = None
) -> KubectlError | None:
    """Creates a bare Pod; returns the API server's refusal, or None when admitted."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": "registry.invalid/none:1"}]},
    }
    try:
        k8s.kubectl("create", "-f", "-", input=json.dumps(pod), timeout=60)
    except KubectlError as err:
        return err
    return None


@dataclass(frozen=True)
class Access:
    """One request to authorize; `ns` None means all namespaces, "{ns}" the release's."""

    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    name: str = ""
    ns: str | None = "default"


def can_i(k8s: Cluster, user: str, access: Access, release_ns: str) -> bool:
    """Asks the API server's authorizer (SubjectAccessReview) as `user` with its groups, the
    same question `kubectl auth can-i --as` asks, without depending on discovery (the
    LeaderWorkerSet CRD need not be installed for its RBAC rule to count)."""
    namespace = access.ns.format(ns=release_ns) if access.ns is not None else ""
    sa_namespace = user.split(":")[2]
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user,
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{sa_namespace}",
                "system:authenticated",
            ],
            "resourceAttributes": {
                "verb": access.verb,
                "group": access.group,
                "resource": access.resource,
                "subresource": access.subresource,
                "name": access.name.format(fullname=user.split(":")[3]),
                "namespace": namespace,
            },
        },
    }
    out = k8s.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(review)).stdout
    allowed: bool = json.loads(out)["status"].get("allowed", False)
    return allowed


@pytest.fixture(scope="module")
def release(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    # A letter first: hex like "82e303" is a number to Helm's YAML (a float in exponent
    # form), and the schema then refuses the label value (a flake CI once hit).
    scope = f"s{secrets.token_hex(3)}"
    namespace = k8s.create_namespace("vp-chart", labels={SCOPE_LABEL: scope})
    name = f"vp-{scope}"
    values = tmp_path_factory.mktemp("chart") / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "webhook": {
                    "namespaceSelectorExpressions": [
                        {"key": SCOPE_LABEL, "operator": "In", "values": [scope]}
                    ],
                    # nothing listens behind the Service here: fail fast
                    "mutating": {"timeoutSeconds": 3},
                    "validating": {"timeoutSeconds": 3},
                },
                # patch on workloads in `default` only (a Role there), never cluster-wide
                "rbac": {"workloadNamespaces": ["default"]},
            }
        )
    )
    rel = Release(name, namespace, f"{name}-vllm-preflight", scope, values)
    # Leave the session's cluster as found: CRDs this install creates are removed after.
    created_crds = [
        crd
        for crd in CHART_CRDS
        if not k8s.kubectl("get", "crd", crd, "--ignore-not-found", "-o", "name").stdout.strip()
    ]
    try:
        yield rel
    finally:
        k8s.helm("uninstall", name, "-n", namespace, "--wait", check=False)
        k8s.delete_namespace(namespace)
        if created_crds:
            k8s.kubectl("delete", "crd", *created_crds, "--wait=true", check=False, timeout=120)


@pytest.fixture(scope="module")
def scoped_namespaces(k8s: Cluster, release: Release) -> dict[str, str]:
    """Namespaces inside the release's test scope: opted in, and not opted in."""
    scope = {SCOPE_LABEL: release.scope}
    return {
        "opted-in": k8s.create_namespace("vp-in", labels={**scope, OPT_IN: "enabled"}),
        "plain": k8s.create_namespace("vp-plain", labels=scope),
        "opted-out": k8s.create_namespace("vp-out", labels={**scope, OPT_IN: "disabled"}),
    }


APPS, CRD_GROUP, LEASE_GROUP = "apps", "vllm-preflight.io", "coordination.k8s.io"
LWS = "leaderworkerset.x-k8s.io"
OPERATOR_MAY = [
    Access("list", "namespaces", ns=None),
    Access("watch", "namespaces", ns=None),
    Access("list", "pods", ns=None),
    Access("watch", "pods", ns=None),
    # the chain of uids a result counts through (issue 34): a Deployment's ReplicaSet, a
    # LeaderWorkerSet's leader pod, read by name
    Access("get", "replicasets", APPS),
    Access("get", "pods"),
    Access("create", "events"),
    Access("list", "services", ns=None),
    Access("watch", "services", ns=None),
    Access("get", "deployments", APPS),
    Access("patch", "deployments", APPS),
    Access("watch", "statefulsets", APPS, ns=None),
    Access("patch", "statefulsets", APPS),
    Access("patch", "jobs", "batch"),
    Access("list", "leaderworkersets", LWS, ns=None),
    Access("patch", "leaderworkersets", LWS),
    Access("create", "gpuvalidations", CRD_GROUP),
    Access("delete", "gpuvalidations", CRD_GROUP),
    Access("patch", "gpuvalidations", CRD_GROUP, subresource="status"),
    Access("watch", "preflightpolicies", CRD_GROUP, ns=None),
    Access("patch", "preflightpolicies", CRD_GROUP, subresource="status"),
    # leader election: the one Lease, in the release namespace
    Access("create", "leases", LEASE_GROUP, ns="{ns}"),
    Access("get", "leases", LEASE_GROUP, name="vllm-preflight", ns="{ns}"),
    Access("update", "leases", LEASE_GROUP, name="vllm-preflight", ns="{ns}"),
    Access("list", "customresourcedefinitions", "apiextensions.k8s.io", ns=None),
    # the fail-closed entry's namespace list, on its own configuration only
    Access(
        "get",
        "validatingwebhookconfigurations",
        "admissionregistration.k8s.io",
        name="{fullname}",
        ns=None,
    ),
    Access(
        "patch",
        "validatingwebhookconfigurations",
        "admissionregistration.k8s.io",
        name="{fullname}",
        ns=None,
    ),
]
OPERATOR_MAY_NOT = [
    Access("get", "secrets", ns="{ns}"),
    Access("list", "secrets", ns=None),
    Access("get", "secrets"),
    Access("create", "pods", subresource="exec"),
    Access("create", "pods"),
    Access("delete", "pods"),
    Access("patch", "pods"),
    Access("patch", "pods", subresource="status"),
    Access("delete", "deployments", APPS),
    Access("create", "deployments", APPS),
    Access("update", "deployments", APPS),
    Access("patch", "deployments", APPS, subresource="scale"),
    Access("list", "replicasets", APPS, ns=None),
    Access("get", "services"),
    Access("update", "gpuvalidations", CRD_GROUP),
    Access("update", "gpuvalidations", CRD_GROUP, subresource="status"),
    Access("deletecollection", "gpuvalidations", CRD_GROUP),
    Access("create", "preflightpolicies", CRD_GROUP),
    Access("patch", "preflightpolicies", CRD_GROUP),
    # kube-system's pod templates are not rewritable (rbac.workloadPatch: namespaces)
    Access("patch", "deployments", APPS, ns="kube-system"),
    Access("patch", "statefulsets", APPS, ns="kube-system"),
    Access("patch", "jobs", "batch", ns="kube-system"),
    Access("patch", "leaderworkersets", LWS, ns="kube-system"),
    Access("patch", "deployments", APPS, ns=None),
    Access("patch", "events"),
    Access("get", "configmaps"),
    Access("get", "configmaps", name="{fullname}", ns="{ns}"),
    Access("update", "leases", LEASE_GROUP, name="other", ns="{ns}"),
    Access("get", "leases", LEASE_GROUP, name="kube-scheduler", ns="kube-system"),
    Access("create", "leases", LEASE_GROUP, ns="kube-system"),
    Access("delete", "leases", LEASE_GROUP, name="vllm-preflight", ns="{ns}"),
    Access("patch", "mutatingwebhookconfigurations", "admissionregistration.k8s.io", ns=None),
    Access("create", "validatingwebhookconfigurations", "admissionregistration.k8s.io", ns=None),
    Access(
        "patch",
        "validatingwebhookconfigurations",
        "admissionregistration.k8s.io",
        name="other",
        ns=None,
    ),
    Access("patch", "validatingwebhookconfigurations", "admissionregistration.k8s.io", ns=None),
    Access("delete", "namespaces", ns=None),
    Access("get", "nodes", ns=None),
    Access("create", "serviceaccounts", subresource="token"),
    Access("impersonate", "users", ns=None),
    Access("bind", "clusterroles", "rbac.authorization.k8s.io", ns=None),
    Access("create", "customresourcedefinitions", "apiextensions.k8s.io", ns=None),
]


class TestHelmLifecycle:
    def test_install_prints_next_steps(self, k8s: Cluster, release: Release) -> None:
        out = k8s.helm(
            "install", release.name, str(CHART), "-n", release.namespace, "-f", str(release.values)
        ).stdout
        assert "STATUS: deployed" in out
        assert f"kubectl label namespace <your-vllm-namespace> {OPT_IN}=enabled" in out
        assert "kubectl get gpuvalidations -A" in out

    def test_crds_are_served(self, k8s: Cluster, release: Release) -> None:
        assert k8s.kubectl("get", "gpuval", "-A").returncode == 0
        assert k8s.kubectl("get", "preflight", "-A").returncode == 0  # category: both kinds

        def explain(field: str) -> str | None:
            # the API server publishes a new CRD's schema (OpenAPI) a moment after it is
            # served: kubectl explain says "couldn't find resource" until then
            result = k8s.kubectl("explain", field, check=False)
            return result.stdout if result.returncode == 0 else None

        explained = wait_for(lambda: explain("gpuvalidation.status"), what="the CRD's schema")
        assert "staticVerdict" in explained
        assert "runtimeVerdict" in explained
        assert "action" in (wait_for(lambda: explain("preflightpolicy.spec")) or "")
        assert not k8s.kubectl("get", "crd", "clusterkopfpeerings.kopf.dev",
                               "--ignore-not-found", "-o", "name").stdout.strip()  # fmt: skip

    def test_operator_pods_are_created_and_selected_by_the_service(
        self, k8s: Cluster, release: Release
    ) -> None:
        service = get_json(k8s, "service", release.fullname, "-n", release.namespace)
        selector = ",".join(f"{k}={v}" for k, v in service["spec"]["selector"].items())

        def two_pods() -> list[Any] | None:
            pods = get_json(k8s, "pods", "-n", release.namespace, "-l", selector)["items"]
            return pods if len(pods) == 2 else None

        pods = wait_for(two_pods, timeout=60, what="2 operator pods (replicaCount)")
        for pod in pods:  # admitted by the API server with the hardened spec intact
            assert pod["spec"]["serviceAccountName"] == release.fullname
            sc = pod["spec"]["containers"][0]["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True
        port = next(p for p in service["spec"]["ports"] if p["port"] == 443)
        assert port["targetPort"] == "webhook"

    def test_operator_may_do_what_it_needs(self, k8s: Cluster, release: Release) -> None:
        refused = [a for a in OPERATOR_MAY if not can_i(k8s, release.sa, a, release.namespace)]
        assert not refused, f"the operator lacks: {refused}"

    def test_operator_may_do_nothing_more(self, k8s: Cluster, release: Release) -> None:
        allowed = [a for a in OPERATOR_MAY_NOT if can_i(k8s, release.sa, a, release.namespace)]
        assert not allowed, f"the operator may do more than it needs: {allowed}"

    def test_helm_test_identity_only_reads_its_namespace(
        self, k8s: Cluster, release: Release
    ) -> None:
        user = f"system:serviceaccount:{release.namespace}:{release.fullname}-test"
        ns = release.namespace
        lease = Access("get", "leases", LEASE_GROUP, name="vllm-preflight", ns="{ns}")
        assert can_i(k8s, user, Access("list", "gpuvalidations", CRD_GROUP, ns="{ns}"), ns)
        assert can_i(k8s, user, lease, ns)
        assert not can_i(k8s, user, Access("update", "leases", LEASE_GROUP, ns="{ns}"), ns)
        assert not can_i(k8s, user, Access("list", "gpuvalidations", CRD_GROUP), ns)
        assert not can_i(k8s, user, Access("get", "secrets", ns="{ns}"), ns)

    def test_webhooks_reference_the_service_with_the_ca_of_the_serving_cert(
        self, k8s: Cluster, release: Release
    ) -> None:
        state = webhook_state(k8s, release)
        assert len(state["bundles"]) == 1
        ca = x509.load_pem_x509_certificate(base64.b64decode(next(iter(state["bundles"]))))
        served = x509.load_pem_x509_certificate(base64.b64decode(state["tls"]["tls.crt"]))
        assert served.issuer == ca.subject
        key = ca.public_key()  # Helm's genCA makes RSA keys
        assert isinstance(key, rsa.RSAPublicKey)
        assert served.signature_hash_algorithm is not None
        key.verify(  # raises InvalidSignature unless this CA signed it
            served.signature,
            served.tbs_certificate_bytes,
            padding.PKCS1v15(),
            served.signature_hash_algorithm,
        )
        sans = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert release.service_dns in sans.get_values_for_type(x509.DNSName)
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            for hook in get_json(k8s, kind, release.fullname)["webhooks"]:
                ref = hook["clientConfig"]["service"]
                assert (ref["name"], ref["namespace"], ref["port"]) == (
                    release.fullname,
                    release.namespace,
                    443,
                )

    def test_operator_runs_under_the_chart_rbac_and_passes_the_helm_test_script(
        self, k8s: Cluster, release: Release, tmp_path: Path
    ) -> None:
        """Plays kubelet and kube-proxy: runs the operator here as the chart's ServiceAccount
        with the release's ConfigMap and webhook Secret, then the release's `helm test`
        script as the test ServiceAccount against it. Proves the RBAC is enough for a real
        start (leader election, watches, priming) and that the serving certificate works."""
        ns = release.namespace
        config = tmp_path / "config.yaml"
        config.write_text(
            get_json(k8s, "configmap", release.fullname, "-n", ns)["data"]["config.yaml"]
        )
        certs = tmp_path / "certs"
        certs.mkdir()
        tls = get_json(k8s, "secret", f"{release.fullname}-webhook-tls", "-n", ns)["data"]
        for key in ("tls.crt", "tls.key", "ca.crt"):
            (certs / key).write_bytes(base64.b64decode(tls[key]))
        # A workload where the chart grants no patch (rbac.workloadNamespaces is `default`):
        # the operator judges it and must not send a patch its RBAC refuses (CI once saw a
        # 403 for such an object, left by another test).
        elsewhere = k8s.create_namespace("vp-rbac", labels={OPT_IN: "enabled"})
        k8s.apply(example_deployment("vllm-rbac", elsewhere))
        script = tmp_path / "helm-test.py"
        test_cm = get_json(k8s, "configmap", f"{release.fullname}-test", "-n", ns)
        script.write_text(test_cm["data"]["helm-test.py"])
        webhook, metrics, health = _free_ports(3)
        operator_kubeconfig = k8s.service_account_kubeconfig(ns, release.fullname)
        env = k8s.env(operator_kubeconfig) | {"POD_NAME": "operator-e2e-0", "POD_NAMESPACE": ns}
        log_path = tmp_path / "operator.log"
        with log_path.open("w") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "preflight_operator.cli", "operator",
                 f"--kubeconfig={operator_kubeconfig}", f"--config={config}",
                 f"--webhook-cert-dir={certs}", f"--webhook-port={webhook}",
                 f"--metrics-port={metrics}", f"--health-port={health}",
                 "--lease-name=vllm-preflight"],
                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        try:
            try:
                wait_for(
                    lambda: proc.poll() is None and _http_ok(f"http://127.0.0.1:{health}/healthz"),
                    timeout=60,
                    what="operator /healthz",
                )
            except TimeoutError as err:
                raise AssertionError(
                    f"{err}; operator log:\n{log_path.read_text()[-4000:]}"
                ) from err
            result = wait_for(
                lambda: _passes(self._helm_test(k8s, release, script, tmp_path, ports=(
                    webhook, metrics, health))),
                timeout=60,
                what="the helm test script to pass",
            )  # fmt: skip
            assert "5 passed, 0 failed" in result.stdout
            # annotations are patched before the status is written: once the status is
            # there, the patch was sent or (now) skipped
            wait_for(
                lambda: (get_json(k8s, "gpuval", "-n", elsewhere)["items"] or [{}])[0]
                .get("status", {}).get("staticVerdict"),
                timeout=60, what="the other namespace's workload to be judged",
            )  # fmt: skip
        finally:
            k8s.delete_namespace(elsewhere)
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        operator_log = log_path.read_text()
        assert "Forbidden" not in operator_log, operator_log[-4000:]
        assert " 403" not in operator_log, operator_log[-4000:]

    @staticmethod
    def _helm_test(
        k8s: Cluster, release: Release, script: Path, tmp: Path, ports: tuple[int, int, int]
    ) -> subprocess.CompletedProcess[str]:
        webhook, metrics, health = ports
        kubeconfig = yaml.safe_load(
            k8s.service_account_kubeconfig(
                release.namespace, f"{release.fullname}-test"
            ).read_text()
        )
        cluster = kubeconfig["clusters"][0]["cluster"]
        sa_dir = tmp / "serviceaccount"
        sa_dir.mkdir(exist_ok=True)
        (sa_dir / "token").write_text(kubeconfig["users"][0]["user"]["token"])
        (sa_dir / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
        host, _, port = cluster["server"].removeprefix("https://").rpartition(":")
        env = {
            "PATH": "/usr/bin:/bin",
            "NO_PROXY": "127.0.0.1",
            "NAMESPACE": release.namespace,
            "HEALTH_URL": f"http://127.0.0.1:{health}/healthz",
            "METRICS_URL": f"http://127.0.0.1:{metrics}/metrics",
            "WEBHOOK_ADDR": f"127.0.0.1:{webhook}",
            "WEBHOOK_SERVER_NAME": release.service_dns,
            "CA_FILE": str(tmp / "certs" / "ca.crt"),
            "LEASE_NAME": "vllm-preflight",
            "KUBERNETES_SERVICE_HOST": host,
            "KUBERNETES_SERVICE_PORT": port,
            "SA_DIR": str(sa_dir),
        }
        return subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60,
            check=False,
        )  # fmt: skip

    def test_unreachable_webhooks_fail_open_by_default(
        self, k8s: Cluster, release: Release, scoped_namespaces: dict[str, str]
    ) -> None:
        assert create_pod(k8s, scoped_namespaces["opted-in"], "fail-open") is None

    def test_upgrade_keeps_ca_and_serving_certificate(self, k8s: Cluster, release: Release) -> None:
        before = webhook_state(k8s, release)
        out = k8s.helm(
            "upgrade", release.name, str(CHART), "-n", release.namespace,
            "-f", str(release.values), "--set", "webhook.validating.failurePolicy=Fail",
        ).stdout  # fmt: skip
        assert "STATUS: deployed" in out
        after = webhook_state(k8s, release)
        assert after == before, "helm upgrade changed the webhook CA or serving certificate"
        cfg = get_json(k8s, "validatingwebhookconfiguration", release.fullname)
        policies = {h["name"]: h["failurePolicy"] for h in cfg["webhooks"]}
        # pods/status is always Ignore: the kubelet's status writes pass there (issue 34)
        assert policies.pop("provenance-status.validate.vllm-preflight.io") == "Ignore"
        assert set(policies.values()) == {"Fail"}

    def test_upgrade_near_expiry_re_signs_the_serving_cert_with_the_same_ca(
        self, k8s: Cluster, release: Release
    ) -> None:
        before = webhook_state(k8s, release)
        # renewBeforeDays beyond the certificate's validity: "expires soon" right now
        k8s.helm(
            "upgrade", release.name, str(CHART), "-n", release.namespace, "--reuse-values",
            "--set", "webhook.certs.selfSigned.renewBeforeDays=4000",
        )  # fmt: skip
        after = webhook_state(k8s, release)
        assert after["bundles"] == before["bundles"], "renewal changed the caBundle"
        assert after["ca"] == before["ca"]
        assert after["tls"]["tls.crt"] != before["tls"]["tls.crt"], "serving cert not renewed"
        ca = x509.load_pem_x509_certificate(base64.b64decode(after["ca"]["tls.crt"]))
        served = x509.load_pem_x509_certificate(base64.b64decode(after["tls"]["tls.crt"]))
        assert served.issuer == ca.subject
        key = ca.public_key()
        assert isinstance(key, rsa.RSAPublicKey)
        assert served.signature_hash_algorithm is not None
        key.verify(
            served.signature,
            served.tbs_certificate_bytes,
            padding.PKCS1v15(),
            served.signature_hash_algorithm,
        )

    def test_api_server_routes_exactly_the_opted_in_objects_to_the_webhooks(
        self, k8s: Cluster, release: Release, scoped_namespaces: dict[str, str]
    ) -> None:
        """Under failurePolicy Fail an unreachable webhook denies: a denial naming our entry
        proves the API server sent that request to it, an admission proves it did not."""
        opted_in, plain = scoped_namespaces["opted-in"], scoped_namespaces["plain"]
        opted_out = scoped_namespaces["opted-out"]
        k8s.kubectl("label", "namespace", release.namespace, f"{OPT_IN}=enabled")
        cases = {
            # (namespace, pod labels) -> the entry expected to deny, or None (admitted)
            (opted_in, ()): "namespace.validate.vllm-preflight.io",
            (opted_in, ((OPT_IN, "disabled"),)): None,
            (plain, ()): None,
            (plain, ((OPT_IN, "enabled"),)): "object.validate.vllm-preflight.io",
            (opted_out, ((OPT_IN, "enabled"),)): None,
            (release.namespace, ((OPT_IN, "enabled"),)): None,  # release namespace: never
        }
        wrong = []
        for i, ((namespace, labels), expected) in enumerate(cases.items()):
            err = create_pod(k8s, namespace, f"route-{i}", dict(labels))
            denied_by = None
            if err is not None:
                denied_by = next((n for n in _entry_names() if n in err.stderr), err.stderr)
            if denied_by != expected:
                wrong.append(f"{namespace} {dict(labels)}: expected {expected}, got {denied_by}")
        assert not wrong, "\n".join(wrong)

    def test_uninstall_leaves_nothing_that_could_block_pods(
        self, k8s: Cluster, release: Release, scoped_namespaces: dict[str, str]
    ) -> None:
        k8s.helm("uninstall", release.name, "-n", release.namespace, "--wait")
        for kind in (
            "mutatingwebhookconfiguration",
            "validatingwebhookconfiguration",
            "clusterrole",
            "clusterrolebinding",
        ):
            for name in (release.fullname, f"{release.fullname}-test"):
                found = k8s.kubectl("get", kind, name, "--ignore-not-found", "-o", "name")
                assert not found.stdout.strip(), f"{kind} {name} left behind"
        left = k8s.kubectl(
            "get", "deployments,services,secrets,configmaps,serviceaccounts,roles,rolebindings,"
            "poddisruptionbudgets", "-n", release.namespace,
            "-l", f"app.kubernetes.io/instance={release.name}", "-o", "name",
        ).stdout.strip()  # fmt: skip
        assert not left, f"left behind: {left}"
        assert create_pod(k8s, scoped_namespaces["opted-in"], "after-uninstall") is None
        # CRDs stay by Helm's design (docs/INSTALL.md says how to remove them).
        assert k8s.kubectl("get", "crd", "gpuvalidations.vllm-preflight.io").returncode == 0


def _entry_names() -> list[str]:
    return [
        f"{scope}.{kind}.vllm-preflight.io"
        for scope in ("namespace", "object")
        for kind in ("validate", "mutate-pods")
    ]


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _passes(
    result: subprocess.CompletedProcess[str],
) -> subprocess.CompletedProcess[str] | None:
    return result if result.returncode == 0 else None


def _free_ports(count: int) -> list[int]:
    """Distinct loopback ports nobody listens on right now."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()
