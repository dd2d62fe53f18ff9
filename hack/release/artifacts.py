#!/usr/bin/env python3
"""Builds the release artifacts into dist/ and verifies each one (docs/RELEASE.md).

    python3 hack/release/artifacts.py --out dist                 # `make release-artifacts`
    python3 hack/release/artifacts.py --out dist --image-digest sha256:<64 hex>

What it writes:

- the wheel (`pip wheel --no-deps .`) and a CycloneDX SBOM of it: the wheel installed with
  its runtime dependencies (pinned by constraints.txt) into a fresh virtualenv, described
  by the real generator `cyclonedx-py environment` (PyPI cyclonedx-bom, pinned in
  hack/release/sbom-tool.txt, installed into its own virtualenv in the cache outside the
  repository). The wheel's own sha256 is added to the root component, so the SBOM names
  the exact file. check_sbom() then proves the document says what it must.
- the chart, packaged from a staged copy whose default values carry the image digests
  given (`image.digest`, `checkImage.digest`), signed (Helm provenance, `helm package
  --sign`) and checked with `helm verify`.
- SHA256SUMS over everything above.

Signing key: `--key NAME --keyring SECRING` (a release key, GnuPG's legacy secret-keyring
format, which Helm reads). Without them a throwaway RSA key is generated into
`<out>/test-key/` (GnuPG home `gnupg/`, exported `secring.gpg` and `pubring.gpg`) and named
"test key" everywhere: it proves the signing and verifying steps, and must never sign
something published.

The image: with `--image-registry HOST:PORT` the operator image is built on a stand-in
base (Docker Hub is out of reach here: hack/release/image.py), pushed signed, verified, and
described in `operator-image.cdx.json`; its digest goes into the chart. Not a releasable
image; a pipeline that builds the real one passes its digest with --image-digest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib  # Python >= 3.11: the release runs in the dev venv

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dists  # hack/release/dists.py
import image  # hack/release/image.py

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CHART = REPO / "charts" / "vllm-preflight"
PYPROJECT = REPO / "pyproject.toml"
CONSTRAINTS = REPO / "constraints.txt"
SBOM_TOOL = HERE / "sbom-tool.txt"
BUILD_TOOL = HERE / "build-tool.txt"
KREW_BUILD = REPO / "hack" / "krew" / "build.py"
BUILD_SH = REPO / "hack" / "k8s" / "build.sh"
DIGEST = re.compile(r"^sha256:[a-f0-9]{64}$")
# The values that carry a digest: the top-level block and its description for errors.
DIGEST_VALUES = {"image": "the operator image", "checkImage": "the dedicated check image"}
SPEC_VERSION = "1.6"
TEST_KEY_NAME = "vllm-preflight release test key (never publish with it)"


class ReleaseError(RuntimeError):
    """A release step failed; the message names the step and how to fix it."""


def _run(argv: Sequence[str], *, what: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    if "input" not in kwargs:
        kwargs["stdin"] = subprocess.DEVNULL
    result = subprocess.run(list(argv), capture_output=True, text=True, check=False, **kwargs)
    if result.returncode != 0:
        raise ReleaseError(
            f"{what} failed (exit {result.returncode}): {' '.join(map(str, argv))}\n"
            f"{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    return result


def bin_from_build(target: str, name: str) -> Path:
    """A binary of `hack/k8s/build.sh <target>` (cached after its first build)."""
    result = _run([str(BUILD_SH), target], what=f"hack/k8s/build.sh {target}")
    path = Path(result.stdout.strip().splitlines()[-1]) / name
    if not os.access(path, os.X_OK):
        raise ReleaseError(f"hack/k8s/build.sh {target} printed a directory without {name}")
    return path


def helm_bin() -> Path:
    env = os.environ.get("VLLM_PREFLIGHT_K8S_BIN", "").strip()
    if env:
        return Path(env) / "helm"
    return bin_from_build("helm", "helm")  # helm alone: no control plane to build


# ---- image digests in the chart's default values ---------------------------------------


def set_digests(values_text: str, digests: Mapping[str, str]) -> str:
    """values.yaml with `<block>.digest` set for each block in `digests`, every other byte
    (the `# --` comments helm-docs and users read) kept. Raises ReleaseError naming the
    value when a digest is malformed or the block has no `digest:` line."""
    lines = values_text.splitlines(keepends=True)
    for block, digest in digests.items():
        if block not in DIGEST_VALUES:
            raise ReleaseError(f"{block}.digest: unknown; one of {sorted(DIGEST_VALUES)}")
        if not DIGEST.match(digest):
            raise ReleaseError(
                f"{block}.digest: {digest!r} is not sha256:<64 lowercase hex> "
                f"(the digest of {DIGEST_VALUES[block]}, as `crane digest` or "
                "`buildah inspect` print it)"
            )
        start = next((i for i, line in enumerate(lines) if line.rstrip() == f"{block}:"), None)
        if start is None:
            raise ReleaseError(f"{block}.digest: no top-level `{block}:` in values.yaml")
        done = False
        for i in range(start + 1, len(lines)):
            line = lines[i]
            if line.strip() and not line.startswith((" ", "#")):
                break  # the next top-level key: the block has no digest line
            match = re.match(r"^(  )digest:\s*(\"\"|''|\S*)\s*$", line)
            if match:
                lines[i] = f'{match.group(1)}digest: "{digest}"\n'
                done = True
                break
        if not done:
            raise ReleaseError(f"{block}.digest: no `digest:` line under `{block}:`")
    return "".join(lines)


def stage_chart(dest: Path, digests: Mapping[str, str], chart: Path = CHART) -> Path:
    """A copy of the chart in dest/<name> whose values.yaml carries `digests`."""
    staged = dest / chart.name
    if staged.exists():
        shutil.rmtree(staged)
    shutil.copytree(chart, staged)
    values = staged / "values.yaml"
    values.write_text(set_digests(values.read_text(), digests))
    return staged


# ---- signing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SigningKey:
    name: str
    secring: Path  # what `helm package --sign --keyring` reads
    pubring: Path  # what `helm verify --keyring` and `helm install --verify` read


def _export(base: Sequence[str], option: str, name: str) -> bytes:
    result = subprocess.run(
        [*base, option, name], capture_output=True, check=False, stdin=subprocess.DEVNULL
    )
    if result.returncode != 0:
        raise ReleaseError(f"gpg {option} failed: {result.stderr.decode(errors='replace')}")
    return result.stdout


def make_test_key(home: Path, name: str = TEST_KEY_NAME) -> SigningKey:
    """A throwaway RSA-3072 signing key (no passphrase) in `home`: a fresh GnuPG home
    (`home/gnupg`, replaced on every call) and the key exported beside it in the keyring
    format Helm reads (`secring.gpg`, `pubring.gpg`): Helm's OpenPGP library cannot read
    GnuPG 2's keybox. The GnuPG agent it started is stopped before returning."""
    gpg = shutil.which("gpg")
    if gpg is None:
        raise ReleaseError("gpg is not installed; install GnuPG or pass --key and --keyring")
    gnupg = home / "gnupg"
    shutil.rmtree(gnupg, ignore_errors=True)
    gnupg.mkdir(parents=True)
    os.chmod(gnupg, 0o700)
    base = [gpg, "--batch", "--homedir", str(gnupg), "--pinentry-mode", "loopback"]
    try:
        _run(
            [*base, "--passphrase", "", "--quick-gen-key", name, "rsa3072", "sign", "1d"],
            what="gpg --quick-gen-key (the test signing key)",
        )
        secret = _export(base, "--export-secret-keys", name)
        public = _export(base, "--export", name)
    finally:
        gpgconf = shutil.which("gpgconf")
        if gpgconf is not None:
            subprocess.run(
                [gpgconf, "--homedir", str(gnupg), "--kill", "gpg-agent"],
                capture_output=True, check=False, timeout=30,
            )  # fmt: skip
    secring, pubring = home / "secring.gpg", home / "pubring.gpg"
    secring.write_bytes(secret)
    pubring.write_bytes(public)
    if not secret or not public:
        raise ReleaseError(f"gpg exported an empty keyring for {name!r}")
    return SigningKey(name, secring, pubring)


def package_chart(helm: Path, chart_dir: Path, out: Path, key: SigningKey | None) -> Path:
    """`helm package` (signed when `key` is given); the .tgz path (the .prov beside it)."""
    argv = [str(helm), "package", str(chart_dir), "--destination", str(out)]
    if key is not None:
        argv += ["--sign", "--key", key.name, "--keyring", str(key.secring)]
    result = _run(argv, what="helm package")
    match = re.search(r"saved it to: (\S+\.tgz)", result.stdout)
    if not match:
        raise ReleaseError(f"helm package said no archive path: {result.stdout!r}")
    return Path(match.group(1))


def verify_chart(helm: Path, tgz: Path, pubring: Path) -> str:
    """`helm verify`: the .prov's signature by a key in `pubring`, and the archive's sha256
    in it. Raises ReleaseError when either does not hold."""
    return _run(
        [str(helm), "verify", str(tgz), "--keyring", str(pubring)], what="helm verify"
    ).stdout


# ---- the wheel and its SBOM ---------------------------------------------------------------


def build_wheel(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("*.whl"))
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
        what="pip wheel",
    )
    wheels = sorted(set(out.glob("vllm_preflight-*.whl")) - before) or sorted(
        out.glob("vllm_preflight-*.whl")
    )
    if not wheels:
        raise ReleaseError(f"pip wheel wrote no vllm_preflight-*.whl into {out}")
    return wheels[-1]


def _venv_python(path: Path) -> Path:
    return path / "bin" / "python"


def _tool_venv(pins: Path, stem: str) -> Path:
    """A virtualenv in the cache holding what `pins` pins (built once per pin file and
    Python version, like hack/k8s/build.sh's binaries); its directory."""
    cache = Path(os.environ.get("VLLM_PREFLIGHT_CACHE") or Path.home() / ".cache/vllm-preflight")
    key = hashlib.sha256(pins.read_bytes() + sys.version.encode()).hexdigest()[:12]
    home = cache / f"{stem}-{key}"
    if os.access(_venv_python(home), os.X_OK) and (home / ".complete").is_file():
        return home
    partial = cache / f"{stem}-{key}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    venv.EnvBuilder(with_pip=True).create(partial)
    _run(
        [str(_venv_python(partial)), "-m", "pip", "install", "-q", "-r", str(pins)],
        what=f"pip install of hack/release/{pins.name}",
    )
    (partial / ".complete").write_text(pins.read_text())
    shutil.rmtree(home, ignore_errors=True)
    partial.rename(home)
    return home


def sbom_tool() -> Path:
    """cyclonedx-py from the pin in sbom-tool.txt, in its cached virtualenv.
    The venv's scripts name the .partial path in their shebang: run them through python."""
    cache = Path(os.environ.get("VLLM_PREFLIGHT_CACHE") or Path.home() / ".cache/vllm-preflight")
    key = hashlib.sha256(SBOM_TOOL.read_bytes() + sys.version.encode()).hexdigest()[:12]
    tool = cache / f"sbom-tool-{key}" / "bin" / "cyclonedx-py"
    if os.access(tool, os.X_OK):  # built before .complete markers existed
        return tool
    return _tool_venv(SBOM_TOOL, "sbom-tool") / "bin" / "cyclonedx-py"


def build_tool() -> Path:
    """The python of the virtualenv holding PyPA `build` (build-tool.txt)."""
    return _venv_python(_tool_venv(BUILD_TOOL, "build-tool"))


def generate_sbom(wheel: Path, out: Path) -> Path:
    """The wheel installed with its runtime dependencies into a fresh virtualenv, from the
    files `pip download` fetched (dists.wheelhouse), described by `cyclonedx-py
    environment`; the root component gets the wheel's sha256 and a purl, every component
    the sha256 of the file it was installed from."""
    tool = sbom_tool()
    with tempfile.TemporaryDirectory(prefix="sbom-env-") as tmp:
        env = Path(tmp) / "env"
        hashes = dists.wheelhouse(wheel, CONSTRAINTS, Path(tmp) / "wheelhouse", _run)
        # No pip or setuptools seeded into it: only what installing the wheel brings.
        venv.EnvBuilder(with_pip=False).create(env)
        _run(
            [sys.executable, "-m", "pip", "--python", str(_venv_python(env)), "install", "-q",
             "--no-index", "--find-links", str(Path(tmp) / "wheelhouse"),
             "-c", str(CONSTRAINTS), str(wheel)],
            what="pip install of the wheel into the SBOM's virtualenv",
        )  # fmt: skip
        sbom = out / (wheel.name.removesuffix(".whl") + ".cdx.json")
        _run(
            [str(_venv_python(tool.parent.parent)), str(tool), "environment",
             "--pyproject", str(PYPROJECT), "--spec-version", SPEC_VERSION,
             "--output-format", "JSON", "--output-reproducible",
             "--output-file", str(sbom), str(_venv_python(env))],
            what="cyclonedx-py environment",
        )  # fmt: skip
    doc = json.loads(sbom.read_text())
    dists.enrich_sbom(doc, hashes, wheel)
    sbom.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
    return sbom


def normalize(name: str) -> str:
    """PEP 503's normalized project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_requirements(pyproject_text: str) -> list[str]:
    """`[project] dependencies` names, normalized (extras and markers dropped)."""
    deps = tomllib.loads(pyproject_text)["project"]["dependencies"]
    return [normalize(re.split(r"[\s<>=!~;\[(]", dep, maxsplit=1)[0]) for dep in deps]


def _check_root(root: Any, project: Mapping[str, Any], wheel_sha256: str | None) -> list[str]:
    if not isinstance(root, dict):
        return ["metadata.component (the wheel's own component) is missing"]
    problems = []
    if normalize(str(root.get("name", ""))) != normalize(project["name"]):
        problems.append(f"metadata.component.name is {root.get('name')!r}, not {project['name']!r}")
    if root.get("version") != project["version"]:
        problems.append(
            f"metadata.component.version is {root.get('version')!r}, not {project['version']!r}"
        )
    hashes = root.get("hashes") if isinstance(root.get("hashes"), list) else []
    if wheel_sha256 is not None and {"alg": "SHA-256", "content": wheel_sha256} not in hashes:
        problems.append("metadata.component.hashes lacks the wheel's SHA-256")
    return problems


def _check_dependency(dep: str, comp: dict[str, Any] | None) -> list[str]:
    if comp is None:
        return [f"no component for the runtime dependency {dep!r}"]
    problems = []
    version = comp.get("version")
    if not isinstance(version, str) or not version:
        problems.append(f"component {dep!r} has no version")
    purl = comp.get("purl")
    if not isinstance(purl, str) or not normalize(purl).startswith(f"pkg:pypi/{dep}@"):
        problems.append(f"component {dep!r} has no pkg:pypi purl (got {purl!r})")
    return problems


def _check_format(doc: dict[str, Any]) -> list[str]:
    problems = []
    if doc.get("bomFormat") != "CycloneDX":
        problems.append(f"bomFormat is {doc.get('bomFormat')!r}, not 'CycloneDX'")
    if doc.get("specVersion") != SPEC_VERSION:
        problems.append(f"specVersion is {doc.get('specVersion')!r}, not {SPEC_VERSION!r}")
    return problems


def check_sbom(doc: Any, pyproject_text: str, wheel_sha256: str | None = None) -> list[str]:
    """What the SBOM lacks, one sentence each; [] when it is a CycloneDX document that names
    the wheel's own component (name and version from pyproject.toml; the wheel's SHA-256
    when given) and, for every runtime dependency pyproject.toml lists, a component with a
    version and a pkg:pypi purl that the root component depends on (`dependencies`)."""
    if not isinstance(doc, dict):
        return ["the SBOM is not a JSON object"]
    problems = _check_format(doc)
    metadata = doc.get("metadata")
    root = metadata.get("component") if isinstance(metadata, dict) else None
    problems += _check_root(root, tomllib.loads(pyproject_text)["project"], wheel_sha256)
    components = doc.get("components")
    found = {
        normalize(comp["name"]): comp
        for comp in (components if isinstance(components, list) else [])
        if isinstance(comp, dict) and isinstance(comp.get("name"), str)
    }
    # The graph: the root depends on each runtime dependency's component.
    graph = doc.get("dependencies")
    root_ref = root.get("bom-ref") if isinstance(root, dict) else None
    direct = next(
        (
            entry.get("dependsOn")
            for entry in (graph if isinstance(graph, list) else [])
            if isinstance(entry, dict) and entry.get("ref") == root_ref
        ),
        None,
    )
    direct_refs = set(direct) if isinstance(direct, list) else set()
    for dep in runtime_requirements(pyproject_text):
        comp = found.get(dep)
        problems += _check_dependency(dep, comp)
        if comp is not None and comp.get("bom-ref") not in direct_refs:
            problems.append(f"dependencies: the root component does not depend on {dep!r}")
    return problems + dists.hash_problems(doc)


_VALIDATE = """
import sys
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(sys.stdin.read())
print("" if error is None else error)
"""


def validate_cyclonedx(text: str) -> str:
    """'' when `text` is valid against the CycloneDX 1.6 JSON schema, else the first error,
    as the generator's own library (cyclonedx-python-lib, in the sbom_tool() virtualenv)
    says it."""
    python = _venv_python(sbom_tool().parent.parent)
    return _run(
        [str(python), "-c", _VALIDATE], what="CycloneDX schema validation", input=text
    ).stdout.strip()


# Installed into the image's venv besides what constraints.txt pins: the project itself and
# what `python -m venv` seeds (pip; setuptools before Python 3.12).
IMAGE_UNPINNED = frozenset({"pip", "setuptools", "wheel"})


def _check_image_root(root: Any, repository: str, digest: str) -> list[str]:
    if not isinstance(root, dict):
        return ["metadata.component (the image) is missing"]
    problems = []
    for key, want in (("type", "container"), ("name", repository), ("version", digest)):
        if root.get(key) != want:
            problems.append(f"metadata.component.{key} is {root.get(key)!r}, not {want!r}")
    hashes = root.get("hashes")
    if {"alg": "SHA-256", "content": digest.removeprefix("sha256:")} not in (
        hashes if isinstance(hashes, list) else []
    ):
        problems.append("metadata.component.hashes lacks the image's manifest digest")
    purl = root.get("purl")
    if (
        not isinstance(purl, str)
        or not purl.startswith("pkg:oci/")
        or ("@sha256%3A" + digest.removeprefix("sha256:") not in purl)
    ):
        problems.append(f"metadata.component.purl {purl!r} is not pkg:oci/...@<the digest>")
    return problems


def check_image_sbom(
    doc: Any, pyproject_text: str, constraints_text: str, repository: str, digest: str
) -> list[str]:
    """What the image's SBOM lacks, one sentence each; [] when it is a CycloneDX document
    whose root component is the image (type container, named `repository`, its manifest
    `digest` as version, hash and pkg:oci purl) and which lists: the project at
    pyproject.toml's version; every runtime dependency with a version and a pkg:pypi purl;
    every Python package at the version constraints.txt pins (none unpinned but the
    project, pip and setuptools); the image's Debian packages as pkg:deb components."""
    if not isinstance(doc, dict):
        return ["the SBOM is not a JSON object"]
    problems = _check_format(doc)
    metadata = doc.get("metadata")
    root = metadata.get("component") if isinstance(metadata, dict) else None
    problems += _check_image_root(root, repository, digest)
    components = [c for c in doc.get("components") or [] if isinstance(c, dict)]
    # The Python packages: everything but the Debian ones. The project itself has no purl
    # (cyclonedx-py gives none to a package installed from a local directory).
    python = {
        normalize(str(c.get("name", ""))): c
        for c in components
        if not str(c.get("purl", "")).startswith("pkg:deb/")
    }
    project = tomllib.loads(pyproject_text)["project"]
    own = python.get(normalize(project["name"]))
    if own is None or own.get("version") != project["version"]:
        problems.append(
            f"no component {project['name']!r} at version {project['version']!r} (the project)"
        )
    for dep in runtime_requirements(pyproject_text):
        problems += _check_dependency(dep, python.get(dep))
    pinned = image.pins(constraints_text)
    for name, comp in sorted(python.items()):
        if name in pinned and comp.get("version") != pinned[name]:
            problems.append(
                f"{name} is {comp.get('version')!r} in the image; constraints.txt pins "
                f"{pinned[name]!r}"
            )
        elif name not in pinned and name not in IMAGE_UNPINNED | {normalize(project["name"])}:
            problems.append(f"{name} {comp.get('version')!r} is in the image, unpinned")
    debs = [c for c in components if str(c.get("purl", "")).startswith("pkg:deb/")]
    if not debs:
        problems.append("no pkg:deb component: the image's Debian packages are missing")
    problems += [
        f"Debian package {c.get('name')!r} has no version" for c in debs if not c.get("version")
    ]
    root_ref = root.get("bom-ref") if isinstance(root, dict) else None
    direct = next(
        (e.get("dependsOn") for e in doc.get("dependencies") or []
         if isinstance(e, dict) and e.get("ref") == root_ref),
        None,
    )  # fmt: skip
    if own is not None and own.get("bom-ref") not in (direct or []):
        problems.append(f"dependencies: the image does not depend on {project['name']!r}")
    return problems


# ---- the whole release --------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_sums(out: Path, files: Iterable[Path]) -> Path:
    sums = out / "SHA256SUMS"
    sums.write_text("".join(f"{sha256_file(f)}  {f.relative_to(out)}\n" for f in sorted(files)))
    return sums


def _gnupg_home_with(key: SigningKey, home: Path) -> Path:
    """A GnuPG home holding `key`'s secret key (what `buildah push --sign-by` signs with):
    the test key's own, or a fresh one that imports the release keyring."""
    own = key.secring.parent / "gnupg"
    if key.name == TEST_KEY_NAME and own.is_dir():
        return own
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    os.chmod(home, 0o700)
    _run(
        ["gpg", "--batch", "--homedir", str(home), "--import", str(key.secring)],
        what="gpg --import of the signing key (for the image signature)",
    )  # fmt: skip
    return home


def release_image(registry: str, out: Path, key: SigningKey) -> tuple[str, list[Path]]:
    """The operator image (on the stand-in base: hack/release/image.py) built, pushed to
    `registry` over plain HTTP and signed by `key` (simple signing; the signatures in
    <out>/image/lookaside, the registries.d naming them in <out>/image/registries.d),
    verified by a pull under <out>/image/policy.json, and described by
    <out>/operator-image.cdx.json. Returns the digest and the files made."""
    version = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    work = out / "image"
    tag = "localhost/vllm-preflight-operator:release"
    repository = f"{registry}/{image.REPOSITORY}"
    with tempfile.TemporaryDirectory(prefix="image-build-") as tmp:
        image.build_operator(tag, Path(tmp))
    gnupg = _gnupg_home_with(key, work / "gnupg")
    try:
        trust = image.lookaside_config(work, registry)
        digest = image.push(
            tag, f"{repository}:{version}", work, trust=trust,
            sign_by=image.fingerprint(gnupg, key.name), gnupg_home=gnupg,
        )  # fmt: skip
    finally:
        subprocess.run(["gpgconf", "--homedir", str(gnupg), "--kill", "gpg-agent"],
                       capture_output=True, check=False, timeout=30)  # fmt: skip
    policy = image.signed_by_policy(work / "policy.json", repository, key.pubring)
    store = Path(tempfile.mkdtemp(prefix="image-verify-"))
    try:
        pulled = image.pull_verified(f"{repository}@{digest}", policy, trust, store)
    finally:
        image.drop_store(store)
    if pulled != digest:
        raise ReleaseError(f"the verified pull gave {pulled}, not the pushed {digest}")
    doc = image.image_sbom(tag, repository, digest)
    problems = check_image_sbom(
        doc, PYPROJECT.read_text(), CONSTRAINTS.read_text(), repository, digest
    ) or [p for p in [validate_cyclonedx(json.dumps(doc))] if p]
    if problems:
        raise ReleaseError("the image's SBOM is incomplete: " + "; ".join(problems))
    sbom = out / "operator-image.cdx.json"
    sbom.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"image {repository}@{digest} signed and verified", file=sys.stderr)
    return digest, [sbom, policy]


def _krew() -> Any:
    """hack/krew/build.py as a module."""
    sys.path.insert(0, str(KREW_BUILD.parent))
    try:
        import build as krew_build  # noqa: PLC0415 - hack/krew/build.py

        return krew_build
    finally:
        sys.path.remove(str(KREW_BUILD.parent))


def python_artifacts(out: Path, *, sbom: bool = True) -> list[Path]:
    """The sdist and the wheel (from the staged tree), the wheel's SBOM, the checker
    zipapp, the Krew archives and the manifest naming them; LICENSE checked in the sdist,
    the wheel and each Krew archive. The paths written."""
    version = dists.project_version()
    with tempfile.TemporaryDirectory(prefix="release-src-") as tmp:
        sdist, wheel = dists.build_dists(out, build_tool(), _run, Path(tmp))
    krew_files = _krew().build(out)
    archives = [p for p in krew_files if p.name.endswith(".tar.gz")]
    problems = dists.check_license(wheel, sdist, archives, REPO / "LICENSE")
    if problems:
        raise ReleaseError("LICENSE is missing: " + "; ".join(problems))
    made = [sdist, wheel, dists.build_zipapp(out, version, _run), *krew_files]
    if sbom:
        doc_path = generate_sbom(wheel, out)
        problems = check_sbom(
            json.loads(doc_path.read_text()), PYPROJECT.read_text(), sha256_file(wheel)
        )
        if problems:
            raise ReleaseError("the SBOM is incomplete: " + "; ".join(problems))
        made.append(doc_path)
    return made


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist")
    parser.add_argument("--image-digest", default="", help="image.digest (sha256:<64 hex>)")
    parser.add_argument("--check-image-digest", default="", help="checkImage.digest")
    parser.add_argument("--key", default="", help="signing key name (with --keyring)")
    parser.add_argument("--keyring", type=Path, help="secret keyring holding --key")
    parser.add_argument("--pubring", type=Path, help="public keyring to verify with")
    parser.add_argument("--no-sbom", action="store_true", help="skip the wheel and its SBOM")
    parser.add_argument(
        "--image-registry",
        default="",
        help="build the operator image (stand-in base), push it signed to HOST:PORT over "
        "plain HTTP, verify it, write its SBOM and use its digest as --image-digest",
    )
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        problems = dists.version_problems()
        if problems:
            raise ReleaseError("the tree is not one version: " + "; ".join(problems))
        digests = {
            block: value
            for block, value in (
                ("image", args.image_digest),
                ("checkImage", args.check_image_digest),
            )
            if value
        }
        set_digests((CHART / "values.yaml").read_text(), digests)  # refuse bad ones first
        if bool(args.key) != bool(args.keyring):
            raise ReleaseError("--key and --keyring go together (or neither: a test key)")
        if args.key:
            key = SigningKey(args.key, args.keyring, args.pubring or args.keyring)
        else:
            key = make_test_key(out / "test-key")
            print(f"signing with a throwaway test key: {key.pubring}", file=sys.stderr)
        made: list[Path] = []
        if args.image_registry:
            if args.image_digest:
                raise ReleaseError("--image-registry makes the image digest: drop --image-digest")
            reason = image.missing_tools()
            if reason:
                raise ReleaseError(f"--image-registry: building the image {reason}")
            digests["image"], image_files = release_image(args.image_registry, out, key)
            made += image_files
        made += python_artifacts(out, sbom=not args.no_sbom)
        helm = helm_bin()
        with tempfile.TemporaryDirectory(prefix="chart-stage-") as stage:
            staged = stage_chart(Path(stage), digests)
            tgz = package_chart(helm, staged, out, key)
        made += [tgz, tgz.with_name(tgz.name + ".prov")]
        print(verify_chart(helm, tgz, key.pubring).strip(), file=sys.stderr)
        sums = write_sums(out, made)
    except (ReleaseError, image.ImageError, RuntimeError) as err:
        print(f"release-artifacts: {err}", file=sys.stderr)
        return 1
    for path in [*made, sums]:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
