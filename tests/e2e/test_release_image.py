"""The operator image's release steps, for real (docs/RELEASE.md, "The image"): build the
Dockerfile's `operator` target with buildah, push it to the OCI registry of
tests/e2e/test_release_oci.py (the same fixture: registry v3 built from its Go module,
plain HTTP on 127.0.0.1) with `--digestfile`, record that digest in the chart's default
values through the release script, describe the image in a CycloneDX SBOM, sign it with a
GPG key generated for the test (simple signing, `buildah push --sign-by`) and verify it by
pulling under a containers-policy.json that demands that key's signature.

The base is a stand-in made with debootstrap (hack/release/image.py), so the image is not
releasable; every release step is. The build is kept by a hash of its sources, so after
tests/unit/test_chart_images.py (or a previous run) it costs seconds. Skips, saying why,
where buildah or debootstrap is missing or not root -- the same conditions as that test --
or where the registry cannot be built.

What it proves: the digest `buildah push` reports is the registry's manifest digest and the
one the packaged chart's values and render name; the SBOM names the image by that digest
and lists its Python and Debian packages at the versions installed (the Python ones at
constraints.txt's pins); the signed image pulls under the policy, and an unsigned image, an
image signed by another key and the tag moved to another digest with the signature copied
along are refused.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from test_release_oci import Registry, registry  # noqa: F401  (the module's registry fixture)

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "hack" / "release"))
import artifacts  # noqa: E402
import image  # noqa: E402

VERSION = yaml.safe_load((REPO / "charts/vllm-preflight/Chart.yaml").read_text())["version"]
LOCAL_TAG = "localhost/vllm-preflight-operator:release-test"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"

pytestmark = [
    pytest.mark.slow,
    # A cold run builds the stand-in base (debootstrap) and the image: 15 min measured on
    # the loaded 2-core machine; warm (layer cache) the whole file takes about 3 min.
    pytest.mark.timeout(2400),
    pytest.mark.skipif(image.missing_tools() is not None, reason=str(image.missing_tools())),
]


@dataclass(frozen=True)
class Released:
    registry: Registry
    repository: str  # 127.0.0.1:<port>/vllm-preflight/operator
    digest: str  # what `buildah push --digestfile` wrote
    key: artifacts.SigningKey
    other: artifacts.SigningKey
    trust: image.Trust
    policy: Path
    work: Path

    @property
    def ref(self) -> str:
        return f"{self.repository}:{VERSION}"


def gnupg(key: artifacts.SigningKey) -> Path:
    return key.secring.parent / "gnupg"  # make_test_key's layout


def stop_agents(*keys: artifacts.SigningKey) -> None:
    for key in keys:
        subprocess.run(
            ["gpgconf", "--homedir", str(gnupg(key)), "--kill", "gpg-agent"],
            capture_output=True, check=False, timeout=30,
        )  # fmt: skip


@pytest.fixture(scope="module")
def released(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Released]:  # noqa: F811
    """The operator image built, pushed and signed with a key generated here."""
    work = tmp_path_factory.mktemp("image-release")
    image.build_operator(LOCAL_TAG, work / "build")
    key = artifacts.make_test_key(work / "key")
    other = artifacts.make_test_key(work / "other", name="someone else")
    try:
        trust = image.lookaside_config(work, registry.host)
        repository = f"{registry.host}/{image.REPOSITORY}"
        digest = image.push(
            LOCAL_TAG, f"{repository}:{VERSION}", work / "push", trust=trust,
            sign_by=image.fingerprint(gnupg(key), key.name), gnupg_home=gnupg(key),
        )  # fmt: skip
        policy = image.signed_by_policy(work / "policy.json", repository, key.pubring)
        yield Released(registry, repository, digest, key, other, trust, policy, work)
    finally:
        stop_agents(key, other)


@contextmanager
def derived(base: str, label: str) -> Iterator[str]:
    """An image other than the released one (`base` with one more label): another digest."""
    tag = f"{base}-{label}"
    with image.working_container(base) as ctr:
        image.run([*image.BUILDAH, "config", "--label", f"derived={label}", ctr], what="config")
        image.run([*image.BUILDAH, "commit", "-q", ctr, tag], what="buildah commit")
    try:
        yield tag
    finally:
        subprocess.run([*image.BUILDAH, "rmi", tag], capture_output=True, check=False)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    """A fresh, empty image storage for one test's pulls."""
    yield tmp_path / "store"
    image.drop_store(tmp_path / "store")


class TestDigest:
    def test_the_pushed_digest_is_the_registrys(self, released: Released) -> None:
        headers, body = released.registry.get(
            f"/v2/{image.REPOSITORY}/manifests/{VERSION}", accept=OCI_MANIFEST
        )
        assert headers.get("Docker-Content-Digest") == released.digest
        assert "sha256:" + hashlib.sha256(body).hexdigest() == released.digest
        manifest = json.loads(body)
        assert manifest["mediaType"] == OCI_MANIFEST
        assert manifest["layers"], manifest

    def test_the_release_script_records_it_in_the_charts_values(
        self, released: Released, tmp_path: Path
    ) -> None:
        out = subprocess.run(
            [sys.executable, str(REPO / "hack/release/artifacts.py"), "--out", str(tmp_path),
             "--image-digest", released.digest, "--no-sbom"],
            capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        tgz = next(Path(line) for line in out.stdout.splitlines() if line.endswith(".tgz"))
        helm = str(artifacts.helm_bin())
        values = yaml.safe_load(
            subprocess.run(
                [helm, "show", "values", str(tgz)], capture_output=True, text=True, check=True
            ).stdout
        )
        assert values["image"]["digest"] == released.digest
        rendered = subprocess.run(
            [helm, "template", "rel", str(tgz), "--set", f"image.repository={released.repository}"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        deployment = next(
            d for d in yaml.safe_load_all(rendered) if d and d.get("kind") == "Deployment"
        )
        images = {c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]}
        assert images == {f"{released.repository}@{released.digest}"}


class TestSignature:
    def test_the_signed_image_verifies_and_pulls(self, released: Released, store: Path) -> None:
        # by the tag it was pushed as, and by the reference the chart renders
        for ref in (released.ref, f"{released.repository}@{released.digest}"):
            pulled = image.pull_verified(ref, released.policy, released.trust, store)
            assert pulled == released.digest
        at = released.trust.lookaside / f"{image.REPOSITORY}@{released.digest.replace(':', '=')}"
        assert [p.name for p in at.iterdir()] == ["signature-1"]

    def test_an_unsigned_image_is_refused(self, released: Released, store: Path) -> None:
        ref = f"{released.repository}:unsigned"
        with derived(LOCAL_TAG, "unsigned") as other_image:
            image.push(other_image, ref, released.work / "push", trust=released.trust)
        with pytest.raises(
            image.ImageError, match="A signature was required, but no signature exists"
        ):
            image.pull_verified(ref, released.policy, released.trust, store)

    def test_an_image_signed_by_another_key_is_refused(
        self, released: Released, store: Path
    ) -> None:
        ref = f"{released.repository}:other-signer"
        other = released.other
        with derived(LOCAL_TAG, "other-signer") as other_image:
            image.push(
                other_image, ref, released.work / "push", trust=released.trust,
                sign_by=image.fingerprint(gnupg(other), other.name), gnupg_home=gnupg(other),
            )  # fmt: skip
        with pytest.raises(image.ImageError, match="Invalid GPG signature"):
            image.pull_verified(ref, released.policy, released.trust, store)

    def test_the_tag_moved_to_another_digest_is_refused(
        self, released: Released, store: Path
    ) -> None:
        """Another image pushed under a signed tag, the signature copied to its digest (a
        replay): the signature names the first digest, so the pull is refused."""
        ref = f"{released.repository}:moved"
        first = image.push(
            LOCAL_TAG, ref, released.work / "push", trust=released.trust,
            sign_by=image.fingerprint(gnupg(released.key), released.key.name),
            gnupg_home=gnupg(released.key),
        )  # fmt: skip
        with derived(LOCAL_TAG, "moved") as other_image:
            moved = image.push(other_image, ref, released.work / "push")
        assert moved != first
        # containers/image's lookaside layout: <repository>@sha256=<hex>/signature-<n>
        src = released.trust.lookaside / f"{image.REPOSITORY}@{first.replace(':', '=')}"
        dst = released.trust.lookaside / f"{image.REPOSITORY}@{moved.replace(':', '=')}"
        assert (src / "signature-1").is_file(), list(released.trust.lookaside.rglob("*"))
        shutil.copytree(src, dst)
        with pytest.raises(image.ImageError, match=f"Signature for digest {first} does not match"):
            image.pull_verified(ref, released.policy, released.trust, store)


class TestImageSbom:
    def test_the_images_sbom_names_it_and_what_it_holds(self, released: Released) -> None:
        doc = image.image_sbom(LOCAL_TAG, released.repository, released.digest)
        problems = artifacts.check_image_sbom(
            doc,
            (REPO / "pyproject.toml").read_text(),
            (REPO / "constraints.txt").read_text(),
            released.repository,
            released.digest,
        )
        assert problems == []
        debs = {c["name"]: c for c in doc["components"] if "pkg:deb/" in c.get("purl", "")}
        assert {"libc6", "python3"} <= set(debs), sorted(debs)
        assert debs["libc6"]["purl"].startswith("pkg:deb/debian/libc6@")
        assert "distro=debian-12" in debs["libc6"]["purl"]
        # Valid against the CycloneDX 1.6 JSON schema, by the generator's own library.
        problems_text = artifacts.validate_cyclonedx(json.dumps(doc))
        assert problems_text == "", problems_text
        (released.work / "operator.cdx.json").write_text(json.dumps(doc, indent=2))
