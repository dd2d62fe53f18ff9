#!/usr/bin/env python3
"""Build dist/vllm-preflight.pyz: the checker as one file that runs with any python3 >= 3.9.

    python hack/build_zipapp.py --output dist/vllm-preflight.pyz     (make zipapp)
    python3 dist/vllm-preflight.pyz --tp 4                           (runs `check`)

It holds the preflight_check package and the preflight_contract package it stands on (both
standard library only) and pynvml, the pure-Python NVML binding of nvidia-ml-py, taken from
the interpreter running this script (the venv).

Layout inside the archive:

    __main__.py                     picks the tree below for the running interpreter
    src/preflight_check/*.py        sources: run on any python3 >= 3.9
    src/preflight_contract/*.py     the vocabulary shared with the operator
    src/pynvml.py
    pyc/cpython-3XY/...             the same modules as bytecode, one tree per CPython
                                    minor version found on this machine

Why bytecode: zipimport never caches compiled code, so a sources-only zipapp compiles
every module it imports on every run, in the checker and again in every rank probe.
Measured on the GPU machines that was most of the checker's fixed cost (pynvml alone is
about 100 ms to compile), i.e. time every vLLM pod start pays (docs/PERFORMANCE.md).
The trees hold unchecked hash-based .pyc files (PEP 552): valid without their sources,
independent of timestamps, and identical for identical sources, so the archive is
reproducible. An interpreter without a matching tree (another minor version, PyPy)
runs the sources.

Interpreters are found as python3.X on PATH and under $PYENV_ROOT/versions; pass
--python to name them explicitly, or --no-bytecode for a sources-only archive.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The checker and the contract package it imports (the operator imports the same one).
PACKAGES = (
    ROOT / "initcontainer" / "preflight_check",
    ROOT / "initcontainer" / "preflight_contract",
)
FIXED_TIME = (2020, 1, 1, 0, 0, 0)
OLDEST_MINOR = 9  # the checker's floor: vLLM images ship python3 >= 3.9

MAIN_TEMPLATE = """\
# vllm-preflight check, as a zipapp: python3 vllm-preflight.pyz [check] [options]
# Runs the bytecode tree built for this interpreter when there is one, else the sources.
import sys
_tag = "%s-%d%d" % ((sys.implementation.name,) + tuple(sys.version_info[:2]))
_tree = "pyc/" + _tag if _tag in {compiled!r} else "src"
sys.path[0] = sys.path[0] + "/" + _tree
from preflight_check.__main__ import run
sys.exit(run())
"""

# Compiles the modules named on stdin (tab-separated: source, destination, name shown in
# tracebacks) with the interpreter it runs in; unchecked hash-based pycs need no source
# and no timestamp.
COMPILER = """\
import py_compile, sys
mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
for line in sys.stdin.read().splitlines():
    source, destination, shown = line.split("\\t")
    py_compile.compile(source, cfile=destination, dfile=shown, doraise=True,
                       invalidation_mode=mode)
print("%s-%d%d" % ((sys.implementation.name,) + tuple(sys.version_info[:2])))
"""


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


def _modules() -> dict[str, Path]:
    """Archive name (relative to a tree) -> source file."""
    modules = {
        path.relative_to(package.parent).as_posix(): path
        for package in PACKAGES
        for path in sorted(package.rglob("*"))
        if path.is_file() and path.suffix in (".py", ".typed") and "__pycache__" not in path.parts
    }
    modules["pynvml.py"] = _pynvml_source()
    return modules


def find_interpreters() -> list[str]:
    """One CPython >= 3.9 per minor version: python3.X on PATH, then pyenv's versions."""
    candidates = [shutil.which(f"python3.{minor}") for minor in range(OLDEST_MINOR, 20)]
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3")))
    candidates.append(sys.executable)
    by_minor: dict[str, str] = {}
    for candidate in candidates:
        if not candidate:
            continue
        try:
            done = subprocess.run(
                [candidate, "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=20,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            continue  # a pyenv shim without that version, a broken link: not usable
        version = done.stdout.strip()
        if int(version.split(".")[1]) >= OLDEST_MINOR:
            by_minor.setdefault(version, candidate)
    return [by_minor[v] for v in sorted(by_minor, key=lambda v: int(v.split(".")[1]))]


def _compile_tree(python: str, modules: dict[str, Path], into: Path) -> tuple[str, dict[str, Path]]:
    jobs = {
        name[: -len(".py")] + ".pyc": into / (name[: -len(".py")] + ".pyc")
        for name in modules
        if name.endswith(".py")
    }
    for destination in jobs.values():
        destination.parent.mkdir(parents=True, exist_ok=True)
    lines = "\n".join(
        f"{modules[name[:-1]]}\t{destination}\tvllm-preflight.pyz/src/{name[:-1]}"
        for name, destination in jobs.items()
    )
    done = subprocess.run(
        [python, "-I", "-c", COMPILER],
        input=lines,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"compiling with {python} failed:\n{done.stderr[-2000:]}")
    return done.stdout.strip(), jobs


def _minor(tag: str) -> int:
    return int(tag.rsplit("-", 1)[1][1:])  # "cpython-312" -> 12


def build(output: Path, interpreters: list[str]) -> tuple[Path, list[str]]:
    output.parent.mkdir(parents=True, exist_ok=True)
    modules = _modules()
    trees: dict[str, dict[str, Path]] = {}
    with tempfile.TemporaryDirectory(prefix="vllm-preflight-pyc-") as scratch:
        for index, python in enumerate(interpreters):
            tag, compiled = _compile_tree(python, modules, Path(scratch) / str(index))
            trees.setdefault(tag, compiled)
        temporary = output.with_suffix(".tmp")
        with temporary.open("wb") as handle:
            handle.write(b"#!/usr/bin/env python3\n")
            with zipfile.ZipFile(handle, "w") as archive:
                main = MAIN_TEMPLATE.format(compiled=tuple(sorted(trees, key=_minor)))
                _add(archive, "__main__.py", main.encode())
                for name, path in modules.items():
                    _add(archive, f"src/{name}", path.read_bytes())
                for tag in sorted(trees, key=_minor):
                    for name, path in sorted(trees[tag].items()):
                        _add(archive, f"pyc/{tag}/{name}", path.read_bytes())
    temporary.chmod(0o755)
    os.replace(temporary, output)
    return output, sorted(trees, key=_minor)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default=str(ROOT / "dist" / "vllm-preflight.pyz"))
    parser.add_argument(
        "--python",
        action="append",
        default=None,
        help="an interpreter to compile bytecode for (repeatable); default: all found",
    )
    parser.add_argument(
        "--no-bytecode", action="store_true", help="sources only (every run compiles them)"
    )
    args = parser.parse_args()
    interpreters = [] if args.no_bytecode else (args.python or find_interpreters())
    path, tags = build(Path(args.output), interpreters)
    size = path.stat().st_size // 1024
    print(f"{path} ({size} KiB; bytecode for {', '.join(tags) or 'none: sources only'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
