"""Property tests: no manifest, however odd, makes the rules engine raise."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_rules_support import deployment, pod_spec, vllm

from preflight_operator.core.rules import (
    FAIL,
    INFO,
    PASS,
    UNJUDGED,
    WARN,
    check_object,
    check_objects,
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True),
    st.text(max_size=10),
    st.sampled_from(
        ["vllm", "serve", "-tp", "4", "$(TP)", "$$", "nvidia.com/gpu", "/dev/shm", "Memory"]
    ),
)
keys = st.one_of(
    st.text(max_size=8),
    st.sampled_from(
        [
            "kind",
            "spec",
            "template",
            "containers",
            "command",
            "args",
            "env",
            "envFrom",
            "name",
            "value",
            "valueFrom",
            "resources",
            "limits",
            "requests",
            "volumes",
            "volumeMounts",
            "mountPath",
            "emptyDir",
            "medium",
            "sizeLimit",
            "leaderWorkerTemplate",
            "workerTemplate",
            "leaderTemplate",
            "size",
            "image",
            "configMap",
            "configMapRef",
            "metadata",
            "namespace",
            "hostIPC",
            "data",
        ]
    ),
)
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=30,
)
kinds = st.sampled_from(
    [
        "Pod",
        "Deployment",
        "StatefulSet",
        "Job",
        "CronJob",
        "LeaderWorkerSet",
        "ConfigMap",
        "Service",
    ]
)


def check_result_invariants(results: list[Any]) -> None:
    for result in results:
        assert result.verdict in (PASS, WARN, FAIL, UNJUDGED)
        # an unjudged container says why, in a finding and in its reason (issue 35)
        assert (result.verdict == UNJUDGED) <= bool(result.unjudged and result.findings)
        for f in result.findings:
            # a caught crash is still a bug: the engine must handle every shape itself
            assert f.id != "rules-internal-error", f.message
            assert f.severity in (FAIL, WARN, INFO)
            assert isinstance(f.message, str)
            assert isinstance(f.field, str)
        doc = result.to_dict()
        assert set(doc) == {
            "workload",
            "namespace",
            "container",
            "plan",
            "gpus_requested",
            "verdict",
            "findings",
        } | ({"reason"} if result.unjudged else set())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            trees,
            st.builds(
                lambda k, t: {"kind": k, **t}, kinds, st.dictionaries(keys, trees, max_size=4)
            ),
        ),
        max_size=4,
    )
)
def test_random_trees_never_raise(objects: list[Any]) -> None:
    check_result_invariants(check_objects(objects))
    for obj in objects:
        check_result_invariants(check_object(obj))


container_fields = st.dictionaries(keys, trees, max_size=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text(max_size=15), max_size=8),
    container_fields,
    st.dictionaries(keys, trees, max_size=4),
    st.sampled_from(
        [
            ["vllm", "serve"],
            ["sh", "-c"],
            ["bash", "-c"],
            ["python3", "-m", "vllm.entrypoints.openai.api_server"],
            None,
        ]
    ),
)
def test_random_vllm_containers_never_raise(
    args: list[str], fields: dict[str, Any], spec_extra: dict[str, Any], command: Any
) -> None:
    container = {**vllm(*args, gpus=2, command=command), **fields}
    spec = {**pod_spec(container), **spec_extra}
    check_result_invariants(check_objects([deployment(spec)]))


shell_words = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "vllm",
            "serve",
            "m",
            "-tp",
            "&&",
            ";",
            "|",
            "'",
            '"',
            "$TP",
            "${TP:-2}",
            "$(",
            "`",
            "\\\n",
            "\n",
            "#",
            "exec",
            "A=1",
            "export",
            "$@",
            "bash -c",
        ]
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(shell_words, max_size=15))
def test_random_shell_scripts_never_raise(words: list[str]) -> None:
    container = vllm(" ".join(words), gpus=2, command=("sh", "-c"))
    check_result_invariants(check_objects([deployment(pod_spec(container))]))


@settings(max_examples=150, deadline=None)
@given(trees)
def test_yaml_round_tripped_trees_never_raise(tree: Any) -> None:
    # what lint feeds the engine comes from YAML: same shapes after a dump/load round trip
    try:
        loaded = yaml.safe_load(yaml.safe_dump({"kind": "Deployment", "spec": tree}))
    except yaml.YAMLError:
        return
    check_result_invariants(check_objects([loaded]))
