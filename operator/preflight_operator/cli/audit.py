"""`kubectl vllm-preflight audit [-n NS | -A]`: what admission would answer today for the
vLLM workloads that already exist.

Before a platform team turns a policy to Enforce it asks what that would deny in the
cluster now (Gatekeeper's and Kyverno's audits answer it for theirs). The webhook judges
only objects being written; this judges the live ones the same way, with the same
functions: the kinds the webhook judges (workloads.ADMITTED_KINDS; bare Pods only, as a
controller's pods are judged through their workload), skipped as the webhook skips them
(the opt-out label on the workload or its pod template), the PreflightPolicies of the
cluster read as the operator reads them (policy.parse_policy: a bad field takes its
default), resolved and turned into rules' thresholds by lint_policy.judge (the webhook's
resolve_policy and rules_policy), with the namespace's ConfigMaps, Services and KServe
serving runtimes beside them (the rules read env, --config files and runtimes from them),
and answered by admissiondecision.decide. Not modelled: whether the namespace is opted in to the
webhook (every listed workload is judged as if it were), and a workload the rules could not
finish within the webhook's budget.

The table says per workload its policy, action, static verdict and the answer (deny, warn,
admit) with the first reason; ``-o json`` the same with every finding. Exit 0: nothing
would be denied; 1: something would; 2: the cluster could not be read.

The pure core is ``audit_rows``; ``cmd_audit`` does the kubectl calls.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from preflight_contract import actions
from preflight_contract.terminal import clean
from preflight_operator.cli.lint_policy import judge
from preflight_operator.cli.plugin_common import (
    EXIT_ERROR,
    EXIT_FAILED,
    EXIT_OK,
    Kubectl,
    PluginError,
    kubectl_failure,
    paint,
    render_table,
    use_colour,
)
from preflight_operator.core import constants
from preflight_operator.core.admissiondecision import decide
from preflight_operator.core.analysis import rules_policy, to_static
from preflight_operator.core.injection import opted_out
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.policy import Policy, parse_policy
from preflight_operator.core.policyaudit import ADMIT, DENY, WARN, answer_of
from preflight_operator.core.rules import FAIL, NO_LOOKUP, UNJUDGED, ContainerResult
from preflight_operator.core.workloads import (
    ADMITTED_KINDS,
    POD,
    WorkloadKind,
    is_bare_pod,
    object_kind_key,
    ref_of,
    template_labels,
)

# Objects the rules read beside a workload (env from ConfigMaps, Service links, runtimes).
RELATED = ("configmaps", "services")
POLICY_RESOURCE = f"{constants.POLICY_PLURAL}.{constants.GROUP}"
COLUMNS = ("NAMESPACE", "WORKLOAD", "POLICY", "ACTION", "STATIC", "ADMISSION", "REASON")


@dataclasses.dataclass(frozen=True)
class AuditRow:
    namespace: str
    kind: str
    name: str
    policy: str  # "" for the default policy
    action: str
    verdict: str  # the static verdict: pass | warn | fail | unjudged
    answer: str  # deny | warn | admit
    message: str  # the denial, or the first warning
    findings: tuple[dict[str, str], ...]
    # (container, why) of each vLLM container that was not judged (its command line could
    # not be read): the verdict is then "unjudged" unless something fails (issue 35)
    unjudged: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "kind": self.kind,
            "name": self.name,
            "policy": self.policy,
            "action": self.action,
            "verdict": self.verdict,
            "admission": self.answer,
            "message": self.message,
            "findings": list(self.findings),
            "unjudged": [{"container": c, "reason": why} for c, why in self.unjudged],
        }


def _kind_of(obj: Mapping[str, Any]) -> WorkloadKind | None:
    kind = ADMITTED_KINDS.get(object_kind_key(obj))
    if kind is None:
        return None
    if kind.kind == POD.kind and not is_bare_pod(obj):
        return None  # judged through its workload, as the webhook does
    return None if opted_out(template_labels(kind, obj)) else kind


def audit_rows(
    workloads: Sequence[Mapping[str, Any]],
    related: Sequence[Mapping[str, Any]],
    policies: Sequence[Policy],
    default: PolicySpec,
) -> list[AuditRow]:
    """What admission would answer for each vLLM workload (pure)."""
    judged_objects = [w for w in workloads if _kind_of(w) is not None]
    objects = [*judged_objects, *related]
    judged = judge(
        objects, list(policies), rules_policy(default), lookup=NO_LOOKUP,
        default_namespace=None, default=default,
    )  # fmt: skip
    by_object: dict[int, list[ContainerResult]] = {}
    for result in judged.results:
        if result.object_index is not None and result.object_index < len(judged_objects):
            by_object.setdefault(result.object_index, []).append(result)
    rows: list[AuditRow] = []
    for index, results in sorted(by_object.items()):
        obj = judged_objects[index]
        kind = _kind_of(obj)
        assert kind is not None
        ref = ref_of(obj, kind)
        policy = judged.policy_of(results[0])
        static = to_static(results)
        decision = decide(static, policy, ref)
        answer = answer_of(decision)
        message = decision.message or (decision.warnings[0] if decision.warnings else "")
        findings = tuple(
            {**f.to_dict(), "action": judged.action(results[0], f)} for f in static.findings
        )
        unjudged = tuple((r.container, r.unjudged) for r in results if r.verdict == UNJUDGED)
        rows.append(
            AuditRow(
                ref.namespace,
                ref.kind_key,
                ref.name,
                policy.name,
                policy.action,
                UNJUDGED if unjudged and static.verdict != FAIL else static.verdict,
                answer,
                message,
                findings,
                unjudged,
            )
        )
    rows.sort(key=lambda r: (r.namespace, r.kind, r.name))
    return rows


def _reason(row: AuditRow) -> str:
    first = next((f for f in row.findings if f["severity"] == "fail"), None) or next(
        iter(row.findings), None
    )
    return first["id"] if first else ""


def render(rows: Sequence[AuditRow], colour: bool) -> str:
    table = [
        [
            clean(r.namespace), clean(f"{r.kind}/{r.name}", keep_newlines=False),
            clean(r.policy or "(default)", keep_newlines=False), clean(r.action),
            paint(clean(r.verdict), r.verdict, colour),
            paint(r.answer, {DENY: "fail", WARN: "warn", ADMIT: "pass"}[r.answer], colour),
            clean(_reason(r), keep_newlines=False),
        ]
        for r in rows
    ]  # fmt: skip
    counts = {a: sum(1 for r in rows if r.answer == a) for a in (DENY, WARN, ADMIT)}
    summary = (
        f"{len(rows)} vLLM workload(s): {counts[DENY]} would be denied, {counts[WARN]} "
        f"admitted with warnings, {counts[ADMIT]} admitted"
    )
    unjudged = sum(1 for r in rows if r.verdict == UNJUDGED)
    if unjudged:
        summary += f"; {unjudged} not judged (a vLLM command line that could not be read)"
    if not rows:
        return "no vLLM workloads found\n"
    return render_table(COLUMNS, table, colour) + "\n" + summary + "\n"


def document(rows: Sequence[AuditRow], notes: Sequence[str]) -> dict[str, Any]:
    counts = {a: sum(1 for r in rows if r.answer == a) for a in (DENY, WARN, ADMIT)}
    return {
        "schema": 1,
        "items": [r.to_dict() for r in rows],
        "counts": counts,
        "unjudged": sum(1 for r in rows if r.verdict == UNJUDGED),
        "notes": list(notes),
    }


# -- the shell ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubectl vllm-preflight audit",
        description="What admission would answer for the vLLM workloads that exist: the "
        "rules and PreflightPolicies the webhook applies. Exit 0: nothing would be denied; "
        "1: something would; 2: the cluster could not be read.",
    )
    parser.add_argument("-n", "--namespace", default="", help="namespace (default: the context's)")
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    parser.add_argument(
        "--default-action",
        choices=actions.ACTIONS,
        default=actions.ENFORCE,
        help="the action of a workload no PreflightPolicy selects: the chart's "
        "defaultPolicy.action (default Enforce)",
    )
    return parser


def main(global_args: Sequence[str], argv: Sequence[str], out: TextIO) -> int:
    """``kubectl vllm-preflight [--context C] [--kubeconfig F] audit ARGS``."""
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exc:  # argparse: 2 on a usage error, 0 on --help
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    try:
        return cmd_audit(args, Kubectl(global_args), out, os.environ)
    except PluginError as exc:
        print(f"kubectl vllm-preflight audit: {clean(exc)}", file=sys.stderr)
        return EXIT_ERROR


def _items(kubectl: Kubectl, scope: Sequence[str], resources: Sequence[str]) -> list[Any]:
    if not resources:
        return []
    got = kubectl.json("get", ",".join(resources), *scope)
    items = got.get("items") if isinstance(got, Mapping) else None
    return [i for i in items or [] if isinstance(i, Mapping)]


def _served(kubectl: Kubectl) -> set[str]:
    """The resources the API server serves, as `plural.group` (core: `plural`)."""
    result = kubectl.run("api-resources", "--verbs=list", "-o", "name")
    if result.returncode != 0:
        raise PluginError(kubectl_failure(["api-resources"], result.stderr))
    return set(result.stdout.split())


def _resource(kind: WorkloadKind) -> str:
    return f"{kind.plural}.{kind.group}" if kind.group else kind.plural


def cmd_audit(
    args: argparse.Namespace, kubectl: Kubectl, out: TextIO, environ: Mapping[str, str]
) -> int:
    if args.all_namespaces and args.namespace:
        raise PluginError("give -n NAMESPACE or -A, not both")
    namespace = args.namespace or ("" if args.all_namespaces else kubectl.current_namespace())
    scope = ["-A"] if args.all_namespaces else ["-n", namespace]
    served = _served(kubectl)
    kinds = [_resource(k) for k in ADMITTED_KINDS.values() if k.kind != "ClusterServingRuntime"]
    workloads = _items(kubectl, scope, [r for r in dict.fromkeys(kinds) if r in served])
    related = _items(kubectl, scope, [r for r in RELATED if r in served])
    cluster_runtimes = _resource(ADMITTED_KINDS["ClusterServingRuntime"])
    if cluster_runtimes in served:  # cluster-scoped: read by the rules for any namespace
        related += _items(kubectl, [], [cluster_runtimes])
    notes: list[str] = []
    policies: list[Policy] = []
    if POLICY_RESOURCE in served:
        for body in _items(kubectl, scope, [POLICY_RESOURCE]):
            policy = parse_policy(body)
            policies.append(policy)
            notes += [
                f"PreflightPolicy {policy.namespace}/{policy.name}: {p.message}"
                for p in policy.problems
            ]
    else:
        notes.append("the PreflightPolicy CRD is not installed: every workload has the default")
    rows = audit_rows(workloads, related, policies, PolicySpec(action=args.default_action))
    if args.output == "json":
        print(json.dumps(document(rows, notes), indent=2), file=out)
    else:
        out.write(render(rows, use_colour(args.color, out, environ)))
        for note in notes:
            print(f"note: {clean(note)}", file=out)
    return EXIT_FAILED if any(r.answer == DENY for r in rows) else EXIT_OK


__all__ = ["AuditRow", "audit_rows", "cmd_audit", "document", "main", "render"]
