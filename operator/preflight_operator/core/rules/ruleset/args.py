"""Rules about the vLLM command line itself.

The docs of its rules (hack/gen_rule_docs.py renders them into docs/RULES.md):

### `vllm-args-invalid`
The command line is one vLLM refuses before serving: a parallel size that is not an
integer (`-tp four`, `-tp $(TP)` with `TP` undefined, which Kubernetes passes literally), 0,
negative or implausibly large (> 1024); `-tp2` (argparse has no `-t`); `--tp 4` (not an
option); an ambiguous abbreviation; a flag without its value; DCP not dividing TP;
`--data-parallel-size-local` above `--data-parallel-size`; `--data-parallel-rank` outside
`[0, DP)` or with DP 1; hybrid and external load balancing together; `--nnodes` not
dividing the world; `--node-rank >= --nnodes`; `--gpu-memory-utilization` outside (0, 1];
`--served-model-name` before the positional model; a positional argument beyond the
model (`vllm serve serve MODEL`: `args: [serve, MODEL]` on the vLLM image from
0.11.1, whose ENTRYPOINT already is `vllm serve`); `--config` given twice, not YAML, not
a mapping, or missing a model.
*Symptom:* `vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value:
'four'`, `pydantic ... Input should be greater than or equal to 1`, `ValueError:
tp_size=6 must be divisible by dcp_size=4`, `ValueError: data_parallel_size_local (4) must
be <= data_parallel_size (2)`; the pod crash-loops.
*Fix:* correct the argument named in the finding (the field points at the token).

### `vllm-args-ignored`
`--config=FILE`: vLLM only loads a config file given as the two tokens `--config FILE`;
the `=` form is accepted by argparse and the file is never read.
*Symptom:* vLLM starts with the defaults (TP=1, ...) instead of the file's settings.
*Fix:* `--config FILE`.

One positional word given to `python -m vllm.entrypoints.openai.api_server` (often a
flag and its value quoted as one list item, `"--quantization bitsandbytes"`): vLLM up to
0.11 exits with "unrecognized arguments"; newer vLLM takes it as that module's optional
`model_tag` (vLLM 0.33.0 `vllm/entrypoints/common/cli_args.py` `make_arg_parser`) and
ignores it, so the option it meant does not apply. Which one happens depends on the image's
vLLM: when the image is vLLM's own with a version tag (`vllm/vllm-openai:v0.11.0`) up to
0.11, it is `vllm-args-invalid` (fail); otherwise it is this warning: after 0.11 (a later
tag, `latest`) the word is ignored, and where the image does not say its release (a digest,
a mirror or another image) the warning says the version is not known here. A second
positional word fails on every version (`vllm-args-invalid`).

### `vllm-config-unresolved`
The `--config` file is not in a ConfigMap mounted into the container and present in the
manifest set (or, for the webhook, the cluster): baked into the image, on a PVC, relative
to an unknown working directory; or it is over a limit of the operator's one YAML reader
(`rules/boundedyaml.py`: YAML aliases, more than 100 levels deep, more than 100,000
values, over 1 MiB; the message ends with the reason, e.g. `(too-deep)`). Those limits
are checked on the parser's events before anything is built: a billion-laughs value would
explode in the tokens, and 1,200 nested `[` cost PyYAML's pure parser 1.4 s and then a
`RecursionError`. vLLM itself reads such a file, so it is unknown, not invalid. The GPU
plan is not checked.
*Fix:* mount it from a ConfigMap that is part of the checked set (without aliases), or pass
the parallel sizes on the command line.

### `plan-unresolved`
Unknown is never fail. A parallel size comes from `$(VAR)`/`$VAR` whose value is unknown
here (a Secret, the downward API, the image's ENV, a ConfigMap not provided, shell
arithmetic over such values or a command substitution), or the number of devices the
container gets cannot be counted (a DRA claim with `allocationMode: All`, an unknown
device class, a claim or template that is not in the manifests or the cluster;
`aws.amazon.com/neuron` devices of several cores). The rules that need the unknown value
are not applied; this warning names what and where. Under `Enforce` it admits. At run
time the injected check sees the real values. `vllm-env-unresolved`, the former id, is
still accepted by `--disable` and a PreflightPolicy's checks list.
It also says when **the topology of a spread engine is unknown**: the container starts a
Ray head (`ray start --head`, `multi-node-serving.sh leader`) or joins a Ray cluster (`ray
start --address`, `multi-node-serving.sh worker`, `RAY_ADDRESS`), runs vLLM on Ray (no
`--nnodes`, no per-pod DP ranks, no other executor written) and holds fewer devices than
the engine's TP x PP (x DP with the Ray DP backend). Ray places the other ranks on pods
this object does not describe (another Deployment, workers started by hand, a CRD whose
worker count is not written), so how many pods there are and which ranks each runs is
unknown: the pod is judged on its own devices (its share is what it holds; /dev/shm for
those ranks), `gpu-count-too-low` does not apply, and the group's total is not checked
(see "Plans spread over pods"; the finding comes from the `ray-gpu-total` rule's code).
Run the group as a LeaderWorkerSet or a KubeRay RayCluster to have the total checked.
*Fix:* put the value in the manifest, or in a ConfigMap (ResourceClaimTemplate) included
in the check.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from preflight_contract.verdicts import FAIL, WARN
from preflight_contract.vllm_args import API_SERVER_POSITIONAL, ArgProblem
from preflight_contract.vllm_release import version_key
from preflight_operator.core.rules.certainty import VENDOR_DOC, VLLM_CODE, Basis
from preflight_operator.core.rules.context import ContainerContext
from preflight_operator.core.rules.kubeenv import display, has_unknown, unknown_names
from preflight_operator.core.rules.registry import RULE_INFO, register
from preflight_operator.core.rules.ruleset.argversion import config_as_format
from preflight_operator.core.rules.vllmversion import ImageVersion, image_version
from preflight_operator.core.rules.vocabulary import Finding, Policy

_FIXES = {
    "tensor_parallel_size": "set --tensor-parallel-size (-tp) to a positive integer, e.g. `-tp 2`",
    "pipeline_parallel_size": "set --pipeline-parallel-size (-pp) to a positive integer",
    "data_parallel_size": "set --data-parallel-size (-dp) to a positive integer",
    "data_parallel_size_local": (
        "set --data-parallel-size-local (-dpl) to the DP ranks this pod runs (<= -dp)"
    ),
    "decode_context_parallel_size": (
        "choose --decode-context-parallel-size so that it divides --tensor-parallel-size"
    ),
    "config": "pass the config file as two tokens, `--config /path/file.yaml`",
    "model": "give the model first: `vllm serve MODEL [options]`",
    "positional": "pass one model and options only: `vllm serve MODEL [--option value ...]`",
}
_SERVE_TWICE_FIX = (
    "the image's ENTRYPOINT already is `vllm serve`: drop `serve` from args "
    "(args: [MODEL, --option, value, ...])"
)
# the marker name of a $(NAME) no env of the manifest defines (rules.shrun.undefined_reference)
_UNDEFINED_REF = re.compile(r"\$\([-._a-zA-Z][-._a-zA-Z0-9]*\)")
_GENERIC_FIX = "correct the vLLM argument: vLLM exits with an argument error before serving"


_REFERENCE = re.compile(r"\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)")


def _maybe_injected(ctx: ContainerContext, value: str) -> list[str]:
    """Names of the `$(NAME)` that vLLM would get literally in ``value`` although the
    manifest writes them unescaped (a shell script quoting them): the kubelet expands them
    before the shell runs when a controller or admission webhook defines NAME, so they are
    unknown, not literal. `$$(NAME)`, the kubelet's escape, stays literal."""
    raw = "\n".join(
        word
        for key in ("command", "args")
        for word in (ctx.container.get(key) or [])
        if isinstance(word, str)
    )
    return [
        name
        for name in _REFERENCE.findall(value)
        if re.search(rf"(?<!\$)\$\({re.escape(name)}\)", raw)
    ]


# The api_server module's optional positional `model_tag` came after this vLLM: up to it,
# any positional exits with "unrecognized arguments" (vllm-project/vllm issue 27389 on
# v0.11.0; vLLM 0.33.0's make_arg_parser has model_tag). The image's release is read by
# vllmversion.image_version, the one reader every version rule uses.
LAST_WITHOUT_MODEL_TAG = version_key("0.11.0")


def without_model_tag(version: ImageVersion) -> bool | None:
    """Whether the image's vLLM exits on an api_server positional: True up to 0.11.0,
    False after it (a moving tag of vLLM's own image is the newest release or later),
    None when the image does not say its release."""
    if version.newest:
        return False
    if version.release is None:
        return None
    return version_key(version.release) <= LAST_WITHOUT_MODEL_TAG


def _literal_reference(problem: ArgProblem) -> str:
    if "$(" in problem.value and not has_unknown(problem.value):
        return (
            " (Kubernetes passed the reference literally: the variable is not defined in "
            "the container's env)"
        )
    return ""


@register(
    "vllm-args-invalid",
    FAIL,
    "vLLM refuses this command line",
    Basis(VLLM_CODE, "vLLM's argument parser and config validation (preflight_contract.vllm_args)"),
    fix="correct the vLLM command line (the message names the flag and value)",
)
def args_invalid(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    info = RULE_INFO["vllm-args-invalid"]
    for problem in ctx.parsed.problems:
        if has_unknown(problem.value) or has_unknown(problem.flag):
            continue  # an unknown value is plan-unresolved, not an error
        value = f" {display(problem.value)!r}" if problem.value else ""
        injected = _maybe_injected(ctx, problem.value) if "$(" in problem.value else []
        if injected:
            yield RULE_INFO["plan-unresolved"].finding(
                f"{display(problem.flag)}{value}: $({injected[0]}) is not defined in the "
                "container's env; the kubelet expands it before the shell runs if a "
                "controller or admission webhook defines it, else vLLM gets it literally "
                "and refuses it; unknown here",
                ctx.arg_path(problem.dest) if problem.dest else ctx.command_path,
                "define the variable in the container's env, or write the value itself",
            )
            continue
        fix = _FIXES.get(problem.dest, _GENERIC_FIX)
        if problem.dest == "positional" and ctx.parsed.model == "serve":
            fix = _SERVE_TWICE_FIX
        if problem.dest == "positional":
            yield info.finding(
                f"argument {display(problem.value)!r}: {problem.message}",
                ctx.arg_path(problem.dest),
                fix,
            )
            continue
        yield info.finding(
            f"{display(problem.flag)}{value}: {problem.message}{_literal_reference(problem)}",
            ctx.arg_path(problem.dest) if problem.dest else ctx.command_path,
            fix,
        )
    version = image_version(ctx.container.get("image"))
    for warning in ctx.parsed.warnings:
        if warning.dest != API_SERVER_POSITIONAL or has_unknown(warning.value):
            continue
        if without_model_tag(version):
            yield info.finding(
                f"argument {display(warning.value)!r}: the image's vLLM "
                f"{version.release} exits with 'error: unrecognized arguments: "
                f"{display(warning.value)}' (its api_server module takes options only)",
                ctx.arg_path("positional"),
                _FIXES["positional"],
            )


@register(
    "vllm-args-ignored",
    WARN,
    "vLLM accepts an argument and then ignores it",
    Basis(VLLM_CODE, "vLLM's FlexibleArgumentParser reads only `--config FILE`"),
    fix="use the two-token form vLLM reads (e.g. `--config FILE`, not `--config=FILE`)",
)
def args_ignored(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    info = RULE_INFO["vllm-args-ignored"]
    image = ctx.container.get("image")
    version = image_version(image)
    old = without_model_tag(version)
    for warning in ctx.parsed.warnings:
        if warning.dest == API_SERVER_POSITIONAL and not has_unknown(warning.value):
            if not old:
                yield info.finding(
                    f"argument {display(warning.value)!r}: {warning.message}; the image's "
                    f"vLLM version is not known here ({version.why})"
                    if old is None
                    else f"argument {display(warning.value)!r}: {warning.message}",
                    ctx.arg_path("positional"),
                    "remove the word, or give the model with --model (the api_server "
                    "module does not read its positional)",
                )
            continue
        if warning.flag == "--config=":
            serve = ctx.invocation.argv[:2] == ("vllm", "serve")
            if config_as_format(f"--config={warning.value}", version, serve):
                continue  # refused, not ignored: vllm-args-unknown says why
            yield info.finding(
                f"--config={warning.value}: {warning.message}, so none of its options apply",
                ctx.command_path,
                _FIXES["config"],
            )


@register(
    "vllm-config-unresolved",
    WARN,
    "the --config file could not be read here",
    Basis(VLLM_CODE, "vLLM's --config loading"),
    fix="ship the `--config` ConfigMap in the same manifest set, or lint in the cluster",
)
def config_unresolved(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    parsed = ctx.parsed
    if (
        parsed.config_path is None
        or parsed.config_loaded
        or any(p.dest == "config" for p in parsed.problems)
    ):
        return
    reasons = [w.message for w in parsed.warnings if w.flag == "--config"]
    reason = reasons[0] if reasons else "not available"
    yield RULE_INFO["vllm-config-unresolved"].finding(
        f"--config {parsed.config_path}: {reason}; the GPU plan is checked without it",
        ctx.arg_path("config"),
        "mount the file from a ConfigMap included in the checked manifests (or present in "
        "the cluster), or pass the parallel sizes on the command line",
    )


@register(
    "plan-unresolved",
    WARN,
    "the plan or a device count depends on values unknown here",
    Basis(VENDOR_DOC, "Kubernetes $(VAR) expansion: an undefined reference stays literal"),
    fix=(
        "a warning, never a denial: set the parallel sizes literally or from a ConfigMap the "
        "rules can read; include the DRA ResourceClaimTemplate"
    ),
)
def plan_unresolved(ctx: ContainerContext, policy: Policy) -> Iterator[Finding]:
    """Unknown is never fail: say what could not be resolved, where, and that the rules
    that need it were not applied."""
    names: list[str] = []
    paths: list[str] = []
    for problem in ctx.parsed.problems:
        for text in (problem.value, problem.flag):
            for name in unknown_names(text):
                if name not in names:
                    names.append(name)
                    paths.append(ctx.arg_path(problem.dest) if problem.dest else ctx.command_path)
    if names:
        refs = ", ".join(f"$({n})" if not n.startswith("$") else n for n in names)
        undefined = [n for n in names if _UNDEFINED_REF.fullmatch(n)]
        injected = (
            f"; {', '.join(undefined)} is not defined in the container's env: the kubelet "
            "passes it literally unless a controller or admission webhook defines it (an "
            "Indexed Job's JOB_COMPLETION_INDEX, KServe's TENSOR_PARALLEL_SIZE, "
            "LeaderWorkerSet's LWS_*)"
            if undefined
            else ""
        )
        yield RULE_INFO["plan-unresolved"].finding(
            f"the vLLM arguments use {refs}, whose value is not in the manifests (a Secret, "
            "the downward API, the image's ENV, a ConfigMap not provided, a variable a "
            f"controller injects, or shell that cannot be evaluated here){injected}; the GPU "
            "plan cannot be checked",
            paths[0],
            "put the parallel sizes in the manifest (a literal, or env from a ConfigMap "
            "included in the check)",
        )
    unknown = ctx.gpus.unknown
    if unknown is not None and ctx.pod_gpus is not None:
        yield RULE_INFO["plan-unresolved"].finding(
            f"vLLM needs {ctx.pod_gpus} devices in this pod but how many it gets is "
            f"unknown here: {unknown}; the device count was not checked"
            + (
                " (the injected check verifies at run time what CUDA sees)"
                if ctx.gpus.on_nvidia
                else ""
            ),
            ctx.gpu_path,
            _unknown_count_fix(unknown),
        )


def _unknown_count_fix(reason: str) -> str:
    """The fix for a device count that cannot be known, by what made it unknown."""
    if "NeuronCores" in reason:
        return (
            "request aws.amazon.com/neuroncore (cores, what vLLM's TP counts) instead of "
            "Neuron devices, so the count can be compared"
        )
    if "resourceProfile" in reason:
        return (
            "nothing to fix if the profile gives the GPUs the plan needs; the pods KubeAI "
            "creates are judged at their own admission"
        )
    return (
        "include the ResourceClaim or ResourceClaimTemplate in the checked manifests (the "
        "webhook reads them from the cluster), or request a fixed count"
    )
