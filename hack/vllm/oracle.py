#!/usr/bin/env python3
"""The differential oracle of issue 38 (item 4): vLLM's own argument parser, of real
releases installed from PyPI, judges generated command lines; the results are committed
(tests/data/vllm_oracle/<release>.json) and tests/unit/test_vllm_oracle.py compares the
rules with them on every `make test`, with no download there.

    python3 hack/vllm/oracle.py 0.6.3.post1 0.8.5     # each release: venv, run, remove
    python3 hack/vllm/oracle.py --keep 0.6.3.post1     # keep the venv (under the cache)

Each release gets a virtualenv of its own under ``$VLLM_PREFLIGHT_CACHE/oracle`` (default
~/.cache/vllm-preflight/oracle) with ``pip install vllm==RELEASE`` and its pinned
dependencies (torch with CUDA's libraries: 3-5 GB a release, about 3 minutes on this
machine's network; no GPU is needed to build the parser), taking only what PyPI had the
day after the release (``pip --uploaded-prior-to``: its dependencies as they were, since
newer ones may not import with it). ``oracle_child.py`` then runs in it
(hack/vllm/oracle_child.py says what it asks the parser).

The command lines, from the generated table (preflight_contract/vllm_versions.py) and
what users really write:

* every option string any generated release accepts, alone after ``--model``, with a value
  the release's own parser accepts when it knows the option (``--x V`` and ``--x=V``): the
  release's own options are accepted, and the others (newer, or removed) are refused;
* spellings: ``_`` for ``-`` (vLLM's FlexibleArgumentParser converts them from 0.5),
  argparse's unique prefixes (``--tensor-parallel 2``), options no release has
  (``--enable-metrics``, ``--tensor-parallel-sizes``, typos from public reports).

The record says which vLLM was installed (its version and the wheel's sha256 from pip's
installation report), the Python, and when.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = ROOT / "tests" / "data" / "vllm_oracle"
sys.path.insert(0, str(ROOT / "initcontainer"))
sys.path.insert(0, str(HERE))

from fetch_source import first_uploads  # noqa: E402

from preflight_contract import vllm_versions as table  # noqa: E402

# what users write that no release has, or misspell (public reports named in each)
EXTRA: tuple[tuple[str, ...], ...] = (
    ("--enable-metrics",),  # defilantech/LLMKube#1030
    ("--tensor-parallel-sizes", "2"),
    ("--max-model-length", "4096"),
    ("--gpu-memory-utilisation", "0.9"),
    ("--tp", "2"),
    ("--tensor-parallel", "2"),  # an argparse prefix of --tensor-parallel-size
    ("--max-model", "4096"),  # a prefix of --max-model-len
    ("--gpu-memory", "0.9"),  # a prefix of --gpu-memory-utilization
    ("--max", "4096"),  # a prefix of several: ambiguous
    ("--tensor_parallel_size", "2"),  # underscores (FlexibleArgumentParser, 0.5 on)
    ("--max_model_len", "4096"),
    ("--max_model_len=4096",),
    ("--trust_remote_code",),
    ("-tp", "2", "--enforce-eager"),
    ("--tensor-parallel-size", "2", "--pipeline-parallel-size", "2"),
)


def all_options() -> list[str]:
    return sorted(table.OPTIONS)


# Run in the release's venv: its requirements, markers evaluated, less those left out.
_REQUIRES = """
import importlib.metadata as m, json, sys
from pip._vendor.packaging.requirements import Requirement
out = []
for text in m.requires("vllm") or []:
    req = Requirement(text)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    if req.name.lower() not in sys.argv[1:]:
        out.append(str(req).split(";")[0])
print(json.dumps(out))
"""


def uploaded(release: str) -> str:
    """The day after PyPI received the release's first file (fetch_source.first_uploads).
    The venv takes only what was uploaded before it (``pip --uploaded-prior-to``): the
    dependencies as they were when the release was current, not today's (vLLM 0.5.5 with
    transformers 5 does not import)."""
    when = first_uploads().get(release)
    if when is None:
        raise SystemExit(f"PyPI lists no file of vllm {release}")
    first = datetime.datetime.fromisoformat(when.replace("Z", "+00:00"))
    return (first + datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def venv_for(release: str, cache: Path, leave_out: list[str]) -> tuple[Path, dict[str, Any]]:
    """A virtualenv holding vLLM ``release`` and its dependencies; what was installed.
    ``leave_out``: requirements pip cannot install here (a pin with no wheel for this
    Python), installed without them (recorded)."""
    home = cache / f"venv-{release}"
    python = home / "bin" / "python"
    report = cache / f"install-{release}.json"
    if not python.exists() or not report.exists():
        shutil.rmtree(home, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
        scratch = cache / f"tmp-{release}"  # pip unpacks GBs of wheels there: removed after
        scratch.mkdir(exist_ok=True)
        prior = uploaded(release)
        pip = [str(python), "-m", "pip", "install", "-q", "--no-cache-dir",
               "--uploaded-prior-to", prior]  # fmt: skip
        env = {**os.environ, "TMPDIR": str(scratch)}
        (cache / f"prior-{release}.txt").write_text(prior)
        try:
            # pip 25.2 or later knows --uploaded-prior-to; the venv's own pip is older
            subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"],
                           check=True, env=env)  # fmt: skip
            if not leave_out:
                subprocess.run([*pip, "--report", str(report), f"vllm=={release}"],
                               check=True, env=env)  # fmt: skip
            else:
                subprocess.run([*pip, "--no-deps", "--report", str(report),
                                f"vllm=={release}"], check=True, env=env)  # fmt: skip
                wanted = subprocess.run(
                    [str(python), "-c", _REQUIRES, *[n.lower() for n in leave_out]],
                    check=True, capture_output=True, text=True,
                ).stdout  # fmt: skip
                subprocess.run([*pip, *json.loads(wanted)], check=True, env=env)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    installed = json.loads(report.read_text())["install"]
    wheel = next(i for i in installed if i["metadata"]["name"].lower() == "vllm")
    torch = next((i for i in installed if i["metadata"]["name"].lower() == "torch"), None)
    if torch is None:  # installed in a second step: read it from the venv
        probe = subprocess.run(
            [str(python), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        torch = {"metadata": {"version": probe.stdout.strip()}}
    return python.parent.parent, {
        "uploaded_prior_to": (cache / f"prior-{release}.txt").read_text(),
        "left_out": sorted(leave_out),
        "vllm": wheel["metadata"]["version"],
        "wheel": wheel["download_info"]["url"].rsplit("/", 1)[-1],
        "sha256": wheel["download_info"]
        .get("archive_info", {})
        .get("hashes", {})
        .get("sha256", ""),
        "torch": torch["metadata"]["version"] if torch else "",
    }


def run(release: str, cache: Path, keep: bool, leave_out: list[str]) -> Path:
    home, installed = venv_for(release, cache, leave_out)
    request = {
        "options": all_options(),
        "no_value": sorted(table.NO_VALUE),
        "extra": [list(argv) for argv in EXTRA],
    }
    done = subprocess.run(
        [str(home / "bin" / "python"), str(HERE / "oracle_child.py")],
        input=json.dumps(request), capture_output=True, text=True, check=False,
        env={**os.environ, "VLLM_LOGGING_LEVEL": "ERROR", "PYTHONWARNINGS": "ignore"},
        timeout=1800,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"vLLM {release}: the parser did not run:\n{done.stderr[-3000:]}")
    answer = json.loads(done.stdout)
    record = {
        "release": release,
        "installed": {**installed, "reported": answer["vllm"]},
        "platform": answer["platform"],
        "python": platform.python_version(),
        "made": datetime.date.today().isoformat(),
        "command": f"python3 hack/vllm/oracle.py {release}",
        "entrypoint": "python -m vllm.entrypoints.openai.api_server",
        "cases": answer["cases"],
    }
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"{release}.json"
    out.write_text(json.dumps(record, indent=1) + "\n")
    if not keep:
        shutil.rmtree(home, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("releases", nargs="+")
    parser.add_argument("--keep", action="store_true", help="keep each release's venv")
    parser.add_argument(
        "--leave-out", action="append", default=[], metavar="PKG",
        help="a requirement pip cannot install here (e.g. a pin with no wheel for this "
        "Python): vLLM is installed without its dependencies, then the rest",
    )  # fmt: skip
    args = parser.parse_args()
    base = os.environ.get("VLLM_PREFLIGHT_CACHE") or str(Path.home() / ".cache" / "vllm-preflight")
    cache = Path(base) / "oracle"
    cache.mkdir(parents=True, exist_ok=True)
    for release in args.releases:
        out = run(release, cache, args.keep, args.leave_out)
        cases = json.loads(out.read_text())["cases"]
        print(f"{release}: {len(cases)} command lines, "
              f"{sum(c['accepted'] for c in cases)} accepted -> {out}")  # fmt: skip


if __name__ == "__main__":
    main()
