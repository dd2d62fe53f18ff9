"""kubeenv.expand against the kubelet's own $(VAR) expansion, on hypothesis-made text.

The oracle is hack/expansion (k8s.io/kubernetes/third_party/forked/golang/expansion, which
the kubelet runs on env values, command and args), built once with Go from the module cache
into ~/.cache/vllm-preflight; without Go these tests are skipped.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preflight_dev.testing.oracles import oracle_binary
from preflight_operator.core.rules.kubeenv import expand


def _binary() -> Path:
    binary, why = oracle_binary("expansion")
    if binary is None:
        pytest.skip(why)
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
