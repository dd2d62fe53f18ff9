"""Every install path the docs show, run from the artifacts of one release (issue 40, item 2).

The module builds a release once, the way `make release-artifacts` does
(`hack/release/artifacts.py --out DIR`: a throwaway signing key, no image), and then installs
from those files only, with the real installers:

- the CLI with pip, from the wheel and, separately, from the sdist, each into a fresh
  virtualenv (runtime dependencies from the package index under constraints.txt): every
  console script answers `--version`, `lint` judges a manifest, completion is printed;
- the kubectl plugin with Krew (built from its Go module, `hack/k8s/build.sh krew`):
  `krew install --manifest dist/vllm-preflight.yaml --archive dist/...-linux.tar.gz`, which
  checks the archive's sha256 against the generated manifest; then `kubectl vllm-preflight`
  through the real kubectl, with the wheel's Python, and its completion through kubectl;
- the checker zipapp with the system python3;
- the pre-commit hook, with pre-commit from the package index (pinned below), from a clone of
  this repository tagged `v<version>` in a temporary copy (the real tag is made at release,
  hack/release.sh), in a consumer repository holding a broken and a good manifest.

- the chart the release packaged and signed (with the release's throwaway test key),
  `helm install --verify` from the file and, pushed to the OCI registry of
  tests/e2e/test_release_oci.py (its fixtures reused), from `oci://`, into the session's
  control plane, which runs no pod: `helm test` runs on a real node with kube-proxy and
  CoreDNS in tests/e2e/test_helm_test_real_node.py (the chart's directory, the same
  templates), and tests/e2e/test_helm_chart.py plays the test script against an operator
  process here.

LICENSE in each archive: checked by the release script itself (dists.check_license) and
below.

Cost: the release build about 70 s (helm cached), each virtualenv 20-60 s with a warm pip
cache, the pre-commit hook's environment as long again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# The chart's registry path is test_release_oci.py's: its registry (built from its Go
# module), scoped namespace and install values, reused here for the release's own package.
from test_release_oci import (  # tests/e2e is on sys.path under pytest
    install_args,
    registry,  # noqa: F401  (a fixture)
    scoped_namespace,  # noqa: F401  (a fixture)
)

from preflight_dev.testing import Cluster
from preflight_operator import __version__

REPO = Path(__file__).resolve().parents[2]
BUILD_SH = REPO / "hack" / "k8s" / "build.sh"
CONSTRAINTS = REPO / "constraints.txt"
PRE_COMMIT = "pre-commit==4.6.2"  # from the package index, into its own virtualenv
V = __version__

pytestmark = [pytest.mark.timeout(1500), pytest.mark.slow]

BAD = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm-bad, namespace: llm}
spec:
  selector: {matchLabels: {app: vllm-bad}}
  template:
    metadata: {labels: {app: vllm-bad}}
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.10.1
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--tensor-parallel-size", "4"]
          resources: {limits: {nvidia.com/gpu: 2}}
"""
GOOD = BAD.replace("vllm-bad", "vllm-good").replace('"4"]', '"2"]') + (
    "          volumeMounts: [{name: dshm, mountPath: /dev/shm}]\n"
    "      volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]\n"
)


def run(argv: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Runs argv; on failure the assertion shows its output."""
    result = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, check=False,
        stdin=subprocess.DEVNULL, **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip
    return result


def ok(argv: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = run(argv, **kwargs)
    assert result.returncode == 0, (
        f"{' '.join(map(str, argv))} exit {result.returncode}\n{result.stdout[-3000:]}"
        f"\n{result.stderr[-3000:]}"
    )
    return result


def clean_env(**extra: str) -> dict[str, str]:
    """No PYTHONPATH of this checkout and no user site directory: an install must stand on
    its own files."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "PYTHONNOUSERSITE": "1", **extra}


@dataclass(frozen=True)
class Release:
    dist: Path

    def one(self, pattern: str) -> Path:
        found = sorted(self.dist.glob(pattern))
        assert len(found) == 1, (pattern, sorted(p.name for p in self.dist.iterdir()))
        return found[0]


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    dist = tmp_path_factory.mktemp("release") / "dist"
    ok(
        [sys.executable, REPO / "hack/release/artifacts.py", "--out", dist],
        cwd=REPO, timeout=1200, env=clean_env(),
    )  # fmt: skip
    return Release(dist)


def fresh_venv(where: Path, *requirements: str | Path) -> Path:
    """A virtualenv at `where` with `requirements` installed by its own pip; its bin/."""
    venv.EnvBuilder(with_pip=True).create(where)
    ok(
        [where / "bin/python", "-m", "pip", "install", "-q", "-c", CONSTRAINTS, *requirements],
        timeout=900, env=clean_env(),
    )  # fmt: skip
    return where / "bin"


@pytest.fixture(scope="module")
def wheel_bin(release: Release, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_venv(tmp_path_factory.mktemp("wheel") / "venv", release.one("*.whl"))


class TestTheRelease:
    def test_sha256sums_verify_and_name_every_artifact(self, release: Release) -> None:
        ok(["sha256sum", "--strict", "-c", "SHA256SUMS"], cwd=release.dist)
        named = {
            line.split("  ", 1)[1]
            for line in (release.dist / "SHA256SUMS").read_text().splitlines()
        }
        assert named == {
            f"vllm_preflight-{V}-py3-none-any.whl",
            f"vllm_preflight-{V}.tar.gz",
            f"vllm_preflight-{V}-py3-none-any.cdx.json",
            f"vllm-preflight-{V}.pyz",
            f"kubectl-vllm_preflight-v{V}-linux.tar.gz",
            f"kubectl-vllm_preflight-v{V}-darwin.tar.gz",
            "vllm-preflight.yaml",
            f"vllm-preflight-{V}.tgz",
            f"vllm-preflight-{V}.tgz.prov",
        }

    def test_license_is_in_the_wheel_the_sdist_and_the_krew_archives(
        self, release: Release
    ) -> None:
        want = (REPO / "LICENSE").read_bytes()
        with zipfile.ZipFile(release.one("*.whl")) as wheel:
            assert wheel.read(f"vllm_preflight-{V}.dist-info/licenses/LICENSE") == want
        with tarfile.open(release.one("vllm_preflight-*.tar.gz")) as sdist:
            member = sdist.extractfile(f"vllm_preflight-{V}/LICENSE")
            assert member is not None
            assert member.read() == want
        for archive in release.dist.glob("kubectl-vllm_preflight-*.tar.gz"):
            with tarfile.open(archive) as tar:
                member = tar.extractfile("LICENSE")
                assert member is not None
                assert member.read() == want


class TestPip:
    def test_the_wheel_installs_every_entry_point(self, wheel_bin: Path, tmp_path: Path) -> None:
        env = clean_env(PATH=f"{wheel_bin}:/usr/bin:/bin")
        for script, said in (
            ("vllm-preflight", f"vllm-preflight {V}"),
            ("vllm-preflight-install", f"vllm-preflight-install {V}"),
            ("kubectl-vllm_preflight", f"kubectl vllm-preflight {V}"),
            ("kubectl_complete-vllm_preflight", f"kubectl_complete-vllm_preflight {V}"),
        ):
            assert (
                ok([wheel_bin / script, "--version"], env=env, cwd=tmp_path).stdout.strip() == said
            )
        (tmp_path / "bad.yaml").write_text(BAD)
        (tmp_path / "good.yaml").write_text(GOOD)
        bad = run([wheel_bin / "vllm-preflight", "lint", "bad.yaml"], env=env, cwd=tmp_path)
        assert bad.returncode == 1, bad.stdout + bad.stderr
        assert "gpu-count" in bad.stdout
        ok([wheel_bin / "vllm-preflight", "lint", "good.yaml"], env=env, cwd=tmp_path)
        script = ok([wheel_bin / "vllm-preflight", "completion", "bash"], env=env).stdout
        assert "complete -F _vllm_preflight_complete vllm-preflight" in script

    def test_the_sdist_installs(
        self, release: Release, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
    ) -> None:
        bindir = fresh_venv(
            tmp_path_factory.mktemp("sdist") / "venv", release.one("vllm_preflight-*.tar.gz")
        )
        env = clean_env(PATH=f"{bindir}:/usr/bin:/bin")
        assert ok([bindir / "vllm-preflight", "--version"], env=env).stdout.strip() == (
            f"vllm-preflight {V}"
        )
        (tmp_path / "bad.yaml").write_text(BAD)
        bad = run([bindir / "vllm-preflight", "lint", "bad.yaml"], env=env, cwd=tmp_path)
        assert bad.returncode == 1, bad.stdout + bad.stderr
        assert "gpu-count" in bad.stdout


class TestZipapp:
    def test_the_zipapp_runs_with_the_system_python(self, release: Release) -> None:
        pyz = release.one("*.pyz")
        env = clean_env(PATH="/usr/bin:/bin")
        assert ok(["/usr/bin/python3", pyz, "--version"], env=env).stdout.strip() == (
            f"vllm-preflight check {V}"
        )
        listed = ok(["/usr/bin/python3", pyz, "--list-checks"], env=env).stdout
        assert "gpu-count" in listed


def _kubectl() -> Path | None:
    result = run([BUILD_SH, "controlplane", "--cached"], timeout=120)
    env = os.environ.get("VLLM_PREFLIGHT_K8S_BIN", "").strip()
    if env:
        return Path(env) / "kubectl"
    if result.returncode != 0:
        return None
    return Path(result.stdout.strip().splitlines()[-1]) / "kubectl"


@pytest.fixture(scope="module")
def krew_root(release: Release, tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = run([BUILD_SH, "krew"], timeout=1200)
    if built.returncode != 0:
        pytest.skip(f"krew could not be built: {built.stderr[-600:]}")
    krew = Path(built.stdout.strip().splitlines()[-1]) / "krew"
    root = tmp_path_factory.mktemp("krew")
    ok(
        [krew, "install", "--manifest", release.dist / "vllm-preflight.yaml",
         "--archive", release.one(f"kubectl-vllm_preflight-v{V}-linux.tar.gz")],
        env=clean_env(KREW_ROOT=str(root), HOME=str(root)), timeout=300,
    )  # fmt: skip
    return root


class TestKrew:
    def test_krew_refuses_an_archive_the_manifest_does_not_name(
        self, release: Release, krew_root: Path, tmp_path: Path
    ) -> None:
        """The sha256 in the generated manifest is checked: another archive is refused."""
        krew = Path(run([BUILD_SH, "krew"], timeout=60).stdout.strip().splitlines()[-1]) / "krew"
        other = tmp_path / "other.tar.gz"
        with tarfile.open(other, "w:gz") as tar:
            tar.add(REPO / "LICENSE", arcname="kubectl-vllm_preflight")
        root = tmp_path / "root"
        result = run(
            [krew, "install", "--manifest", release.dist / "vllm-preflight.yaml",
             "--archive", other],
            env=clean_env(KREW_ROOT=str(root), HOME=str(root)), timeout=300,
        )  # fmt: skip
        assert result.returncode != 0
        assert "checksum" in (result.stdout + result.stderr).lower()
        assert not (root / "bin" / "kubectl-vllm_preflight").exists()

    def test_krew_installs_the_plugin_kubectl_runs_it(
        self, krew_root: Path, wheel_bin: Path, tmp_path: Path
    ) -> None:
        store = krew_root / "store" / "vllm-preflight" / f"v{V}"
        assert (store / "LICENSE").read_bytes() == (REPO / "LICENSE").read_bytes()
        plugin = krew_root / "bin" / "kubectl-vllm_preflight"
        assert plugin.resolve() == (store / "kubectl-vllm_preflight").resolve()
        # The plugin runs the package of the Python it is given: the wheel's.
        env = clean_env(
            PATH=f"{krew_root / 'bin'}:/usr/bin:/bin",
            VLLM_PREFLIGHT_PYTHON=str(wheel_bin / "python"),
            KUBECONFIG=str(tmp_path / "none"),
        )
        assert ok([plugin, "--version"], env=env).stdout.strip() == f"kubectl vllm-preflight {V}"
        kubectl = _kubectl()
        if kubectl is None:
            pytest.skip("the control plane's kubectl is not built (hack/k8s/build.sh controlplane)")
        assert ok([kubectl, "vllm-preflight", "--version"], env=env).stdout.strip() == (
            f"kubectl vllm-preflight {V}"
        )
        # Completion through kubectl, with the archive's completer linked as the caveat says.
        (krew_root / "bin" / "kubectl_complete-vllm_preflight").symlink_to(
            store / "kubectl_complete-vllm_preflight"
        )
        said = ok([kubectl, "__complete", "vllm-preflight", "che"], env=env).stdout.splitlines()
        assert said == ["check-node", ":4"]

    def test_without_the_package_the_plugin_says_where_to_get_it(
        self, krew_root: Path, tmp_path: Path
    ) -> None:
        plain = tmp_path / "plain"
        venv.EnvBuilder(with_pip=False).create(plain)
        result = run(
            [krew_root / "bin" / "kubectl-vllm_preflight", "status"],
            env=clean_env(VLLM_PREFLIGHT_PYTHON=str(plain / "bin/python")),
        )
        assert result.returncode == 2
        assert "not on PyPI" in result.stderr
        assert f"/download/v{V}/vllm_preflight-{V}-py3-none-any.whl" in result.stderr


class TestPreCommit:
    def test_the_hook_runs_from_a_tagged_clone(self, tmp_path: Path) -> None:
        """The snippet of .pre-commit-hooks.yaml and docs/INSTALL.md, with the tag the release
        makes (made here in a temporary clone) and a local path for the repository URL."""
        clone = tmp_path / "vllm-preflight"
        ok(["git", "clone", "-q", "--no-local", REPO, clone], timeout=300)
        ok(["git", "-C", clone, "-c", "user.name=t", "-c", "user.email=t@e",
            "tag", "-a", f"v{V}", "-m", "test tag"])  # fmt: skip
        tools = fresh_venv(tmp_path / "pre-commit-venv", PRE_COMMIT)
        project = tmp_path / "project"
        (project / "deploy").mkdir(parents=True)
        ok(["git", "init", "-q", project])
        (project / ".pre-commit-config.yaml").write_text(
            "repos:\n"
            f"  - repo: {clone}\n"
            f"    rev: v{V}\n"
            "    hooks:\n"
            "      - id: vllm-preflight-lint\n"
        )
        (project / "deploy" / "good.yaml").write_text(GOOD)
        env = clean_env(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
                        PATH=f"{tools}:/usr/bin:/bin")  # fmt: skip
        ok(["git", "-C", project, "add", "-A"])
        good = run([tools / "pre-commit", "run", "--all-files"], cwd=project, env=env, timeout=900)
        assert good.returncode == 0, good.stdout + good.stderr
        assert "vllm-preflight lint" in good.stdout
        assert "Passed" in good.stdout
        (project / "deploy" / "bad.yaml").write_text(BAD)
        ok(["git", "-C", project, "add", "-A"])
        bad = run([tools / "pre-commit", "run", "--all-files"], cwd=project, env=env, timeout=900)
        assert bad.returncode == 1, bad.stdout + bad.stderr
        assert "Failed" in bad.stdout
        assert "gpu-count" in bad.stdout


class TestChart:
    def test_the_signed_chart_installs_from_the_file_and_from_oci(
        self,
        k8s: Cluster,
        release: Release,
        registry: Any,  # noqa: F811
        scoped_namespace: tuple[str, str],  # noqa: F811
        tmp_path: Path,
    ) -> None:
        tgz, pubring = release.one(f"vllm-preflight-{V}.tgz"), release.dist / "test-key/pubring.gpg"
        assert (release.dist / f"vllm-preflight-{V}.tgz.prov").is_file()
        namespace, scope = scoped_namespace
        args = install_args(registry, namespace, scope, tmp_path / "values.yaml")
        values = ["-n", namespace, "--values", str(tmp_path / "values.yaml")]
        # From the file (the .prov beside it), as docs/INSTALL.md shows.
        k8s.helm("install", "vp-file", str(tgz), *values, "--verify", "--keyring", str(pubring))
        k8s.helm("uninstall", "vp-file", "-n", namespace, "--wait")
        # From the registry: push, then install verified by the same key.
        k8s.helm("push", str(tgz), f"oci://{registry.host}/charts", "--plain-http")
        name = f"vp-{scope}"
        k8s.helm("install", name, *args, "--verify", "--keyring", str(pubring))
        meta = json.loads(k8s.helm("get", "metadata", name, "-n", namespace, "-o", "json").stdout)
        assert (meta["chart"], meta["version"], meta["status"]) == (
            "vllm-preflight",
            V,
            "deployed",
        )
