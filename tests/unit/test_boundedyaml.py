"""The operator's one bounded YAML reader (rules/boundedyaml.py) and every place that
reads YAML or JSON embedded in objects (issue 23: no object stalls the event loop).

Costs are asserted by counting (the parser events read before a refusal, the reason it
gives), never by timing: a refusal "before parsing" is one whose reason is a limit and
that read no more events than the limit allows.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_rules_support import check, config_map, deployment, ids, pod_spec, vllm

from preflight_operator.core.analysis import RulesAnalyser
from preflight_operator.core.modelcache import files_from_config_map
from preflight_operator.core.operatorconfig import OperatorConfig, PolicySpec
from preflight_operator.core.rules import WARN, boundedyaml
from preflight_operator.runtime.rulesworker import BudgetExceeded, isolate, plain

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data" / "hostile"))
import corpus


def counting(base: type[Any]) -> tuple[type[Any], list[int]]:
    """A loader class that counts the events the parser hands out."""
    seen = [0]

    class Counted(base):  # type: ignore[misc,valid-type]
        def get_event(self) -> Any:
            seen[0] += 1
            return super().get_event()

    return Counted, seen


def refused(text: str, **limits: Any) -> boundedyaml.Refused:
    with pytest.raises(boundedyaml.Refused) as caught:
        boundedyaml.load(text, **limits)
    return caught.value


# -- the reader ---------------------------------------------------------------------------


def test_the_operator_reads_yaml_with_libyaml() -> None:
    """The cost figures (module docstring, docs/RELIABILITY.md) are libyaml's: the wheel
    this repo pins bundles it."""
    assert boundedyaml.LIBYAML


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (corpus.deep_flow(1200), "too-deep"),  # the tester's serveConfigV2
        ("[" * 1200, "too-deep"),
        (corpus.deep_flow(100_000), "too-deep"),
        (corpus.deep_block(150), "too-deep"),
        (corpus.deep_dashes(1500), "too-deep"),
        (corpus.yaml_alias_bomb(), "alias"),
        ("a: &a 1\nb: *a\n", "alias"),
        ("x" * (boundedyaml.MAX_BYTES + 1), "too-large"),
    ],
)
def test_over_a_limit_is_refused_with_its_reason(text: str, reason: str) -> None:
    exc = refused(text)
    assert exc.reason == reason
    assert isinstance(exc, yaml.YAMLError)  # what every caller already catches


@pytest.mark.parametrize("base", [yaml.SafeLoader, boundedyaml.SafeLoader])
def test_deep_nesting_is_refused_at_the_limit_not_at_the_end(base: type[Any]) -> None:
    """Depth is counted on the events as they come: 1,200 (or 100,000) levels are refused
    after the limit's worth of events, whichever parser (pure or libyaml)."""
    for text in (corpus.deep_flow(1200), corpus.deep_flow(100_000), corpus.deep_dashes(1500)):
        loader, seen = counting(base)
        assert refused(text, loader=loader).reason == "too-deep"
        assert seen[0] <= boundedyaml.MAX_DEPTH + 5  # stream, document, a key, the levels


def test_an_alias_bomb_is_refused_by_arithmetic_never_expanded() -> None:
    """Aliases allowed (lint): the expansion is counted per anchor when it closes, so 9^9
    values are refused within the first few hundred events of a 400-byte text."""
    loader, seen = counting(boundedyaml.SafeLoader)
    text = corpus.yaml_alias_bomb()
    exc = refused(text, loader=loader, max_aliases=None)
    assert exc.reason == "too-many-nodes"
    assert seen[0] <= text.count("*") + text.count("x") + 20


def test_too_large_is_refused_before_any_event() -> None:
    loader, seen = counting(boundedyaml.SafeLoader)
    assert refused("a: 1\n" * 10, loader=loader, max_bytes=20).reason == "too-large"
    assert seen[0] == 0


def test_within_the_limits_it_reads_what_safe_load_reads() -> None:
    text = (
        "applications:\n- name: llm\n  import_path: ray.serve.llm:build_openai_app\n"
        "  args: {llm_configs: [{engine_kwargs: {tensor_parallel_size: 2, x: [1, 2.5, null]}}]}\n"
        "on: yes\nn: ~\n"
    )
    assert boundedyaml.load(text) == yaml.safe_load(text)
    assert boundedyaml.load(corpus.deep_flow(boundedyaml.MAX_DEPTH)) is not None
    assert boundedyaml.load("a: &a 1\nb: *a\n", max_aliases=1) == {"a": 1, "b": 1}


def test_not_yaml_is_a_yaml_error_not_a_refusal() -> None:
    with pytest.raises(yaml.YAMLError) as caught:
        boundedyaml.load("a: [1, 2\n")
    assert not isinstance(caught.value, boundedyaml.Refused)


def test_inline_defers_documents_over_its_size_and_says_so() -> None:
    small, large = "a: 1\n", "a: [" + ",".join(["1"] * 2000) + "]\n"
    with boundedyaml.inline() as here:
        assert boundedyaml.load(small) == {"a": 1}
        assert not here.deferred
        loader, seen = counting(boundedyaml.SafeLoader)
        assert refused(large, loader=loader).reason == "not-here"
        assert seen[0] == 0  # not parsed at all in the loop
        assert here.deferred
    assert boundedyaml.load(large)["a"][0] == 1  # outside, read in full


# -- every place that reads YAML or JSON out of objects ------------------------------------


def test_a_1200_deep_serve_config_is_a_warning_naming_the_field() -> None:
    """The tester's RayService: before, PyYAML spent 1.4 s and raised RecursionError."""
    (service,) = corpus.embedded_cases(1).__next__()[2]
    assert len(json.dumps(service)) < 3000
    results = check(service)
    (serve,) = [r for r in results if "vllm-command-unparsed" in ids(r)]
    assert serve.verdict in (WARN, "unjudged")  # never a failure (issue 35: unjudged)
    (finding,) = serve.findings
    assert finding.field == "spec.serveConfigV2"
    assert "nested deeper than 100 levels (too-deep)" in finding.message


@pytest.mark.parametrize(
    ("name", "reason"),
    [(name, reason) for name, reason, objs in corpus.embedded_cases(1) if reason],
)
def test_every_refused_embedded_document_is_a_warning_never_a_failure(
    name: str, reason: str
) -> None:
    objs = next(o for n, _, o in corpus.embedded_cases(1) if n == name)
    results = [r for r in check(*objs) if r.container != "?"]
    assert results
    for result in results:
        # unjudged (issue 35: its command line not read) or a warning: never a failure
        assert result.verdict in (WARN, "unjudged"), (
            name,
            [(f.id, f.message) for f in result.findings],
        )
        unread = [
            f
            for f in result.findings
            if f.id in ("vllm-command-unparsed", "vllm-config-unresolved")
        ]
        assert unread
        assert f"({reason})" in unread[0].message
        assert "rules-internal-error" not in ids(result)


def test_a_config_file_nested_1200_deep_is_unknown() -> None:
    cm = config_map("cfg", {"config.yaml": corpus.deep_flow(1200)})
    container = vllm("m", "--config", "/etc/vllm/config.yaml", gpus=2)
    container["volumeMounts"] = [
        *container["volumeMounts"],
        {"name": "cfg", "mountPath": "/etc/vllm"},
    ]
    spec = pod_spec(container)
    spec["volumes"] = [*spec["volumes"], {"name": "cfg", "configMap": {"name": "cfg"}}]
    (result,) = check(deployment(spec), cm)
    assert result.verdict == WARN
    assert "vllm-config-unresolved" in ids(result)
    assert "(too-deep)" in next(
        f.message for f in result.findings if f.id == "vllm-config-unresolved"
    )


def test_a_model_config_nested_deeply_is_skipped_not_a_recursion_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    data = {"org--deep.json": "[" * 100_000 + "]" * 100_000, "org--ok.json": '{"a": 1}'}
    assert files_from_config_map(data) == {"org/ok": {"config.json": {"a": 1}}}
    assert "org--deep.json is not read (too-deep" in caplog.text


def test_the_event_loop_never_parses_a_large_embedded_document() -> None:
    """A small RayService (judged in-process, in the event loop) whose serveConfigV2 is
    over boundedyaml.INLINE_BYTES goes to the budgeted worker; one under it stays."""
    pool = isolate(RulesAnalyser(), OperatorConfig())
    assert pool is not None
    calls: list[str] = []

    async def counted(op: str, body: Any, policy: Any) -> Any:
        calls.append(op)
        raise BudgetExceeded("the worker was asked")

    pool._acall = counted  # type: ignore[method-assign]
    for name, _, (service,) in list(corpus.embedded_cases(1))[:1]:
        assert plain(service), name
        with pytest.raises(BudgetExceeded):
            asyncio.run(pool.analyse_async(service, PolicySpec()))
    assert calls == ["analyse"]
    small = corpus.ray_service("small", corpus.deep_flow(300))
    assert len(small["spec"]["serveConfigV2"]) <= boundedyaml.INLINE_BYTES
    static = asyncio.run(pool.analyse_async(small, PolicySpec()))
    assert calls == ["analyse"]  # judged here: refused by depth, a warning
    assert static.verdict == WARN
    assert [f.id for f in static.findings] == ["vllm-command-unparsed"]
