"""Where the control plane binaries come from.

1. `VLLM_PREFLIGHT_K8S_BIN`: a directory that already holds them (a CI cache, a
   developer's own build). Used as is; nothing is built.
2. Otherwise `hack/k8s/build.sh` of the checkout this package is installed from (editable
   install): it builds once into ~/.cache/vllm-preflight and afterwards only prints the
   cached directory (a hash of the pins, well under a second).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

BIN_ENV = "VLLM_PREFLIGHT_K8S_BIN"
REQUIRED = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "helm",
)

# dev/preflight_dev/testing/binaries.py -> the repository root.
REPO_ROOT = Path(__file__).resolve().parents[3]
BUILD_SCRIPT = REPO_ROOT / "hack" / "k8s" / "build.sh"


class BinariesNotFound(RuntimeError):
    """No usable binaries: says which source was tried and how to fix it."""


def missing_binaries(bin_dir: Path) -> list[str]:
    return [b for b in REQUIRED if not os.access(bin_dir / b, os.X_OK)]


def bin_dir_from_env(environ: Mapping[str, str]) -> Path | None:
    value = environ.get(BIN_ENV, "").strip()
    if not value:
        return None
    bin_dir = Path(value).expanduser()
    missing = missing_binaries(bin_dir)
    if missing:
        raise BinariesNotFound(
            f"{BIN_ENV}={value} lacks {', '.join(missing)}; point it at a directory with "
            f"all of {', '.join(REQUIRED)} or unset it to build them with {BUILD_SCRIPT}"
        )
    return bin_dir


def _run_build(argv: list[str], shown: str, env_name: str, needed: Sequence[str]) -> Path:
    """Runs build.sh as `argv` (shown as `shown` in the failure); the directory it printed
    last. One place for both builds, the control plane's and the chart tools'."""
    result = subprocess.run(
        argv,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise BinariesNotFound(
            f"{shown} failed (exit {result.returncode}); its messages are above. "
            f"Fix the build (it needs Go) or set {env_name} to a directory with "
            f"{', '.join(needed)}"
        )
    return Path(lines[-1])


def build_bin_dir(build_script: Path = BUILD_SCRIPT) -> Path:
    """Runs build.sh: progress (only on a first build) goes straight to our stderr so a
    long build is visibly alive; the last stdout line is the bin directory."""
    if not build_script.is_file():
        raise BinariesNotFound(
            f"{build_script} does not exist (is vllm-preflight installed from a checkout?); "
            f"set {BIN_ENV} to a directory with {', '.join(REQUIRED)}"
        )
    bin_dir = _run_build([str(build_script)], str(build_script), BIN_ENV, REQUIRED)
    missing = missing_binaries(bin_dir)
    if missing:
        raise BinariesNotFound(f"{build_script} printed {bin_dir}, which lacks {missing}")
    return bin_dir


NEXT_BIN_ENV = "VLLM_PREFLIGHT_K8S_NEXT_BIN"


def find_next_bin_dir(
    environ: Mapping[str, str] | None = None, build_script: Path = BUILD_SCRIPT
) -> Path:
    """The next control plane's binaries (KUBERNETES_NEXT_VERSION, `build.sh next`): the
    directory `VLLM_PREFLIGHT_K8S_NEXT_BIN` names, else the built set in the cache. Never
    builds (minutes; .ci/run builds it): raises BinariesNotFound, whose message says how
    to get them, when there are none."""
    env = os.environ if environ is None else environ
    value = env.get(NEXT_BIN_ENV, "").strip()
    if value:
        bin_dir = Path(value).expanduser()
        missing = missing_binaries(bin_dir)
        if missing:
            raise BinariesNotFound(
                f"{NEXT_BIN_ENV}={value} lacks {', '.join(missing)}; point it at the output "
                f"of `{build_script} next`"
            )
        return bin_dir
    if not build_script.is_file():
        raise BinariesNotFound(f"{build_script} does not exist; set {NEXT_BIN_ENV}")
    result = subprocess.run(
        [str(build_script), "next", "--cached"],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines or missing_binaries(Path(lines[-1])):
        # 3: not built; anything else (no Go, go.mod out of date) says why on stderr
        said = "" if result.returncode == 3 else (result.stderr.strip().splitlines() or [""])[-1]
        raise BinariesNotFound(
            f"the next control plane is not built{f' ({said})' if said else ''}: run "
            f"`{build_script} next` (minutes, once) or set {NEXT_BIN_ENV}"
        )
    return Path(lines[-1])


_resolved: Path | None = None
_tools: Path | None = None

TOOLS_ENV = "VLLM_PREFLIGHT_TOOLS_BIN"
TOOLS = ("promtool", "helm-docs")


def find_bin_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The directory holding REQUIRED; resolved once per process."""
    global _resolved  # noqa: PLW0603 - a per-process cache; build.sh is the real cache
    if _resolved is None:
        env = os.environ if environ is None else environ
        _resolved = bin_dir_from_env(env) or build_bin_dir()
    return _resolved


def find_tools_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The directory holding TOOLS (promtool, helm-docs), which only the chart's tests use.

    `VLLM_PREFLIGHT_TOOLS_BIN` names one that already holds them; otherwise
    `hack/k8s/build.sh tools` builds them once into the same cache as the control plane
    (its own key directory), so a test run that never asks for them never builds them."""
    global _tools  # noqa: PLW0603 - a per-process cache; build.sh is the real cache
    if _tools is not None:
        return _tools
    env = os.environ if environ is None else environ
    value = env.get(TOOLS_ENV, "").strip()
    if value:
        tools_dir = Path(value).expanduser()
        missing = [t for t in TOOLS if not os.access(tools_dir / t, os.X_OK)]
        if missing:
            raise BinariesNotFound(
                f"{TOOLS_ENV}={value} lacks {', '.join(missing)}; point it at a directory "
                f"with {', '.join(TOOLS)} or unset it to build them with "
                f"`{BUILD_SCRIPT} tools`"
            )
        _tools = tools_dir
        return tools_dir
    _tools = _run_build([str(BUILD_SCRIPT), "tools"], f"`{BUILD_SCRIPT} tools`", TOOLS_ENV, TOOLS)
    return _tools
