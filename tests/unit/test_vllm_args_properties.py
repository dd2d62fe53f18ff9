"""Property tests: the parser never raises and its plan is always self-consistent."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from preflight_contract.vllm_args import MAX_PARALLEL_SIZE, ParsedArgs, parse_vllm_args

FLAGS = [
    "serve",
    "vllm",
    "--model",
    "-tp",
    "--tensor-parallel-size",
    "--tensor_parallel_size=",
    "-pp",
    "-dp",
    "-dpl",
    "-dpn",
    "-dpr",
    "-dcp",
    "-pcp",
    "-n",
    "-r",
    "--nnodes",
    "--headless",
    "-dpe",
    "-dph",
    "--no-data-parallel-external-lb",
    "--data-parallel-multi-port-external-lb",
    "--config",
    "--config=c.yaml",
    "c.yaml",
    "--",
    "-O3",
    "-O",
    "--compilation-config.level",
    "--served-model-name",
    "--gpu-memory-utilization",
    "--port",
    "-",
    "-1",
    "0",
    "2",
    "4",
    "8",
    "four",
    "$(TP)",
    "--enforce-eager",
    "--tp",
    "-t",
    "-d",
]

tokens = st.one_of(st.sampled_from(FLAGS), st.text(max_size=12))
configs = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
config_maps = st.dictionaries(
    st.one_of(st.sampled_from(["tensor-parallel-size", "data_parallel_size", "model"]), st.text()),
    configs,
    max_size=5,
)


def check_invariants(parsed: ParsedArgs) -> None:
    plan = parsed.plan
    for axis in (plan.tp, plan.pp, plan.dp, plan.dcp, plan.pcp, plan.nnodes):
        assert 1 <= axis <= MAX_PARALLEL_SIZE
    assert 0 <= plan.dp_local <= plan.dp
    assert plan.gpus_needed >= 0
    assert plan.to_dict()["gpus_needed"] == plan.gpus_needed
    for problem in parsed.problems + parsed.warnings:
        assert isinstance(problem.message, str)
        assert problem.message


@settings(max_examples=400, deadline=None)
@given(st.lists(tokens, max_size=14))
def test_never_raises_on_any_argv(argv: list[str]) -> None:
    check_invariants(parse_vllm_args(argv))


@settings(max_examples=200, deadline=None)
@given(st.lists(tokens, max_size=10), config_maps)
def test_never_raises_with_any_config(argv: list[str], config: dict[object, object]) -> None:
    def load(path: str) -> Mapping[str, object]:
        return config  # type: ignore[return-value]

    check_invariants(parse_vllm_args(["serve", "m", "--config", "c.yaml", *argv], load))


@settings(max_examples=100, deadline=None)
@given(configs)
def test_never_raises_when_the_config_is_not_a_mapping(content: object) -> None:
    def load(path: str) -> Mapping[str, object]:
        return content  # type: ignore[return-value]

    check_invariants(parse_vllm_args(["serve", "m", "--config", "c.yaml"], load))


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 8),
    st.integers(1, 4),
    st.integers(1, 4),
    st.sampled_from(["-tp", "--tensor-parallel-size", "--tensor_parallel_size"]),
    st.booleans(),
)
def test_well_formed_plans_round_trip(tp: int, pp: int, dp: int, flag: str, eq: bool) -> None:
    tp_args = [f"{flag}={tp}"] if eq else [flag, str(tp)]
    parsed = parse_vllm_args(["serve", "m", *tp_args, "-pp", str(pp), "-dp", str(dp)])
    assert parsed.problems == []
    assert (parsed.plan.tp, parsed.plan.pp, parsed.plan.dp) == (tp, pp, dp)
    assert parsed.plan.gpus_needed == tp * pp * dp


def test_a_raising_argument_is_a_problem_not_an_exception() -> None:
    class Evil:
        def __str__(self) -> str:
            raise RuntimeError("no")

    parsed = parse_vllm_args([Evil()])  # type: ignore[list-item]
    assert parsed.problems

    def explode(path: str) -> Mapping[str, object]:
        raise RuntimeError("disk on fire")

    assert parse_vllm_args(["serve", "m", "--config", "c.yaml"], explode).problems
