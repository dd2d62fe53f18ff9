"""The operator image's release steps with buildah (docs/RELEASE.md, "The image"): build
the Dockerfile's `operator` target, push it to a registry and take its digest, describe it
in a CycloneDX SBOM, sign it (GPG simple signing) and verify the signature by pulling it
under a containers-policy.json that demands it.

No Docker engine and no Docker Hub here: the base `python:3.12.8-slim-bookworm` is replaced
by a stand-in made with debootstrap (Debian bookworm and its python3), committed into
buildah's storage under the pinned name, built once and kept there (buildah's own storage
outside the repository) for every later build. The image built on it proves each release
step; it is not a releasable image.

Used by tests/unit/test_chart_images.py (the build), tests/e2e/test_release_image.py (every
step) and `hack/release/artifacts.py --image-registry` (`make release-artifacts IMAGE=1`).
Standard library only; every tool runs through `run()`, which raises ImageError naming the
step.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
SBOM_TOOL = Path(__file__).resolve().parent / "sbom-tool.txt"
# vfs: no overlay mounts needed (works in a container and on any filesystem).
BUILDAH = ("buildah", "--storage-driver", "vfs")
# What the Dockerfile copies (.dockerignore admits exactly these).
CONTEXT_FILES = ("Dockerfile", ".dockerignore", "constraints.txt", "pyproject.toml", "README.md")
CONTEXT_TREES = ("initcontainer", "operator")
REPOSITORY = "vllm-preflight/operator"  # under the registry's host
CACHE_REPO = "localhost/vllm-preflight-operator-build"  # builds kept by source_key()
DIGEST = re.compile(r"^sha256:[a-f0-9]{64}$")


class ImageError(RuntimeError):
    """An image step failed; the message names the step and its output."""


def run(argv: Sequence[str], *, what: str, timeout: float = 900, **kwargs: Any) -> str:
    result = subprocess.run(
        list(argv), capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
        timeout=timeout, **kwargs,
    )  # fmt: skip
    if result.returncode != 0:
        raise ImageError(
            f"{what} failed (exit {result.returncode}): {' '.join(argv)}\n"
            f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    return str(result.stdout)


def missing_tools() -> str | None:
    """Why the image cannot be built here, or None."""
    if os.geteuid() != 0:
        return "needs root (buildah with chroot isolation and vfs storage)"
    missing = [tool for tool in ("buildah", "debootstrap") if shutil.which(tool) is None]
    return f"needs {', '.join(missing)} (apt-get install buildah debootstrap)" if missing else None


def base_ref() -> str:
    """The Dockerfile's PYTHON_IMAGE, as buildah names it locally."""
    match = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE.read_text(), re.MULTILINE)
    if match is None:
        raise ImageError("the Dockerfile has no `ARG PYTHON_IMAGE=`")
    return f"docker.io/library/{match.group(1)}"


def ensure_standin_base(work: Path) -> str:
    """The stand-in for the Dockerfile's python base in buildah's storage (built with
    debootstrap the first time, about 3 minutes; then reused); its name."""
    ref = base_ref()
    found = subprocess.run([*BUILDAH, "inspect", ref], capture_output=True, check=False)
    if found.returncode == 0:
        return ref
    rootfs = work / "standin-rootfs"
    run(
        ["debootstrap", "--variant=minbase", "--include=python3,python3-venv,python-is-python3",
         "bookworm", str(rootfs), "http://deb.debian.org/debian"],
        what="debootstrap of the stand-in base", timeout=900,
    )  # fmt: skip
    # This machine reaches PyPI through its own CA: let the stand-in trust it too.
    shutil.copy("/etc/ssl/certs/ca-certificates.crt", rootfs / "etc/ssl/certs/")
    ctr = run([*BUILDAH, "from", "scratch"], what="buildah from scratch").strip()
    try:
        run([*BUILDAH, "copy", ctr, str(rootfs), "/"], what="buildah copy of the stand-in")
        run([*BUILDAH, "commit", "-q", ctr, ref], what="buildah commit of the stand-in")
    finally:
        subprocess.run([*BUILDAH, "rm", ctr], capture_output=True, check=False)
        shutil.rmtree(rootfs, ignore_errors=True)
    return ref


def build_context(dest: Path) -> Path:
    """A build context holding only what the Dockerfile copies."""
    dest.mkdir(parents=True)
    for name in CONTEXT_FILES:
        shutil.copy(REPO / name, dest / name)
    for tree in CONTEXT_TREES:
        shutil.copytree(REPO / tree, dest / tree, ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "hack").mkdir()
    shutil.copy(REPO / "hack/build_zipapp.py", dest / "hack/build_zipapp.py")
    return dest


def source_key(context: Path, base_id: str) -> str:
    """A hash of everything the build reads: each file of the context (path and bytes) and
    the base image's id."""
    digest = hashlib.sha256(base_id.encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(context)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def build_operator(tag: str, work: Path) -> str:
    """`buildah bud --target operator` on the stand-in base, tagged `tag`; the image id.
    The result is kept in buildah's storage as `<CACHE_REPO>:src-<source_key>`: a second
    build of the same sources (the unit test's, then the release test's) tags it instead
    of building again (on vfs, buildah's own `--layers` cache still copies the rootfs at
    every step: 2 min 45 s against 3 min for a build, measured). Only the newest such
    image is kept."""
    base = ensure_standin_base(work)
    base_id = run([*BUILDAH, "inspect", "--format", "{{.FromImageID}}", base], what="inspect")
    context = build_context(work / "context")
    cached = f"{CACHE_REPO}:src-{source_key(context, base_id.strip())}"
    found = subprocess.run([*BUILDAH, "inspect", cached], capture_output=True, check=False)
    if found.returncode != 0:
        run(
            [*BUILDAH, "bud", "--isolation", "chroot", "--pull-never",
             "--target", "operator", "-t", cached, str(context)],
            what="buildah bud --target operator", timeout=1200,
        )  # fmt: skip
        listed = run([*BUILDAH, "images", "--format", "{{.Name}}:{{.Tag}}"], what="images")
        for name in listed.split():
            if name.startswith(f"{CACHE_REPO}:src-") and name != cached:
                subprocess.run([*BUILDAH, "rmi", name], capture_output=True, check=False)
    run([*BUILDAH, "tag", cached, tag], what=f"buildah tag {tag}")
    return run([*BUILDAH, "inspect", "--format", "{{.FromImageID}}", tag], what="inspect").strip()


@contextmanager
def working_container(image: str, root: Sequence[str] = BUILDAH) -> Iterator[str]:
    """A throwaway container of `image` (removed afterwards; the image is unchanged)."""
    ctr = run([*root, "from", "-q", "--pull-never", image], what=f"buildah from {image}").strip()
    try:
        yield ctr
    finally:
        subprocess.run([*root, "rm", ctr], capture_output=True, check=False)


def run_in(ctr: str, script: str, *, what: str, timeout: float = 600) -> str:
    return run(
        [*BUILDAH, "run", "--isolation", "chroot", ctr, "--", "sh", "-c", script],
        what=what, timeout=timeout,
    )  # fmt: skip


# ---- push, digest, signatures ---------------------------------------------------------


@dataclass(frozen=True)
class Trust:
    """Where signatures are written and read (a registries.d directory naming a lookaside
    store for the registry), and the GnuPG home holding the signing key."""

    registries_d: Path
    lookaside: Path


def lookaside_config(work: Path, registry_host: str) -> Trust:
    """A registries.d for `registry_host` whose simple-signing signatures live in a
    lookaside directory (the registry keeps images, the lookaside their signatures, as
    containers/image stores them for any registry without its own signature API)."""
    registries_d = work / "registries.d"
    lookaside = work / "lookaside"
    registries_d.mkdir(parents=True, exist_ok=True)
    lookaside.mkdir(parents=True, exist_ok=True)
    url = lookaside.as_uri()
    (registries_d / "local.yaml").write_text(
        json.dumps({"docker": {registry_host: {"lookaside": url, "lookaside-staging": url}}})
    )
    return Trust(registries_d, lookaside)


def push(
    image: str,
    dest: str,
    work: Path,
    *,
    trust: Trust | None = None,
    sign_by: str = "",
    gnupg_home: Path | None = None,
) -> str:
    """`buildah push --digestfile` of `image` to `dest` (host/repo:tag, plain HTTP), signed
    by the GPG key `sign_by` when given; the manifest digest the push wrote."""
    work.mkdir(parents=True, exist_ok=True)
    digestfile = Path(tempfile.mkstemp(prefix="digest-", dir=work)[1])
    argv = [*BUILDAH]
    if trust is not None:
        argv += ["--registries-conf-dir", str(trust.registries_d)]
    argv += ["push", "--tls-verify=false", "--digestfile", str(digestfile)]
    env = dict(os.environ)
    if sign_by:
        argv += ["--sign-by", sign_by]
        if gnupg_home is not None:
            env["GNUPGHOME"] = str(gnupg_home)
    run([*argv, image, f"docker://{dest}"], what=f"buildah push to {dest}", env=env)
    digest = digestfile.read_text().strip()
    if not DIGEST.match(digest):
        raise ImageError(f"buildah push wrote {digest!r} into --digestfile, not sha256:<64 hex>")
    return digest


def fingerprint(gnupg_home: Path, name: str) -> str:
    """The fingerprint of the key `name` in `gnupg_home` (what `--sign-by` takes)."""
    out = run(
        ["gpg", "--batch", "--homedir", str(gnupg_home), "--with-colons", "--fingerprint", name],
        what="gpg --fingerprint",
    )  # fmt: skip
    fprs = [line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:")]
    if not fprs:
        raise ImageError(f"no fingerprint for {name!r} in {gnupg_home}")
    return fprs[0]


def signed_by_policy(path: Path, scope: str, pubring: Path) -> Path:
    """A containers-policy.json that rejects everything except `scope` (host/repo) signed
    by a key in `pubring`, the signature naming this very repository."""
    policy = {
        "default": [{"type": "reject"}],
        "transports": {
            "docker": {
                scope: [
                    {
                        "type": "signedBy",
                        "keyType": "GPGKeys",
                        "keyPath": str(pubring),
                        "signedIdentity": {"type": "matchRepoDigestOrExact"},
                    }
                ]
            }
        },
    }
    path.write_text(json.dumps(policy, indent=2) + "\n")
    return path


def pull_verified(ref: str, policy: Path, trust: Trust, store: Path) -> str:
    """`buildah pull --signature-policy` of `ref` into a fresh storage under `store` (so the
    image really comes from the registry); the pulled image's manifest digest. Raises
    ImageError, with buildah's reason, when the policy refuses it."""
    root = (*BUILDAH, "--root", str(store / "root"), "--runroot", str(store / "run"))
    run(
        [*root, "--registries-conf-dir", str(trust.registries_d), "pull", "--tls-verify=false",
         "--signature-policy", str(policy), "-q", f"docker://{ref}"],
        what=f"buildah pull {ref} under {policy.name}",
    )  # fmt: skip
    return run([*root, "inspect", "--format", "{{.FromImageDigest}}", ref], what="inspect").strip()


def drop_store(store: Path) -> None:
    """Remove a storage made by pull_verified (its images first, then the files)."""
    root = (*BUILDAH, "--root", str(store / "root"), "--runroot", str(store / "run"))
    subprocess.run([*root, "rmi", "-a", "-f"], capture_output=True, check=False)
    shutil.rmtree(store, ignore_errors=True)


# ---- the image's SBOM -----------------------------------------------------------------


def parse_dpkg_status(text: str) -> list[dict[str, str]]:
    """The installed packages of a dpkg status file (stanzas whose Status ends in
    `installed`): Package, Version, Architecture."""
    packages = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") or ":" not in line:
                continue  # a continuation line (descriptions, conffiles)
            key, _, value = line.partition(":")
            fields[key] = value.strip()
        if fields.get("Package") and fields.get("Status", "").endswith(" installed"):
            packages.append(fields)
    return packages


def os_release(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip().strip('"')
    return out


def deb_components(status: str, release: Mapping[str, str]) -> list[dict[str, Any]]:
    """CycloneDX components (pkg:deb purls, as the purl spec writes them) for the installed
    Debian packages."""
    distro_id = release.get("ID", "debian")
    distro = f"{distro_id}-{release.get('VERSION_ID', '')}".rstrip("-")
    comps = []
    for pkg in parse_dpkg_status(status):
        name, version, arch = pkg["Package"], pkg.get("Version", ""), pkg.get("Architecture", "")
        purl = (
            f"pkg:deb/{distro_id}/{urllib.parse.quote(name, safe='')}@"
            f"{urllib.parse.quote(version, safe='')}?arch={arch}&distro={distro}"
        )
        comps.append(
            {"type": "library", "bom-ref": purl, "name": name, "version": version, "purl": purl}
        )
    return sorted(comps, key=lambda c: str(c["name"]))


def image_purl(repository: str, digest: str) -> str:
    """pkg:oci/<name>@<digest>?repository_url=<registry/repo> (the purl spec's OCI type)."""
    name = repository.rsplit("/", 1)[-1]
    return (
        f"pkg:oci/{name}@{urllib.parse.quote(digest, safe='')}"
        f"?repository_url={urllib.parse.quote(repository, safe='/:')}"
    )


def python_sbom_in(image: str) -> tuple[dict[str, Any], str, str]:
    """In a throwaway container of `image`: cyclonedx-py (the pin in sbom-tool.txt,
    installed into the container's /tmp, never into the image) over the image's Python
    environment /opt/venv; also the image's dpkg status and os-release. Returns (the
    CycloneDX document, dpkg status text, os-release text)."""
    pin = SBOM_TOOL.read_text()
    with working_container(image) as ctr:
        script = (
            "set -e; cd /tmp; python3 -m venv /tmp/sbom-tool; "
            f"printf '%s' '{pin}' > /tmp/sbom-tool.txt; "
            "/tmp/sbom-tool/bin/pip install -q --disable-pip-version-check --no-cache-dir "
            "-r /tmp/sbom-tool.txt >&2; "
            "/tmp/sbom-tool/bin/cyclonedx-py environment --spec-version 1.6 "
            "--output-format JSON --output-reproducible --output-file - /opt/venv/bin/python"
        )
        doc = json.loads(run_in(ctr, script, what="cyclonedx-py environment in the image"))
        status = run_in(ctr, "cat /var/lib/dpkg/status", what="the image's dpkg status")
        release = run_in(ctr, "cat /etc/os-release", what="the image's os-release")
    return doc, status, release


def image_sbom(image: str, repository: str, digest: str) -> dict[str, Any]:
    """A CycloneDX 1.6 document of the image pushed as repository@digest: the image as the
    root component (type container, its manifest digest as version, hash and pkg:oci
    purl), the Python packages of its environment as cyclonedx-py describes them, and its
    Debian packages from /var/lib/dpkg/status."""
    doc, status, release = python_sbom_in(image)
    debs = deb_components(status, os_release(release))
    root_ref = image_purl(repository, digest)
    python = [c for c in doc.get("components", []) if isinstance(c, dict)]
    graph = [e for e in doc.get("dependencies", []) if isinstance(e, dict)]
    # The root depends on what no other package of the environment needs (the project,
    # pip, ...) and on every Debian package.
    needed = {ref for entry in graph for ref in entry.get("dependsOn", [])}
    tops = [c["bom-ref"] for c in python if c.get("bom-ref") and c["bom-ref"] not in needed]
    doc["metadata"]["component"] = {
        "type": "container",
        "bom-ref": root_ref,
        "name": repository,
        "version": digest,
        "purl": root_ref,
        "hashes": [{"alg": "SHA-256", "content": digest.removeprefix("sha256:")}],
    }
    doc["components"] = python + debs
    doc["dependencies"] = [
        {"ref": root_ref, "dependsOn": sorted(tops) + [d["bom-ref"] for d in debs]},
        *graph,
    ]
    return doc


def pins(constraints_text: str) -> dict[str, str]:
    """name (PEP 503 normalized) -> version for each `name==version` line."""
    out = {}
    for line in constraints_text.splitlines():
        match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)", line)
        if match:
            out[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return out
