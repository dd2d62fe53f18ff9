"""The vLLM command-line parser: every spelling, the --config precedence, the plan."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from preflight_contract.vllm_args import (
    API_SERVER,
    SERVE,
    ConfigUnavailable,
    ParallelPlan,
    parse_vllm_args,
    vllm_args_start,
)

MULTI_PORT = "--data-parallel-multi-port-external-lb"


def plan_of(*argv: str) -> ParallelPlan:
    parsed = parse_vllm_args(list(argv))
    assert parsed.problems == [], parsed.problems
    return parsed.plan


def problems_of(*argv: str) -> list[tuple[str, str]]:
    return [(p.dest, p.message) for p in parse_vllm_args(list(argv)).problems]


# -- spellings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "m", "--tensor-parallel-size", "4"],
        ["serve", "m", "--tensor_parallel_size", "4"],
        ["serve", "m", "--tensor-parallel-size=4"],
        ["serve", "m", "--tensor_parallel_size=4"],
        ["serve", "m", "-tp", "4"],
        ["serve", "m", "-tp=4"],
        ["serve", "m", "--tensor-par", "4"],  # unique-prefix abbreviation
        ["serve", "m", "-t", "4"],  # unique prefix of -tp among the short options
        ["serve", "m", "-tp", "2", "-tp", "4"],  # last one wins
        ["serve", "m", "-tp", " 4 "],  # int() strips spaces
        ["serve", "m", "-tp", "+4"],
    ],
)
def test_tensor_parallel_spellings(argv: list[str]) -> None:
    assert plan_of(*argv).tp == 4


@pytest.mark.parametrize(
    ("flag", "attr"),
    [
        ("--pipeline-parallel-size", "pp"),
        ("--pipeline_parallel_size", "pp"),
        ("-pp", "pp"),
        ("--data-parallel-size", "dp"),
        ("-dp", "dp"),
        ("--decode-context-parallel-size", "dcp"),
        ("-dcp", "dcp"),
        ("--prefill-context-parallel-size", "pcp"),
        ("-pcp", "pcp"),
    ],
)
def test_other_axes_every_spelling(flag: str, attr: str) -> None:
    # dcp needs TP divisible by it; pcp excludes dp > 1: use TP 2 and value 2
    plan = plan_of("serve", "m", "-tp", "2", flag, "2")
    assert getattr(plan, attr) == 2


@pytest.mark.parametrize(
    "flag", ["--data-parallel-size-local", "-dpl", "--data_parallel_size_local"]
)
def test_dp_local_spellings(flag: str) -> None:
    plan = plan_of("serve", "m", "-dp", "4", flag, "2")
    assert (plan.dp, plan.dp_local, plan.gpus_needed) == (4, 2, 2)


@pytest.mark.parametrize("flag", ["--data-parallel-rank", "-dpn", "--data_parallel_rank"])
def test_dp_rank_means_external_lb_one_engine_per_pod(flag: str) -> None:
    plan = plan_of("serve", "m", "-dp", "4", "-tp", "2", flag, "3")
    assert (plan.external_lb, plan.dp_local, plan.gpus_needed) == (True, 1, 2)


@pytest.mark.parametrize("flag", ["--data-parallel-external-lb", "-dpe"])
def test_external_lb_flag(flag: str) -> None:
    plan = plan_of("serve", "m", "-dp", "4", flag)
    assert (plan.external_lb, plan.dp_local) == (True, 1)


def test_no_form_turns_a_boolean_off() -> None:
    plan = plan_of(
        "serve", "m", "-dp", "4", "--data-parallel-external-lb", "--no-data-parallel-external-lb"
    )
    assert (plan.external_lb, plan.dp_local) == (False, 4)


@pytest.mark.parametrize("spelling", [["--nnodes", "2"], ["-n", "2"], ["-n2"], ["--nnodes=2"]])
def test_nnodes_spellings(spelling: list[str]) -> None:
    plan = plan_of("serve", "m", "-tp", "16", *spelling, "--node-rank", "1", "--headless")
    assert (plan.nnodes, plan.node_rank, plan.gpus_needed) == (2, 1, 8)


def test_node_rank_short_alias() -> None:
    assert plan_of("serve", "m", "-tp", "8", "-n", "2", "-r", "1").node_rank == 1


# -- the GPU count -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "needed"),
    [
        (["serve", "m"], 1),
        (["serve", "m", "-tp", "4", "-pp", "2"], 8),
        (["serve", "m", "-tp", "4", "-dcp", "2"], 4),  # DCP reuses TP ranks
        (["serve", "m", "-tp", "4", "-dcp", "4"], 4),
        (["serve", "m", "-tp", "2", "-pcp", "2"], 4),  # PCP widens the world
        (["serve", "m", "-tp", "2", "-pcp", "2", "-dcp", "4"], 4),
        (["serve", "m", "-dp", "4", "-tp", "2"], 8),  # all DP ranks local by default
        (["serve", "m", "-dp", "4", "-tp", "2", "-dpl", "2", "-dpr", "2", "--headless"], 4),
        (["serve", "m", "-dp", "4", "-tp", "2", "-dpl", "2", "-dpr", "2"], 4),  # hybrid LB
        (["serve", "m", "-dp", "4", "--data-parallel-rank", "0"], 1),
        (["serve", "m", "-dp", "2", "-tp", "4", "-n", "2", "-r", "1"], 4),  # inferred dpl 1
        (["serve", "m", "-dp", "4", "-tp", "2", "-n", "2", "-r", "0"], 4),  # inferred dpl 2
        (["serve", "m", "-tp", "8", "-pp", "2", "-n", "2", "-r", "0"], 8),
        (["serve", "m", "-dp", "4", "-dpl", "0", "--data-parallel-hybrid-lb"], 0),
        (
            ["serve", "m", "-dp", "4", "-dpl", "2", "-tp", "2", MULTI_PORT],
            4,
        ),
    ],
)
def test_gpus_needed(argv: list[str], needed: int) -> None:
    assert plan_of(*argv).gpus_needed == needed


def test_hybrid_lb_is_inferred_from_start_rank_but_not_headless() -> None:
    assert plan_of("serve", "m", "-dp", "4", "-dpl", "2", "-dpr", "2").hybrid_lb
    assert not plan_of("serve", "m", "-dp", "4", "-dpl", "2", "-dpr", "2", "--headless").hybrid_lb


def test_ray_backend_is_reported() -> None:
    assert plan_of("serve", "m", "-tp", "8", "--distributed-executor-backend", "ray").uses_ray
    assert not plan_of("serve", "m", "-tp", "8").uses_ray


# -- malformed values: problems, never exceptions ---------------------------------------


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("four", "not an integer"),
        ("4.0", "not an integer"),
        ("", "not an integer"),
        ("0", ">= 1"),
        ("-1", ">= 1"),  # a negative number is a value for argparse, then refused
        ("100000", "implausibly large"),
        ("$(TP)", "not an integer"),
    ],
)
def test_malformed_tensor_parallel(value: str, needle: str) -> None:
    parsed = parse_vllm_args(["serve", "m", "-tp", value])
    assert [p.dest for p in parsed.problems] == ["tensor_parallel_size"]
    assert needle in parsed.problems[0].message
    assert parsed.problems[0].flag == "-tp"
    assert parsed.problems[0].value == value
    assert not parsed.plan_valid


@pytest.mark.parametrize(
    ("argv", "dest"),
    [
        (["serve", "m", "-tp"], "tensor_parallel_size"),  # expects one value
        (["serve", "m", "-tp", "--enforce-eager"], "tensor_parallel_size"),
        (["serve", "m", "-tp2"], "tensor_parallel_size"),  # argparse has no -t
        (["serve", "m", "--tp", "2"], "tensor_parallel_size"),
        (["serve", "m", "-tp", "6", "-dcp", "4"], "decode_context_parallel_size"),
        (["serve", "m", "-tp", "2", "-pcp", "2", "-dcp", "3"], "decode_context_parallel_size"),
        (["serve", "m", "-pcp", "2", "-dp", "2"], "prefill_context_parallel_size"),
        (["serve", "m", "-dp", "2", "-dpl", "4"], "data_parallel_size_local"),
        (["serve", "m", "--data-parallel-rank", "0"], "data_parallel_rank"),  # needs DP > 1
        (["serve", "m", "-dp", "2", "--data-parallel-rank", "2"], "data_parallel_rank"),
        (["serve", "m", "-dp", "4", "-dpn", "1", "-dpl", "2"], "data_parallel_size_local"),
        (["serve", "m", "-dp", "4", "--data-parallel-hybrid-lb"], "data_parallel_hybrid_lb"),
        (["serve", "m", "-tp", "3", "--nnodes", "2"], "nnodes"),
        (["serve", "m", "--nnodes", "2", "--node-rank", "2", "-tp", "2"], "node_rank"),
        (
            ["serve", "m", "--headless", "--data-parallel-external-lb=1"],
            "data_parallel_external_lb",
        ),
        (["serve", "m", "-dpb", "nccl"], "data_parallel_backend"),
        (
            ["serve", "m", "-dp", "2", "--data-parallel-multi-port-external-lb"],
            "data_parallel_multi_port_external_lb",
        ),
    ],
)
def test_combinations_vllm_refuses(argv: list[str], dest: str) -> None:
    assert dest in [d for d, _ in problems_of(*argv)]


@pytest.mark.parametrize("token", ["-d", "--data-parallel-s", "--d"])
def test_ambiguous_abbreviations_are_refused(token: str) -> None:
    # -d: -dp, -dpl, -dcp, ...; --data-parallel-s: -size, -size-local, -start-rank, ...
    assert any("ambiguous" in m for _, m in problems_of("serve", "m", token, "2"))


@pytest.mark.parametrize(
    ("value", "ok"), [("0.95", True), ("1", True), ("0", False), ("1.5", False), ("x", False)]
)
def test_gpu_memory_utilization(value: str, ok: bool) -> None:
    parsed = parse_vllm_args(["serve", "m", "--gpu-memory-utilization", value])
    assert (parsed.gpu_memory_utilization == float(value)) if ok else parsed.problems
    assert parsed.plan_valid  # a bad fraction does not make the GPU count unknown


def test_port_host_model_and_expert_parallel() -> None:
    parsed = parse_vllm_args(["serve", "org/model", "--port", "8080", "--host", "0.0.0.0", "-ep"])
    assert (parsed.port, parsed.host, parsed.model) == (8080, "0.0.0.0", "org/model")
    assert parsed.enable_expert_parallel
    assert parse_vllm_args(["serve", "m", "--port", "70000"]).problems


# -- the model and the entry points ------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "model"),
    [
        (["serve", "a/b", "-tp", "2"], "a/b"),
        (["serve", "-tp", "2", "--model", "a/b"], "a/b"),  # vLLM moves --model to the front
        (["serve", "-tp", "2", "--model=a/b"], "a/b"),
        (["serve", "--enforce-eager", "a/b"], "a/b"),  # a flag takes no value
        (["serve", "--max-model-len", "4096", "a/b"], "a/b"),  # an option takes one
        (["--model", "a/b", "-tp", "2"], "a/b"),  # api_server form
        (["vllm", "serve", "a/b"], "a/b"),
        (["/usr/local/bin/vllm", "serve", "a/b"], "a/b"),
        (["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "a/b"], "a/b"),
        (["python", "-u", "-m", "vllm.entrypoints.cli.main", "serve", "a/b"], "a/b"),
    ],
)
def test_model(argv: list[str], model: str) -> None:
    assert parse_vllm_args(argv).model == model


def test_served_model_name_before_the_model_is_refused() -> None:
    assert [d for d, _ in problems_of("serve", "--served-model-name", "x", "a/b")] == ["model"]
    assert problems_of("serve", "a/b", "--served-model-name", "x") == []


def test_origins_point_at_the_argv_index() -> None:
    parsed = parse_vllm_args(["vllm", "serve", "m", "--max-model-len", "10", "-tp", "4"])
    assert parsed.origins["tensor_parallel_size"].index == 5
    assert parsed.origins["tensor_parallel_size"].spelling == "-tp"
    assert parsed.origins["model"].index == 2


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["vllm", "serve", "m"], (1, SERVE)),
        (["vllm", "chat"], None),
        (["python3.12", "-m", "vllm.entrypoints.openai.api_server"], (3, API_SERVER)),
        (["python3", "-mvllm.entrypoints.openai.api_server", "--model", "m"], (2, API_SERVER)),
        (["python3", "-X", "dev", "-m", "vllm.entrypoints.api_server"], (5, API_SERVER)),
        (["python3", "server.py"], None),
        (["python3", "-m", "http.server"], None),
        (["bash", "-c", "vllm serve m"], None),
        ([], None),
    ],
)
def test_vllm_args_start(argv: list[str], expected: tuple[int, str] | None) -> None:
    assert vllm_args_start(argv) == expected


def test_separator_makes_the_rest_positional() -> None:
    assert parse_vllm_args(["serve", "m", "--", "-tp", "4"]).plan.tp == 1


def test_dotted_dict_arguments_are_skipped_with_their_value() -> None:
    plan = plan_of("serve", "m", "--compilation-config.level", "3", "-tp", "2", "-O3")
    assert plan.tp == 2


# -- --config -----------------------------------------------------------------------------


def loader(content: object) -> object:
    def load(path: str) -> Mapping[str, object]:
        assert path.endswith((".yaml", ".yml"))
        return content  # type: ignore[return-value]

    return load


def test_config_values_apply_and_the_command_line_wins() -> None:
    cfg = {"tensor_parallel_size": 8, "pipeline-parallel-size": 2}
    parsed = parse_vllm_args(["serve", "m", "--config", "c.yaml", "-tp", "2"], loader(cfg))  # type: ignore[arg-type]
    assert (parsed.plan.tp, parsed.plan.pp) == (2, 2)
    assert parsed.config_loaded
    assert parsed.origins["pipeline_parallel_size"].from_config
    assert parsed.origins["pipeline_parallel_size"].index is None


def test_config_booleans_lists_and_model() -> None:
    cfg = {
        "model": "from/config",
        "data-parallel-size": 4,
        "data-parallel-external-lb": True,
        "data_parallel_rank": 1,
        "served-model-name": ["a", "b"],
        "enforce-eager": False,
    }
    parsed = parse_vllm_args(["serve", "--config", "c.yaml"], loader(cfg))  # type: ignore[arg-type]
    assert parsed.problems == []
    assert parsed.model == "from/config"
    assert (parsed.plan.external_lb, parsed.plan.dp_local) == (True, 1)


def test_config_false_boolean_becomes_the_no_form() -> None:
    cfg = {"data-parallel-external-lb": False}
    parsed = parse_vllm_args(["serve", "m", "-dp", "2", "-dpe", "--config", "c.yaml"], loader(cfg))  # type: ignore[arg-type]
    # the command line comes after the config: -dpe wins
    assert parsed.plan.external_lb


def test_config_without_a_model_anywhere_is_refused() -> None:
    parsed = parse_vllm_args(["serve", "--config", "c.yaml"], loader({"tp": 2}))  # type: ignore[arg-type]
    dests = [p.dest for p in parsed.problems]
    assert "model" in dests
    assert "tensor_parallel_size" in dests  # `tp:` is not an option name


@pytest.mark.parametrize(
    ("argv", "content", "needle"),
    [
        (["serve", "m", "--config", "c.json"], {}, "yaml/yml"),
        (["serve", "m", "--config"], {}, "no config file"),
        (["serve", "m", "--config", "a.yaml", "--config", "b.yaml"], {}, "more than one"),
        (["serve", "m", "--config", "c.yaml"], ["not", "a", "map"], "mapping"),
        (["serve", "m", "--config", "c.yaml"], None, "mapping"),
        (["serve", "m", "--config", "c.yaml"], {1: 2}, "not a string"),
        (["serve", "m", "--config", "c.yaml"], {"tensor-parallel-size": "four"}, "integer"),
        (["serve", "m", "--config", "c.yaml"], {"tensor-parallel-size": None}, "integer"),
    ],
)
def test_config_problems(argv: list[str], content: object, needle: str) -> None:
    parsed = parse_vllm_args(argv, loader(content))  # type: ignore[arg-type]
    assert any(needle in p.message for p in parsed.problems), parsed.problems


def test_config_loader_errors() -> None:
    def unavailable(path: str) -> Mapping[str, object]:
        raise ConfigUnavailable(f"ConfigMap for {path} is not in the manifest set")

    def broken(path: str) -> Mapping[str, object]:
        raise ValueError("bad YAML at line 3")

    parsed = parse_vllm_args(["serve", "m", "--config", "c.yaml"], unavailable)
    assert parsed.problems == []
    assert parsed.warnings
    assert not parsed.config_loaded
    assert parsed.config_path == "c.yaml"
    parsed = parse_vllm_args(["serve", "m", "--config", "c.yaml"], broken)
    assert "bad YAML" in parsed.problems[0].message
    parsed = parse_vllm_args(["serve", "m", "--config", "c.yaml"])
    assert parsed.warnings
    assert parsed.plan_valid


def test_config_equals_form_is_ignored_by_vllm() -> None:
    parsed = parse_vllm_args(["serve", "m", "--config=c.yaml"], loader({"tensor-parallel-size": 4}))  # type: ignore[arg-type]
    assert parsed.plan.tp == 1
    assert "two-token form" in parsed.warnings[0].message


# -- a value with spaces glued by `=` ------------------------------------------------------


@pytest.mark.parametrize(
    "word",
    [
        '--limit-mm-per-prompt={"image": 0, "audio": 0}',  # an option we do not track
        '--limit_mm_per_prompt={"image": 0, "audio": 0}',  # underscores, turned into dashes
        '--override-generation-config={"temperature": 0.0}',
        '--speculative-config={"method": "ngram", "num_speculative_tokens": 4}',
        '--limit-mm-per={"image": 0}',  # a unique-prefix abbreviation before the `=`
        "--served-model-name=my model",
    ],
)
def test_an_option_with_a_spaced_value_after_equals_is_an_option(word: str) -> None:
    """argparse splits `--opt=VALUE` at the first `=` and looks the option up *before* it
    treats a word containing a space as a positional (`_parse_optional`), so a JSON value
    written `--x={"a": 1}` (one word, as a `--flag=value` list item or a quoted shell
    word) is an option with its value, not an unrecognized argument."""
    assert problems_of("serve", "m", word, "-tp", "2") == []
    assert plan_of("serve", "m", word, "-tp", "2").tp == 2


def test_a_spaced_word_without_equals_stays_a_positional() -> None:
    """`--tensor-parallel-size 2` as one word (one YAML list item) matches no option and
    holds a space: argparse takes it as a positional, so vLLM exits with 'unrecognized
    arguments'."""
    found = problems_of("serve", "m", "--tensor-parallel-size 2")
    assert [d for d, _ in found] == ["positional"], found
