"""The CUDA_VISIBLE_DEVICES explainer: the reasons it gives, not only the prediction
(the prediction itself is held to docs/GPU_FACTS.md in tests/fakedriver)."""

from __future__ import annotations

from preflight_check.cvd import INDEX, INVALID, UNRESOLVED, UUID, BaseGpu, explain, vllm_unparseable
from preflight_check.driver.api import CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_NO_DEVICE, CUDA_SUCCESS

BASE = [
    BaseGpu("GPU-ea300b2e-0352-789c-6847-ce5195328e81", "0000:06:00.0"),
    BaseGpu("GPU-ea311111-1b2c-4d5e-8f90-a1b2c3d4e5f6", "0000:07:00.0"),
    BaseGpu("GPU-3c4d5e6f-2222-4333-8444-555566667777", "0000:08:00.0"),
]


class TestTruncation:
    def test_invalid_middle_entry_names_itself_and_the_gpus_it_takes_along(self) -> None:
        result = explain("0,abc,1,2", BASE)
        assert result.predicted_code == CUDA_SUCCESS
        assert result.predicted_visible == [0]
        assert result.stopped_at is not None
        assert (result.stopped_at.position, result.stopped_at.text) == (2, "abc")
        assert result.lost_gpus() == [1, 2]

    def test_out_of_range_index_says_how_many_gpus_exist(self) -> None:
        result = explain("0,7", BASE)
        assert result.stopped_at is not None
        assert "no GPU 7" in result.stopped_at.reason
        assert "3" in result.stopped_at.reason

    def test_lost_gpus_exclude_ones_already_visible(self) -> None:
        result = explain("0,abc,0", BASE)
        assert result.predicted_visible == [0]
        assert result.lost_gpus() == []

    def test_negative_index_is_explained(self) -> None:
        result = explain("1,-1,0", BASE)
        assert result.predicted_visible == [1]
        assert result.stopped_at is not None
        assert "negative" in result.stopped_at.reason


class TestUuids:
    def test_ambiguous_prefix_is_invalid_and_names_the_candidates(self) -> None:
        result = explain("GPU-ea3", BASE)
        assert result.predicted_code == CUDA_ERROR_NO_DEVICE
        assert result.entries[0].kind == INVALID
        assert "0, 1" in result.entries[0].reason

    def test_unique_prefix_resolves(self) -> None:
        result = explain("GPU-ea30,GPU-3c", BASE)
        assert [e.kind for e in result.entries] == [UUID, UUID]
        assert result.predicted_visible == [0, 2]

    def test_mig_uuids_are_left_to_the_driver(self) -> None:
        result = explain("MIG-377e0049-554c-540b-93c6-d0976f8426cb", BASE)
        assert result.entries[0].kind == UNRESOLVED
        assert result.uncertain

    def test_without_a_gpu_list_indices_are_unresolved_not_guessed(self) -> None:
        result = explain("0,1", None)
        assert {e.kind for e in result.entries} == {UNRESOLVED}
        assert result.uncertain


class TestDuplicates:
    def test_same_form_twice_fails_init(self) -> None:
        result = explain("2,0,2", BASE)
        assert result.predicted_code == CUDA_ERROR_INVALID_DEVICE
        assert result.duplicate is not None
        assert result.duplicate.position == 3

    def test_index_then_uuid_of_the_same_gpu_ends_the_list(self) -> None:
        # Measured on H200s: "0,GPU-<uuid of 0>" gives GPU 0 alone, cuInit succeeds.
        result = explain("2,GPU-3c4d,0", BASE)
        assert result.predicted_code == CUDA_SUCCESS
        assert result.predicted_visible == [2]
        assert result.stopped_at is not None
        assert "again, in another form" in result.stopped_at.reason

    def test_plus_sign_index(self) -> None:
        assert explain("+1", BASE).predicted_visible == [1]

    def test_leading_integer_is_read_and_the_rest_named(self) -> None:
        result = explain("1abc,0x2", BASE)
        assert result.predicted_visible == [1, 0]
        assert result.entries[0].reason == "CUDA reads 1 and ignores 'abc'"

    def test_indices_and_kinds(self) -> None:
        result = explain(" 1 ,0", BASE)
        assert [(e.kind, e.gpu) for e in result.entries] == [(INDEX, 1), (INDEX, 0)]


class TestWhatVllmParses:
    def test_uuid_entries_fail_int(self) -> None:
        assert vllm_unparseable("0,GPU-ea300b2e") == ["GPU-ea300b2e"]

    def test_spaces_are_fine_for_int(self) -> None:
        assert vllm_unparseable(" 0, 1") == []

    def test_unset_is_nothing_to_parse(self) -> None:
        assert vllm_unparseable(None) == []
