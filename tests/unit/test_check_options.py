"""Options of `vllm-preflight check`: every malformed input is a UsageError that names
the flag or variable and its value; well-formed ones land where they should."""

from __future__ import annotations

import pytest

from preflight_check.options import (
    MAX_GPUS_PER_POD,
    UsageError,
    output_paths,
    parse_options,
    parse_size,
)


class TestMalformedPlan:
    @pytest.mark.parametrize(
        ("argv", "named"),
        [
            (["--tp", "four"], "--tp='four'"),
            (["--tp", "-2"], "--tp='-2'"),
            (["--tp", "0"], "--tp='0'"),
            (["--pp", "1.5"], "--pp='1.5'"),
            (["--dp-local", "99999999999999999999"], "--dp-local='99999999999999999999'"),
            (["--tp", "2000"], "--tp='2000'"),
        ],
    )
    def test_flag_value_is_named(self, argv: list[str], named: str) -> None:
        with pytest.raises(UsageError, match=named.replace(".", r"\.").replace("-", r"\-")):
            parse_options(argv, {})

    def test_environment_value_is_named(self) -> None:
        with pytest.raises(UsageError, match="PREFLIGHT_TP='four'"):
            parse_options([], {"PREFLIGHT_TP": "four"})

    def test_product_beyond_any_node(self) -> None:
        with pytest.raises(UsageError, match=f"more than {MAX_GPUS_PER_POD}"):
            parse_options(["--tp", "64", "--pp", "64"], {})

    def test_vllm_args_problem_names_the_flag_as_written(self) -> None:
        with pytest.raises(UsageError, match="-tp 'four'"):
            parse_options(["--vllm-args", "vllm serve m -tp four"], {})

    def test_unbalanced_quotes(self) -> None:
        with pytest.raises(UsageError, match="not a valid command line"):
            parse_options(["--vllm-args", "serve 'm"], {})


class TestPlanSources:
    def test_default_plan_is_one_gpu_and_says_so(self) -> None:
        options = parse_options([], {})
        assert options.plan.gpus_needed == 1
        assert "default" in options.plan.source

    def test_flags_win_over_environment(self) -> None:
        options = parse_options(["--tp", "4"], {"PREFLIGHT_TP": "2", "PREFLIGHT_PP": "2"})
        assert (options.plan.tp, options.plan.pp) == (4, 2)
        assert options.plan.source == "--tp + PREFLIGHT_PP"

    def test_vllm_args_spellings(self) -> None:
        options = parse_options(
            ["--vllm-args", "vllm serve m --tensor_parallel_size=2 -pp 2 --data-parallel-size 2"],
            {},
        )
        assert options.plan.gpus_needed == 8
        assert options.plan.tp_groups() == [[0, 1], [2, 3], [4, 5], [6, 7]]

    def test_vllm_args_memory_utilization_is_used_unless_a_flag_says_otherwise(self) -> None:
        vllm = ["--vllm-args", "vllm serve m --gpu-memory-utilization 0.7"]
        assert parse_options(vllm, {}).gpu_memory_utilization == 0.7
        assert (
            parse_options([*vllm, "--gpu-memory-utilization", "0.5"], {}).gpu_memory_utilization
            == 0.5
        )

    def test_environment_plan_from_the_injector(self) -> None:
        options = parse_options([], {"PREFLIGHT_TP": "2", "PREFLIGHT_DP_LOCAL": "2"})
        assert options.plan.gpus_needed == 4


class TestOtherOptions:
    @pytest.mark.parametrize(
        ("text", "size"),
        [
            ("1Gi", 1 << 30),
            ("512Mi", 512 << 20),
            ("2G", 2 * 10**9),
            ("1GiB", 1 << 30),
            ("4096", 4096),
        ],
    )
    def test_sizes_read_like_kubernetes_quantities(self, text: str, size: int) -> None:
        assert parse_size(text, "--shm-min") == size

    @pytest.mark.parametrize("text", ["lots", "-1Gi", "1Qi", ""])
    def test_bad_sizes(self, text: str) -> None:
        with pytest.raises(UsageError, match="--shm-min"):
            parse_size(text, "--shm-min")

    def test_shm_min_from_environment(self) -> None:
        assert parse_options([], {"PREFLIGHT_SHM_MIN": "2Gi"}).shm_min == 2 << 30

    @pytest.mark.parametrize("value", ["0", "1.5", "ninety"])
    def test_memory_utilization_range(self, value: str) -> None:
        with pytest.raises(UsageError, match="--gpu-memory-utilization"):
            parse_options(["--gpu-memory-utilization", value], {})

    def test_action_case_insensitive_and_from_environment(self) -> None:
        assert parse_options(["--action", "warn"], {}).action == "Warn"
        assert parse_options([], {"PREFLIGHT_ACTION": "Audit"}).action == "Audit"
        with pytest.raises(UsageError, match="PREFLIGHT_ACTION='Block'"):
            parse_options([], {"PREFLIGHT_ACTION": "Block"})

    def test_skip_takes_lists_and_rejects_unknown_ids(self) -> None:
        options = parse_options(["--skip", "shm,p2p", "--skip", "ecc"], {})
        assert options.skip == {"shm", "p2p", "ecc"}
        assert not options.enabled("shm")
        with pytest.raises(UsageError, match="no-such-check"):
            parse_options(["--skip", "no-such-check"], {})

    def test_deep_checks_only_in_the_deep_tier(self) -> None:
        assert not parse_options([], {}).enabled("deep-allreduce")
        assert parse_options(["--deep"], {}).enabled("deep-allreduce")

    def test_unknown_flag_is_a_usage_error(self) -> None:
        with pytest.raises(UsageError, match="--tensor-parallel"):
            parse_options(["--tensor-parallel", "2"], {})

    def test_output_paths_are_found_even_in_a_bad_command_line(self) -> None:
        assert output_paths(["--tp", "x", "--json=/a.json", "--termination-log", "/t"]) == (
            "/a.json",
            "/t",
        )


class TestDeadline:
    def test_from_the_injector_env_or_the_flag(self) -> None:
        assert parse_options([], {}).deadline_s is None
        assert parse_options([], {"PREFLIGHT_DEADLINE": "120"}).deadline_s == 120.0
        flagged = parse_options(["--deadline", "30"], {"PREFLIGHT_DEADLINE": "120"})
        assert flagged.deadline_s == 30.0

    @pytest.mark.parametrize("value", ["soon", "0", "-5", "86400"])
    def test_malformed_values_are_named(self, value: str) -> None:
        with pytest.raises(UsageError, match=f"PREFLIGHT_DEADLINE='{value}'"):
            parse_options([], {"PREFLIGHT_DEADLINE": value})
