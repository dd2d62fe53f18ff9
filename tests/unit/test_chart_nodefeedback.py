"""The chart's rights for node feedback (issue 16): none on Nodes by default; with
nodeFeedback.enabled exactly get and patch on nodes, on top of the operator's other rules."""

from __future__ import annotations

import yaml
from tests.unit.test_chart import (
    FULLNAME,
    OPERATOR_CLUSTER_RULES,
    one,
    render,
    rule_set,
)

NODE_RULES = {("", "nodes", "get"), ("", "nodes", "patch")}
STATUS_RULES = {("", "nodes/status", "patch")}


def test_no_rights_on_nodes_unless_asked() -> None:
    role = one(render(), "ClusterRole", FULLNAME)
    assert not {r for r in rule_set(role["rules"]) if r[1].startswith("nodes")}


def test_node_feedback_adds_exactly_get_and_patch_on_nodes() -> None:
    role = one(render(sets=["nodeFeedback.enabled=true"]), "ClusterRole", FULLNAME)
    assert rule_set(role["rules"]) == OPERATOR_CLUSTER_RULES | NODE_RULES


def test_the_condition_adds_exactly_patch_on_nodes_status_and_only_with_enabled() -> None:
    role = one(
        render(sets=["nodeFeedback.enabled=true", "nodeFeedback.condition=true"]),
        "ClusterRole",
        FULLNAME,
    )
    assert rule_set(role["rules"]) == OPERATOR_CLUSTER_RULES | NODE_RULES | STATUS_RULES
    role = one(render(sets=["nodeFeedback.condition=true"]), "ClusterRole", FULLNAME)
    assert not {r for r in rule_set(role["rules"]) if r[1].startswith("nodes")}


def test_the_operator_is_told_what_the_chart_granted_on_nodes() -> None:
    """config.NodeAccess: the operator never tries what its ClusterRole does not allow."""
    from preflight_operator.core.operatorconfig import NodeAccess, parse_config

    def access(sets: list[str]) -> NodeAccess:
        cm = one(render(sets=sets), "ConfigMap", FULLNAME)
        return parse_config(yaml.safe_load(cm["data"]["config.yaml"])).node_access

    assert access([]) == NodeAccess(write=False, status=False)
    assert access(["nodeFeedback.enabled=true"]) == NodeAccess(write=True, status=False)
    assert access(["nodeFeedback.condition=true"]) == NodeAccess(write=False, status=False)
    both = ["nodeFeedback.enabled=true", "nodeFeedback.condition=true"]
    assert access(both) == NodeAccess(write=True, status=True)


def test_the_operator_is_told_where_the_chart_granted_patch_on_workloads() -> None:
    """config.WorkloadPatch follows rbac.workloadPatch and rbac.workloadNamespaces."""
    from preflight_operator.core.operatorconfig import WorkloadPatch, parse_config

    def patch(sets: list[str]) -> WorkloadPatch:
        cm = one(render(sets=sets), "ConfigMap", FULLNAME)
        return parse_config(yaml.safe_load(cm["data"]["config.yaml"])).workload_patch

    assert patch([]) == WorkloadPatch(scope="namespaces")
    granted = patch(["rbac.workloadNamespaces={a,b}"])
    assert [granted.allows(n) for n in "abc"] == [True, True, False]
    assert patch(["rbac.workloadPatch=cluster"]).allows("c")
    assert not patch(["rbac.workloadPatch=none"]).allows("a")
    assert patch(["rbac.create=false"]) == WorkloadPatch()  # the user binds: not said


def test_the_probe_may_make_pods_in_the_release_namespace_only() -> None:
    """Issue 34: the operator's own probe is a pod in its own namespace; nowhere else may it
    create one, and with node feedback off it may create none."""
    assert not [
        o for o in render() if o["kind"] == "Role" and "node-probe" in o["metadata"]["name"]
    ]
    objs = render(sets=["nodeFeedback.enabled=true"])
    role = one(objs, "Role", f"{FULLNAME}-node-probe")
    assert (
        role["metadata"]["namespace"] == one(objs, "Deployment", FULLNAME)["metadata"]["namespace"]
    )
    assert rule_set(role["rules"]) == {("", "pods", v) for v in ("get", "list", "create", "delete")}
    cluster = one(objs, "ClusterRole", FULLNAME)
    assert not {
        r for r in rule_set(cluster["rules"]) if r[2] in ("create", "delete") and r[1] == "pods"
    }


def test_the_probe_settings_reach_the_operator() -> None:
    from preflight_operator.core.operatorconfig import ProbeSettings, parse_config

    sets = ["nodeFeedback.probe.intervalSeconds=60", "nodeFeedback.probe.maxRunning=2"]
    cm = one(render(sets=sets), "ConfigMap", FULLNAME)
    got = parse_config(yaml.safe_load(cm["data"]["config.yaml"])).node_probe
    assert got == ProbeSettings(interval_seconds=60, max_running=2, start_seconds=300)
