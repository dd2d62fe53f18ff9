"""Runs the rules over workloads: discovery -> command -> plan -> findings.

The docs of its rules (hack/gen_rule_docs.py renders them into docs/RULES.md):

### `vllm-command-unparsed`
The vLLM command line cannot be read with certainty, so it was not checked (a warning,
never a denial): a shell script that mentions vLLM does not parse (unbalanced quotes); its
vLLM command depends on a branch taken at run time and differs between the arms; vLLM runs
behind something not modelled (a launcher option not in its table, `env -i`/`-S`, a program
in an unknown variable, `eval` of an unknown value; see "Shell scripts"); a container
sets only `args` on an image not known to run `vllm serve` while its image name or options
look like vLLM's; or a RayService's `spec.serveConfigV2`, from which Ray Serve LLM builds
the `vllm serve` command lines, is over a limit of `rules/boundedyaml.py` (YAML aliases,
more than 100 levels deep, more than 100,000 values, over 1 MiB) and was not read: the
finding names `spec.serveConfigV2` and the reason (`too-deep`, `alias`, ...). Also a
container recognised as vLLM (rules/recognition.py: an entry point of vLLM in its command,
args or env, vLLM's image, vLLM's options, a serving stack) whose vLLM command line the
reader cannot find (`set --` ... `exec vllm "$@"`, `| xargs vllm`, a here-document, an
`envFrom` source not in the set, an entry point it does not know), and a kind whose pod
template cannot be read (an InferenceService whose ServingRuntime is elsewhere): the
finding names what was not read and the signal, and the result's verdict is `unjudged`.
*Symptom:* `sh: syntax error: unterminated quoted string`, or a command that is not what
was meant.
*Fix:* write the command as a list (`command: [vllm, serve, ...]`), fix the quoting, or
choose the branch in the manifest (a literal instead of a runtime test).

### `manifest-invalid`
A field the rules read is malformed (`resources` or `limits` not a mapping), or a field
the kind's own CRD requires is missing, so the API server rejects the object before any
webhook sees it: a LeaderWorkerSet without `spec.leaderWorkerTemplate.workerTemplate`, a
production-stack VLLMRuntime in the layout before its CRD's restructuring (no
`spec.vllmConfig` / `spec.deploymentConfig`), a Kthena ModelServing role without
`entryTemplate`. The finding names the field and the fix; nothing else is read.
*Symptom:* the API server rejects the object.
*Fix:* correct the field.

### `kind-generic`
An object of a kind the registry does not know embeds a pod spec that runs vLLM: it was
judged as a plain pod. Information only.

### `rules-internal-error`
A rule crashed on this object. The webhook admits the object (it never blocks the cluster
because of its own bug) and records the error.
*Fix:* report it, with the manifest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from preflight_contract.verdicts import FAIL, INFO, SEVERITIES, WARN
from preflight_contract.vllm_args import parse_vllm_args
from preflight_operator.core.rules import (
    redaction,
    ruleset,  # noqa: F401  (registers the rules)
)
from preflight_operator.core.rules.certainty import (
    ARGV,
    ESTIMATED,
    HEURISTIC,
    MEASUREMENT,
    VENDOR_DOC,
    Basis,
    Input,
    downgrade_note,
    not_exact,
)
from preflight_operator.core.rules.command import Invocation, Unparsed, find_invocation
from preflight_operator.core.rules.context import ContainerContext
from preflight_operator.core.rules.discovery import (
    CLUSTER_SCOPED,
    ManifestSet,
    PodTemplate,
    pod_templates,
)
from preflight_operator.core.rules.embedded import object_runs_vllm
from preflight_operator.core.rules.kinds import kind_spec
from preflight_operator.core.rules.kubeenv import ContainerEnv, build_env, unknown_marker
from preflight_operator.core.rules.namedgangs import GANG_RULE_PREFIX
from preflight_operator.core.rules.recognition import (
    ENTRYPOINT,
    Signal,
    describe,
    recognise,
    unread_parts,
)
from preflight_operator.core.rules.registry import REGISTRY, declare
from preflight_operator.core.rules.resources import gpu_resources
from preflight_operator.core.rules.ruleset.service import injects_links, link_prefix
from preflight_operator.core.rules.spread import with_ray_workers
from preflight_operator.core.rules.template import Group, meta, running_containers
from preflight_operator.core.rules.vllmconfigfile import ConfigResolver
from preflight_operator.core.rules.vocabulary import (
    DEFAULT_POLICY,
    NO_LOOKUP,
    ClusterLookup,
    ContainerResult,
    Finding,
    Policy,
)

COMMAND_UNPARSED = declare(
    "vllm-command-unparsed",
    WARN,
    "a vLLM command line could not be read: the container was not judged",
    Basis(MEASUREMENT, "the shell oracle: scripts run under real bash and dash"),
    fix="simplify the shell wrapper, or pass the flags as `args`",
)
MANIFEST_INVALID = declare(
    "manifest-invalid",
    FAIL,
    "a manifest field the rules need is malformed",
    Basis(VENDOR_DOC, "Kubernetes API validation of the pod spec"),
    fix="fix the field the API server would reject",
)
INTERNAL_ERROR = declare(
    "rules-internal-error",
    WARN,
    "a rule crashed (a bug in vllm-preflight)",
    Basis(HEURISTIC, "a crash of vllm-preflight's own rules"),
    fix="a bug in vllm-preflight: the object is admitted; please report it",
)
log = logging.getLogger(__name__)

KIND_GENERIC = declare(
    "kind-generic",
    INFO,
    "a kind vllm-preflight does not know, judged by its embedded pod spec",
    Basis(HEURISTIC, "an unknown kind read as a plain pod"),
    fix="nothing: information that an unknown kind was judged by its embedded pod spec",
)


def check_objects(
    objects: Iterable[Mapping[str, Any]],
    policy: Policy = DEFAULT_POLICY,
    lookup: ClusterLookup = NO_LOOKUP,
    default_namespace: str | None = None,
) -> list[ContainerResult]:
    """Check every workload of a manifest set; ConfigMaps and Services in the set are used
    to resolve env, --config files and Service links. One result per vLLM container."""
    objs = list(objects)
    manifests = ManifestSet.of([o for o in objs if isinstance(o, Mapping)], default_namespace)
    results: list[ContainerResult] = []
    for index, obj in enumerate(objs):
        if not isinstance(obj, Mapping):
            continue
        for result in _check_object(obj, manifests, policy, lookup, default_namespace):
            results.append(dataclasses.replace(result, object_index=index))
    return results


def check_object(
    obj: Mapping[str, Any],
    policy: Policy = DEFAULT_POLICY,
    lookup: ClusterLookup = NO_LOOKUP,
    related: Iterable[Mapping[str, Any]] = (),
) -> list[ContainerResult]:
    """Check one workload (the webhook's entry point). ``related`` objects (ConfigMaps,
    Services) are consulted like the cluster, before ``lookup``; [] when not vLLM."""
    if not isinstance(obj, Mapping):
        return []
    manifests = ManifestSet.of([o for o in related if isinstance(o, Mapping)], None)
    return _check_object(obj, manifests, policy, lookup, None)


def _check_object(
    obj: Mapping[str, Any],
    manifests: ManifestSet,
    policy: Policy,
    lookup: ClusterLookup,
    default_namespace: str | None,
) -> list[ContainerResult]:
    try:
        namespace = meta(obj, default_namespace)[1]
        templates = pod_templates(obj, default_namespace, _resolver(namespace, manifests, lookup))
    except Exception as exc:  # a rules bug must never take the webhook or lint down
        return [_crashed(str(obj.get("kind")), "?", None, "?", exc)]
    if not templates and kind_spec(obj) is not None:
        # a kind the rules read, but no pod template could be read from it (a KServe
        # InferenceService whose ServingRuntime is elsewhere): named if it runs vLLM
        why = object_runs_vllm(obj)
        return [] if why is None else [_no_template(obj, default_namespace, why)]
    results: list[ContainerResult] = []
    for found in templates:
        template = with_ray_workers(found, manifests.ray_workers.get(found.namespace, []))
        template = manifests.with_gang(template, obj, lookup.object)  # a named gang's (issue 39)
        if template.unread is not None:
            results.append(_unread(template, *template.unread))
            continue
        if template.invalid is not None:  # the kind's CRD rejects it (rules.template)
            results.append(_invalid(template, *template.invalid))
            continue
        mine = _check_containers(template, manifests, lookup, policy)
        if template.gang_leader is not None and mine:
            judged = _gang_findings(template.gang_leader, manifests, lookup, policy)
            mine[0] = dataclasses.replace(mine[0], findings=(*mine[0].findings, *judged))
        results += mine
    return results


def _check_containers(
    template: PodTemplate, manifests: ManifestSet, lookup: ClusterLookup, policy: Policy
) -> list[ContainerResult]:
    """One result per vLLM container of ``template``; a rule that crashes is a finding."""
    results: list[ContainerResult] = []
    for key, i, container in running_containers(template.spec):
        label = _label(template, container, f"{key}[{i}]")
        try:
            result = _check_container(
                template,
                container=container,
                field=f"{key}[{i}]",
                label=label,
                manifests=manifests,
                lookup=lookup,
                policy=policy,
            )
        except Exception as exc:
            result = _crashed(template.kind, template.name, template.namespace, label, exc)
        if result is not None:
            results.append(result)
    return results


def _gang_findings(
    leader: PodTemplate, manifests: ManifestSet, lookup: ClusterLookup, policy: Policy
) -> tuple[Finding, ...]:
    """The group rules' findings on a gang's leader, for a worker met alone (a pod naming
    a PodGroup at admission: rules.namedgangs): the rules that judge a group run on its
    leader, and the object under review is the one that completes the gang. A crash on the
    leader is the leader's own review's to report."""
    return tuple(
        dataclasses.replace(
            f, message=f"{leader.kind}/{leader.name}, the leader of its gang: {f.message}"
        )
        for result in _check_containers(leader, manifests, lookup, policy)
        for f in result.findings
        if f.id.startswith(GANG_RULE_PREFIX)
    )


def _resolver(
    namespace: str | None, manifests: ManifestSet, lookup: ClusterLookup
) -> Callable[[str, str], Mapping[str, Any] | None]:
    """(kind, name) -> an object a workload refers to (a DRA claim, a KServe
    ServingRuntime) in ``namespace`` (cluster-scoped kinds: anywhere), from the manifest
    set, else the cluster; name "*" lists every one of that kind."""

    def resolve(kind: str, name: str) -> Mapping[str, Any] | None:
        scope = None if kind in CLUSTER_SCOPED else namespace
        if name == "*":
            items = [
                o for (ns, k, _), o in manifests.referenced.items() if k == kind and ns == scope
            ]
            if lookup.object is not None and (scope is not None or kind in CLUSTER_SCOPED):
                try:
                    listed = lookup.object(scope or "", kind, "*")
                except Exception:
                    listed = None  # unknown, never fatal
                more = listed.get("items") if isinstance(listed, Mapping) else None
                if isinstance(more, list):
                    names = {meta_name(o) for o in items}
                    items += [
                        o for o in more if isinstance(o, Mapping) and meta_name(o) not in names
                    ]
            return {"items": items}
        found = manifests.referenced.get((scope, kind, name))
        if (
            found is None
            and lookup.object is not None
            and (scope is not None or kind in CLUSTER_SCOPED)
        ):
            try:
                found = lookup.object(scope or "", kind, name)
            except Exception:
                found = None  # unknown, never fatal
        return found

    return resolve


def meta_name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name")) if isinstance(meta, Mapping) else ""


def _label(template: PodTemplate, container: Mapping[str, Any], field: str) -> str:
    name = container.get("name")
    label = str(name) if isinstance(name, str) and name else field
    return f"{template.role}/{label}" if template.role else label


def _crashed(
    kind: str, name: str, namespace: str | None, container: str, exc: Exception
) -> ContainerResult:
    finding = INTERNAL_ERROR.finding(
        f"the rules crashed on this object: {exc!r}; it was not checked",
        "",
        "report this as a bug in vllm-preflight, with the manifest",
    )
    return ContainerResult(
        kind, name, namespace, container, None, None, None, (finding,),
        unjudged=f"the rules crashed: {type(exc).__name__}",
    )  # fmt: skip


def _getters(
    namespace: str | None, manifests: ManifestSet, lookup: ClusterLookup
) -> tuple[Any, Any, list[Mapping[str, Any]]]:
    def config_map(name: str) -> Mapping[str, Any] | None:
        found = manifests.config_maps.get((namespace, name))
        if found is None and lookup.config_map is not None and namespace is not None:
            try:
                found = lookup.config_map(namespace, name)
            except Exception:
                found = None  # unknown, never fatal
        return found

    referenced = _resolver(namespace, manifests, lookup)
    services = list(manifests.services.get(namespace, []))
    if lookup.services is not None and namespace is not None:
        names = {link_prefix(s) for s in services}
        with contextlib.suppress(Exception):  # unknown, never fatal
            services += [s for s in lookup.services(namespace) if link_prefix(s) not in names]
    return config_map, referenced, services


def _service_links(spec: Mapping[str, Any], services: list[Mapping[str, Any]]) -> dict[str, str]:
    if spec.get("enableServiceLinks") is False:
        return {}
    links: dict[str, str] = {}
    for service in services:
        if injects_links(service):
            prefix = link_prefix(service)
            for suffix in ("_SERVICE_HOST", "_SERVICE_PORT", "_PORT"):
                links[prefix + suffix] = unknown_marker(prefix + suffix)
    return links


def _check_container(
    template: PodTemplate,
    *,
    container: Mapping[str, Any],
    field: str,
    label: str,
    manifests: ManifestSet,
    lookup: ClusterLookup,
    policy: Policy,
) -> ContainerResult | None:
    path = f"{template.path}.{field}"  # containers[i], or initContainers[i] (a native sidecar)
    config_map, referenced, services = _getters(template.namespace, manifests, lookup)
    env = build_env(
        container,
        path,
        namespace=template.namespace,
        config_map=config_map,
        injected=template.injected_env,
        service_links=_service_links(template.spec, services),
    )
    found = find_invocation(container, path, env)
    signals: tuple[Signal, ...] = ()
    if found is None or (isinstance(found, Unparsed) and not found.suspected):
        signals = recognise(container, path, env.values, stack=_stack(template))
        if not signals:
            return None  # nothing says this container launches vLLM
        if found is None:
            return _unjudged(template, container, label, path, env=env, signals=signals)
    if template.argv_paths and isinstance(found, Invocation):
        # a synthesised command: each token points at the field it was built from
        paths = template.argv_paths
        found = dataclasses.replace(
            found, paths=tuple(paths[i] if i < len(paths) else p for i, p in enumerate(found.paths))
        )
    if isinstance(found, Unparsed):
        return _unparsed(template, label, found, signals if not found.suspected else ())
    resolver = ConfigResolver(container, template.spec, config_map)
    parsed = parse_vllm_args(list(found.argv), resolver)
    gpus = gpu_resources(container, path, template.spec, referenced)
    if template.unknown:
        gpus = dataclasses.replace(gpus, forced_unknown=template.unknown)
    ctx = ContainerContext(
        template,
        container,
        label,
        path,
        found,
        parsed,
        env,
        gpus,
        tuple(services),
        resolver.source,
        lookup,
        referenced,
        config_map,
    )
    findings = [
        MANIFEST_INVALID.finding(
            f"{where} {what}", where, "fix the field: the API server rejects this manifest"
        )
        for where, what in gpus.malformed
    ]
    if template.generic:
        findings.append(
            KIND_GENERIC.finding(
                f"{template.kind} is not a kind vllm-preflight knows; the pod spec at "
                f"{template.path} runs vLLM and was judged as a plain pod (its controller may "
                "change it: replicas, resources and the command are read as written)",
                template.path,
                "nothing to fix; ask for the kind to be supported if its controller adds GPUs "
                "or arguments",
            )
        )
    for _, rule in REGISTRY:
        try:
            findings.extend(rule(ctx, policy))
        except Exception as exc:
            findings.append(
                INTERNAL_ERROR.finding(
                    f"a rule crashed: {exc!r}", path, "report this as a bug in vllm-preflight"
                )
            )
    return _result(template, label, ctx, findings, policy)


def _unread(template: PodTemplate, field: str, why: str) -> ContainerResult:
    # the field the vLLM command line is built from was not read: the same unknown as a
    # script that does not tokenize
    finding = COMMAND_UNPARSED.finding(
        f"{field} was not read: {why}; the vLLM command lines built from it were not checked",
        field,
        "write it without YAML aliases, fewer than 100 levels deep and under 1 MiB",
    )
    return ContainerResult(
        template.kind, template.name, template.namespace, template.role or "?", None, None,
        None, (finding,), unjudged=f"{field} was not read: {why}",
    )  # fmt: skip


def _no_template(
    obj: Mapping[str, Any], default_namespace: str | None, why: str
) -> ContainerResult:
    kind = str(obj.get("kind"))
    name, namespace = meta(obj, default_namespace)
    reason = (
        f"{kind} {why}, but no vLLM command line can be read from it here (docs/RULES.md, "
        "'Workload kinds', says where it is read)"
    )
    finding = COMMAND_UNPARSED.finding(
        f"{reason}; it was not checked",
        "spec",
        "include what it refers to (its ServingRuntime, its config), or check the workload "
        "its controller creates (`kubectl get deploy NAME -o yaml | vllm-preflight lint -`)",
    )
    return ContainerResult(
        kind, name, namespace, "?", None, None, None, (finding,), unjudged=reason
    )


def _unparsed(
    template: PodTemplate, label: str, found: Unparsed, signals: tuple[Signal, ...]
) -> ContainerResult:
    """A command the reader doubts (rules.command.Unparsed): recognised as vLLM by
    ``signals`` (or suspected by the reader itself), so unjudged, never dropped."""
    because = f" (recognised as vLLM by: {describe(signals)})" if signals else ""
    finding = COMMAND_UNPARSED.finding(
        f"{found.path}: {found.reason}; the vLLM command line in it was not checked{because}",
        found.path,
        "write the command as a list (command: [vllm, serve, ...]) or fix the script's quoting",
    )
    return ContainerResult(
        template.kind, template.name, template.namespace, label, None, None, None, (finding,),
        unjudged=found.reason,
    )  # fmt: skip


def _stack(template: PodTemplate) -> str | None:
    """The serving stack's kind when its reader built the vLLM command (argv_paths)."""
    return template.kind if template.argv_paths else None


def _unjudged(
    template: PodTemplate,
    container: Mapping[str, Any],
    label: str,
    path: str,
    *,
    env: ContainerEnv,
    signals: tuple[Signal, ...],
) -> ContainerResult:
    """A container recognised as vLLM (rules.recognition) whose vLLM command line the
    reader could not find: not judged, and said so with what was not read and why it is
    taken for vLLM (issue 35: "no vLLM workloads found" for these was a bypass)."""
    parts = unread_parts(container, _env_from(container) if env.open_ended else ())
    what = (
        "; ".join(parts)
        if parts
        else (
            "no vLLM command line the reader knows is in it (an entry point or a shell form it "
            "does not read)"
        )
    )
    # the word that launches vLLM (a script in args[0]), else the command (or args)
    field = next(
        (s.field for s in signals if s.kind == ENTRYPOINT),
        f"{path}.command" if container.get("command") else f"{path}.args",
    )
    reason = f"the vLLM command line could not be read: {what}"
    finding = COMMAND_UNPARSED.finding(
        f"{field}: {reason}; recognised as vLLM by: {describe(signals)}. Its arguments "
        "(parallelism, GPUs, memory) were not checked",
        field,
        "write the vLLM command in the manifest as a list (command: [vllm, serve, MODEL, "
        "--tensor-parallel-size, N]), with the values it needs in env or ConfigMaps of "
        "the same set",
    )
    return ContainerResult(
        template.kind, template.name, template.namespace, label, None, None, None, (finding,),
        unjudged=reason,
    )  # fmt: skip


def _env_from(container: Mapping[str, Any]) -> list[str]:
    """``configMapRef NAME`` / ``secretRef NAME`` of the container's envFrom sources."""
    out: list[str] = []
    sources = container.get("envFrom")
    for source in sources if isinstance(sources, list) else ():
        for key in ("configMapRef", "secretRef"):
            ref = source.get(key) if isinstance(source, Mapping) else None
            name = ref.get("name") if isinstance(ref, Mapping) else None
            if isinstance(name, str):
                out.append(f"{key} {name[:253]!r}")
    return out


def downgrade(finding: Finding, group: Group | None = None) -> Finding:
    """Enforce denies only what is certain: a fail that rests on an input that is not
    exact (rules.certainty) becomes a warn saying which, whatever the rule did. Logged,
    with the rule id, so a rule that keeps failing on estimates shows. A group rule's
    finding on a gang whose other members were read from the cluster rests on them as
    last seen (``Group.observed``)."""
    if finding.severity != FAIL:
        return finding
    inputs = finding.inputs
    if group is not None and group.observed and finding.id.startswith(GANG_RULE_PREFIX):
        inputs = (*inputs, Input(ARGV, "the gang's other members", ESTIMATED, group.observed))
    shaky = not_exact(inputs)
    if not shaky:
        return finding
    note = downgrade_note(shaky)
    log.info("rule %s: fail downgraded to warn:%s", finding.id, note)
    return dataclasses.replace(finding, severity=WARN, message=finding.message + note)


def _result(
    template: PodTemplate,
    label: str,
    ctx: ContainerContext,
    findings: list[Finding],
    policy: Policy,
) -> ContainerResult:
    kept = [downgrade(f, template.group) for f in findings if policy.enabled(f.id)]
    kept = redaction.findings(kept, ctx.env.values)  # no secret leaves in a finding (issue 36)
    order = {severity: i for i, severity in enumerate(SEVERITIES)}
    kept.sort(key=lambda f: order.get(f.severity, len(order)))
    need = ctx.pod_gpus
    return ContainerResult(
        template.kind,
        template.name,
        template.namespace,
        label,
        ctx.parsed.plan if need is not None else None,
        need,
        ctx.gpus_have,
        tuple(kept),
        platform=ctx.gpus.platform,
        argv=ctx.invocation.argv,
        model=ctx.parsed.model,
    )


def _invalid(template: PodTemplate, field: str, why: str, fix: str) -> ContainerResult:
    """An object its own kind's CRD rejects: named as invalid, at the field, not read."""
    finding = MANIFEST_INVALID.finding(f"{field} {why}", field, fix)
    return ContainerResult(
        template.kind, template.name, template.namespace, template.role or "?", None, None,
        None, (finding,),
    )  # fmt: skip
