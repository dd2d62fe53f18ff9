"""The rules against vLLM itself (issue 38 item 4): real releases' own argument parsers
judged generated command lines (hack/vllm/oracle.py, run with downloads outside this
suite); their answers are committed in tests/data/vllm_oracle/<release>.json, and every
command line is judged here again by the rules, as `lint` judges a Pod running
``python3 -m vllm.entrypoints.openai.api_server`` on vLLM's own image of that release.

What is compared is what the parser decides, an option's name:
- a command line the release's parser accepts gets no ``vllm-args-unknown`` (the rule
  that claims the parser's "unrecognized arguments"; a false denial is the worst outcome);
- one it refuses for a name (``unrecognized arguments``, ``ambiguous option``) gets a
  FAIL.
Values (a choice, a number) the parser refuses are counted, not compared (the generated
command lines give an option a value only to reach its name). ``vllm-args-invalid``'s
checks past argparse (vLLM's config classes: ``--data-parallel-rank 1`` without
``--data-parallel-size``) are not this oracle's: parse_args accepts those lines.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from preflight_contract import vllm_release
from preflight_operator.core.rules import check_objects

DATA = Path(__file__).resolve().parents[1] / "data" / "vllm_oracle"
RECORDS = sorted(DATA.glob("*.json"), key=lambda p: vllm_release.version_key(p.stem))
ARG_RULES = ("vllm-args-unknown", "vllm-args-invalid", "vllm-args-version", "vllm-args-ignored")
NAME_ERRORS = ("unrecognized arguments", "ambiguous option")


@cache
def record(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def judged(release: str, argv: list[str]) -> list[tuple[str, str]]:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "oracle", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": f"vllm/vllm-openai:v{release}",
                    "command": ["python3", "-m", "vllm.entrypoints.openai.api_server", *argv],
                    "resources": {"limits": {"nvidia.com/gpu": 8}},
                }
            ]
        },
    }
    (result,) = check_objects([pod])
    return [(f.id, f.severity) for f in result.findings if f.id in ARG_RULES]


def name_refused(case: dict[str, Any]) -> bool:
    return not case["accepted"] and any(e in case["error"] for e in NAME_ERRORS)


def test_the_records_are_real_releases_spread_over_the_range() -> None:
    """At least 6 releases, from before 0.6 to the newest generations; each record names
    the wheel pip installed (and its sha256) and the release vLLM reported itself."""
    releases = [p.stem for p in RECORDS]
    assert len(releases) >= 6, releases
    assert vllm_release.version_key(releases[0]) < (0, 6)
    assert vllm_release.version_key(releases[-1]) >= (0, 30)
    for path in RECORDS:
        rec = record(path)
        assert rec["release"] == path.stem == rec["installed"]["vllm"]
        assert rec["installed"]["reported"].startswith(path.stem)
        assert len(rec["installed"]["sha256"]) == 64
        assert rec["installed"]["wheel"].startswith(f"vllm-{path.stem}-")
        assert rec["cases"], path


def _cases() -> list[Any]:
    return [
        pytest.param(path.stem, case, id=f"{path.stem}:{' '.join(case['argv'][2:])[:60]}")
        for path in RECORDS
        for case in record(path)["cases"]
        if case["accepted"] or name_refused(case)
    ]


@pytest.mark.parametrize(("release", "case"), _cases())
def test_the_rules_judge_an_option_name_as_the_release_does(
    release: str, case: dict[str, Any]
) -> None:
    argv = case["argv"]
    found = judged(release, argv)
    fails = [rule for rule, severity in found if severity == "fail"]
    if case["accepted"]:
        unknown = ("vllm-args-unknown", "fail")
        assert unknown not in found, f"vLLM {release} accepts {argv[2:]}, the rules: {found}"
    else:
        assert fails, f"vLLM {release} refuses {argv[2:]} ({case['error']}), rules: {found}"


def test_the_comparison_can_fail() -> None:
    """An option of a newer release on an old image is refused by the rules, and a
    release's own option is not: the comparison above is not vacuous."""
    newer = judged("0.6.3.post1", ["--model", "m", "--async-scheduling"])  # 0.10 on
    assert ("vllm-args-unknown", "fail") in newer
    assert judged("0.6.3.post1", ["--model", "m", "--max-model-len", "4096"]) == []
