"""The operator's configuration file: defaults, strict enums, bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from preflight_operator.core import constants
from preflight_operator.core.operatorconfig import (
    ConfigError,
    OperatorConfig,
    PolicySpec,
    load_config,
    parse_config,
    parse_policy_spec,
)


def test_defaults_match_the_contract() -> None:
    config = parse_config({})
    assert config.default_policy == PolicySpec()
    assert config.default_policy.action == "Enforce"
    assert config.injection.mode == "WorkloadImage"
    assert config.namespace_label == constants.LABEL_INJECT
    assert config.history_pods_per_workload == 10
    assert config.excluded_namespaces >= constants.SYSTEM_NAMESPACES


def test_the_charts_rendering_parses() -> None:
    config = parse_config(
        {
            "defaultPolicy": {
                "action": "Warn",
                "tier": "deep",
                "thresholds": {"shmMin": "2Gi", "extraGPUsAllowed": 1},
                "checks": {"disabled": ["shm", "gpu-count-extra"]},
                "onRuntimeFailure": "ScaleToZero",
            },
            "injection": {
                "mode": "DedicatedImage",
                "installerImage": "example.com/op:1",
                "checkImage": "example.com/check:1",
                "imagePullPolicy": "Always",
                "resources": {"requests": {"cpu": "50m"}},
                "timeoutSeconds": 60,
            },
            "namespaceLabel": "example.com/gpu-check",
            "excludedNamespaces": ["infra"],
            "history": {"podsPerWorkload": 5},
        }
    )
    assert config.default_policy.action == "Warn"
    assert config.default_policy.thresholds.shm_min == "2Gi"
    assert config.default_policy.disabled_checks == ("shm", "gpu-count-extra")
    assert config.default_policy.on_runtime_failure == "ScaleToZero"
    assert config.injection.check_image == "example.com/check:1"
    assert config.injection.resources == {"requests": {"cpu": "50m"}}
    # system namespaces stay excluded even when a values file forgets them
    assert {"infra", "kube-system"} <= config.excluded_namespaces
    assert config.history_pods_per_workload == 5


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"defaultPolicy": {"action": "enforce"}}, "defaultPolicy.action"),
        ({"defaultPolicy": {"tier": "slow"}}, "defaultPolicy.tier"),
        ({"defaultPolicy": {"onRuntimeFailure": "Delete"}}, "onRuntimeFailure"),
        ({"defaultPolicy": {"thresholds": {"extraGPUsAllowed": -1}}}, "extraGPUsAllowed"),
        ({"defaultPolicy": {"checks": {"disabled": "shm"}}}, "checks.disabled"),
        ({"injection": {"mode": "Sidecar"}}, "injection.mode"),
        ({"injection": {"timeoutSeconds": 0}}, "timeoutSeconds"),
        ({"history": {"podsPerWorkload": 21}}, "maxItems"),
        ({"excludedNamespaces": "kube-system"}, "excludedNamespaces"),
        ([], "expected a mapping"),
    ],
)
def test_mistakes_stop_the_operator_with_the_key_named(data: object, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        parse_config(data)


def test_a_policy_spec_inherits_what_it_does_not_say() -> None:
    base = PolicySpec(action="Warn", tier="deep")
    spec = parse_policy_spec({"action": "Audit"}, "spec", base)
    assert (spec.action, spec.tier) == ("Audit", "deep")


def test_release_namespace_is_excluded() -> None:
    assert (
        "vllm-preflight"
        in OperatorConfig().with_release_namespace("vllm-preflight").excluded_namespaces
    )
    assert OperatorConfig().with_release_namespace("") == OperatorConfig()


def test_load_config_reads_yaml_and_reports_unreadable_files(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("defaultPolicy: {action: Audit}\n")
    assert load_config(path).default_policy.action == "Audit"
    path.write_text("defaultPolicy: [\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(path)


def test_the_webhook_section_is_strict_and_names_the_field() -> None:
    from preflight_operator.core.operatorconfig import ConfigError, WebhookConfig, parse_config

    assert parse_config({}).webhook == WebhookConfig()
    assert parse_config({}).webhook.admission_events is False  # denial Events off by default
    config = parse_config(
        {"webhook": {"validating": {"failurePolicy": "Fail", "timeoutSeconds": 5},
                     "admissionEvents": {"enabled": True, "perMinute": 10},
                     "server": {"maxConnections": 100, "maxConnectionsPerPeer": 10,
                                "headerTimeoutSeconds": 2.5}}}
    ).webhook  # fmt: skip
    assert (config.validating_failure_policy, config.validating_timeout_seconds) == ("Fail", 5)
    assert (config.admission_events, config.events_per_minute) == (True, 10)
    assert (config.max_connections, config.max_connections_per_peer) == (100, 10)
    assert config.header_timeout_seconds == 2.5
    for bad, field in (
        ({"validating": {"failurePolicy": "Open"}}, "webhook.validating.failurePolicy"),
        ({"mutating": {"timeoutSeconds": 31}}, "webhook.mutating.timeoutSeconds"),
        ({"admissionEvents": {"enabled": "yes"}}, "webhook.admissionEvents.enabled"),
        ({"server": {"maxConnections": 10, "maxConnectionsPerPeer": 11}},
         "webhook.server.maxConnectionsPerPeer"),
        ({"server": {"headerTimeoutSeconds": 0}}, "webhook.server.headerTimeoutSeconds"),
    ):  # fmt: skip
        with pytest.raises(ConfigError, match=field):
            parse_config({"webhook": bad})


def test_node_access_is_granted_unless_the_chart_says_otherwise() -> None:
    from preflight_operator.core.operatorconfig import NodeAccess

    assert parse_config({}).node_access == NodeAccess(write=True, status=True)
    off = parse_config({"nodeFeedback": {"enabled": False, "condition": True}})
    assert off.node_access == NodeAccess(write=False, status=False)
    with pytest.raises(ConfigError, match=r"nodeFeedback\.enabled"):
        parse_config({"nodeFeedback": {"enabled": "yes"}})
    with pytest.raises(ConfigError, match="nodeFeedback"):
        parse_config({"nodeFeedback": ["enabled"]})


def test_workload_patch_scope_is_everywhere_unless_the_chart_says_otherwise() -> None:
    from preflight_operator.core.operatorconfig import WorkloadPatch

    assert parse_config({}).workload_patch == WorkloadPatch()
    parsed = parse_config({"workloadPatch": {"scope": "namespaces", "namespaces": ["a"]}})
    assert parsed.workload_patch.allows("a")
    assert not parsed.workload_patch.allows("b")
    with pytest.raises(ConfigError, match=r"workloadPatch\.scope"):
        parse_config({"workloadPatch": {"scope": "some"}})
    with pytest.raises(ConfigError, match=r"workloadPatch\.namespaces"):
        parse_config({"workloadPatch": {"namespaces": "a"}})
