"""The Python side of a release (hack/release/artifacts.py calls these; docs/RELEASE.md).

- `build_dists()`: the sdist and the wheel, by the PyPA's `build` (pinned in
  build-tool.txt, its own virtualenv in the cache) from a staged copy of the tree: the files
  git tracks or would track (`git ls-files --cached --others --exclude-standard`), so an
  editable install's stale `*.egg-info`, `dist/` or a virtualenv never leak into the sdist.
  `build` makes the sdist first and the wheel from the unpacked sdist: the wheel proves the
  sdist builds.
- `check_license()`: LICENSE is in the wheel (`*.dist-info/licenses/LICENSE`), the sdist
  (`<name>-<version>/LICENSE`) and the Krew archives, byte for byte (issue 40, item 3).
- `build_zipapp()`: the checker zipapp (hack/build_zipapp.py), versioned.
- `wheelhouse()`: the exact distribution files that installing the wheel brings (pip
  download under constraints.txt), so the SBOM's environment is installed from them with
  `--no-index` and every component's SHA-256 is the hash of the file that was installed.
- `enrich_sbom()`: the root component's purl (`pkg:pypi/vllm-preflight@<version>`, with the
  `file_name` qualifier naming the wheel: the package is not on PyPI, the name is the
  Python package's identity) and each component's hashes from the wheelhouse.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BUILD_TOOL = Path(__file__).resolve().parent / "build-tool.txt"
# Run a command or raise the caller's error: artifacts._run.
Runner = Callable[..., subprocess.CompletedProcess[str]]


def staged_tree(dest: Path, run: Runner, repo: Path = REPO) -> Path:
    """A copy of the files git tracks or would track, under dest/src."""
    listing = run(
        ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        what="git ls-files (the tree to build from)",
    ).stdout
    src = dest / "src"
    for name in sorted(set(filter(None, listing.split("\0")))):
        path = repo / name
        if not path.is_file():  # deleted in the work tree, or a submodule
            continue
        target = src / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return src


def build_dists(out: Path, python: Path, run: Runner, work: Path) -> tuple[Path, Path]:
    """The sdist and the wheel built by `python -m build` (python: the build tool's venv)."""
    src = staged_tree(work, run)
    out.mkdir(parents=True, exist_ok=True)
    result = run(
        [str(python), "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(src)],
        what="python -m build (sdist, then the wheel from it)",
    )
    sdist = re.search(r"Successfully built (\S+\.tar\.gz) and (\S+\.whl)", result.stdout)
    if sdist is None:
        raise RuntimeError(f"python -m build named no sdist and wheel: {result.stdout[-500:]}")
    return out / sdist.group(1), out / sdist.group(2)


def check_license(
    wheel: Path, sdist: Path, krew_archives: list[Path], license_file: Path
) -> list[str]:
    """What lacks the repository's LICENSE, one sentence each; [] when all hold it."""
    want = license_file.read_bytes()
    problems = []
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        if not names or archive.read(names[0]) != want:
            problems.append(f"{wheel.name} has no *.dist-info/licenses/LICENSE equal to LICENSE")
    top = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as archive:
        member = next((m for m in archive.getmembers() if m.name == f"{top}/LICENSE"), None)
        data = archive.extractfile(member) if member is not None else None
        if data is None or data.read() != want:
            problems.append(f"{sdist.name} has no {top}/LICENSE equal to LICENSE")
    for krew in krew_archives:
        with tarfile.open(krew) as archive:
            member = next((m for m in archive.getmembers() if m.name == "LICENSE"), None)
            data = archive.extractfile(member) if member is not None else None
            if data is None or data.read() != want:
                problems.append(f"{krew.name} has no LICENSE equal to LICENSE")
    return problems


def build_zipapp(out: Path, version: str, run: Runner) -> Path:
    """The checker zipapp, `vllm-preflight-<version>.pyz` (python3 it --version says so)."""
    path = out / f"vllm-preflight-{version}.pyz"
    run(
        [sys.executable, str(REPO / "hack" / "build_zipapp.py"), "--output", str(path)],
        what="hack/build_zipapp.py",
    )
    said = run(["python3", str(path), "--version"], what="the zipapp's --version").stdout
    if said.strip() != f"vllm-preflight check {version}":
        raise RuntimeError(f"the zipapp says {said.strip()!r}, not version {version}")
    return path


# ---- the SBOM's hashes ---------------------------------------------------------------------


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dist_identity(filename: str) -> tuple[str, str] | None:
    """(normalized name, version) of a wheel or sdist file name (PEP 427, PEP 625)."""
    if filename.endswith(".whl"):
        parts = filename[: -len(".whl")].split("-")
        return (normalize(parts[0]), parts[1]) if len(parts) >= 5 else None
    for suffix in (".tar.gz", ".zip"):
        if filename.endswith(suffix):
            name, _, version = filename[: -len(suffix)].rpartition("-")
            return (normalize(name), version) if name else None
    return None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def wheelhouse(
    wheel: Path, constraints: Path, dest: Path, run: Runner
) -> dict[tuple[str, str], str]:
    """`pip download` of the wheel's runtime dependencies under the constraints into dest;
    (name, version) -> sha256 of each file (the project's own wheel included)."""
    dest.mkdir(parents=True, exist_ok=True)
    run(
        [sys.executable, "-m", "pip", "download", "-q", "-d", str(dest), "-c", str(constraints),
         str(wheel)],
        what="pip download (the files the SBOM's environment is installed from)",
    )  # fmt: skip
    hashes = {}
    for path in sorted(dest.iterdir()):
        identity = dist_identity(path.name)
        if identity is not None:
            hashes[identity] = sha256_file(path)
    return hashes


def root_purl(name: str, version: str, wheel_name: str) -> str:
    return f"pkg:pypi/{normalize(name)}@{version}?file_name={wheel_name}"


def enrich_sbom(doc: dict[str, Any], hashes: Mapping[tuple[str, str], str], wheel: Path) -> None:
    """The root component's purl and hash; each component's SHA-256 from `hashes`."""
    root = doc.setdefault("metadata", {}).setdefault("component", {})
    root["hashes"] = [{"alg": "SHA-256", "content": sha256_file(wheel)}]
    root["purl"] = root_purl(str(root.get("name", "")), str(root.get("version", "")), wheel.name)
    for comp in doc.get("components") or []:
        key = (normalize(str(comp.get("name", ""))), str(comp.get("version", "")))
        if key in hashes:
            comp["hashes"] = [{"alg": "SHA-256", "content": hashes[key]}]


def hash_problems(doc: Any) -> list[str]:
    """Components without a SHA-256 hash, and a root without the pypi purl."""
    if not isinstance(doc, dict):
        return []
    problems = []
    root = (doc.get("metadata") or {}).get("component") or {}
    purl = root.get("purl") if isinstance(root, dict) else None
    if not isinstance(purl, str) or not purl.startswith("pkg:pypi/"):
        problems.append(f"metadata.component has no pkg:pypi purl (got {purl!r})")
    for comp in doc.get("components") or []:
        if not isinstance(comp, dict):
            continue
        hashes = comp.get("hashes")
        if not any(
            isinstance(h, dict)
            and h.get("alg") == "SHA-256"
            and re.fullmatch(r"[0-9a-f]{64}", str(h.get("content", "")))
            for h in (hashes if isinstance(hashes, list) else [])
        ):
            problems.append(f"component {comp.get('name')!r} has no SHA-256 hash")
    return problems


# ---- one version -------------------------------------------------------------------------


def project_version(repo: Path = REPO) -> str:
    match = re.search(r'(?m)^version = "([^"]+)"$', (repo / "pyproject.toml").read_text())
    if match is None:
        raise RuntimeError("pyproject.toml has no [project] version")
    return match.group(1)


def version_problems(repo: Path = REPO) -> list[str]:
    """Where the tree disagrees with pyproject.toml's version, one sentence each: the two
    packages' __version__, the chart's version and appVersion, and CHANGELOG.md's entry.
    A release is made from one version; hack/release.sh refuses to tag otherwise."""
    version = project_version(repo)
    problems = []
    for init in (
        "initcontainer/preflight_check/__init__.py",
        "operator/preflight_operator/__init__.py",
    ):
        found = re.search(r'(?m)^__version__ = "([^"]+)"$', (repo / init).read_text())
        if found is None or found.group(1) != version:
            problems.append(f"{init}: __version__ is not {version!r} (pyproject.toml's)")
    chart = (repo / "charts/vllm-preflight/Chart.yaml").read_text()
    for key in ("version", "appVersion"):
        found = re.search(rf'(?m)^{key}: "?([^"\s]+)"?$', chart)
        if found is None or found.group(1) != version:
            problems.append(f"charts/vllm-preflight/Chart.yaml: {key} is not {version!r}")
    changelog = repo / "CHANGELOG.md"
    if not changelog.is_file() or not re.search(
        rf"(?m)^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog.read_text()
    ):
        problems.append(f"CHANGELOG.md has no '## [{version}] - YYYY-MM-DD' entry")
    return problems
