#!/usr/bin/env python3
"""Builds the Krew archives of `kubectl vllm-preflight` and the manifest that names them.

    python3 hack/krew/build.py --out dist      # `make release-artifacts` runs it

Writes, for each platform of the manifest template (hack/krew/vllm-preflight.yaml: linux,
darwin), `kubectl-vllm_preflight-v<version>-<os>.tar.gz`, and `vllm-preflight.yaml`: the
template with pyproject.toml's version and each archive's sha256 filled in. That generated
manifest is what `kubectl krew install --manifest dist/vllm-preflight.yaml --archive
dist/kubectl-vllm_preflight-v<version>-linux.tar.gz` reads (tests/e2e/test_install_paths.py).

An archive holds the launcher (hack/krew/kubectl-vllm_preflight, which runs the plugin of
the installed Python package), the completion launcher kubectl runs on <TAB>
(kubectl_complete-vllm_preflight) and LICENSE. It is reproducible: fixed owner, mode and
mtime, no gzip timestamp, so a rebuild from the same tree gives the same sha256
(tests/unit/test_krew_manifest.py). The launchers are POSIX sh, the same on every platform,
so the archives of the two platforms hold the same bytes; they are separate files because
the manifest names one per platform, as Krew's index expects.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import re
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LAUNCHERS = (HERE / "kubectl-vllm_preflight", HERE / "kubectl_complete-vllm_preflight")
LICENSE = REPO / "LICENSE"
TEMPLATE = HERE / "vllm-preflight.yaml"


def version() -> str:
    """[project] version of pyproject.toml: the one version of a release."""
    match = re.search(r'(?m)^version = "([^"]+)"$', (REPO / "pyproject.toml").read_text())
    if match is None:
        raise SystemExit("hack/krew/build.py: no version in pyproject.toml")
    return match.group(1)


def platforms(template: str) -> list[str]:
    """The `os` of each platform of the template, in order."""
    return re.findall(r"(?m)^\s+os: (\w+)$", template)


def archive_name(ver: str, os_name: str) -> str:
    return f"kubectl-vllm_preflight-v{ver}-{os_name}.tar.gz"


def archive_bytes(ver: str | None = None) -> bytes:
    ver = ver or version()
    members = [(p.name, p.read_text().replace("@VERSION@", ver).encode(), 0o755) for p in LAUNCHERS]
    members.append(("LICENSE", LICENSE.read_bytes(), 0o644))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data, mode in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def render_manifest(ver: str, digests: dict[str, str], template: str | None = None) -> str:
    """The template with the version and, platform by platform, the archive's sha256."""
    text = (template if template is not None else TEMPLATE.read_text()).replace("@VERSION@", ver)
    parts = re.split(r"(?m)^(?=    - selector:)", text)
    head, blocks = parts[0], parts[1:]
    out = [head]
    for block in blocks:
        os_name = re.search(r"(?m)^\s+os: (\w+)$", block)
        if os_name is None or os_name.group(1) not in digests:
            raise SystemExit(f"hack/krew/build.py: no archive for the platform block {block!r}")
        out.append(block.replace("@SHA256@", digests[os_name.group(1)]))
    rendered = "".join(out)
    if "@" in re.sub(r"(?m)^#.*$", "", rendered):
        raise SystemExit("hack/krew/build.py: a placeholder is left in the manifest")
    return rendered


def build(out: Path) -> list[Path]:
    """The archives and the manifest in `out`; the paths written."""
    ver, data = version(), archive_bytes()
    out.mkdir(parents=True, exist_ok=True)
    written, digests = [], {}
    for os_name in platforms(TEMPLATE.read_text()):
        path = out / archive_name(ver, os_name)
        path.write_bytes(data)
        digests[os_name] = hashlib.sha256(data).hexdigest()
        written.append(path)
    manifest = out / "vllm-preflight.yaml"
    manifest.write_text(render_manifest(ver, digests))
    return [*written, manifest]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist", help="output directory")
    args = parser.parse_args(argv)
    for path in build(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
