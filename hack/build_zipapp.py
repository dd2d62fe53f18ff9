#!/usr/bin/env python3
"""Build dist/vllm-preflight.pyz: the checker as one file that runs with any python3 >= 3.9.

    python hack/build_zipapp.py --output dist/vllm-preflight.pyz     (make zipapp)
    python3 dist/vllm-preflight.pyz --tp 4                           (runs `check`)

It holds the preflight_check package (standard library only) and pynvml, the pure-Python
NVML binding of nvidia-ml-py, taken from the interpreter running this script (the venv).
No .pyc files: the target python's version is unknown, and sources compile on any.
Entries are written in a fixed order with a fixed timestamp, so the same sources give
the same bytes.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import stat
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "initcontainer" / "preflight_check"
FIXED_TIME = (2020, 1, 1, 0, 0, 0)
MAIN = (
    "# vllm-preflight check, as a zipapp: python3 vllm-preflight.pyz [check] [options]\n"
    "import sys\n"
    "from preflight_check.__main__ import run\n"
    "sys.exit(run())\n"
)


def _pynvml_source() -> Path:
    spec = importlib.util.find_spec("pynvml")
    if spec is None or not spec.origin:
        raise SystemExit(
            "pynvml (package nvidia-ml-py) is not installed for this python; run `make venv`"
        )
    return Path(spec.origin)


def _add(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    archive.writestr(info, data)


def build(output: Path) -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    sources = sorted(p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix in (".py", ".typed"))
    pynvml = _pynvml_source()
    temporary = output.with_suffix(".tmp")
    with temporary.open("wb") as handle:
        handle.write(b"#!/usr/bin/env python3\n")
        with zipfile.ZipFile(handle, "w") as archive:
            _add(archive, "__main__.py", MAIN.encode())
            for path in sources:
                name = path.relative_to(PACKAGE.parent).as_posix()
                _add(archive, name, path.read_bytes())
            _add(archive, "pynvml.py", pynvml.read_bytes())
    temporary.chmod(0o755)
    os.replace(temporary, output)
    return output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default=str(ROOT / "dist" / "vllm-preflight.pyz"))
    args = parser.parse_args()
    path = build(Path(args.output))
    print(f"{path} ({path.stat().st_size // 1024} KiB, python {sys.version.split()[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
