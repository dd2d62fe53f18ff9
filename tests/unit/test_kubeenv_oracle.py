"""kubeenv.expand against the kubelet's own $(VAR) expansion, on hypothesis-made text.

The oracle is hack/expansion (k8s.io/kubernetes/third_party/forked/golang/expansion, which
the kubelet runs on env values, command and args), built once with Go from the module cache
into ~/.cache/vllm-preflight; without Go these tests are skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preflight_operator.rules.kubeenv import expand

SOURCE = Path(__file__).parents[2] / "hack" / "expansion"


def _binary() -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.skip("no Go toolchain: the kubelet expansion oracle cannot be built")
    key = hashlib.sha256()
    for name in ("main.go", "go.mod", "go.sum"):
        key.update((SOURCE / name).read_bytes())
    key.update(subprocess.run([go, "version"], capture_output=True, check=True).stdout)
    cache = Path(os.environ.get("VLLM_PREFLIGHT_CACHE", Path.home() / ".cache" / "vllm-preflight"))
    binary = cache / f"expansion-{key.hexdigest()[:12]}" / "expansion"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        built = subprocess.run(
            [go, "build", "-o", f"{binary}.partial", "."],
            cwd=SOURCE,
            env={**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if built.returncode != 0:
            pytest.skip(f"cannot build the kubelet expansion oracle: {built.stderr[-500:]}")
        os.replace(f"{binary}.partial", binary)
    return binary


@pytest.fixture(scope="module")
def kubelet() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [str(_binary())], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    yield proc
    proc.kill()
    proc.wait()


def ask(proc: subprocess.Popen[str], text: str, env: dict[str, str]) -> str:
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(json.dumps({"text": text, "env": env}) + "\n")
    proc.stdin.flush()
    answer: str = json.loads(proc.stdout.readline())
    return answer


ENV = {"A": "1", "B": "$(A)", "(A": "paren", "LWS_GROUP_SIZE": "4", "": "empty"}


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(
            ["$", "(", ")", "A", "B", "$(", "$$", "((", "LWS_GROUP_SIZE", "*8", " ", "é"]
        ),
        max_size=14,
    ).map("".join)
)
def test_expansion_matches_the_kubelet(kubelet: subprocess.Popen[str], text: str) -> None:
    assert expand(text, ENV.get) == ask(kubelet, text, ENV), repr(text)


def test_shell_arithmetic_stays_as_written(kubelet: subprocess.Popen[str]) -> None:
    for text in ("$((LWS_GROUP_SIZE*8))", "-dp=$((A * 2))", "$(("):
        assert expand(text, ENV.get) == ask(kubelet, text, ENV) == text
