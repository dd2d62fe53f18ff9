"""What the admission webhooks decide, given an object (no kopf here; webhook/admissionreview.py
adapts these to kopf's admission handlers).

Stateless per request: everything comes from the request, the policies (a reflector that
runs on every replica, paused peers included) and, for a pod's injection, the labels of
its workload (one cached read, because policies select workloads, not pods).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from preflight_contract import actions
from preflight_contract.reuse import Offer
from preflight_operator.core import provenance
from preflight_operator.core.admissiondecision import (
    ALLOW,
    AdmissionDecision,
    decide,
    spec_changed,
    unchecked,
)
from preflight_operator.core.analysis import (
    PLAN_UNKNOWN,
    Analyser,
    InjectionTarget,
    analyse_off_loop,
    ray_worker_target,
    target_off_loop,
)
from preflight_operator.core.events import denied_event
from preflight_operator.core.injection import (
    JOBSET_UID,
    Injection,
    Skip,
    in_lws_group,
    jobset_name,
    opted_out,
    plan_injection,
    ray_group_ready,
    ray_role,
    runs_own_share,
)
from preflight_operator.core.operatorconfig import OperatorConfig
from preflight_operator.core.policy import PolicyBook, ResolvedPolicy
from preflight_operator.core.static import StaticResult
from preflight_operator.core.verdictreuse import DeepPass, offers
from preflight_operator.core.workloads import (
    ADMITTED_KINDS,
    JOB,
    LEADERWORKERSET,
    POD,
    VALIDATED_KINDS,
    WorkloadRef,
    is_bare_pod,
    object_kind_key,
    owner_uid,
    ref_of,
    template_labels,
    workload_label_value,
    workload_of_pod,
    wrapper_owner,
)
from preflight_operator.runtime.eventsink import DenialEvents, Poster
from preflight_operator.runtime.rulesworker import BudgetExceeded
from preflight_operator.webhook.reads import ApiGet, OwnerBody, OwnerReads, WorkloadApiGangs
from preflight_operator.webhook.webhookserver import still_awaited

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Validation:
    decision: AdmissionDecision
    outcome: str  # allowed | warned | denied | skipped | over-budget | overloaded
    unjudged: int = 0  # vLLM containers recognised but not judged (metrics: UNJUDGED)


def overloaded_decision(
    policy: ResolvedPolicy, ref: WorkloadRef, seconds: float
) -> AdmissionDecision:
    """Enforce refuses (retry), Warn admits with a warning, Audit admits: the policy's
    answer for an object it could not check."""
    who = f"PreflightPolicy {policy.name}" if policy.name else "the default policy"
    what = (
        f"{ref.display} was not checked: the operator is overloaded and could not answer"
        f" within {seconds:.1f} s ({who}, action {policy.action})"
    )
    if policy.action == actions.ENFORCE:
        return AdmissionDecision(
            allowed=False,
            message=f"vllm-preflight: {what}; under Enforce nothing unchecked is admitted."
            " Retry in a minute; if it persists, the operator's logs and its metric"
            " vllm_preflight_webhook_deadline_answers_total say why.",
        )
    if policy.action == actions.WARN:
        return AdmissionDecision(
            allowed=True,
            warnings=(
                f"vllm-preflight warn: {what}; admitted unchecked. The operator still judges"
                " it and records the result on its GPUValidation.",
            ),
        )
    return ALLOW


class AdmissionService:
    def __init__(
        self,
        config: OperatorConfig,
        analyser: Analyser,
        policies: PolicyBook,
        *,
        events: Poster | None,
        owner_body: OwnerBody | None = None,
        api_get: ApiGet | None = None,
        clock: Callable[[], float] = time.monotonic,
        opted_in: Callable[[str], bool] | None = None,
        deep_passes: Callable[[str], Mapping[str, Sequence[DeepPass]]] | None = None,
        utc_now: Callable[[], str] = lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    ) -> None:
        """``events``: where AdmissionDenied Events go, through the DenialEvents gate
        (off unless the configuration turns them on; then only for namespaces
        ``opted_in`` says opted in, rate-limited)."""
        self._config = config
        self._analyser = analyser
        self._policies = policies
        self._denials = DenialEvents(events, config.webhook, opted_in, clock)
        self._clock = clock
        # verdict reuse: the deep passes of a namespace, by node (nodehealth.py)
        self._deep_passes = deep_passes
        self._utc_now = utc_now
        # (the workload's body or None,): a read that found nothing is remembered too
        self._owners = OwnerReads(owner_body, clock)
        self._gangs = WorkloadApiGangs(api_get, clock)  # the Workload API's gangs (reads.py)

    def use_analyser(self, analyser: Analyser) -> None:
        """Swaps the rules (the operator's start puts them in their budgeted worker)."""
        self._analyser = analyser

    def _skipped(self, namespace: str, kind_name: str, body: Mapping[str, Any]) -> bool:
        if not namespace or namespace in self._config.excluded_namespaces:
            return True
        kind = ADMITTED_KINDS.get(kind_name)
        if kind is None:
            return True
        labels = template_labels(kind, body)
        return opted_out(labels, self._config.namespace_label)

    def policy_for(self, namespace: str, labels: Mapping[str, str] | None) -> ResolvedPolicy:
        return self._policies.resolve(namespace, labels, self._config.default_policy)

    def _prepare(
        self,
        body: Mapping[str, Any],
        old: Mapping[str, Any] | None,
        operation: str,
        user_info: Mapping[str, Any] | None = None,
    ) -> Validation | tuple[WorkloadRef, ResolvedPolicy]:
        """The answer when the rules need not run, else the workload and its policy.
        ``user_info``: the request's requester (None where the caller has none)."""
        meta = body.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        kind_name = object_kind_key(body)  # (API group, kind): a Volcano Job is no Job
        if self._skipped(namespace, kind_name, body):
            return Validation(ALLOW, "skipped")
        if (
            kind_name == POD.kind
            and not is_bare_pod(body)
            and self._controller_made(body, user_info)
        ):
            return Validation(ALLOW, "skipped")  # its workload was judged already
        if operation == "UPDATE" and not spec_changed(old, body):
            return Validation(ALLOW, "skipped")
        ref = ref_of(body, ADMITTED_KINDS[kind_name])
        return ref, self.policy_for(namespace, meta.get("labels"))

    def _controller_made(self, pod: Mapping[str, Any], user_info: Mapping[str, Any] | None) -> bool:
        """A pod with an ownerReference is its workload's (judged at the workload's own
        admission) only when a controller's identity creates it (provenance.py): an
        ownerReference is a field any user writes, and a user's pod pointing at anything
        skipped the rules (issue 23). Without the requester (the sync path), as before."""
        if user_info is None:
            return True
        return provenance.created_by(pod, user_info, self.pod_creators) == provenance.CONTROLLER

    def validate(
        self,
        body: Mapping[str, Any],
        *,
        old: Mapping[str, Any] | None,
        operation: str,
        dry_run: bool,
    ) -> Validation:
        prepared = self._prepare(body, old, operation)
        if isinstance(prepared, Validation):
            return prepared
        ref, policy = prepared
        try:
            static = self._analyser.analyse(body, policy.spec)
        except BudgetExceeded as exc:
            return self._answer(ref, policy, exc, dry_run)
        return self._answer(ref, policy, static, dry_run)

    def overloaded(
        self,
        body: Mapping[str, Any],
        *,
        old: Mapping[str, Any] | None,
        operation: str,
        seconds: float,
    ) -> Validation:
        """The answer when the rules could not be run in time because the operator is
        overloaded (webhookserver.py's deadline): what the policy says of an object it
        could not check, as for a manifest over the rules' budget (admissiondecision.unchecked):
        never a silent admit under Enforce, which is what the API server's own timeout
        gave under failurePolicy Ignore (issue 23)."""
        prepared = self._prepare(body, old, operation)
        if isinstance(prepared, Validation):
            return prepared
        ref, policy = prepared
        return Validation(overloaded_decision(policy, ref, seconds), "overloaded")

    async def validate_async(
        self,
        body: Mapping[str, Any],
        *,
        old: Mapping[str, Any] | None,
        operation: str,
        dry_run: bool,
        user_info: Mapping[str, Any] | None = None,
    ) -> Validation:
        """``validate`` with the rules run off the event loop (in a rules worker, or a
        thread): a slow manifest never holds up other admission requests. The one that
        skips what a serving stack made (``validate`` judges it)."""
        prepared = self._prepare(body, old, operation, user_info)
        if isinstance(prepared, Validation):
            return prepared
        if await self._made_by_stack(body):
            # made by a serving stack's controller (KServe, KubeRay, ...): the object its
            # user wrote was judged at its own admission; a denial here would only surface
            # as a reconcile error deep in that object's status
            return Validation(ALLOW, "skipped")
        ref, policy = prepared
        try:
            static = await analyse_off_loop(self._analyser, body, policy.spec)
        except BudgetExceeded as exc:
            return self._answer(ref, policy, exc, dry_run)
        return self._answer(ref, policy, static, dry_run)

    def _answer(
        self,
        ref: WorkloadRef,
        policy: ResolvedPolicy,
        static: StaticResult | BudgetExceeded,
        dry_run: bool,
    ) -> Validation:
        if isinstance(static, BudgetExceeded):
            decision, outcome = unchecked(policy, ref, static.reason), "over-budget"
        else:
            decision = decide(static, policy, ref)
            outcome = "warned" if decision.warnings else "allowed"
        if not decision.allowed:
            # no Event when the answer sent was the failure answer (past the deadline)
            if not dry_run and self._denials.enabled and still_awaited():
                self._denials.post(denied_event(ref, decision.message))
            return Validation(decision, "over-budget" if outcome == "over-budget" else "denied")
        return Validation(decision, outcome, getattr(static, "unjudged", 0))

    async def _made_by_stack(self, body: Mapping[str, Any]) -> bool:
        """Was this object made by a serving stack's controller? Its controller
        ownerReference names a stack kind that makes such children (wrapper_owner), and
        that owner exists with the uid the reference names. Anything short of that (no
        reader, unreadable, absent, another uid) is a no: the rules judge the object, as
        for any user's (an ownerReference is a field any user writes). A fresh read
        unless the cached owner has that uid: at most one GET per such admission."""
        ref = wrapper_owner(body)
        uid = owner_uid(body)
        if ref is None or not uid or not self._owners.enabled:
            return False
        cached = self._owners.cached(ref)
        if cached is not None and _uid(cached[0]) == uid:
            return True
        try:
            owner = await self._owners.fresh(ref)
        except Exception as exc:
            logger.info("owner %s not confirmed (%s): the rules judge its child", ref.display, exc)
            return False
        return owner is not None and _uid(owner) == uid

    async def _labels_for_policy(self, pod: Mapping[str, Any]) -> Mapping[str, str]:
        """The labels a policy selects the pod by: its workload's (cached), else its own."""
        own = (pod.get("metadata") or {}).get("labels") or {}
        ref = workload_of_pod(pod)
        if ref.kind_key == POD.key or not self._owners.enabled:
            return own
        jobset = await self._jobset(pod) if ref.kind_key == JOB.key else None
        if jobset is not None and _uid(jobset) == str(own.get(JOBSET_UID, "")):
            return _labels(jobset)  # chose its policy at admission; its Jobs have none of them
        try:
            body = await self._owners.get(ref)
        except Exception as exc:
            logger.warning(
                "policy for a pod of %s: workload unreadable (%s); using the pod's labels",
                ref.display,
                exc,
            )
            return own
        return own if body is None else _labels(body)

    async def _ray_group(self, pod: Mapping[str, Any]) -> bool:
        """Does every pod of this pod's Ray-pattern LeaderWorkerSet get the check, so that
        the group may meet (injection.ray_group_ready)? Read from the LeaderWorkerSet,
        cached like the owner's labels; unreadable: no group phase (never a wait for
        members that may not come)."""
        ref = workload_of_pod(pod)
        if not self._owners.enabled or ref.kind_key != LEADERWORKERSET.key:
            return False
        try:
            body = await self._owners.get(ref)
        except Exception as exc:
            logger.warning("group phase for %s: unreadable (%s); not used", ref.display, exc)
            return False
        return body is not None and ray_group_ready(body)

    async def _jobset(self, pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The JobSet that made this pod, for its group (injection.jobset_place) and its
        policy, cached like a workload. Unreadable: None, remembered for a burst (a chart
        with workloadKinds.jobset off grants no read: one line, not one per pod)."""
        ref = _jobset_ref(pod)
        if ref is None or not self._owners.enabled:
            return None
        try:
            return await self._owners.get(ref)
        except Exception as exc:
            self._owners.remember(ref, None)
            logger.warning("%s unreadable (%s): no group phase for its pods", ref.display, exc)
            return None

    @property
    def pod_creators(self) -> tuple[str, ...]:
        """Identities besides kube-system's whose pods are trusted (provenance.py)."""
        return self._config.pod_creators

    async def mutate_pod(self, pod: Mapping[str, Any]) -> Injection | Skip:
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        if not namespace or namespace in self._config.excluded_namespaces:
            return Skip("excluded-namespace")
        if opted_out(meta.get("labels") or {}, self._config.namespace_label):
            return Skip("opted-out")
        policy = self.policy_for(namespace, await self._labels_for_policy(pod))
        if not policy.spec.injection_enabled:
            return Skip("disabled-by-policy")
        try:
            target = await target_off_loop(self._analyser, pod, policy.spec)
        except BudgetExceeded as exc:
            # Its workload (or, for a bare pod, the pod itself) went through /validate,
            # which answered by the policy: the injection webhook fails open, as ever.
            return Skip("over-budget", exc.reason)
        ray_group = False
        if in_lws_group(pod):
            if target.container is None and target.reason == "no-vllm-container":
                target = ray_worker_target(pod) or target  # a Ray worker: its own GPUs
            container = _container(pod, target.container)
            if container is not None and target.plan is not None and ray_role(container):
                ray_group = await self._ray_group(pod)
        if target.container is None or (target.plan is None and target.reason != PLAN_UNKNOWN):
            return Skip(target.reason or "undecided")
        workload_label = workload_label_value(workload_of_pod(pod))
        outcome = plan_injection(
            pod,
            container=target.container,
            plan=target.plan,
            policy=policy.spec,
            config=self._config.injection,
            workload_label=workload_label,
            argv=target.argv,
            model=target.model,
            ray_group=ray_group,
            reuse=self._reuse(namespace, workload_label or "", policy.reuse_ttl_s),
            jobset=await self._jobset(pod) if _jobset_member(pod, target) else None,
            plan_unknown=target.why,
            plan_gpus_counted=target.gpus_counted,
        )
        container = _container(pod, target.container) or {}
        return await self._gangs.warn(pod, container, target.argv, outcome)

    def _reuse(
        self, namespace: str, workload: str, ttl_s: int
    ) -> Callable[[str, str], list[Offer]] | None:
        """The injector's lookup of deep passes to offer (core/verdictreuse.py): those of
        the pod's own namespace and workload; None when the policy's TTL is 0 (reuse off)."""
        if ttl_s <= 0 or self._deep_passes is None:
            return None
        passes = self._deep_passes(namespace)
        now = self._utc_now()
        return lambda image, plan: offers(
            passes,
            namespace=namespace,
            workload=workload,
            image=image,
            plan=plan,
            ttl_s=ttl_s,
            now=now,
        )


def _labels(body: Mapping[str, Any]) -> dict[str, str]:
    meta = body.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return dict(labels) if isinstance(labels, Mapping) else {}


def _container(pod: Mapping[str, Any], name: str | None) -> Mapping[str, Any] | None:
    containers = (pod.get("spec") or {}).get("containers") or []
    return next((c for c in containers if isinstance(c, Mapping) and c.get("name") == name), None)


def _jobset_member(pod: Mapping[str, Any], target: InjectionTarget) -> bool:
    """Might this pod meet its JobSet's group: not a LeaderWorkerSet's, its plan read (a
    plan-unknown check meets no group), and its vLLM runs its own share of a multi-node
    engine (only then is the JobSet read)?"""
    if target.plan is None or in_lws_group(pod):
        return False
    return runs_own_share(_container(pod, target.container) or {})


def _jobset_ref(pod: Mapping[str, Any]) -> WorkloadRef | None:
    """The JobSet a pod's label names (None: none, or the kind is not registered)."""
    name, kind = jobset_name(pod), VALIDATED_KINDS.get("JobSet")
    if not name or kind is None:
        return None
    namespace = str((pod.get("metadata") or {}).get("namespace", ""))
    return WorkloadRef(namespace, kind.kind, name, kind.api_version)


def _uid(body: Mapping[str, Any] | None) -> str:
    meta = body.get("metadata") if isinstance(body, Mapping) else None
    return str(meta.get("uid", "")) if isinstance(meta, Mapping) else ""
