"""The PREFLIGHT_* env of the check container (the injection, core/injection.py): the
plan and policy, the vLLM command line as the rules read it (PREFLIGHT_VLLM_ARGS), verdict
reuse offers, the Secret-backed names to hide, and why the plan is unknown when it is.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from preflight_contract import envnames
from preflight_contract.check_ids import CHECKS
from preflight_contract.redact import secret_env_names
from preflight_contract.reuse import Offer, format_offers, plan_shape
from preflight_operator.core import constants
from preflight_operator.core.inject_groups import field_ref
from preflight_operator.core.operatorconfig import PolicySpec
from preflight_operator.core.rules import has_unknown, unknown_names
from preflight_operator.core.static import Plan


def runtime_skips(disabled: tuple[str, ...]) -> list[str]:
    """The policy's disabled ids that are runtime checks. A policy lists rule ids and check
    ids together; the checker rejects ids it does not know (exit 2), so rule ids stay out."""
    return [check_id for check_id in disabled if check_id in CHECKS]


def preflight_env(plan: Plan | None, policy: PolicySpec, deadline_s: int) -> list[dict[str, str]]:
    """The PREFLIGHT_* env; without a plan (the rules could not read it) no TP, PP or
    DP-local: the checker then validates every GPU it sees (plan_unknown_env)."""
    sizes = {} if plan is None else {
        envnames.TP: str(plan.tp),
        envnames.PP: str(plan.pp),
        envnames.DP_LOCAL: str(plan.dp_local),
    }  # fmt: skip
    env = {
        **sizes,
        envnames.ACTION: policy.action,
        envnames.TIER: policy.tier,
        envnames.SHM_MIN: policy.thresholds.shm_min,
        # injection.timeoutSeconds: the check stops waiting then and reports what hung.
        envnames.DEADLINE: str(deadline_s),
        # spec.groups.socketFallback, always written: the policy's word, never a value
        # copied from the vLLM container (read only by a group member's group-transport)
        envnames.SOCKET_FALLBACK: policy.socket_fallback.lower(),
    }
    skips = runtime_skips(policy.disabled_checks)
    if skips:
        env[envnames.SKIP] = ",".join(skips)
    if policy.thresholds.gpu_memory_utilization is not None:
        env[envnames.GPU_MEMORY_UTILIZATION] = str(policy.thresholds.gpu_memory_utilization)
    # The root filesystem is read-only: no byte code, temporary files in our emptyDir.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["TMPDIR"] = constants.MOUNT_PATH
    return [{"name": k, "value": v} for k, v in env.items()]


# PREFLIGHT_VLLM_ARGS: a command line longer than this is left out (the model checks then
# skip) rather than copied into every pod's spec again.
MAX_VLLM_ARGS_CHARS = 16 * 1024
_ENV_VAR_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*\Z")  # the API server's rule
_ESCAPED_MARKER = re.compile(r"\x00\$\$\(([^\x00]*)\)\x00")
_DEFERRED_MARKER = re.compile(r"\x00\$\$\$\$\(([^\x00]*)\)\x00")


def _is_config_flag(word: str) -> bool:
    return word == "--config" or word.startswith("--config=")


def vllm_args_value(argv: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
    """PREFLIGHT_VLLM_ARGS for the check: the command line as the rules read it (env and
    shell expanded), for the kubelet to hand over as written; and the names of the
    variables whose values the rules could not know (a Secret, a ConfigMap, a downward-API
    field), which the *checker* fills in (PREFLIGHT_VLLM_ARGS_DEFERRED).

    The kubelet expands ``$(NAME)`` in env values (``$$`` is a literal ``$``), so every
    ``$`` is doubled. A value the rules could not know used to become ``$(NAME)`` inside the
    quoted line, for the kubelet to paste in: a value holding an apostrophe then unbalanced
    the quoting, the checker could not split the line and exited 2, blocking working pods
    under Warn and Audit (issue 34; 8 of 72 in the adversarial round). No quoting survives
    text pasted in unseen, so those words are written for two rounds of expansion instead:
    ``$`` as ``$$$$`` and the reference as ``$$(NAME)``, which the kubelet turns into ``$$``
    and ``$(NAME)``; the checker splits the words first and then expands each word as the
    kubelet would (preflight_check/options.py). Without such a name the line is written for
    the kubelet's one round, as before.

    None (nothing passed, the model checks skip) when a part stayed unknown that is no
    variable (shell arithmetic), when vLLM reads a ``--config`` file (mounted in the vLLM
    container, not in the check's), or past MAX_VLLM_ARGS_CHARS."""
    deferred: list[str] = []
    for word in argv:
        if _is_config_flag(word):
            return None
        names = unknown_names(word)
        if any(not _ENV_VAR_NAME.match(name) for name in names):
            return None
        deferred += [n for n in names if n not in deferred]
    words: list[str] = []
    for word in argv:
        if deferred:
            escaped = _DEFERRED_MARKER.sub(r"$$(\1)", word.replace("$", "$$$$"))
        else:
            escaped = _ESCAPED_MARKER.sub(r"$(\1)", word.replace("$", "$$"))
        if has_unknown(escaped):
            return None
        words.append(escaped)
    text = shlex.join(words)
    if not words or len(text) > MAX_VLLM_ARGS_CHARS:
        return None
    return text, tuple(deferred)


def reuse_env(
    env: list[dict[str, Any]],
    image: object,
    plan: Plan | None,
    reuse: Callable[[str, str], Sequence[Offer]] | None,
) -> list[dict[str, Any]]:
    """Verdict reuse (core/verdictreuse.py): the deep passes this pod may reuse, and its node
    from the downward API. Always written, "[]" when none (the fast tier, no lookup), so a
    value copied from the vLLM container's env (or its envFrom, which env outranks) never
    reaches the check: only the operator's offers do."""
    offered: Sequence[Offer] = ()
    if reuse is not None and plan is not None:  # no plan, no shape to match a pass on
        offered = reuse(str(image or ""), plan_shape(plan.tp, plan.pp, plan.dp_local))
    ours = {envnames.DEEP_REUSE, envnames.NODE_NAME}
    kept = [e for e in env if e.get("name") not in ours]
    # before PREFLIGHT_VLLM_ARGS, which stays last (check_container says why)
    at = next((i for i, e in enumerate(kept) if e.get("name") == envnames.VLLM_ARGS), len(kept))
    kept[at:at] = [
        {"name": envnames.DEEP_REUSE, "value": format_offers(offered)},
        {"name": envnames.NODE_NAME, "valueFrom": field_ref("spec.nodeName")},
    ]
    return kept


def secret_env(vllm: Mapping[str, Any]) -> list[dict[str, str]]:
    """PREFLIGHT_SECRET_ENV: the vLLM container's env names whose values come from a Secret
    (``PREFIX*`` for an envFrom Secret). The checker cannot tell at run time which of its
    variables came from one, and hides their values in all it writes (issue 36)."""
    names = secret_env_names(vllm)
    return [{"name": envnames.SECRET_ENV, "value": ",".join(names)}] if names else []


PLAN_UNKNOWN_DEFAULT = "the parallel plan of the vLLM command line is unknown"
MAX_PLAN_UNKNOWN_CHARS = 300


def plan_unknown_value(why: str) -> str:
    """PREFLIGHT_PLAN_UNKNOWN: why the plan is unknown, one line, bounded. It quotes the
    manifest (the rules' finding), so every ``$`` is doubled: the kubelet expands
    ``$(NAME)`` in env values, and the checker must get the text, not a variable's value."""
    line = " ".join(str(why or PLAN_UNKNOWN_DEFAULT).split())
    if len(line) > MAX_PLAN_UNKNOWN_CHARS:
        line = line[: MAX_PLAN_UNKNOWN_CHARS - 1] + "\u2026"
    return line.replace("$", "$$")


def plan_unknown_env(env: list[dict[str, Any]], why: str) -> list[dict[str, Any]]:
    """``env`` with PREFLIGHT_PLAN_UNKNOWN (in place of a value copied from the vLLM
    container) and without PREFLIGHT_TP/PP/DP_LOCAL copied from it: the checker must not
    take a plan the rules did not read. Before PREFLIGHT_VLLM_ARGS, which stays last."""
    dropped = {envnames.PLAN_UNKNOWN, envnames.TP, envnames.PP, envnames.DP_LOCAL}
    kept = [e for e in env if e.get("name") not in dropped]
    at = next((i for i, e in enumerate(kept) if e.get("name") == envnames.VLLM_ARGS), len(kept))
    kept[at:at] = [{"name": envnames.PLAN_UNKNOWN, "value": plan_unknown_value(why)}]
    return kept
