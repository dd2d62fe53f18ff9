"""The release path of the chart, for real (docs/RELEASE.md): package it with an image digest
in its default values, sign it (Helm provenance, a key generated for the test), push it to an
OCI registry running on this machine, and `helm install --verify oci://...` it into the
session's control plane.

The registry is the CNCF distribution registry (github.com/distribution/distribution/v3,
cmd/registry) built from its Go module by `hack/k8s/build.sh registry`, like the control
plane. It listens on plain HTTP on 127.0.0.1 (`--plain-http`): nothing crosses a network,
and what the test proves about integrity comes from the content, not the transport -- the
provenance signature and the sha256 of the archive it holds, checked by `helm install
--verify`, and the manifest digest the registry answers with. TLS would only prove that
Helm reads a CA file, which is Helm's own concern. The module skips, saying why, only when
the registry cannot be built.

What it proves: the chart Helm pulls back is the one signed (a tampered archive or an
unknown signer is refused, and nothing is installed); the registry stores the provenance
beside the chart; the release's objects all exist; the Deployment runs the image by the
digest the packaged values carry.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from preflight_dev.testing import Cluster, wait_for
from preflight_dev.testing.process import Component, free_ports

REPO = Path(__file__).resolve().parents[2]
BUILD_SH = REPO / "hack" / "k8s" / "build.sh"
sys.path.insert(0, str(REPO / "hack" / "release"))
import artifacts  # noqa: E402

# The first run may build the registry (`hack/k8s/build.sh registry`: 580 s measured cold on
# a loaded 2-core machine; `make test` builds it up front), past the suite's 300 s default.
pytestmark = pytest.mark.timeout(1200)

CHART_NAME = "vllm-preflight"
CHART_VERSION = yaml.safe_load((REPO / "charts" / CHART_NAME / "Chart.yaml").read_text())["version"]
TEST_DIGEST = "sha256:" + "5eed" * 16  # stands in for the operator image's digest
SCOPE_LABEL = "e2e.vllm-preflight.io/chart-scope"
CHART_CRDS = ("gpuvalidations.vllm-preflight.io", "preflightpolicies.vllm-preflight.io")
CONTENT_MEDIA = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
PROV_MEDIA = "application/vnd.cncf.helm.chart.provenance.v1.prov"


@dataclass(frozen=True)
class Registry:
    host: str  # 127.0.0.1:<port>

    def get(self, path: str, accept: str = "") -> tuple[dict[str, str], bytes]:
        request = urllib.request.Request(f"http://{self.host}{path}")
        if accept:
            request.add_header("Accept", accept)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=10) as response:
            return dict(response.headers.items()), response.read()


@dataclass(frozen=True)
class Signed:
    tgz: Path
    key: artifacts.SigningKey
    other: artifacts.SigningKey  # a second key that signed nothing here


def registry_binary() -> Path:
    result = subprocess.run(
        [str(BUILD_SH), "registry"],
        capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL, timeout=1800,
    )  # fmt: skip
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        pytest.skip(
            f"the OCI registry could not be built (`hack/k8s/build.sh registry` exit "
            f"{result.returncode}): {result.stderr.strip()[-600:]}"
        )
    return Path(lines[-1]) / "registry"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    binary = registry_binary()
    work = tmp_path_factory.mktemp("registry")
    port = free_ports(1)[0]
    config = {
        "version": 0.1,
        "log": {"level": "info"},
        "storage": {"filesystem": {"rootdirectory": str(work / "data")}},
        "http": {"addr": f"127.0.0.1:{port}", "secret": secrets.token_hex(16)},
    }
    (work / "config.yml").write_text(yaml.safe_dump(config))
    # No tracing exporter: the registry would otherwise dial an OTLP collector.
    env = {"PATH": "/usr/bin:/bin", "OTEL_TRACES_EXPORTER": "none", "HOME": str(work)}
    proc = Component(
        "registry", [str(binary), "serve", str(work / "config.yml")], work / "log", env
    )
    proc.start()
    reg = Registry(f"127.0.0.1:{port}")

    def answers() -> bool:
        if proc.returncode() is not None:
            raise AssertionError(f"the registry exited:\n{proc.log_tail()}")
        try:
            reg.get("/v2/")
        except OSError:
            return False
        return True

    try:
        wait_for(answers, timeout=60, what="the registry answering /v2/")
        yield reg
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def signed(k8s: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Signed:
    """The chart staged with TEST_DIGEST in its default values, packaged and signed with a
    key generated here."""
    work = tmp_path_factory.mktemp("release")
    key = artifacts.make_test_key(work / "gnupg")
    other = artifacts.make_test_key(work / "other", name="someone else")
    staged = artifacts.stage_chart(work / "stage", {"image": TEST_DIGEST})
    tgz = artifacts.package_chart(k8s.bin_dir / "helm", staged, work / "dist", key)
    return Signed(tgz, key, other)


@dataclass(frozen=True)
class Pushed:
    registry: Registry
    signed: Signed
    digest: str  # the manifest digest `helm push` reported


@pytest.fixture(scope="module")
def pushed(k8s: Cluster, registry: Registry, signed: Signed) -> Pushed:
    """`helm push` of the signed chart."""
    out = k8s.helm("push", str(signed.tgz), f"oci://{registry.host}/charts", "--plain-http")
    text = out.stdout + out.stderr
    digest = next(
        (line.split()[-1] for line in text.splitlines() if line.startswith("Digest:")), ""
    )
    assert artifacts.DIGEST.match(digest), text
    return Pushed(registry, signed, digest)


class TestSigning:
    def test_the_signed_chart_verifies(self, k8s: Cluster, signed: Signed) -> None:
        out = artifacts.verify_chart(k8s.bin_dir / "helm", signed.tgz, signed.key.pubring)
        assert f"Signed by: {signed.key.name}" in out, out

    def test_a_tampered_chart_does_not(self, k8s: Cluster, signed: Signed, tmp_path: Path) -> None:
        tampered = tmp_path / signed.tgz.name
        data = bytearray(signed.tgz.read_bytes())
        data[len(data) // 2] ^= 0xFF
        tampered.write_bytes(bytes(data))
        (tmp_path / (signed.tgz.name + ".prov")).write_bytes(
            signed.tgz.with_name(signed.tgz.name + ".prov").read_bytes()
        )
        with pytest.raises(artifacts.ReleaseError, match="sha256 sum does not match"):
            artifacts.verify_chart(k8s.bin_dir / "helm", tampered, signed.key.pubring)

    def test_an_unknown_signer_does_not(self, k8s: Cluster, signed: Signed) -> None:
        with pytest.raises(artifacts.ReleaseError, match="helm verify failed"):
            artifacts.verify_chart(k8s.bin_dir / "helm", signed.tgz, signed.other.pubring)


class TestRegistry:
    def test_it_holds_the_chart_and_its_provenance(self, pushed: Pushed) -> None:
        registry = pushed.registry
        _, body = registry.get(f"/v2/charts/{CHART_NAME}/tags/list")
        assert CHART_VERSION in json.loads(body)["tags"]
        headers, body = registry.get(
            f"/v2/charts/{CHART_NAME}/manifests/{CHART_VERSION}",
            accept="application/vnd.oci.image.manifest.v1+json",
        )
        assert headers.get("Docker-Content-Digest") == pushed.digest
        media = {layer["mediaType"] for layer in json.loads(body)["layers"]}
        assert media == {CONTENT_MEDIA, PROV_MEDIA}


@pytest.fixture
def scoped_namespace(k8s: Cluster) -> Iterator[tuple[str, str]]:
    scope = f"s{secrets.token_hex(3)}"
    namespace = k8s.create_namespace("vp-oci", labels={SCOPE_LABEL: scope})
    created_crds = [
        crd
        for crd in CHART_CRDS
        if not k8s.kubectl("get", "crd", crd, "--ignore-not-found", "-o", "name").stdout.strip()
    ]
    try:
        yield namespace, scope
    finally:
        for release in json.loads(k8s.helm("list", "-n", namespace, "-o", "json").stdout):
            k8s.helm("uninstall", release["name"], "-n", namespace, "--wait", check=False)
        k8s.delete_namespace(namespace)
        if created_crds:
            k8s.kubectl("delete", "crd", *created_crds, "--wait=true", check=False, timeout=120)


def install_args(registry: Registry, namespace: str, scope: str, values: Path) -> list[str]:
    values.write_text(
        yaml.safe_dump(
            {
                # webhooks only for this test's namespaces; nothing listens behind them
                "webhook": {
                    "namespaceSelectorExpressions": [
                        {"key": SCOPE_LABEL, "operator": "In", "values": [scope]}
                    ],
                    "mutating": {"timeoutSeconds": 3},
                    "validating": {"timeoutSeconds": 3},
                },
                "rbac": {"workloadNamespaces": ["default"]},
            }
        )
    )
    return [
        f"oci://{registry.host}/charts/{CHART_NAME}", "--version", CHART_VERSION,
        "--plain-http", "-n", namespace, "--values", str(values),
    ]  # fmt: skip


class TestInstallFromRegistry:
    def test_an_unknown_signer_installs_nothing(
        self, k8s: Cluster, pushed: Pushed, scoped_namespace: tuple[str, str], tmp_path: Path
    ) -> None:
        registry, signed = pushed.registry, pushed.signed
        namespace, scope = scoped_namespace
        args = install_args(registry, namespace, scope, tmp_path / "values.yaml")
        out = k8s.helm(
            "install", "vp-untrusted", *args, "--verify", "--keyring", str(signed.other.pubring),
            check=False,
        )  # fmt: skip
        assert out.returncode != 0, out.stdout
        assert "openpgp" in out.stderr.lower() or "verif" in out.stderr.lower(), out.stderr
        assert json.loads(k8s.helm("list", "-n", namespace, "-o", "json").stdout) == []

    def test_install_verified_from_oci(
        self, k8s: Cluster, pushed: Pushed, scoped_namespace: tuple[str, str], tmp_path: Path
    ) -> None:
        registry, signed = pushed.registry, pushed.signed
        namespace, scope = scoped_namespace
        name = f"vp-{scope}"
        args = install_args(registry, namespace, scope, tmp_path / "values.yaml")
        k8s.helm("install", name, *args, "--verify", "--keyring", str(signed.key.pubring))
        meta = json.loads(k8s.helm("get", "metadata", name, "-n", namespace, "-o", "json").stdout)
        assert (meta["chart"], meta["version"], meta["status"]) == (
            CHART_NAME,
            CHART_VERSION,
            "deployed",
        )
        # Every object of the release exists (kubectl get -f fails on any that does not),
        # read per namespace: the chart also writes a Role into `default`.
        manifest = k8s.helm("get", "manifest", name, "-n", namespace).stdout
        objects = [doc for doc in yaml.safe_load_all(manifest) if doc]
        assert len(objects) > 5, manifest
        by_namespace: dict[str, list[dict[str, Any]]] = {}
        for obj in objects:
            by_namespace.setdefault(obj["metadata"].get("namespace", namespace), []).append(obj)
        items = []
        for ns, group in by_namespace.items():
            doc = {"apiVersion": "v1", "kind": "List", "items": group}
            got = k8s.kubectl("get", "-f", "-", "-n", ns, "-o", "json", input=json.dumps(doc))
            found = json.loads(got.stdout)
            items += found.get("items", [found])
        assert sorted((o["kind"], o["metadata"]["name"]) for o in items) == sorted(
            (o["kind"], o["metadata"]["name"]) for o in objects
        )
        # The packaged default values pin the operator image by digest.
        deployment = next(o for o in items if o["kind"] == "Deployment")
        images = {c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]}
        assert images == {f"ghcr.io/vllm-preflight/operator@{TEST_DIGEST}"}


class TestSbom:
    """The real generator over the real wheel (no cluster needed; e2e for its cost: a wheel
    build and a virtualenv with the runtime dependencies, about a minute)."""

    def test_the_wheels_sbom_names_it_and_its_runtime_dependencies(self, tmp_path: Path) -> None:
        try:
            artifacts.sbom_tool()
        except artifacts.ReleaseError as err:  # pragma: no cover - PyPI out of reach
            pytest.skip(f"the CycloneDX generator cannot be installed: {err}")
        wheel = artifacts.build_wheel(tmp_path)
        sbom = artifacts.generate_sbom(wheel, tmp_path)
        doc = json.loads(sbom.read_text())
        pyproject = (REPO / "pyproject.toml").read_text()
        assert artifacts.check_sbom(doc, pyproject, artifacts.sha256_file(wheel)) == []
        names = {artifacts.normalize(c["name"]) for c in doc["components"]}
        # only what installing the wheel brings: no seeded installer in the environment
        assert not names & {"pip", "setuptools", "wheel", "vllm-preflight"}, names

    def test_the_wheel_carries_the_license(self, tmp_path: Path) -> None:
        """Apache-2.0 asks that a copy of the License go with every redistribution (issue
        40, item 3): the repository's LICENSE is in the wheel as its licence file."""
        wheel = artifacts.build_wheel(tmp_path)
        with zipfile.ZipFile(wheel) as archive:
            licences = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
            assert licences, archive.namelist()
            assert archive.read(licences[0]) == (REPO / "LICENSE").read_bytes()
