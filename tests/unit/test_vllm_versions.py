"""Issue 38: the vLLM version is an exact input. The release from the image reference,
the options each release accepts (generated from the releases' sdists), and the rules
that judge by them."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from test_rules_support import deployment, finding, ids, one, pod_spec, service, vllm

from preflight_contract import vllm_versions as facts
from preflight_operator.core.rules import FAIL, PASS, WARN
from preflight_operator.core.rules.vllmversion import (
    RECENT,
    UNKNOWN_SPAN_DAYS,
    image_version,
    judge_option,
)

ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize(
    ("image", "release"),
    [
        ("vllm/vllm-openai:v0.4.1", "0.4.1"),
        ("docker.io/vllm/vllm-openai:v0.6.3.post1", "0.6.3.post1"),
        ("vllm/vllm-openai:v0.10.1.1-cu126", "0.10.1.1"),
        ("vllm/vllm-tpu:v0.11.1", "0.11.1"),
        ("vllm/vllm-openai:latest", None),
        ("vllm/vllm-openai:cu130-nightly", None),
        ("vllm/vllm-openai@sha256:" + "a" * 64, None),
        ("ghcr.io/acme/vllm-openai:v0.6.3", None),  # FROM vllm/...: may run any vLLM
        ("vllm/vllm-openai:v0.6.3-custom", None),
        (None, None),
    ],
)
def test_the_release_comes_from_official_tags_only(image: object, release: str | None) -> None:
    assert image_version(image).release == release


def test_latest_is_the_newest_release_or_later() -> None:
    assert image_version("vllm/vllm-openai:latest").newest
    assert image_version("vllm/vllm-openai").newest
    assert not image_version("acme/vllm:latest").newest


def test_the_table_spans_0_4_to_0_34_and_knows_the_landmarks() -> None:
    assert facts.RELEASES[0] == "0.4.1"
    assert facts.RELEASES[-1] == "0.34.0"
    assert "0.6.3" in facts.RELEASES
    assert len(facts.RELEASES) >= 30
    # vLLM reads VLLM_PORT since 0.4.3 (vllm-project/vllm#4914)
    assert facts.ENV["VLLM_PORT"] == (("0.4.3", "0.34.0"),)
    assert facts.OPTIONS["--data-parallel-size-local"][0][0] == "0.9.0"
    assert "--enable-metrics" not in facts.OPTIONS
    assert facts.OPTIONS["--tensor-parallel-size"] == (("0.4.1", "0.34.0"),)
    # a removed option ends; a BooleanOptionalAction field has its --no- form, and from
    # 0.33.0 (EnableDisableAction) --enable-x has --disable-x too: --disable-log-requests
    # went after 0.16.0 and came back as --enable-log-requests' inverse (vLLM 0.34.0's
    # own parser accepts it: tests/data/vllm_oracle/0.34.0.json)
    assert facts.OPTIONS["--swap-space"][-1][1] == "0.17.1"
    assert facts.OPTIONS["--disable-log-requests"] == (("0.4.1", "0.16.0"), ("0.33.0", "0.34.0"))
    assert "--no-enable-prefix-caching" in facts.NO_VALUE
    assert facts.OPTIONS["--disable-prefix-caching"][0][0] == "0.33.0"


V063 = image_version("vllm/vllm-openai:v0.6.3")
V0111 = image_version("vllm/vllm-openai:v0.11.0")
LATEST = image_version("vllm/vllm-openai:latest")
CUSTOM = image_version("acme/vllm:1")


def test_enable_metrics_fails_on_every_release_and_warns_where_it_may_be_newer() -> None:
    for version in (V063, V0111, image_version("vllm/vllm-openai:v0.34.0")):
        verdict = judge_option("--enable-metrics", version, serve=True)
        assert verdict.refused
        assert "no vLLM release" in verdict.detail
    # `latest`, a custom image or a tag after the table: a later release may have it
    for version in (LATEST, CUSTOM, image_version("vllm/vllm-openai:v0.35.0")):
        verdict = judge_option("--enable-metrics", version, serve=True)
        assert verdict.doubt
        assert not verdict.refused


def test_dp_size_local_by_version() -> None:
    refused = judge_option("--data-parallel-size-local", V063, serve=True)
    assert refused.refused
    assert "0.6.3" in refused.detail
    assert "since 0.9.0" in refused.detail
    assert judge_option("-dpl", V063, serve=True).refused
    fine = judge_option("--data-parallel-size-local", V0111, serve=True)
    assert not fine.refused
    assert not fine.doubt
    assert not judge_option("--data-parallel-size-local", LATEST, serve=True).doubt
    # an unknown image is one of the releases of the year up to the newest: every one of
    # them has --data-parallel-size-local (since 0.9.0 of May 2025)
    assert not judge_option("--data-parallel-size-local", CUSTOM, serve=True).doubt
    doubt = judge_option("--swap-space", CUSTOM, serve=True)
    assert doubt.doubt
    assert not doubt.refused
    assert "0.4.1-0.17.1" in doubt.detail


def test_an_unknown_image_is_a_release_of_the_year_up_to_the_newest() -> None:
    newest = date.fromisoformat(facts.UPLOADED[-1])
    for i, day in enumerate(facts.UPLOADED):
        within = (newest - date.fromisoformat(day)).days <= UNKNOWN_SPAN_DAYS
        assert (i in RECENT) == within, facts.RELEASES[i]
    assert facts.RELEASES[RECENT[0]] == "0.11.1"  # 2025-11-19, the newest 2026-11-16
    # removed in 0.17.0, back as 0.33.0's EnableDisableAction: the year's 0.17.0-0.32.0
    # refuse it, and a pod on one of them exits (the newest alone would say nothing)
    doubt = judge_option("--disable-log-requests", CUSTOM, serve=True)
    assert doubt.doubt
    assert "vLLM 0.17.0-0.32.0 refuse it" in doubt.detail
    # added within the year (0.16.0): the year's releases before it refuse it
    newer = judge_option("--disable-access-log-for-endpoints", CUSTOM, serve=True)
    assert newer.doubt
    assert "vLLM 0.11.1-0.14.1 refuse it" in newer.detail
    # `latest` is the newest release or later, not the year: both pass there
    assert not judge_option("--disable-log-requests", LATEST, serve=True).doubt
    assert not judge_option("--disable-access-log-for-endpoints", LATEST, serve=True).doubt


def test_every_release_has_its_upload_day_in_order() -> None:
    assert len(facts.UPLOADED) == len(facts.RELEASES)
    days = [date.fromisoformat(d) for d in facts.UPLOADED]
    # ordered by version, and PyPI received them in that order (the year's window relies
    # on it: a late patch of an old minor would need the window to be a set, as it is)
    assert days == sorted(days)


def test_abbreviations_and_options_of_every_release_pass() -> None:
    assert not judge_option("--tensor-par", V063, serve=True).refused
    assert not judge_option("--model", V063, serve=False).refused
    assert not judge_option("-h", V063, serve=False).refused


def test_a_release_between_generated_ones_is_a_doubt_not_a_fail() -> None:
    between = image_version("vllm/vllm-openai:v0.8.4")  # 0.8.3 < 0.8.4 < 0.8.5
    verdict = judge_option("--data-parallel-size-local", between, serve=True)
    assert verdict.doubt
    assert not verdict.refused
    assert "0.8.3" in verdict.detail


def test_rule_fails_an_option_newer_than_the_image() -> None:
    result = one(
        deployment(
            pod_spec(
                vllm(
                    "m", "--data-parallel-size-local", "1", gpus=1, image="vllm/vllm-openai:v0.6.3"
                )
            )
        )
    )
    f = finding(result, "vllm-args-unknown")
    assert f.severity == FAIL
    assert "vllm serve: error: unrecognized arguments: --data-parallel-size-local" in f.message
    assert "0.6.3" in f.message
    assert "0.9.0" in f.message
    ok = one(deployment(pod_spec(vllm("m", "--data-parallel-size-local", "1", gpus=1))))
    assert "vllm-args-unknown" not in ids(ok)


def test_rule_fails_an_option_of_no_release_and_names_the_closest() -> None:
    result = one(deployment(pod_spec(vllm("m", "--enable-metrics", gpus=1))))
    f = finding(result, "vllm-args-unknown")
    assert "no vLLM release from 0.4.1 to 0.34.0" in f.message
    assert "did you mean --enable-mfu-metrics?" in f.message
    custom = one(deployment(pod_spec(vllm("m", "--enable-metrics", gpus=1, image="acme/x:1"))))
    assert ids(custom) == ["vllm-args-version"]


def test_dotted_keys_of_a_json_option_are_the_option() -> None:
    container = vllm("m", "--compilation-config.mode", "3", "--speculative_config.method=x", gpus=1)
    assert "vllm-args-unknown" not in ids(one(deployment(pod_spec(container))))


def test_api_server_module_says_its_own_program() -> None:
    container = vllm(
        "--model",
        "m",
        "--enable-metrics",
        gpus=1,
        command=("python3", "-m", "vllm.entrypoints.openai.api_server"),
    )
    f = finding(one(deployment(pod_spec(container))), "vllm-args-unknown")
    assert "api_server.py: error: unrecognized arguments: --enable-metrics" in f.message


def test_rule_warns_on_latest_for_a_removed_option() -> None:
    result = one(
        deployment(
            pod_spec(vllm("m", "--swap-space", "4", gpus=1, image="vllm/vllm-openai:latest"))
        )
    )
    assert result.verdict == WARN
    assert "0.34.0" in finding(result, "vllm-args-version").message


def test_vllm_port_service_by_version() -> None:
    old = one(
        deployment(pod_spec(vllm("m", gpus=1, image="vllm/vllm-openai:v0.4.1"))), service("vllm")
    )
    assert old.verdict == PASS
    new = one(
        deployment(pod_spec(vllm("m", gpus=1, image="vllm/vllm-openai:v0.4.3"))), service("vllm")
    )
    f = finding(new, "vllm-port-service")
    assert "vLLM 0.4.3" in f.message
    assert "invalid literal for int()" in f.message
    unknown = one(deployment(pod_spec(vllm("m", gpus=1, image="acme/x:1"))), service("vllm"))
    assert "not known here" in finding(unknown, "vllm-port-service").message


SRC = Path.home() / ".cache" / "vllm-preflight" / "vllm-src"
# what hack/prepare_tests.sh fetches (about 24 MB of sdists): one release per era
PREPARED = ("0.4.1", "0.4.3", "0.6.3", "0.9.2", "0.11.0", "0.33.0")


def _table_at(release: str) -> dict[str, set[str]]:
    index = facts.RELEASES.index(release)

    def holds(ranges: facts.Ranges) -> bool:
        order = facts.RELEASES.index
        return any(order(a) <= index <= order(b) for a, b in ranges)

    return {
        name: {n for n, r in getattr(facts, name).items() if holds(r)}
        for name in ("OPTIONS", "SERVE_ONLY", "NO_VALUE", "ENV", "MARKERS", "ARCHITECTURES")
    }


@pytest.mark.parametrize("release", PREPARED)
def test_each_fetched_release_matches_the_table(release: str) -> None:
    """Drift, per release: the table's row for a release equals what the generator reads
    in that release's source (fetched by hack/prepare_tests.sh)."""
    sys.path.insert(0, str(ROOT / "hack" / "vllm"))
    try:
        import gen_versions  # a script directory, not a package
    finally:
        sys.path.pop(0)
    read = gen_versions.release_facts(release)
    if read is None:
        pytest.skip(f"vLLM {release} is not fetched (hack/prepare_tests.sh fetches it)")
    assert read == _table_at(release)


@pytest.mark.skipif(
    not all(
        (SRC / v / "vllm" / "__init__.py").is_file()
        for v in json.loads((ROOT / "hack/vllm/sources.json").read_text())
        if not v.startswith("_")
    ),
    reason="not every pinned vLLM source is fetched (hack/vllm/fetch_source.py VERSION)",
)
def test_the_table_matches_the_sources() -> None:
    """Drift: regenerate from all the fetched sdists and compare with the committed table."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "hack/vllm/gen_versions.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr


PUBLISHED = json.loads((ROOT / "tests/data/vllm_help/published_options.json").read_text())


@pytest.mark.parametrize("release", sorted(k for k in PUBLISHED if not k.startswith("_")))
def test_the_table_has_every_option_vllms_docs_publish(release: str) -> None:
    """Oracle (issue 38 item 4): the options the release's own docs print in `vllm serve
    --help` (rendered from its parser) are all in the table generated from its source."""
    row = _table_at(release)
    accepted = row["OPTIONS"] | row["SERVE_ONLY"]
    missing = [o for o in PUBLISHED[release]["options"] if o not in accepted]
    assert missing == [], (release, PUBLISHED[release]["url"])
