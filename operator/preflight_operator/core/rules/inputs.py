"""The certainty of what a container's rules read (rules.certainty.Input), derived once
from the context: the parallel plan from the argv, the device count per resource unit.

The plan is *exact* when every word that could set a parallel size was read: the argv's
words are literal, or the words unknown here are values of options that cannot set one
(``--model $(MODEL)`` from a Secret). A word unknown here anywhere an option may stand
(``vllm serve m -tp 2 $(EXTRA_ARGS)``) may hold ``-tp 4``: the plan read is then only
*estimated*. The device count is exact for resources whose unit is one vLLM rank on its
own device (nvidia.com/gpu, MIG slices, the other vendors' device plugins, DRA devices
counted); a time-sliced ``nvidia.com/gpu.shared`` unit may be the same GPU as another, so
its count is estimated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from preflight_contract.vllm_args import API_SERVER_POSITIONAL, parse_vllm_args
from preflight_operator.core.rules.certainty import (
    ARGV,
    DEVICE_COUNT,
    ENV,
    ESTIMATED,
    EXACT,
    UNKNOWN,
    Input,
)
from preflight_operator.core.rules.kubeenv import _MARKED, display, has_unknown

if TYPE_CHECKING:
    from preflight_operator.core.rules.context import ContainerContext

# Resources whose units may not be distinct devices (NVIDIA's time-slicing renames the
# shared resource to nvidia.com/gpu.shared: several replicas of one GPU).
SHARED_UNITS = frozenset(("nvidia.com/gpu.shared",))
# What stands in for an unknown part of a word when the argv is parsed again: a literal
# the parser reads like any other text.
_PROBE = "vllm-preflight-unknown-word"


def _open_word(argv: tuple[str, ...]) -> str | None:
    """The first word unknown here that stands where an option may (not the value of an
    option, not the model), shown as written; None when there is none. The argv is parsed
    again with each unknown part replaced by a literal: a literal where an option may
    stand is an extra positional argument, which the parser reports."""
    if not any(has_unknown(w) for w in argv):
        return None
    probed = [_MARKED.sub(_PROBE, w) for w in argv]
    parsed = parse_vllm_args(probed)
    # an extra positional: a problem, or for the api_server module's first one a warning
    # (vLLM 0.12 on reads it as its model_tag)
    extras = [
        *(p for p in parsed.problems if p.dest == "positional"),
        *(w for w in parsed.warnings if w.dest == API_SERVER_POSITIONAL),
    ]
    for problem in extras:
        if _PROBE not in problem.message:
            continue
        extra = problem.message.partition("arguments: ")[2].partition("'")[0].split()
        for word, text in zip(argv, probed):
            if has_unknown(word) and text in extra:
                return display(word)
        return "a word unknown here"
    return None


def plan_input(ctx: ContainerContext) -> Input:
    """How certain the parallel plan (TP, PP, DP, ...) read from the argv is."""
    what = "the parallel plan (TP x PP x DP)"
    if ctx.pod_gpus is None:
        return Input(ARGV, what, UNKNOWN, "is not known from the command line")
    word = _open_word(ctx.invocation.argv)
    if word is not None:
        where = "a shell script" if ctx.invocation.shell_path else "the command line"
        return Input(
            ARGV,
            what,
            ESTIMATED,
            f"was read from {where} holding {word!r}, unknown here, which may set a "
            "parallel size too",
        )
    return Input(ARGV, what, EXACT)


def devices_input(ctx: ContainerContext) -> Input:
    """How certain the number of devices the container gets is."""
    gpus = ctx.gpus
    what = f"the {gpus.fix_resource} count"
    if gpus.unknown is not None:
        return Input(DEVICE_COUNT, what, UNKNOWN, gpus.unknown)
    shared = [e for e in gpus.entries if e.resource in SHARED_UNITS and e.count]
    if shared:
        return Input(
            DEVICE_COUNT,
            f"the {shared[0].resource} count",
            ESTIMATED,
            "counts time-sliced replicas, which may be one GPU",
        )
    return Input(DEVICE_COUNT, what, EXACT)


def env_input(name: str, value: str | None, path: str | None) -> Input:
    """How certain an env value the container's process gets is: exact when the manifest
    (and the ConfigMaps given) spell it out, unknown when any part of it comes from
    somewhere not known here (a Secret, the downward API, a ConfigMap not provided, the
    image's ENV). A rule attaches it to a finding built on the value, so a fail on a value
    not known here is a warning, whatever the rule's own guards."""
    what = f"{name} ({path})" if path else name
    if value is None:
        return Input(ENV, what, UNKNOWN, "is not set in the manifest (the image may set it)")
    if has_unknown(value):
        return Input(ENV, what, UNKNOWN, f"holds {display(value)!r}, not known here")
    return Input(ENV, what, EXACT)
