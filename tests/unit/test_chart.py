"""The Helm chart, rendered with `helm template` (no cluster): lint, the strict values
schema, and the objects each values file in tests/data/chart-values produces.

Needs the pinned helm binary (hack/k8s/build.sh, cached); skipped when it cannot be had.
"""

from __future__ import annotations

import base64
import functools
import json
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from preflight_dev.testing import BinariesNotFound, find_bin_dir

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "vllm-preflight"
VALUES_DIR = REPO / "tests" / "data" / "chart-values"
NAMESPACE = "gpu-system"
RELEASE = "vllm-preflight"
FULLNAME = "vllm-preflight"  # the release name contains the chart name
SERVICE_DNS = f"{FULLNAME}.{NAMESPACE}.svc"
KUBE_VERSION = "1.34.4"
SYSTEM_NAMESPACES = {"kube-system", "kube-public", "kube-node-lease"}
OPT_IN = "vllm-preflight.io/inject"

Manifest = dict[str, Any]


# -- helpers ---------------------------------------------------------------------------------
@functools.cache
def helm_binary() -> str:
    try:
        return str(find_bin_dir() / "helm")
    except BinariesNotFound as err:  # pragma: no cover - depends on the machine
        pytest.skip(f"no helm binary: {err}")


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [helm_binary(), *args], capture_output=True, text=True, timeout=120, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{result.stderr}")
    return result


def values_args(values: Sequence[str], sets: Sequence[str]) -> list[str]:
    args: list[str] = []
    for name in values:
        args += ["-f", str(VALUES_DIR / name)]
    for item in sets:
        args += ["--set", item]
    return args


@functools.cache
def _render(values: tuple[str, ...], sets: tuple[str, ...]) -> tuple[Manifest, ...]:
    out = helm(
        "template", RELEASE, str(CHART), "--namespace", NAMESPACE,
        "--kube-version", KUBE_VERSION, "--include-crds", *values_args(values, sets),
    ).stdout  # fmt: skip
    return tuple(doc for doc in yaml.safe_load_all(out) if doc)


def render(*values: str, sets: Sequence[str] = ()) -> list[Manifest]:
    """The chart's objects for these values files (names in tests/data/chart-values)."""
    return list(_render(tuple(values), tuple(sets)))


def render_error(*values: str, sets: Sequence[str] = ()) -> str:
    result = helm(
        "template", RELEASE, str(CHART), "--namespace", NAMESPACE,
        "--kube-version", KUBE_VERSION, *values_args(values, sets), check=False,
    )  # fmt: skip
    assert result.returncode != 0, "helm template accepted values it must reject"
    return result.stderr


def find(objs: Iterable[Manifest], kind: str, name: str | None = None) -> list[Manifest]:
    return [
        o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
    ]


def one(objs: Iterable[Manifest], kind: str, name: str | None = None) -> Manifest:
    found = find(objs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {len(found)}"
    return found[0]


def operator_container(objs: Iterable[Manifest]) -> Manifest:
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    container: Manifest = pod["containers"][0]
    return container


def webhook_configs(objs: Iterable[Manifest]) -> list[Manifest]:
    return find(objs, "MutatingWebhookConfiguration") + find(objs, "ValidatingWebhookConfiguration")


def all_webhooks(objs: Iterable[Manifest]) -> list[Manifest]:
    return [hook for cfg in webhook_configs(objs) for hook in cfg["webhooks"]]


PROVENANCE = "provenance.validate.vllm-preflight.io"
PROVENANCE_STATUS = "provenance-status.validate.vllm-preflight.io"
GUARDS = frozenset({PROVENANCE, PROVENANCE_STATUS})  # pods, and pods/status apart


ENFORCE_ENTRY = "enforce.validate.vllm-preflight.io"
SENTINEL = "none.vllm-preflight.io"


def scoped_webhooks(objs: Iterable[Manifest]) -> list[Manifest]:
    """The opt-in scoped entries: every webhook but the provenance guards and the
    fail-closed entry (TestFailClosedUnderEnforce)."""
    return [hook for hook in all_webhooks(objs) if hook["name"] not in GUARDS | {ENFORCE_ENTRY}]


def expressions(selector: Manifest) -> dict[str, tuple[str, frozenset[str]]]:
    """Key -> (operator, values); the fail-closed list the operator keeps (its first value
    the sentinel) is left out: sentinel_list() reads it."""
    return {
        e["key"]: (e["operator"], frozenset(e.get("values", [])))
        for e in selector["matchExpressions"]
        if (e.get("values") or [""])[0] != SENTINEL
    }


def sentinel_list(selector: Manifest) -> tuple[str, list[str]] | None:
    for e in selector["matchExpressions"]:
        if (e.get("values") or [""])[0] == SENTINEL:
            return e["operator"], e["values"]
    return None


def rule_set(rules: Iterable[Manifest]) -> set[tuple[str, str, str]]:
    """Flattened (apiGroup, resource[/resourceName], verb) triples of RBAC rules."""
    out: set[tuple[str, str, str]] = set()
    for rule in rules:
        names = rule.get("resourceNames") or [""]
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for name in names:
                    res = f"{resource}/{name}" if name else resource
                    out |= {(group, res, verb) for verb in rule["verbs"]}
    return out


def load_cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def assert_signed_by(cert: x509.Certificate, ca: x509.Certificate) -> None:
    """Raises unless `ca`'s key signed `cert` (InvalidSignature)."""
    key = ca.public_key()
    assert cert.signature_hash_algorithm is not None
    if isinstance(key, rsa.RSAPublicKey):
        key.verify(
            cert.signature,
            cert.tbs_certificate_bytes,
            padding.PKCS1v15(),
            cert.signature_hash_algorithm,
        )
    else:
        assert isinstance(key, ec.EllipticCurvePublicKey)
        key.verify(
            cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm)
        )


# -- lint and schema -----------------------------------------------------------------------
VALID_VALUES = sorted(p.name for p in VALUES_DIR.glob("*.yaml") if not p.name.startswith("invalid"))


class TestLintAndSchema:
    @pytest.mark.parametrize("values", [None, *VALID_VALUES])
    def test_helm_lint_strict_passes(self, values: str | None) -> None:
        args = ["lint", "--strict", str(CHART), "--namespace", NAMESPACE]
        if values:
            args += ["-f", str(VALUES_DIR / values)]
        out = helm(*args).stdout
        assert "0 chart(s) failed" in out

    def test_misspelled_nested_key_is_rejected_naming_it(self) -> None:
        err = render_error("invalid-misspelled-key.yaml")
        assert "failurPolicy" in err
        assert "additional properties" in err.lower() or "additionalproperties" in err.lower()

    def test_misspelled_top_level_key_is_rejected(self) -> None:
        err = render_error(sets=["replicas=3"])
        assert "replicas" in err

    def test_wrong_enum_value_is_rejected(self) -> None:
        err = render_error(sets=["defaultPolicy.action=Block"])
        assert "action" in err
        assert "Enforce" in err  # the message lists the allowed values

    def test_ha_without_leader_election_is_refused_with_the_reason(self) -> None:
        err = render_error("invalid-ha-without-leader-election.yaml")
        assert "leaderElection.enabled=true" in err

    def test_lease_timings_that_could_make_two_writers_are_refused(self) -> None:
        err = render_error(sets=["leaderElection.renewDeadlineSeconds=15"])
        assert "renewDeadlineSeconds must be shorter than" in err
        err = render_error(sets=["leaderElection.retryPeriodSeconds=10"])
        assert "retryPeriodSeconds must be shorter than" in err

    def test_every_documented_value_is_in_the_schema(self) -> None:
        """Each key of values.yaml is typed in values.schema.json (and nothing more)."""
        values = yaml.safe_load((CHART / "values.yaml").read_text())
        schema = json.loads((CHART / "values.schema.json").read_text())

        def walk(vals: Any, node: Manifest, path: str) -> None:
            if node.get("type") != "object" or "properties" not in node:
                return
            assert node.get("additionalProperties") is False, f"{path or '.'} is not strict"
            assert isinstance(vals, dict)
            missing = set(vals) - set(node["properties"])
            assert not missing, f"{path}: {missing} not in the schema"
            for key, sub in node["properties"].items():
                if key in vals:
                    walk(vals[key], sub, f"{path}.{key}")

        walk(values, schema, "")

    def test_every_value_has_a_comment(self) -> None:
        """Every leaf of values.yaml has a `# --` comment above it, or sits in a block that
        has one (Kubernetes-typed blocks such as resources are documented as a whole)."""
        lines = (CHART / "values.yaml").read_text().splitlines()
        undocumented: list[str] = []
        parents: list[tuple[int, bool]] = []  # (indent, documented) of the open blocks
        for i, line in enumerate(lines):
            text = line.strip()
            if not text or text.startswith(("#", "-")) or ":" not in text:
                continue
            indent = len(line) - len(line.lstrip())
            while parents and parents[-1][0] >= indent:
                parents.pop()
            comments = []
            j = i - 1
            while j >= 0 and lines[j].strip().startswith("#"):
                comments.append(lines[j].strip())
                j -= 1
            documented = any(c.startswith("# --") for c in comments)
            key, _, rest = text.partition(":")
            if rest.strip():
                if not documented and not any(doc for _, doc in parents):
                    undocumented.append(key)
            else:
                parents.append((indent, documented))
        assert not undocumented, f"values without a `# --` comment: {undocumented}"


# -- webhooks --------------------------------------------------------------------------------
class TestWebhookSelectors:
    def test_every_entry_excludes_system_and_release_namespaces(self) -> None:
        hooks = all_webhooks(render())
        # (mutating, validating) x (namespace opt-in, pod opt-in), the provenance guard
        # (pods, and pods/status apart) and the fail-closed entry
        assert len(hooks) == 7
        for hook in hooks:
            op, names = expressions(hook["namespaceSelector"])["kubernetes.io/metadata.name"]
            assert op == "NotIn"
            assert names >= SYSTEM_NAMESPACES | {NAMESPACE}, hook["name"]

    def test_namespace_entries_need_the_opt_in_label_and_honour_the_pod_opt_out(self) -> None:
        for hook in all_webhooks(render()):
            if not hook["name"].startswith("namespace."):
                continue
            assert expressions(hook["namespaceSelector"])[OPT_IN] == ("In", {"enabled"})
            assert expressions(hook["objectSelector"])[OPT_IN] == ("NotIn", {"disabled"})

    def test_pod_opt_in_entries_cover_only_namespaces_neither_in_nor_out(self) -> None:
        for hook in all_webhooks(render()):
            if not hook["name"].startswith("object."):
                continue
            ns = expressions(hook["namespaceSelector"])[OPT_IN]
            assert ns == ("NotIn", {"enabled", "disabled"})
            assert expressions(hook["objectSelector"])[OPT_IN] == ("In", {"enabled"})

    def test_pod_opt_in_can_be_turned_off(self) -> None:
        hooks = scoped_webhooks(render("single-replica.yaml"))
        assert [h["name"].split(".")[0] for h in hooks] == ["namespace", "namespace"]

    def test_extra_exclusions_and_expressions_are_added_to_every_entry(self) -> None:
        for hook in all_webhooks(render("production.yaml")):
            exprs = expressions(hook["namespaceSelector"])
            assert "monitoring" in exprs["kubernetes.io/metadata.name"][1]
            if hook["name"] in GUARDS:
                # a forged pod may sit in any namespace: only the exclusions apply
                assert set(exprs) == {"kubernetes.io/metadata.name"}
                continue
            assert exprs["team"] == ("Exists", frozenset())
            assert OPT_IN in exprs  # the opt-in is kept, not replaced

    def test_release_namespace_is_excluded_even_when_the_list_is_emptied(self) -> None:
        objs = render(sets=["webhook.excludedNamespaces=null"])
        for hook in all_webhooks(objs):
            assert (
                NAMESPACE
                in expressions(hook["namespaceSelector"])["kubernetes.io/metadata.name"][1]
            )


class TestFailClosedUnderEnforce:
    """Issue 34: a Fail entry for exactly the namespaces under Enforce (an operator-kept
    list, empty at install), which the Ignore namespace entry leaves out."""

    def test_the_fail_entry_starts_empty_and_the_ignore_entry_leaves_its_list_out(self) -> None:
        hooks = {h["name"]: h for h in all_webhooks(render())}
        enforce = hooks[ENFORCE_ENTRY]
        assert enforce["failurePolicy"] == "Fail"
        assert enforce["clientConfig"]["service"]["path"] == "/validate-enforce"
        assert sentinel_list(enforce["namespaceSelector"]) == ("In", [SENTINEL])
        exprs = expressions(enforce["namespaceSelector"])
        assert exprs[OPT_IN] == ("In", {"enabled"})
        assert exprs["kubernetes.io/metadata.name"][1] >= SYSTEM_NAMESPACES | {NAMESPACE}
        assert expressions(enforce["objectSelector"])[OPT_IN] == ("NotIn", {"disabled"})
        namespace = hooks["namespace.validate.vllm-preflight.io"]
        assert sentinel_list(namespace["namespaceSelector"]) == ("NotIn", [SENTINEL])
        assert enforce["rules"] == namespace["rules"]
        # the mutating entries and the pod opt-in entry are not touched
        for name, hook in hooks.items():
            if name not in (ENFORCE_ENTRY, "namespace.validate.vllm-preflight.io"):
                assert sentinel_list(hook["namespaceSelector"]) is None, name

    def test_the_operator_may_patch_only_its_own_configuration(self) -> None:
        objs = render()
        assert f"--webhook-configuration={FULLNAME}" in operator_container(objs)["args"]
        rules = one(objs, "ClusterRole")["rules"]
        admission = [r for r in rules if "admissionregistration.k8s.io" in r["apiGroups"]]
        assert admission == [
            {
                "apiGroups": ["admissionregistration.k8s.io"],
                "resources": ["validatingwebhookconfigurations"],
                "resourceNames": [FULLNAME],
                "verbs": ["get", "patch"],
            }
        ]

    def test_it_can_be_turned_off(self) -> None:
        objs = render(sets=["webhook.validating.failClosedUnderEnforce=false"])
        assert ENFORCE_ENTRY not in {h["name"] for h in all_webhooks(objs)}
        assert not [a for a in operator_container(objs)["args"] if "webhook-configuration" in a]
        for hook in all_webhooks(objs):
            assert sentinel_list(hook["namespaceSelector"]) is None


class TestWebhookBehaviour:
    def test_failure_policy_defaults_to_ignore_fail_open(self) -> None:
        """Ignore everywhere but the fail-closed entry (TestFailClosedUnderEnforce)."""
        for hook in all_webhooks(render()):
            wanted = "Fail" if hook["name"] == ENFORCE_ENTRY else "Ignore"
            assert hook["failurePolicy"] == wanted, hook["name"]
            # pods/status: 3 s whatever the values say (test_the_provenance_guard_...)
            assert hook["timeoutSeconds"] == (3 if hook["name"] == PROVENANCE_STATUS else 10)

    def test_failure_policy_and_timeout_are_configurable_per_kind(self) -> None:
        objs = render("production.yaml")
        for hook in one(objs, "MutatingWebhookConfiguration")["webhooks"]:
            assert (hook["failurePolicy"], hook["timeoutSeconds"]) == ("Ignore", 5)
        for hook in one(objs, "ValidatingWebhookConfiguration")["webhooks"]:
            if hook["name"] == PROVENANCE_STATUS:
                continue  # never configurable: the kubelet's status writes pass there
            assert (hook["failurePolicy"], hook["timeoutSeconds"]) == ("Fail", 15)

    def test_injection_mutates_pod_creation_only_at_mutate_pods(self) -> None:
        mutating = one(render(), "MutatingWebhookConfiguration")
        for hook in mutating["webhooks"]:
            assert hook["rules"] == [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["pods"],
                    "scope": "Namespaced",
                }
            ]
            assert hook["clientConfig"]["service"]["path"] == "/mutate-pods"
            assert hook["sideEffects"] == "None"
            assert hook["reinvocationPolicy"] == "Never"

    def test_validation_covers_every_workload_kind_on_create_and_update(self) -> None:
        validating = one(render(), "ValidatingWebhookConfiguration")
        for hook in validating["webhooks"]:
            if hook["name"] in GUARDS:
                continue
            covered = {
                (group, version, resource)
                for rule in hook["rules"]
                if rule["operations"] == ["CREATE", "UPDATE"]
                for group in rule["apiGroups"]
                for version in rule["apiVersions"]
                for resource in rule["resources"]
            }
            assert covered == {
                ("apps", "v1", "deployments"),
                ("apps", "v1", "statefulsets"),
                ("batch", "v1", "jobs"),
                ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
                ("", "v1", "pods"),
                *{(g, "*", r) for g, r in WRAPPERS},
            }
            path = "/validate-enforce" if hook["name"] == ENFORCE_ENTRY else "/validate"
            assert hook["clientConfig"]["service"]["path"] == path
            # it records results, so it must skip side effects on dry runs
            assert hook["sideEffects"] == "NoneOnDryRun"

    def test_entries_call_the_chart_service_on_443(self) -> None:
        objs = render()
        service = one(objs, "Service")
        port = next(p for p in service["spec"]["ports"] if p["port"] == 443)
        assert port["targetPort"] == "webhook"
        for hook in all_webhooks(objs):
            ref = hook["clientConfig"]["service"]
            assert (ref["name"], ref["namespace"], ref["port"]) == (FULLNAME, NAMESPACE, 443)
            assert hook["admissionReviewVersions"] == ["v1"]
            assert len(hook["name"].split(".")) >= 3


# -- certificates ----------------------------------------------------------------------------
class TestSelfSignedCertificates:
    def test_every_entry_carries_one_ca_that_signed_the_serving_cert(self) -> None:
        objs = render()
        bundles = {h["clientConfig"]["caBundle"] for h in all_webhooks(objs)}
        assert len(bundles) == 1, "the webhook entries disagree on the CA"
        ca = load_cert(base64.b64decode(bundles.pop()))
        tls = one(objs, "Secret", f"{FULLNAME}-webhook-tls")
        assert tls["type"] == "kubernetes.io/tls"
        served = load_cert(base64.b64decode(tls["data"]["tls.crt"]))
        assert load_cert(base64.b64decode(tls["data"]["ca.crt"])) == ca
        assert served.issuer == ca.subject
        assert_signed_by(served, ca)
        basic = ca.extensions.get_extension_for_class(x509.BasicConstraints).value
        assert basic.ca

    def test_serving_cert_names_the_service_as_the_api_server_dials_it(self) -> None:
        tls = one(render(), "Secret", f"{FULLNAME}-webhook-tls")
        served = load_cert(base64.b64decode(tls["data"]["tls.crt"]))
        sans = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = set(sans.get_values_for_type(x509.DNSName))
        assert names == {
            FULLNAME,
            f"{FULLNAME}.{NAMESPACE}",
            SERVICE_DNS,
            f"{SERVICE_DNS}.cluster.local",
        }
        usage = served.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert ExtendedKeyUsageOID.SERVER_AUTH in usage
        annotations = tls["metadata"]["annotations"]
        assert int(annotations["vllm-preflight.io/not-after"]) > 0
        assert SERVICE_DNS in annotations["vllm-preflight.io/dns-names"]

    def test_ca_key_lives_apart_and_is_never_mounted(self) -> None:
        objs = render()
        ca_secret = one(objs, "Secret", f"{FULLNAME}-webhook-ca")
        assert "tls.key" in ca_secret["data"]
        tls = one(objs, "Secret", f"{FULLNAME}-webhook-tls")
        assert tls["data"]["tls.crt"] != ca_secret["data"]["tls.crt"]
        mounted = [
            v["secret"]["secretName"]
            for o in find(objs, "Deployment") + find(objs, "Pod")
            for v in o["spec"].get("template", o)["spec"]["volumes"]
            if "secret" in v
        ]
        assert f"{FULLNAME}-webhook-ca" not in mounted
        assert mounted.count(f"{FULLNAME}-webhook-tls") == 2  # operator + helm test (ca.crt)

    def test_operator_mounts_the_serving_secret_where_the_contract_says(self) -> None:
        objs = render()
        pod = one(objs, "Deployment")["spec"]["template"]["spec"]
        certs = next(v for v in pod["volumes"] if v["name"] == "certs")
        assert certs["secret"]["secretName"] == f"{FULLNAME}-webhook-tls"
        assert {i["key"] for i in certs["secret"]["items"]} == {"tls.crt", "tls.key"}
        mount = next(m for m in operator_container(objs)["volumeMounts"] if m["name"] == "certs")
        assert mount["mountPath"] == "/etc/vllm-preflight/certs"
        assert "--webhook-cert-dir=/etc/vllm-preflight/certs" in operator_container(objs)["args"]

    def test_client_auth_mounts_the_ca_and_passes_the_flag_only_when_asked(self) -> None:
        """webhook.clientAuth.caConfigMap (issue 34 item 6): the port answers only callers
        with a certificate that CA signed; off by default (the API server must be set up)."""
        flag = "--webhook-client-ca=/etc/vllm-preflight/client-ca/ca.crt"
        assert flag not in operator_container(render())["args"]
        objs = render(sets=["webhook.clientAuth.caConfigMap=apiserver-webhook-client-ca"])
        container = operator_container(objs)
        assert flag in container["args"]
        mount = next(m for m in container["volumeMounts"] if m["name"] == "client-ca")
        assert mount == {
            "name": "client-ca",
            "mountPath": "/etc/vllm-preflight/client-ca",
            "readOnly": True,
        }
        pod = one(objs, "Deployment")["spec"]["template"]["spec"]
        volume = next(v for v in pod["volumes"] if v["name"] == "client-ca")
        assert volume["configMap"] == {
            "name": "apiserver-webhook-client-ca",
            "items": [{"key": "ca.crt", "path": "ca.crt"}],
        }
        assert "caConfigMap" in render_error(sets=["webhook.clientAuth.caConfigMap=Bad_Name"])


class TestCertManager:
    def test_ca_is_injected_by_cert_manager_and_the_chart_renders_no_secret(self) -> None:
        objs = render("cert-manager.yaml")
        assert not find(objs, "Secret")
        for cfg in webhook_configs(objs):
            assert cfg["metadata"]["annotations"] == {
                "cert-manager.io/inject-ca-from": f"{NAMESPACE}/{FULLNAME}-webhook"
            }
            for hook in cfg["webhooks"]:
                assert "caBundle" not in hook["clientConfig"]

    def test_certificate_writes_the_secret_the_operator_mounts(self) -> None:
        objs = render("cert-manager.yaml")
        cert = one(objs, "Certificate", f"{FULLNAME}-webhook")
        assert cert["spec"]["secretName"] == f"{FULLNAME}-webhook-tls"
        assert SERVICE_DNS in cert["spec"]["dnsNames"]
        assert cert["spec"]["issuerRef"] == {
            "name": f"{FULLNAME}-ca",
            "kind": "Issuer",
            "group": "cert-manager.io",
        }
        # a CA chain, so that renewing the serving certificate keeps the caBundle
        ca = one(objs, "Certificate", f"{FULLNAME}-ca")
        assert ca["spec"]["isCA"] is True
        assert {i["metadata"]["name"] for i in find(objs, "Issuer")} == {
            f"{FULLNAME}-selfsigned",
            f"{FULLNAME}-ca",
        }

    def test_an_existing_issuer_replaces_the_chart_ca(self) -> None:
        objs = render("cert-manager-issuer.yaml")
        assert not find(objs, "Issuer")
        cert = one(objs, "Certificate")
        assert cert["spec"]["issuerRef"] == {
            "name": "corp-ca",
            "kind": "ClusterIssuer",
            "group": "cert-manager.io",
        }
        assert (cert["spec"]["duration"], cert["spec"]["renewBefore"]) == ("720h", "240h")


# -- the operator Deployment ---------------------------------------------------------------
class TestOperatorDeployment:
    def test_security_context_is_hardened_by_default(self) -> None:
        objs = render()
        pod = one(objs, "Deployment")["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        sc = operator_container(objs)["securityContext"]
        assert sc["runAsNonRoot"] is True
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
        writable = {m["mountPath"] for m in operator_container(objs)["volumeMounts"]} - {
            "/etc/vllm-preflight/config.yaml",
            "/etc/vllm-preflight/certs",
        }
        assert writable == {"/tmp"}

    def test_probes_hit_healthz_on_the_health_port(self) -> None:
        container = operator_container(render())
        health = next(p for p in container["ports"] if p["name"] == "health")
        assert health["containerPort"] == 8081
        for probe in ("livenessProbe", "readinessProbe"):
            assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
        assert "--health-port=8081" in container["args"]

    def test_pod_identity_comes_from_the_downward_api(self) -> None:
        env = {e["name"]: e for e in operator_container(render())["env"]}
        assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
        assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"

    def test_runs_the_operator_subcommand_with_the_contract_flags(self) -> None:
        container = operator_container(render())
        assert container["command"] == ["vllm-preflight"]
        assert container["args"] == [
            "operator",
            "--config=/etc/vllm-preflight/config.yaml",
            "--webhook-port=9443",
            "--webhook-cert-dir=/etc/vllm-preflight/certs",
            "--metrics-port=8080",
            "--health-port=8081",
            "--webhook-configuration=vllm-preflight",
            "--kind-families=kuberay,aibrix,kserve,kubeai,production-stack,dynamo,jobset,kthena,"
            "volcano,rbg",
            "--lease-name=vllm-preflight",
            "--lease-duration=15",
            "--renew-deadline=10",
            "--retry-period=2",
        ]

    def test_scheduling_values_reach_the_pod(self) -> None:
        objs = render("production.yaml")
        pod = one(objs, "Deployment")["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"node-role.kubernetes.io/control-plane-apps": "true"}
        assert pod["tolerations"][0]["key"] == "dedicated"
        assert pod["priorityClassName"] == "system-cluster-critical"
        assert pod["imagePullSecrets"] == [{"name": "regcred"}]
        container = operator_container(objs)
        assert container["image"] == (
            "registry.example.com/vllm-preflight/operator@sha256:" + "0123456789abcdef" * 4
        )
        assert container["imagePullPolicy"] == "Always"

    def test_default_affinity_spreads_replicas_over_nodes(self) -> None:
        objs = render()
        affinity = one(objs, "Deployment")["spec"]["template"]["spec"]["affinity"]
        term = affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
        assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
        selector = one(objs, "Deployment")["spec"]["selector"]["matchLabels"]
        assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == selector

    def test_config_change_rolls_the_pods(self) -> None:
        def checksum(*sets: str) -> str:
            deployment = one(render(sets=sets), "Deployment")
            value: str = deployment["spec"]["template"]["metadata"]["annotations"][
                "checksum/config"
            ]
            return value

        assert checksum() != checksum("defaultPolicy.action=Warn")

    def test_service_selects_only_operator_pods(self) -> None:
        objs = render()
        selector = one(objs, "Service")["spec"]["selector"]
        assert selector == one(objs, "Deployment")["spec"]["selector"]["matchLabels"]
        test_pod = one(objs, "Pod")
        assert not all(test_pod["metadata"]["labels"].get(k) == v for k, v in selector.items())


class TestReplicasAndLeaderElection:
    def test_two_replicas_elect_a_leader_on_a_lease_by_default(self) -> None:
        objs = render()
        assert one(objs, "Deployment")["spec"]["replicas"] == 2
        args = operator_container(objs)["args"]
        assert "--lease-name=vllm-preflight" in args
        assert "--standalone" not in args
        # no kopf peering any more: neither its CRD nor its object
        assert not find(objs, "ClusterKopfPeering")
        assert not find(objs, "CustomResourceDefinition", "clusterkopfpeerings.kopf.dev")
        assert one(objs, "PodDisruptionBudget")["spec"]["minAvailable"] == 1

    def test_single_replica_runs_standalone_without_a_lease(self) -> None:
        objs = render("single-replica.yaml")
        assert one(objs, "Deployment")["spec"]["replicas"] == 1
        assert "--standalone" in operator_container(objs)["args"]
        assert not [a for a in operator_container(objs)["args"] if a.startswith("--lease")]
        assert not find(objs, "Role", f"{FULLNAME}-leader-election")
        assert not find(objs, "PodDisruptionBudget")  # minAvailable 1 of 1 would block drains

    def test_product_crds_ship_with_the_chart(self) -> None:
        names = {o["metadata"]["name"] for o in find(render(), "CustomResourceDefinition")}
        assert {"gpuvalidations.vllm-preflight.io", "preflightpolicies.vllm-preflight.io"} <= names


# -- RBAC ------------------------------------------------------------------------------------
WRAPPERS = [("serving.kserve.io", r) for r in ("inferenceservices", "llminferenceservices",
                                             "servingruntimes", "clusterservingruntimes")] + [
    ("ray.io", "rayservices"), ("ray.io", "rayclusters"), ("ray.io", "rayjobs"),
    ("orchestration.aibrix.ai", "rayclusterfleets"), ("orchestration.aibrix.ai", "stormservices"),
    ("kubeai.org", "models"), ("production-stack.vllm.ai", "vllmruntimes"),
    ("nvidia.com", "dynamographdeployments"), ("jobset.x-k8s.io", "jobsets"),
    ("workload.serving.volcano.sh", "modelservings"), ("batch.volcano.sh", "jobs"),
    ("workloads.x-k8s.io", "rolebasedgroups"),
]  # fmt: skip
WORKLOADS = [("apps", "deployments"), ("apps", "statefulsets"), ("batch", "jobs"),
             ("leaderworkerset.x-k8s.io", "leaderworkersets"), *WRAPPERS]  # fmt: skip
WORKLOAD_PATCH = {(g, r, "patch") for g, r in WORKLOADS}
OPERATOR_CLUSTER_RULES = {
    ("", "namespaces", "list"), ("", "namespaces", "watch"),
    ("", "pods", "list"), ("", "pods", "watch"),
    # the chain of uids a result counts through (ownership.py, issue 34), by name
    ("", "pods", "get"), ("apps", "replicasets", "get"),
    ("", "services", "list"), ("", "services", "watch"),
    *{("resource.k8s.io", r, v) for r in ("resourceclaims", "resourceclaimtemplates")
      for v in ("list", "watch")},
    ("", "events", "create"),
    *{(g, r, v) for g, r in WORKLOADS for v in ("get", "list", "watch")},
    *{("vllm-preflight.io", "gpuvalidations", v)
      for v in ("get", "list", "watch", "create", "delete")},
    ("vllm-preflight.io", "gpuvalidations/status", "patch"),
    *{("vllm-preflight.io", "preflightpolicies", v) for v in ("list", "watch")},
    ("vllm-preflight.io", "preflightpolicies/status", "patch"),
    ("apiextensions.k8s.io", "customresourcedefinitions", "list"),
    ("apiextensions.k8s.io", "customresourcedefinitions", "watch"),
    # the fail-closed entry's namespace list (webhook.validating.failClosedUnderEnforce)
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations/vllm-preflight", "get"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations/vllm-preflight", "patch"),
}  # fmt: skip
LEASE_RULES = {
    ("coordination.k8s.io", "leases", "create"),  # create cannot be limited by name
    ("coordination.k8s.io", "leases/vllm-preflight", "get"),
    ("coordination.k8s.io", "leases/vllm-preflight", "update"),
}


class TestServingStacks:
    def test_the_chart_lists_the_operators_serving_stack_kinds(self) -> None:
        from preflight_operator.core.workloads import TEMPLATE_KINDS, WRAPPER_KINDS

        ours = {(k.group, k.plural) for k in (*WRAPPER_KINDS, *TEMPLATE_KINDS)}
        assert ours == set(WRAPPERS)

    def test_one_value_turns_a_serving_stack_off(self) -> None:
        """workloadKinds.<stack>: false drops its webhook rule, its RBAC and its watch."""
        objs = render(sets=["workloadKinds.kserve=false", "workloadKinds.dynamo=false"])
        groups = {
            g for hook in one(objs, "ValidatingWebhookConfiguration")["webhooks"]
            for rule in hook["rules"] for g in rule["apiGroups"]
        }  # fmt: skip
        assert "serving.kserve.io" not in groups
        assert "nvidia.com" not in groups
        assert "ray.io" in groups
        rules = rule_set(one(objs, "ClusterRole", FULLNAME)["rules"])
        assert not {r for r in rules if r[0] in ("serving.kserve.io", "nvidia.com")}
        args = operator_container(objs)["args"]
        assert (
            "--kind-families=kuberay,aibrix,kubeai,production-stack,jobset,kthena,volcano,rbg"
            in args
        )
        assert (
            "--kind-families=kuberay,aibrix,kserve,kubeai,production-stack,dynamo,jobset,kthena,"
            "volcano,rbg" in (operator_container(render())["args"])
        )


class TestRBAC:
    def test_cluster_role_is_exactly_what_the_operator_uses(self) -> None:
        role = one(render(), "ClusterRole", FULLNAME)
        assert rule_set(role["rules"]) == OPERATOR_CLUSTER_RULES
        standalone = one(render("single-replica.yaml"), "ClusterRole", FULLNAME)
        assert rule_set(standalone["rules"]) == OPERATOR_CLUSTER_RULES

    def test_the_lease_is_the_one_namespaced_grant_and_only_by_name(self) -> None:
        objs = render()
        role = one(objs, "Role", f"{FULLNAME}-leader-election")
        assert role["metadata"]["namespace"] == NAMESPACE
        assert rule_set(role["rules"]) == LEASE_RULES
        binding = one(objs, "RoleBinding", f"{FULLNAME}-leader-election")
        assert binding["roleRef"]["name"] == f"{FULLNAME}-leader-election"
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": FULLNAME, "namespace": NAMESPACE}
        ]

    def test_workloads_are_patched_only_where_granted(self) -> None:
        """By default no cluster-wide patch on workloads: kube-system's pod templates are
        not rewritable; `namespaces` grants it by a Role in each listed namespace,
        `cluster` is the documented opt-in for everywhere."""
        default = render()
        assert not rule_set(one(default, "ClusterRole", FULLNAME)["rules"]) & WORKLOAD_PATCH
        assert not find(default, "RoleBinding", f"{FULLNAME}-workloads")
        listed = render(sets=["rbac.workloadNamespaces={team-a,team-b}"])
        roles = find(listed, "Role", f"{FULLNAME}-workloads")
        assert sorted(r["metadata"]["namespace"] for r in roles) == ["team-a", "team-b"]
        assert all(rule_set(r["rules"]) == WORKLOAD_PATCH for r in roles)
        bindings = find(listed, "RoleBinding", f"{FULLNAME}-workloads")
        assert {b["metadata"]["namespace"] for b in bindings} == {"team-a", "team-b"}
        assert bindings[0]["subjects"][0]["namespace"] == NAMESPACE
        wide = render(sets=["rbac.workloadPatch=cluster"])
        assert rule_set(one(wide, "ClusterRole", FULLNAME)["rules"]) >= WORKLOAD_PATCH
        none = render(sets=["rbac.workloadPatch=none", "rbac.workloadNamespaces={team-a}"])
        assert not find(none, "Role", f"{FULLNAME}-workloads")
        assert "workloadPatch" in render_error(sets=["rbac.workloadPatch=everywhere"])

    def test_the_workload_api_is_read_only_where_granted(self) -> None:
        """rbac.workloadApiRead (off by default) grants get, and only get, on the
        Workload API's objects a pod names (webhooks.py reads them at its admission)."""
        api = {("scheduling.k8s.io", r, v) for r in ("workloads", "podgroups") for v in ["get"]}
        default = rule_set(one(render(), "ClusterRole", FULLNAME)["rules"])
        assert not {r for r in default if r[0] == "scheduling.k8s.io"}
        on = render(sets=["rbac.workloadApiRead=true"])
        granted = rule_set(one(on, "ClusterRole", FULLNAME)["rules"])
        assert {r for r in granted if r[0] == "scheduling.k8s.io"} == api
        assert "workloadApiRead" in render_error(sets=["rbac.workloadApiRead=yes"])

    def test_volcano_podgroups_are_read_only_where_granted(self) -> None:
        """rbac.volcanoPodGroupRead (off by default) grants get, and only get, on the
        Volcano PodGroups pods name (webhook/reads.py reads them at a pod's admission)."""
        default = rule_set(one(render(), "ClusterRole", FULLNAME)["rules"])
        assert not {r for r in default if r[0] == "scheduling.volcano.sh"}
        on = render(sets=["rbac.volcanoPodGroupRead=true"])
        granted = rule_set(one(on, "ClusterRole", FULLNAME)["rules"])
        assert {r for r in granted if r[0] == "scheduling.volcano.sh"} == {
            ("scheduling.volcano.sh", "podgroups", "get")
        }
        assert "volcanoPodGroupRead" in render_error(sets=["rbac.volcanoPodGroupRead=yes"])

    def test_nothing_sensitive_or_wildcard(self) -> None:
        objs = render()
        for role in find(objs, "ClusterRole") + find(objs, "Role"):
            for group, resource, verb in rule_set(role["rules"]):
                assert "*" not in (group, resource, verb)
                if resource == f"validatingwebhookconfigurations/{FULLNAME}":
                    assert verb in {"get", "patch"}  # its own, by name (fail-closed entry)
                    continue
                assert resource.split("/")[0] not in {
                    "secrets",
                    "mutatingwebhookconfigurations",
                    "validatingwebhookconfigurations",
                    "clusterroles",
                    "roles",
                    "rolebindings",
                    "clusterrolebindings",
                    "nodes",
                    "serviceaccounts",
                }
                assert resource not in {"pods/exec", "pods/attach", "pods/portforward"}
                assert verb not in {"escalate", "bind", "impersonate", "deletecollection"}
                if resource in {"pods", "deployments", "statefulsets", "jobs"}:
                    assert verb not in {"create", "delete", "update"}

    def test_operator_has_no_namespaced_role_but_the_lease(self) -> None:
        """Its configuration is a mounted file: in its own namespace it needs only the Lease
        (so no Role can drift into Secrets there)."""
        roles = [r["metadata"]["name"] for r in find(render(), "Role")]
        assert FULLNAME not in roles
        assert [r for r in roles if not r.endswith("-test")] == [f"{FULLNAME}-leader-election"]

    def test_bindings_grant_the_roles_to_the_operator_service_account_only(self) -> None:
        objs = render()
        sa = one(objs, "ServiceAccount", FULLNAME)
        subject = {"kind": "ServiceAccount", "name": FULLNAME, "namespace": NAMESPACE}
        binding = one(objs, "ClusterRoleBinding", FULLNAME)
        assert binding["subjects"] == [subject]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": FULLNAME,
        }
        pod = one(objs, "Deployment")["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == sa["metadata"]["name"]

    def test_rbac_can_be_left_to_the_user(self) -> None:
        objs = render(sets=["rbac.create=false", "tests.enabled=false"])
        assert not find(objs, "ClusterRole") + find(objs, "Role") + find(objs, "RoleBinding")


# -- the operator configuration --------------------------------------------------------------
def rendered_config(*values: str) -> Manifest:
    cm = one(render(*values), "ConfigMap", FULLNAME)
    config: Manifest = yaml.safe_load(cm["data"]["config.yaml"])
    return config


class TestOperatorConfig:
    def test_defaults_match_the_contract(self) -> None:
        assert rendered_config() == {
            "defaultPolicy": {
                "action": "Enforce",
                "tier": "fast",
                "thresholds": {"shmMin": "1Gi", "extraGPUsAllowed": 0},
                "checks": {"disabled": []},
                "onRuntimeFailure": "None",
            },
            "injection": {
                "mode": "WorkloadImage",
                "installerImage": "ghcr.io/vllm-preflight/operator:0.1.0",
                "checkImage": "ghcr.io/vllm-preflight/check:0.1.0",
                "imagePullPolicy": "IfNotPresent",
                "resources": {
                    "requests": {"cpu": "100m", "memory": "128Mi"},
                    "limits": {"memory": "512Mi"},
                },
                "timeoutSeconds": 120,
                "groupPort": 29600,
            },
            "namespaceLabel": OPT_IN,
            "excludedNamespaces": ["kube-system", "kube-public", "kube-node-lease", NAMESPACE],
            "history": {"podsPerWorkload": 10},
            "podTrust": {"creators": []},
            "rules": {"budgetSeconds": 3, "memoryMiB": 160, "workers": 2},
            "webhook": {
                "validating": {"failurePolicy": "Ignore", "timeoutSeconds": 10},
                "mutating": {"failurePolicy": "Ignore", "timeoutSeconds": 10},
                "admissionEvents": {"enabled": False, "perMinute": 60},
                "server": {
                    "maxConnections": 512, "maxConnectionsPerPeer": 128,
                    "headerTimeoutSeconds": 10, "bodyTimeoutSeconds": 10,
                    "idleTimeoutSeconds": 60,
                },
            },
            "nodeFeedback": {
                "enabled": False, "condition": False,
                "probe": {"intervalSeconds": 300, "maxRunning": 4, "startSeconds": 300},
            },
            "workloadPatch": {"scope": "namespaces", "namespaces": []},
        }  # fmt: skip

    def test_webhook_values_reach_the_operator(self) -> None:
        """The failure answers follow the webhook configurations' own failurePolicy and
        timeout; denial Events and the port's limits are values."""
        config_module = pytest.importorskip("preflight_operator.core.operatorconfig")
        objs = render(
            sets=[
                "webhook.validating.failurePolicy=Fail", "webhook.validating.timeoutSeconds=5",
                "webhook.admissionEvents.enabled=true", "webhook.admissionEvents.perMinute=12",
                "webhook.server.maxConnections=100", "webhook.server.maxConnectionsPerPeer=50",
                "webhook.server.headerTimeoutSeconds=3",
            ]
        )  # fmt: skip
        webhook = config_module.parse_config(
            yaml.safe_load(one(objs, "ConfigMap", FULLNAME)["data"]["config.yaml"])
        ).webhook
        (validating,) = one(objs, "ValidatingWebhookConfiguration")["webhooks"][:1]
        assert validating["failurePolicy"] == webhook.validating_failure_policy == "Fail"
        assert validating["timeoutSeconds"] == webhook.validating_timeout_seconds == 5
        assert webhook.admission_events is True
        assert webhook.events_per_minute == 12
        assert (webhook.max_connections, webhook.max_connections_per_peer) == (100, 50)
        assert webhook.header_timeout_seconds == 3.0
        assert "/webhook/server" in render_error(sets=["webhook.server.maxConnection=1"])

    def test_the_provenance_guard_sees_every_injected_pod(self) -> None:
        """provenance.py: every namespace but the excluded, every pod labelled injected,
        CREATE and UPDATE of pods, UPDATE of pods/status (a status write can change the
        marks: issue 34), its own path, fail-open like the others."""
        (hook,) = [h for h in all_webhooks(render()) if h["name"] == PROVENANCE]
        assert hook["clientConfig"]["service"]["path"] == "/validate-provenance"
        assert hook["rules"] == [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["pods"],
                "scope": "Namespaced",
            }
        ]
        # pods/status apart: always Ignore and 3 s, whatever webhook.validating says (the
        # kubelet's status writes of every injected pod pass there)
        for values in ([], ["webhook.validating.failurePolicy=Fail"]):
            (status,) = [
                h for h in all_webhooks(render(sets=values)) if h["name"] == PROVENANCE_STATUS
            ]
            assert status["clientConfig"]["service"]["path"] == "/validate-provenance"
            assert status["rules"][0]["resources"] == ["pods/status"]
            assert status["rules"][0]["operations"] == ["UPDATE"]
            assert (status["failurePolicy"], status["timeoutSeconds"]) == ("Ignore", 3)
            assert status["objectSelector"] == hook["objectSelector"]
            assert status["namespaceSelector"] == hook["namespaceSelector"]
        assert expressions(hook["objectSelector"]) == {
            "vllm-preflight.io/injected": ("Exists", frozenset())
        }
        names = expressions(hook["namespaceSelector"])["kubernetes.io/metadata.name"]
        assert names == ("NotIn", SYSTEM_NAMESPACES | {NAMESPACE})
        assert hook["sideEffects"] == "None"
        assert hook["failurePolicy"] == "Ignore"

    def test_values_reach_the_config(self) -> None:
        config = rendered_config("production.yaml")
        assert config["defaultPolicy"] == {
            "action": "Warn",
            "tier": "deep",
            "thresholds": {"shmMin": "2Gi", "extraGPUsAllowed": 1},
            "checks": {"disabled": ["vllm-port-collision"]},
            "onRuntimeFailure": "PauseRollout",
        }
        assert config["injection"]["mode"] == "DedicatedImage"
        assert config["injection"]["installerImage"].endswith("@sha256:" + "0123456789abcdef" * 4)
        assert config["injection"]["checkImage"] == (
            "registry.example.com/vllm-preflight/check:0.1.0-cuda12.4"
        )
        assert "monitoring" in config["excludedNamespaces"]

    @pytest.mark.parametrize("values", [None, *VALID_VALUES])
    def test_the_operator_accepts_every_rendered_config(self, values: str | None) -> None:
        config_module = pytest.importorskip("preflight_operator.core.operatorconfig")
        config = config_module.parse_config(rendered_config(*([values] if values else [])))
        assert NAMESPACE in config.excluded_namespaces
        assert config.namespace_label == OPT_IN

    def test_per_rule_actions_reach_the_config(self) -> None:
        config_module = pytest.importorskip("preflight_operator.core.operatorconfig")
        objs = render(sets=["defaultPolicy.rules.shm-too-small=Enforce"])
        config = config_module.parse_config(
            yaml.safe_load(one(objs, "ConfigMap", FULLNAME)["data"]["config.yaml"])
        )
        assert config.default_policy.rule_actions == (("shm-too-small", "Enforce"),)
        error = render_error(sets=["defaultPolicy.rules.shm-too-small=Block"])
        assert "/defaultPolicy/rules/shm-too-small': value must be one of" in error

    def test_the_rules_budget_is_set_from_values(self) -> None:
        config_module = pytest.importorskip("preflight_operator.core.operatorconfig")
        objs = render(sets=["rules.budgetSeconds=2", "rules.workers=4"])
        config = config_module.parse_config(
            yaml.safe_load(one(objs, "ConfigMap", FULLNAME)["data"]["config.yaml"])
        )
        assert (config.rules_budget_seconds, config.rules_workers) == (2.0, 4)
        assert "/rules/budgetSeconds" in render_error(sets=["rules.budgetSeconds=60"])

    def test_config_is_mounted_at_the_contract_path(self) -> None:
        objs = render()
        mount = next(m for m in operator_container(objs)["volumeMounts"] if m["name"] == "config")
        assert (mount["mountPath"], mount["subPath"]) == (
            "/etc/vllm-preflight/config.yaml",
            "config.yaml",
        )


# -- metrics, helm test, labels ---------------------------------------------------------------
class TestMetrics:
    def test_metrics_port_on_service_and_optional_service_monitor(self) -> None:
        objs = render("production.yaml")
        ports = {p["name"]: p for p in one(objs, "Service")["spec"]["ports"]}
        assert ports["metrics"]["port"] == 8080
        monitor = one(objs, "ServiceMonitor")
        assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
        assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        assert not find(render(), "ServiceMonitor")

    def test_metrics_can_be_disabled(self) -> None:
        objs = render("single-replica.yaml")
        assert "--metrics-port=0" in operator_container(objs)["args"]
        assert "metrics" not in {p["name"] for p in one(objs, "Service")["spec"]["ports"]}


class TestHelmTest:
    def test_test_pod_is_a_hook_running_the_shipped_script(self) -> None:
        objs = render()
        pod = one(objs, "Pod")
        assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
        assert pod["metadata"]["labels"][OPT_IN] == "disabled"
        script = one(objs, "ConfigMap", f"{FULLNAME}-test")["data"]["helm-test.py"]
        assert script == (CHART / "files" / "helm-test.py").read_text()
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env["HEALTH_URL"] == f"http://{SERVICE_DNS}:8081/healthz"
        assert env["WEBHOOK_ADDR"] == f"{SERVICE_DNS}:443"
        assert env["WEBHOOK_SERVER_NAME"] == SERVICE_DNS
        assert env["LEASE_NAME"] == "vllm-preflight"
        assert pod["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True

    def test_test_identity_may_only_read(self) -> None:
        objs = render()
        role = one(objs, "Role", f"{FULLNAME}-test")
        assert rule_set(role["rules"]) == {
            ("vllm-preflight.io", "gpuvalidations", "list"),
            ("vllm-preflight.io", "preflightpolicies", "list"),
            ("coordination.k8s.io", "leases/vllm-preflight", "get"),
        }
        assert not find(objs, "ClusterRole", f"{FULLNAME}-test")

    def test_no_test_objects_when_disabled(self) -> None:
        objs = render("single-replica.yaml")
        assert not find(objs, "Pod")
        assert not [o for o in objs if o["metadata"]["name"].endswith("-test")]


class TestEveryObject:
    @pytest.mark.parametrize("values", [None, *VALID_VALUES])
    def test_labelled_and_namespaced_in_the_release_namespace(self, values: str | None) -> None:
        cluster_scoped = {
            "ClusterRole",
            "ClusterRoleBinding",
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
            "CustomResourceDefinition",
        }
        for obj in render(*([values] if values else [])):
            meta = obj["metadata"]
            if obj["kind"] == "CustomResourceDefinition":
                continue  # crds/ files are not templates
            assert meta["labels"]["app.kubernetes.io/instance"] == RELEASE, obj["kind"]
            if obj["kind"] in cluster_scoped:
                assert "namespace" not in meta
            else:
                assert meta["namespace"] == NAMESPACE, f"{obj['kind']} {meta['name']}"

    def test_resource_names_fit_kubernetes_limits(self) -> None:
        long_release = ("long-release-" * 5)[:53].strip("-")  # helm allows 53 characters
        out = helm(
            "template", long_release, str(CHART), "--namespace", NAMESPACE,
            "--kube-version", KUBE_VERSION,
        ).stdout  # fmt: skip
        for obj in (d for d in yaml.safe_load_all(out) if d):
            assert len(obj["metadata"]["name"]) <= 63, obj["metadata"]["name"]


class TestNetworkPolicy:
    def test_off_by_default(self) -> None:
        assert not find(render(), "NetworkPolicy")

    def test_only_the_operators_ports_from_the_peers_given(self) -> None:
        api_server = {"ipBlock": {"cidr": "10.0.0.0/24"}}
        hosted = {"namespaceSelector": {"matchLabels": {"name": "control-plane"}}}
        monitoring = {"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}
        objs = render(
            sets=[
                "networkPolicy.enabled=true",
                "networkPolicy.apiServerCIDRs[0]=10.0.0.0/24",
                "networkPolicy.webhookFrom[0].namespaceSelector.matchLabels.name=control-plane",
                "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring",
            ]
        )
        policy = one(objs, "NetworkPolicy", FULLNAME)
        assert policy["metadata"]["namespace"] == NAMESPACE
        pod_labels = one(objs, "Deployment")["spec"]["template"]["metadata"]["labels"]
        assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        webhook, metrics = policy["spec"]["ingress"]
        container = operator_container(objs)
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert [p["port"] for p in webhook["ports"]] == [ports["webhook"]]
        assert webhook["from"] == [api_server, hosted]
        assert sorted(p["port"] for p in metrics["ports"]) == sorted(
            [ports["metrics"], ports["health"]]
        )
        assert metrics["from"] == [monitoring]
        assert "networkPolicy" in render_error(sets=["networkPolicy.enable=true"])

    def test_the_webhook_port_is_never_open_to_all(self) -> None:
        """The finding: enabled with the default empty `webhookFrom`, the webhook rule had
        no `from` at all, i.e. any pod. Now an unnamed source refuses to render, and
        either way of naming it is enough on its own."""
        error = render_error(sets=["networkPolicy.enabled=true"])
        assert "networkPolicy.apiServerCIDRs" in error
        assert "networkPolicy.webhookFrom" in error
        for named in (
            "networkPolicy.apiServerCIDRs[0]=192.168.1.10/32",
            "networkPolicy.webhookFrom[0].podSelector.matchLabels.app=kube-apiserver",
        ):
            policy = one(render(sets=["networkPolicy.enabled=true", named]), "NetworkPolicy")
            webhook = policy["spec"]["ingress"][0]
            assert len(webhook["from"]) == 1
        assert "apiServerCIDRs" in render_error(
            sets=["networkPolicy.enabled=true", "networkPolicy.apiServerCIDRs[0]=anywhere"]
        )


# -- model configs (issue 15) ----------------------------------------------------------------
class TestModels:
    """`models` values reach the operator's config (read back by the operator's own parser),
    the ConfigMap is readable by name only, the fetch gets its cache and token."""

    def test_off_by_default(self) -> None:
        objs = render()
        assert "models" not in rendered_config()
        assert not find(objs, "Role", f"{FULLNAME}-model-configs")
        pod = one(objs, "Deployment")["spec"]["template"]["spec"]
        assert "model-cache" not in {v["name"] for v in pod["volumes"]}
        assert "HF_TOKEN" not in {e["name"] for e in operator_container(objs)["env"]}

    def test_the_config_map_is_read_by_name_only(self) -> None:
        from preflight_operator.core.modelcache import parse_model_sources

        objs = render(sets=["models.configMap=model-configs"])
        config = yaml.safe_load(one(objs, "ConfigMap", FULLNAME)["data"]["config.yaml"])
        assert config["models"] == {
            "fetch": False,
            "configMap": "model-configs",
            "configMapNamespace": NAMESPACE,
        }
        sources = parse_model_sources(config["models"])
        assert (sources.config_map, sources.config_map_namespace, sources.fetch) == (
            "model-configs",
            NAMESPACE,
            False,
        )
        role = one(objs, "Role", f"{FULLNAME}-model-configs")
        assert role["metadata"]["namespace"] == NAMESPACE
        assert role["rules"] == [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": ["model-configs"],
                "verbs": ["get", "list", "watch"],
            }
        ]
        binding = one(objs, "RoleBinding", f"{FULLNAME}-model-configs")
        assert binding["roleRef"]["name"] == role["metadata"]["name"]
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": FULLNAME, "namespace": NAMESPACE}
        ]
        no_rbac = render(sets=["models.configMap=model-configs", "rbac.create=false"])
        assert not find(no_rbac, "Role", f"{FULLNAME}-model-configs")

    def test_the_fetch_gets_its_endpoint_cache_and_token(self) -> None:
        from preflight_operator.core.modelcache import parse_model_sources

        objs = render(
            sets=[
                "models.fetch.enabled=true",
                "models.fetch.endpoint=http://hf-mirror.internal:8080",
                "models.fetch.timeoutSeconds=3",
                "models.fetch.cacheSize=128Mi",
                "models.fetch.tokenSecret=hf-token",
            ]
        )
        config = yaml.safe_load(one(objs, "ConfigMap", FULLNAME)["data"]["config.yaml"])
        cache = "/var/cache/vllm-preflight/models"
        assert config["models"] == {
            "fetch": True,
            "endpoint": "http://hf-mirror.internal:8080",
            "timeoutSeconds": 3,
            "cacheDir": cache,
        }
        sources = parse_model_sources(config["models"])
        assert (sources.fetch, sources.endpoint, sources.timeout_seconds, sources.cache_dir) == (
            True,
            "http://hf-mirror.internal:8080",
            3.0,
            cache,
        )
        pod = one(objs, "Deployment")["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["model-cache"] == {"name": "model-cache", "emptyDir": {"sizeLimit": "128Mi"}}
        container = operator_container(objs)
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert mounts["model-cache"] == cache
        env = {e["name"]: e for e in container["env"]}
        assert env["HF_TOKEN"]["valueFrom"] == {
            "secretKeyRef": {"name": "hf-token", "key": "token"}
        }
        assert not find(objs, "Role", f"{FULLNAME}-model-configs")  # no ConfigMap to read

    @pytest.mark.parametrize(
        "bad",
        [
            "models.fetch.timeoutSeconds=0",
            "models.fetch.timeoutSeconds=61",
            "models.fetch.endpoint=ftp://mirror",
            "models.configMap=Model_Configs",
            "models.fetch.cacheSize=lots",
            "models.fetch.enable=true",
        ],
    )
    def test_the_schema_refuses_what_the_operator_would(self, bad: str) -> None:
        assert "models" in render_error(sets=[bad])
