"""Quantities through the real API server: it stores a ResourceQuota's spec.hard in its
canonical form, and our parser must give the same value for what was sent and for what
came back; what the server refuses, our parser refuses (issue 19 item 6).

One rule is not the parser's but the field's: every ResourceList (a quota's hard, a
container's requests and limits) is rounded up to milli units by the v1 conversion
(pkg/apis/core/v1/conversion.go, "round up resource values to milli scale"), so 1n is
stored as 1m. The comparison applies it to our value."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import pytest

from preflight_dev.testing import Cluster, KubectlError
from preflight_operator.core.rules.quantity import parse_quantity

# resource names a quota accepts with any non-negative quantity
KEYS = (
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.ephemeral-storage",
)
FIXED = ["1E", "1Ei", "16Ei", "2e3", "2E3", "1.5Gi", "1n", "1e-10", "0.1m", ".5", "1.", "7Ki"]


def sample(count: int = 100) -> list[str]:
    rng = random.Random(19)
    suffixes = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi"]
    suffixes += ["Ei", "e3", "E-2", "e+4", "e0"]
    out = list(FIXED)
    while len(out) < count:
        integer = str(rng.randrange(0, 10 ** rng.randint(1, 12)))
        fraction = "" if rng.random() < 0.5 else "." + str(rng.randrange(0, 10**6)).zfill(6)
        out.append(integer + fraction + rng.choice(suffixes))
    return out


def milli_up(value: Fraction) -> Fraction:
    return Fraction(math.ceil(value * 1000), 1000)


def quota(name: str, namespace: str, values: list[str]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"hard": dict(zip(KEYS, values))},
    }


def test_api_server_canonical_forms_parse_to_the_same_value(
    k8s: Cluster, k8s_namespace: str
) -> None:
    values = sample()
    chunks = [values[i : i + len(KEYS)] for i in range(0, len(values), len(KEYS))]
    manifests = [quota(f"q{i}", k8s_namespace, chunk) for i, chunk in enumerate(chunks)]
    k8s.apply(*manifests)
    stored = json.loads(
        k8s.kubectl("get", "resourcequota", "-n", k8s_namespace, "-o", "json").stdout
    )["items"]
    by_name = {item["metadata"]["name"]: item["spec"]["hard"] for item in stored}
    compared = 0
    for i, chunk in enumerate(chunks):
        hard = by_name[f"q{i}"]
        for key, sent in zip(KEYS, chunk):
            canonical = hard[key]
            ours = parse_quantity(sent)
            assert ours is not None, sent
            assert parse_quantity(canonical) == milli_up(ours), (sent, canonical)
            compared += 1
    assert compared == len(values)
    # the exa suffix, read as Kubernetes does
    assert by_name["q0"]["requests.cpu"] == "1E"
    assert parse_quantity(by_name["q0"]["requests.memory"]) == Fraction(2**60)


@pytest.mark.parametrize("bad", ["1e", "1ki", "1Mi3", "Pi", "1.5.5"])
def test_what_the_server_refuses_we_refuse(k8s: Cluster, k8s_namespace: str, bad: str) -> None:
    assert parse_quantity(bad) is None
    with pytest.raises(KubectlError):
        k8s.apply(quota("bad", k8s_namespace, [bad]))
