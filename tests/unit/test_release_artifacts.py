"""The release script's pure parts (hack/release/artifacts.py, docs/RELEASE.md): the image
digest written into the packaged chart's default values, and the SBOM check.

The digest is written into a staged copy of the chart, never the source tree; the chart
rendered from that copy runs the image as `repository@digest` and still passes its strict
schema. The SBOM check must refuse a document that lacks what a consumer of the SBOM needs
(tests/e2e/test_release_oci.py runs the signing and the registry; the real generator runs
in `make release-artifacts`)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "vllm-preflight"
sys.path.insert(0, str(REPO / "hack" / "release"))
import artifacts  # noqa: E402

DIGEST = "sha256:" + "0123456789abcdef" * 4
CHECK_DIGEST = "sha256:" + "fedcba9876543210" * 4
PYPROJECT = (REPO / "pyproject.toml").read_text()


class TestSetDigests:
    def test_sets_both_digests_and_keeps_every_other_line(self) -> None:
        before = (CHART / "values.yaml").read_text()
        after = artifacts.set_digests(before, {"image": DIGEST, "checkImage": CHECK_DIGEST})
        values = yaml.safe_load(after)
        assert values["image"]["digest"] == DIGEST
        assert values["checkImage"]["digest"] == CHECK_DIGEST
        changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
        assert len(changed) == 2, changed
        assert len(before.splitlines()) == len(after.splitlines())
        original = yaml.safe_load(before)
        original["image"]["digest"], original["checkImage"]["digest"] = DIGEST, CHECK_DIGEST
        assert values == original

    @pytest.mark.parametrize(
        "digest",
        ["sha256:abc", "sha512:" + "0" * 64, "sha256:" + "A" * 64, DIGEST + "\nx: 1", ""],
    )
    def test_a_malformed_digest_is_refused_naming_the_value(self, digest: str) -> None:
        with pytest.raises(artifacts.ReleaseError, match=r"^image\.digest: .*sha256:<64"):
            artifacts.set_digests((CHART / "values.yaml").read_text(), {"image": digest})

    def test_a_block_without_a_digest_line_is_refused(self) -> None:
        text = 'image:\n  repository: r\n  nested:\n    digest: ""\nother:\n  digest: ""\n'
        with pytest.raises(artifacts.ReleaseError, match=r"no `digest:` line under `image:`"):
            artifacts.set_digests(text, {"image": DIGEST})

    def test_an_unknown_block_is_refused(self) -> None:
        with pytest.raises(artifacts.ReleaseError, match="unknown"):
            artifacts.set_digests('tests:\n  digest: ""\n', {"tests": DIGEST})

    def test_the_staged_chart_renders_repo_at_digest(self, tmp_path: Path) -> None:
        from preflight_dev.testing.binaries import BinariesNotFound, find_bin_dir

        try:
            helm = find_bin_dir() / "helm"
        except BinariesNotFound as err:  # pragma: no cover - CI builds it
            pytest.skip(f"no helm binary: {err}")
        staged = artifacts.stage_chart(tmp_path, {"image": DIGEST, "checkImage": CHECK_DIGEST})
        assert (CHART / "values.yaml").read_text() != (staged / "values.yaml").read_text()
        out = subprocess.run(
            [str(helm), "template", "r", str(staged), "--namespace", "ns",
             "--set", "injection.mode=DedicatedImage"],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        docs = [d for d in yaml.safe_load_all(out.stdout) if d]
        deployment = next(d for d in docs if d["kind"] == "Deployment")
        images = {c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]}
        assert images == {f"ghcr.io/vllm-preflight/operator@{DIGEST}"}
        assert f"ghcr.io/vllm-preflight/check@{CHECK_DIGEST}" in out.stdout


def good_sbom() -> dict[str, Any]:
    """The shape `cyclonedx-py environment --pyproject` writes (trimmed to what is checked)."""
    deps = artifacts.runtime_requirements(PYPROJECT)
    return {
        "bomFormat": "CycloneDX",
        "specVersion": artifacts.SPEC_VERSION,
        "metadata": {
            "component": {
                "bom-ref": "root-component",
                "type": "application",
                "name": "vllm-preflight",
                "version": "0.1.0",
                "hashes": [{"alg": "SHA-256", "content": "ab" * 32}],
                "purl": "pkg:pypi/vllm-preflight@0.1.0?file_name=x.whl",
            }
        },
        "components": [
            {
                "bom-ref": f"{d}==1.0",
                "type": "library",
                "name": d,
                "version": "1.0",
                "purl": f"pkg:pypi/{d}@1.0",
                "hashes": [{"alg": "SHA-256", "content": "cd" * 32}],
            }
            for d in deps
        ],
        "dependencies": [
            {"ref": "root-component", "dependsOn": [f"{d}==1.0" for d in deps]},
            *({"ref": f"{d}==1.0"} for d in deps),
        ],
    }


class TestCheckSbom:
    def test_runtime_requirements_are_pyprojects(self) -> None:
        assert artifacts.runtime_requirements(PYPROJECT) == [
            "kopf", "nvidia-ml-py", "pyyaml", "prometheus-client", "aiohttp",
        ]  # fmt: skip

    def test_a_complete_sbom_passes(self) -> None:
        assert artifacts.check_sbom(good_sbom(), PYPROJECT, "ab" * 32) == []

    def test_names_are_compared_normalized(self) -> None:
        doc = good_sbom()
        for comp in doc["components"]:
            if comp["name"] == "pyyaml":
                comp["name"], comp["purl"] = "PyYAML", "pkg:pypi/PyYAML@6.0.2"
        assert artifacts.check_sbom(doc, PYPROJECT) == []

    @pytest.mark.parametrize(
        ("break_it", "problem"),
        [
            (lambda d: d.update(bomFormat="SPDX"), "bomFormat"),
            (lambda d: d.update(specVersion="1.2"), "specVersion"),
            (lambda d: d.pop("metadata"), "metadata.component"),
            (lambda d: d["metadata"]["component"].update(name="other"), "component.name"),
            (lambda d: d["metadata"]["component"].update(version="9"), "component.version"),
            (lambda d: d["metadata"]["component"].pop("hashes"), "SHA-256"),
            (lambda d: d["components"].pop(), "'aiohttp'"),
            (lambda d: d["components"][0].pop("version"), "has no version"),
            (lambda d: d["components"][0].update(purl="pkg:npm/kopf@1"), "pkg:pypi purl"),
            (lambda d: d.update(components="nope"), "no component for"),
            (lambda d: d["dependencies"][0]["dependsOn"].pop(0), "does not depend on 'kopf'"),
            (lambda d: d.pop("dependencies"), "does not depend on"),
            (lambda d: d["metadata"]["component"].pop("purl"), "no pkg:pypi purl (got None)"),
            (lambda d: d["components"][1].pop("hashes"), "'nvidia-ml-py' has no SHA-256"),
            (
                lambda d: d["components"][0].update(hashes=[{"alg": "MD5", "content": "0" * 32}]),
                "'kopf' has no SHA-256",
            ),
        ],
    )
    def test_what_is_missing_is_named(self, break_it: Any, problem: str) -> None:
        doc = copy.deepcopy(good_sbom())
        break_it(doc)
        problems = artifacts.check_sbom(doc, PYPROJECT, "ab" * 32)
        assert any(problem in p for p in problems), problems

    @pytest.mark.parametrize("doc", [[], "x", None, 3])
    def test_not_an_object(self, doc: Any) -> None:
        assert artifacts.check_sbom(doc, PYPROJECT) == ["the SBOM is not a JSON object"]


def test_make_release_artifacts_passes_its_variables() -> None:
    """`make release-artifacts` hands IMAGE_DIGEST, CHECK_IMAGE_DIGEST, KEY, KEYRING,
    PUBRING and IMAGE_REGISTRY to the script (printed by `make -n`, nothing run)."""
    out = subprocess.run(
        ["make", "-n", "release-artifacts", "IMAGE_DIGEST=" + DIGEST,
         "CHECK_IMAGE_DIGEST=" + CHECK_DIGEST, "KEY=Release Key", "KEYRING=/k/sec.gpg",
         "PUBRING=/k/pub.gpg", "IMAGE_REGISTRY=127.0.0.1:5000"],
        cwd=REPO, capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    command = " ".join(out[out.index("hack/release/artifacts.py") :].split("\\\n"))
    for part in (
        f"--image-digest '{DIGEST}'",
        f"--check-image-digest '{CHECK_DIGEST}'",
        "--key 'Release Key' --keyring '/k/sec.gpg'",
        "--pubring '/k/pub.gpg'",
        "--image-registry '127.0.0.1:5000'",
    ):
        assert part in command, command


# ---- the image's SBOM (hack/release/image.py builds it, check_image_sbom() judges it) ----
import image  # noqa: E402  (hack/release/image.py; on sys.path above)

IMAGE_REPO = "127.0.0.1:5000/vllm-preflight/operator"
CONSTRAINTS = (REPO / "constraints.txt").read_text()
DPKG_STATUS = """\
Package: libc6
Status: install ok installed
Priority: optional
Architecture: amd64
Multi-Arch: same
Version: 2.36-9+deb12u9
Description: GNU C Library: Shared libraries
 Contains the standard libraries that are used by nearly all programs on
 the system. Version: 9.9 (a continuation line, not a field)

Package: removed-one
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0

Package: tzdata
Status: install ok installed
Architecture: all
Version: 2024a-0+deb12u1
"""
OS_RELEASE = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n'


def good_image_sbom() -> dict[str, Any]:
    pins = image.pins(CONSTRAINTS)
    project = {"name": "vllm-preflight", "version": "0.1.0"}
    python = [project] + [
        {"name": name, "version": pins[name]}
        for name in ("kopf", "nvidia-ml-py", "pyyaml", "prometheus-client", "aiohttp")
    ]
    comps = [
        {
            "type": "library",
            "bom-ref": f"{c['name']}=={c['version']}",
            "name": c["name"],
            "version": c["version"],
            "purl": f"pkg:pypi/{c['name']}@{c['version']}",
        }
        for c in python
    ] + [{"type": "library", "bom-ref": "pip==24.3.1", "name": "pip", "version": "24.3.1",
          "purl": "pkg:pypi/pip@24.3.1"}]  # fmt: skip
    comps[0].pop("purl")  # the project, installed from the build context: no purl
    debs = image.deb_components(DPKG_STATUS, image.os_release(OS_RELEASE))
    root = image.image_purl(IMAGE_REPO, DIGEST)
    return {
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "version": 1,
        "metadata": {
            "component": {
                "type": "container",
                "bom-ref": root,
                "name": IMAGE_REPO,
                "version": DIGEST,
                "purl": root,
                "hashes": [{"alg": "SHA-256", "content": DIGEST.removeprefix("sha256:")}],
            }
        },
        "components": comps + debs,
        "dependencies": [{"ref": root, "dependsOn": ["vllm-preflight==0.1.0", "pip==24.3.1"]}],
    }


class TestImageSbom:
    def test_dpkg_status_gives_the_installed_packages_only(self) -> None:
        got = image.parse_dpkg_status(DPKG_STATUS)
        assert [(p["Package"], p["Version"]) for p in got] == [
            ("libc6", "2.36-9+deb12u9"),
            ("tzdata", "2024a-0+deb12u1"),
        ]

    def test_deb_purls_are_percent_encoded_with_arch_and_distro(self) -> None:
        debs = image.deb_components(DPKG_STATUS, image.os_release(OS_RELEASE))
        assert [d["purl"] for d in debs] == [
            "pkg:deb/debian/libc6@2.36-9%2Bdeb12u9?arch=amd64&distro=debian-12",
            "pkg:deb/debian/tzdata@2024a-0%2Bdeb12u1?arch=all&distro=debian-12",
        ]

    def test_the_image_purl_carries_the_digest_and_the_repository(self) -> None:
        assert image.image_purl(IMAGE_REPO, DIGEST) == (
            f"pkg:oci/operator@sha256%3A{DIGEST[7:]}"
            f"?repository_url=127.0.0.1:5000/vllm-preflight/operator"
        )

    def test_a_complete_image_sbom_passes(self) -> None:
        doc = good_image_sbom()
        assert artifacts.check_image_sbom(doc, PYPROJECT, CONSTRAINTS, IMAGE_REPO, DIGEST) == []

    @pytest.mark.parametrize(
        ("break_it", "problem"),
        [
            (lambda d: d.update(specVersion="1.5"), "specVersion"),
            (lambda d: d["metadata"].pop("component"), "the image) is missing"),
            (lambda d: d["metadata"]["component"].update(type="library"), "component.type"),
            (
                lambda d: d["metadata"]["component"].update(version=CHECK_DIGEST),
                "component.version",
            ),
            (lambda d: d["metadata"]["component"].update(hashes=[]), "manifest digest"),
            (lambda d: d["metadata"]["component"].update(purl="pkg:oci/x"), "purl"),
            (lambda d: d["components"].pop(0), "'vllm-preflight' at version"),
            (lambda d: d["components"].pop(1), "no component for the runtime dependency 'kopf'"),
            (lambda d: d["components"][2].update(version="0.0.1"), "constraints.txt pins"),
            (
                lambda d: d["components"].append(
                    {"name": "evil", "version": "1", "purl": "pkg:pypi/evil@1"}
                ),
                "evil '1' is in the image, unpinned",
            ),
            (lambda d: d.update(components=d["components"][:7]), "no pkg:deb component"),
            (lambda d: d["dependencies"][0].update(dependsOn=[]), "does not depend on"),
        ],
    )
    def test_what_is_missing_is_named(self, break_it: Any, problem: str) -> None:
        doc = copy.deepcopy(good_image_sbom())
        break_it(doc)
        problems = artifacts.check_image_sbom(doc, PYPROJECT, CONSTRAINTS, IMAGE_REPO, DIGEST)
        assert any(problem in p for p in problems), problems

    def test_pins_reads_constraints(self) -> None:
        pins = image.pins("# c\nPyYAML==6.0.4\nprometheus_client==0.26.0 ; python_version>'3'\n")
        assert pins == {"pyyaml": "6.0.4", "prometheus-client": "0.26.0"}


class TestImageTrust:
    def test_the_policy_accepts_only_the_key_for_the_repository(self, tmp_path: Path) -> None:
        path = image.signed_by_policy(tmp_path / "p.json", IMAGE_REPO, tmp_path / "pub.gpg")
        policy = json.loads(path.read_text())
        assert policy["default"] == [{"type": "reject"}]
        assert policy["transports"] == {
            "docker": {
                IMAGE_REPO: [
                    {
                        "type": "signedBy",
                        "keyType": "GPGKeys",
                        "keyPath": str(tmp_path / "pub.gpg"),
                        "signedIdentity": {"type": "matchRepoDigestOrExact"},
                    }
                ]
            }
        }

    def test_signatures_go_to_a_lookaside_for_the_registry_only(self, tmp_path: Path) -> None:
        trust = image.lookaside_config(tmp_path, "127.0.0.1:5000")
        config = yaml.safe_load((trust.registries_d / "local.yaml").read_text())
        url = trust.lookaside.as_uri()
        assert config == {
            "docker": {"127.0.0.1:5000": {"lookaside": url, "lookaside-staging": url}}
        }


# ---- the Python artifacts (hack/release/dists.py) -------------------------------------
import dists  # noqa: E402  (hack/release/dists.py; on sys.path above)


class TestDists:
    @pytest.mark.parametrize(
        ("filename", "identity"),
        [
            ("PyYAML-6.0.2-cp311-cp311-manylinux_2_17_x86_64.whl", ("pyyaml", "6.0.2")),
            ("nvidia_ml_py-12.570.86-py3-none-any.whl", ("nvidia-ml-py", "12.570.86")),
            ("iso8601-2.1.0.tar.gz", ("iso8601", "2.1.0")),
            ("python_json_logger-3.2.1.tar.gz", ("python-json-logger", "3.2.1")),
            ("README.md", None),
        ],
    )
    def test_dist_identity(self, filename: str, identity: tuple[str, str] | None) -> None:
        assert dists.dist_identity(filename) == identity

    def test_enrich_gives_the_root_a_purl_and_each_component_its_files_hash(
        self, tmp_path: Path
    ) -> None:
        wheel = tmp_path / "vllm_preflight-0.1.0-py3-none-any.whl"
        wheel.write_bytes(b"wheel")
        doc = good_sbom()
        for comp in doc["components"]:
            comp.pop("hashes")
        del doc["metadata"]["component"]["purl"]
        assert dists.hash_problems(doc)
        hashes = {(c["name"], "1.0"): "ef" * 32 for c in doc["components"]}
        dists.enrich_sbom(doc, hashes, wheel)
        root = doc["metadata"]["component"]
        assert root["purl"] == (
            "pkg:pypi/vllm-preflight@0.1.0?file_name=vllm_preflight-0.1.0-py3-none-any.whl"
        )
        assert root["hashes"] == [{"alg": "SHA-256", "content": artifacts.sha256_file(wheel)}]
        assert dists.hash_problems(doc) == []
        assert artifacts.check_sbom(doc, PYPROJECT, artifacts.sha256_file(wheel)) == []

    def test_the_tree_is_one_version(self) -> None:
        """pyproject.toml, both packages' __version__, the chart and CHANGELOG.md agree
        (hack/release.sh and the release script refuse otherwise)."""
        assert dists.version_problems() == []

    def test_a_disagreeing_version_is_named(self, tmp_path: Path) -> None:
        for rel in (
            "pyproject.toml",
            "CHANGELOG.md",
            "charts/vllm-preflight/Chart.yaml",
            "initcontainer/preflight_check/__init__.py",
            "operator/preflight_operator/__init__.py",
        ):
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text((REPO / rel).read_text())
        chart = tmp_path / "charts/vllm-preflight/Chart.yaml"
        chart.write_text(chart.read_text().replace('appVersion: "0.1.0"', 'appVersion: "0.2.0"'))
        (tmp_path / "CHANGELOG.md").write_text("# Changelog\n")
        problems = dists.version_problems(tmp_path)
        assert any("appVersion" in p for p in problems), problems
        assert any("CHANGELOG.md" in p for p in problems), problems
        assert len(problems) == 2

    def test_license_is_checked_in_every_archive(self, tmp_path: Path) -> None:
        import io
        import tarfile
        import zipfile

        license_file = tmp_path / "LICENSE"
        license_file.write_text("the licence")
        wheel = tmp_path / "x-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr("x-1.0.dist-info/licenses/LICENSE", "the licence")
        sdist = tmp_path / "x-1.0.tar.gz"
        krew = tmp_path / "k.tar.gz"
        for path, name in ((sdist, "x-1.0/LICENSE"), (krew, "README")):
            with tarfile.open(path, "w:gz") as tar:
                info = tarfile.TarInfo(name)
                info.size = len(b"the licence")
                tar.addfile(info, io.BytesIO(b"the licence"))
        assert dists.check_license(wheel, sdist, [krew], license_file) == [
            "k.tar.gz has no LICENSE equal to LICENSE"
        ]
        license_file.write_text("another")
        assert len(dists.check_license(wheel, sdist, [], license_file)) == 2


def test_release_artifacts_builds_helm_alone() -> None:
    """`make release-artifacts` needs no control plane (issue 40): helm comes from
    `hack/k8s/build.sh helm`, and the make target does not depend on `controlplane`."""
    makefile = (REPO / "Makefile").read_text()
    target = next(line for line in makefile.splitlines() if line.startswith("release-artifacts:"))
    assert "controlplane" not in target
    assert 'bin_from_build("helm", "helm")' in (REPO / "hack/release/artifacts.py").read_text()


class TestReleaseScript:
    """hack/release.sh refuses before building anything: a work tree with changes, a tree
    whose versions disagree, a tag that exists (the build itself runs in
    tests/e2e/test_install_paths.py through the same artifacts.py)."""

    @pytest.fixture
    def clone(self, tmp_path: Path) -> Path:
        clone = tmp_path / "clone"
        subprocess.run(
            ["git", "clone", "-q", "--no-local", str(REPO), str(clone)],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        return clone

    def _release(self, clone: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(clone / "hack/release.sh")], capture_output=True, text=True, timeout=120,
            check=False, cwd=clone, env={"PATH": "/usr/bin:/bin", "PY": sys.executable},
        )  # fmt: skip

    def _git(self, clone: Path, *args: str) -> None:
        subprocess.run(
            ["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@e", *args],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip

    def test_a_work_tree_with_changes_is_refused(self, clone: Path) -> None:
        (clone / "stray.txt").write_text("x")
        result = self._release(clone)
        assert result.returncode == 1
        assert "the work tree has changes" in result.stderr

    def test_a_disagreeing_version_is_refused(self, clone: Path) -> None:
        init = clone / "operator/preflight_operator/__init__.py"
        init.write_text(init.read_text().replace('__version__ = "', '__version__ = "9.'))
        self._git(clone, "commit", "-qam", "drift")
        result = self._release(clone)
        assert result.returncode == 1
        assert "preflight_operator/__init__.py: __version__ is not" in result.stderr

    def test_an_existing_tag_is_refused(self, clone: Path) -> None:
        version = dists.project_version()
        self._git(clone, "tag", f"v{version}")
        result = self._release(clone)
        assert result.returncode == 1
        assert f"tag v{version} exists" in result.stderr


def test_no_doc_installs_from_an_index_and_install_shows_the_release_commands() -> None:
    """Nothing is published to an index (issue 40): no doc tells users to install the
    package by name, and docs/INSTALL.md and README.md show the commands
    tests/e2e/test_install_paths.py runs, with this version's file names."""
    version = dists.project_version()
    docs = [
        REPO / "README.md",
        REPO / ".pre-commit-hooks.yaml",
        *sorted((REPO / "docs").rglob("*.md")),
    ]
    docs += sorted((REPO / "hack" / "krew").iterdir())
    by_name = re.compile(r"pip3? install (-U |--upgrade )?vllm[-_]preflight(==|\s|$)")
    offenders = [str(p.relative_to(REPO)) for p in docs if by_name.search(p.read_text())]
    assert offenders == []
    for doc in ("README.md", "docs/INSTALL.md"):
        text = " ".join((REPO / doc).read_text().replace("\\\n", " ").split())
        for command in (
            f"pip install ./vllm_preflight-{version}-py3-none-any.whl",
            "kubectl krew install --manifest vllm-preflight.yaml --archive "
            f"kubectl-vllm_preflight-v{version}-linux.tar.gz",
            f"python3 vllm-preflight-{version}.pyz",
            "sha256sum --ignore-missing -c SHA256SUMS",
        ):
            assert command in text, (doc, command)
